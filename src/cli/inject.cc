// `gpulse inject`: raises a fault on a simulated GPU of a running agent (docs/faults.md, "Fault
// injection"): an Xid, an ECC error, a thermal or power event, or the GPU falling off the bus,
// through the simulator and, for Xids, as the driver's line in the agent's kernel-log file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/agent_client.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct InjectOptions {
  std::string host;
  unsigned gpu = 0;
  std::string kind;
  std::optional<std::uint64_t> xid;
  std::string message;
  std::optional<std::uint32_t> pid;
  std::string process;
  std::vector<std::string> sources;
  std::optional<std::int64_t> sbe, dbe;
  std::optional<double> duration_s;
  OutputFormat out;
};

json Body(const InjectOptions& o) {
  json b = {{"gpu", o.gpu}, {"kind", o.kind}};
  if (o.xid) b["xid"] = *o.xid;
  if (!o.message.empty()) b["message"] = o.message;
  if (o.pid) b["pid"] = *o.pid;
  if (!o.process.empty()) b["process"] = o.process;
  if (!o.sources.empty()) b["sources"] = o.sources;
  if (o.sbe) b["sbe"] = *o.sbe;
  if (o.dbe) b["dbe"] = *o.dbe;
  if (o.duration_s) b["duration_s"] = *o.duration_s;
  return b;
}

int Run(const InjectOptions& o) {
  int code = kExitOk;
  auto j = CallForVerb("inject", o.host, "POST", "/api/v1/inject", Body(o), 201, &code);
  if (!j) return code;
  if (o.out.machine()) {
    PrintAnswer(o.out, *j, {});
    return kExitOk;
  }
  fmt::print("Injected into GPU {} ({}): {}\n", (*j)["gpu"].get<unsigned>(),
             (*j)["uuid"].get<std::string>(), (*j)["kind"].get<std::string>());
  for (const json& f : (*j)["simulator"]) fmt::print("  simulator:  {}\n", f.get<std::string>());
  if (j->contains("kernel_log")) {
    fmt::print("  kernel log: {}\n", (*j)["kernel_log"].get<std::string>());
  }
  return kExitOk;
}

}  // namespace

Subcommand SetupInject(CLI::App& parent) {
  auto o = std::make_shared<InjectOptions>();
  CLI::App* app = parent.add_subcommand(
      "inject",
      "Raise a fault on a simulated GPU of the agent: an Xid, ECC error, thermal or power event, "
      "or a loss (see docs/faults.md)");
  AddHostOption(*app, o->host);
  app->add_option("--gpu", o->gpu, "The GPU's index")->required();
  app->add_option("kind", o->kind, "xid, ecc, thermal, power or lost")
      ->required()
      ->check(CLI::IsMember({"xid", "ecc", "thermal", "power", "lost"}));
  app->add_option("--xid", o->xid, "With xid: the Xid code");
  app->add_option("--message", o->message,
                  "With xid: the driver's message after the code (default: the catalogue's "
                  "description; Xid 154 wants \"GPU recovery action changed from 0x0 (None) to "
                  "0x1 (GPU Reset Required)\")");
  app->add_option("--pid", o->pid, "With xid: the process the driver names (pid=)");
  app->add_option("--process", o->process, "With --pid: its name (name=)");
  app->add_option("--source", o->sources,
                  "Where the Xid shows: nvml, kernel_log (repeat for both; default both, the "
                  "kernel log when the agent reads a --kmsg file)")
      ->check(CLI::IsMember({"nvml", "kernel_log"}));
  app->add_option("--sbe", o->sbe, "With ecc: single-bit errors to add")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--dbe", o->dbe, "With ecc: double-bit errors to add (also raises Xid 48)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--duration-s", o->duration_s,
                  "With thermal or power: how long the slowdown lasts (default 10)");
  AddFormatOptions(*app, o->out, "the agent's answer");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
