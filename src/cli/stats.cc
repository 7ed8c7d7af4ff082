// `gpulse stats`: job and process statistics from the agent, like `dcgmi stats`: -e enables the
// process watches of a group, -s/-x start and stop a job, -j shows one (-v: per GPU), -p a process,
// -r removes a job, --list lists them. dcgmi's table shapes, or --json. docs/agent.md.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <ctime>
#include <memory>

#include "cli/agent_client.h"
#include "cli/dcgmi_box.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"
#include "net/http_util.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct StatsOptions {
  std::string host;
  std::optional<int> group;
  bool enable = false;
  std::int64_t update_ms = 1000;
  std::int64_t keep_age_s = 4 * 3600;
  std::string start, stop, job, remove;
  std::optional<unsigned> pid;
  bool verbose = false;
  bool list = false;
  OutputFormat out;
};

// A member of the agent's answer, or null when it lacks it (operator[] on a missing key of a
// const object is undefined behaviour in nlohmann-json).
const json& At(const json& j, const char* key) {
  static const json kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Time(const json& ns) {
  if (!ns.is_number()) return "Still Running";
  std::time_t t = static_cast<std::time_t>(ns.get<std::int64_t>() / 1'000'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

std::string Num(const json& v, int decimals = 0) {
  if (!v.is_number()) return "N/A";
  return fmt::format("{:.{}f}", v.get<double>(), decimals);
}

std::string Mmm(const json& m, double scale = 1.0) {
  if (!m.is_object()) return "Avg: N/A, Max: N/A, Min: N/A";
  return fmt::format("Avg: {:.0f}, Max: {:.0f}, Min: {:.0f}", m["mean"].get<double>() * scale,
                     m["max"].get<double>() * scale, m["min"].get<double>() * scale);
}

std::string Pct(const json& v) { return v.is_number() ? fmt::format("{:.0f}", v.get<double>()) : "N/A"; }

std::string Health(const std::string& h) {
  if (h == "healthy") return "Healthy";
  if (h == "warning") return "Warning";
  return "Failure";
}

// dcgmi's slowdown causes, in its order, with the keys of slowdown_percent.
constexpr std::pair<const char*, const char*> kSlowdowns[] = {
    {"Due to - Power (%)", "power"},
    {"       - Thermal (%)", "thermal"},
    {"       - Reliability (%)", "reliability"},
    {"       - Board Limit (%)", "board_limit"},
    {"       - Low Utilization (%)", "low_utilization"},
    {"       - Sync Boost (%)", "sync_boost"}};

// Which view a box is for: a job's GPU, or one process's (dcgmi marks the process's own figures
// with " *" and explains them under the boxes).
enum class View { kJob, kProcess };

std::string Star(View v, const char* label) {
  return v == View::kProcess ? std::string(label) + " *" : std::string(label);
}

// "h:mm:ss" since the window's start, as dcgmi shows an XID's time.
std::string SinceStart(std::int64_t ns) {
  const std::int64_t s = std::max<std::int64_t>(0, ns / 1'000'000'000);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

void ExecutionRows(DcgmiBox& box, const json& window, View v, const std::string& processes) {
  box.Section("Execution Stats");
  box.Row(Star(v, "Start Time"), Time(At(window, "start_unix_ns")));
  box.Row(Star(v, "End Time"), Time(At(window, "stop_unix_ns")));
  box.Row(Star(v, "Total Execution Time (sec)"),
          At(window, "stop_unix_ns").is_number() ? Num(At(window, "duration_s"), 2)
                                                 : "Still Running");
  box.Row(v == View::kProcess ? "No. of Conflicting Processes *" : "No. of Processes", processes);
}

void SlowdownRows(DcgmiBox& box, const json& pct) {
  box.Section("Slowdown Stats");
  for (const auto& [label, key] : kSlowdowns) box.Row(label, Pct(At(pct, key)));
}

void XidRows(DcgmiBox& box, const json& g) {
  const json& xids = At(g, "xid_errors");
  box.Row("Critical XID Errors", std::to_string(xids.is_array() ? xids.size() : 0));
  bool first = true;
  for (const json& x : xids.is_array() ? xids : json::array()) {
    box.Row(first ? "XID (Hr:Min:Sec since start)" : "",
            fmt::format("{} at {}", x.value("xid", 0), SinceStart(x.value("elapsed_ns", 0))));
    first = false;
  }
}

void HealthRows(DcgmiBox& box, const json& g, bool incidents) {
  box.Section("Overall Health");
  box.Row("Overall Health", Health(g.value("overall_health", "")));
  if (!incidents) return;
  for (const json& i : g.value("health_incidents", json::array())) box.Row("", i.get<std::string>());
}

// One GPU's box, as `dcgmi stats -j JOB -v` (View::kJob) or `-p PID -v` (View::kProcess) prints it.
void GpuBox(const json& window, const json& g, View v) {
  DcgmiBox box(34);
  box.Title("GPU ID: " + std::to_string(g.value("device_index", 0)));
  const json processes = g.value("processes", json::array());
  ExecutionRows(box, window, v,
                std::to_string(v == View::kProcess ? g.value("conflicting_pids", json::array()).size()
                                                   : processes.size()));
  if (v == View::kProcess && !g.value("conflicting_pids", json::array()).empty()) {
    std::string pids;
    for (const json& p : At(g, "conflicting_pids")) pids += (pids.empty() ? "" : ", ") + p.dump();
    box.Row("Conflicting PIDs", pids);
  }
  box.Section("Performance Stats");
  box.Row("Energy Consumed (Joules)", Num(At(g, "energy_joules")));
  if (v == View::kJob) {
    box.Row("Power Usage (Watts)", Mmm(At(g, "power_watts")));
    box.Row("Max GPU Memory Used (bytes)", Num(At(g, "max_memory_used_bytes")));
  } else {
    box.Row("Max GPU Memory Used (bytes) *",
            processes.empty() ? "N/A" : Num(At(processes[0], "max_memory_bytes")));
  }
  box.Row("SM Clock (MHz)", Mmm(At(g, "sm_clock_mhz")));
  box.Row("Memory Clock (MHz)", Mmm(At(g, "memory_clock_mhz")));
  box.Row("SM Utilization (%)", Mmm(At(g, "sm_utilization_percent")));
  box.Row("Memory Utilization (%)", Mmm(At(g, "memory_utilization_percent")));
  box.Row("PCIe Rx Bandwidth (megabytes)", Mmm(At(g, "pcie_rx_bytes_per_second"), 1e-6));
  box.Row("PCIe Tx Bandwidth (megabytes)", Mmm(At(g, "pcie_tx_bytes_per_second"), 1e-6));
  box.Section("Event Stats");
  if (v == View::kJob) box.Row("Single Bit ECC Errors", Num(At(g, "ecc_sbe_errors")));
  box.Row("Double Bit ECC Errors", Num(At(g, "ecc_dbe_errors")));
  box.Row("PCIe Replay Warnings", Num(At(g, "pcie_replays")));
  XidRows(box, g);
  SlowdownRows(box, At(g, "slowdown_percent"));
  // dcgmi: one section per process list, each process with its means over its lifetime.
  for (const char* type : {"compute", "graphics"}) {
    bool any = false;
    for (const json& p : processes) {
      const std::string t = p.value("type", "compute");
      if (t.find(type) == std::string::npos) continue;
      if (!any) {
        box.Section(v == View::kProcess ? std::string("Process Utilization")
                                        : std::string(type[0] == 'c' ? "Compute" : "Graphics") +
                                              " Process Utilization");
      }
      any = true;
      box.Row("PID", std::to_string(p.value("pid", 0u)));
      box.Row("    Avg SM Utilization (%)", Num(At(p, "sm_utilization_mean_percent")));
      box.Row("    Avg Memory Utilization (%)", Num(At(p, "memory_utilization_mean_percent")));
    }
    if (v == View::kProcess && any) break;  // one process: one section
  }
  HealthRows(box, g, true);
  fmt::print("{}", box.Render());
}

// Without -v: the job (or process) over all its GPUs, as dcgmi's "Summary" box: energy, events
// and slowdowns summed over the GPUs, power as the sum of the GPUs' means, the worst health.
void SummaryBox(const json& window, const json& gpus, View v) {
  DcgmiBox box(34);
  box.Title("Summary");
  std::size_t procs = 0;
  std::string health = "healthy";
  double max_mem = -1, power = 0, energy = 0;
  std::uint64_t sbe = 0, dbe = 0, replays = 0, xids = 0;
  bool sbe_known = false, dbe_known = false, replays_known = false, power_known = false,
       energy_known = false;
  json slowdown = nullptr;
  auto add = [](const json& v, std::uint64_t& sum, bool& known) {
    if (v.is_number()) sum += v.get<std::uint64_t>(), known = true;
  };
  for (const json& g : gpus) {
    procs += v == View::kProcess ? g.value("conflicting_pids", json::array()).size()
                                 : g.value("processes", json::array()).size();
    const json& mem = v == View::kProcess && !g.value("processes", json::array()).empty()
                          ? At(At(g, "processes")[0], "max_memory_bytes")
                          : At(g, "max_memory_used_bytes");
    if (mem.is_number()) max_mem = std::max(max_mem, mem.get<double>());
    if (At(g, "energy_joules").is_number())
      energy += At(g, "energy_joules").get<double>(), energy_known = true;
    if (At(At(g, "power_watts"), "mean").is_number())
      power += At(At(g, "power_watts"), "mean").get<double>(), power_known = true;
    add(At(g, "ecc_sbe_errors"), sbe, sbe_known);
    add(At(g, "ecc_dbe_errors"), dbe, dbe_known);
    add(At(g, "pcie_replays"), replays, replays_known);
    xids += g.value("xid_errors", json::array()).size();
    if (At(g, "slowdown_percent").is_object()) {
      if (slowdown.is_null()) slowdown = json::object();
      for (const auto& [label, key] : kSlowdowns) {
        const json& x = At(At(g, "slowdown_percent"), key);
        if (!x.is_number()) continue;
        slowdown[key] = slowdown.value(key, 0.0) + x.get<double>();
      }
    }
    std::string h = g.value("overall_health", "healthy");
    if (h == "failure" || (h == "warning" && health == "healthy")) health = h;
  }
  ExecutionRows(box, window, v, std::to_string(procs));
  box.Section("Performance Stats");
  box.Row("Energy Consumed (Joules)", energy_known ? fmt::format("{:.0f}", energy) : "N/A");
  if (v == View::kJob)
    box.Row("Power Usage (Watts)",
            power_known ? fmt::format("Avg: {:.0f}, Max: N/A, Min: N/A", power) : "Avg: N/A, Max: N/A, Min: N/A");
  box.Row(Star(v, "Max GPU Memory Used (bytes)"), max_mem < 0 ? "N/A" : fmt::format("{:.0f}", max_mem));
  box.Row("Clocks and PCIe Performance", "Available per GPU in verbose mode");
  box.Section("Event Stats");
  if (v == View::kJob) box.Row("Single Bit ECC Errors", sbe_known ? std::to_string(sbe) : "N/A");
  box.Row("Double Bit ECC Errors", dbe_known ? std::to_string(dbe) : "N/A");
  box.Row("PCIe Replay Warnings", replays_known ? std::to_string(replays) : "N/A");
  box.Row("Critical XID Errors", std::to_string(xids));
  SlowdownRows(box, slowdown);
  HealthRows(box, json{{"overall_health", health}}, false);
  fmt::print("{}", box.Render());
}

int Report(const AgentReply& r) {
  fmt::print(stderr, "gpulse stats: {}\n", ReplyError(r));
  return r.status == 400 || r.status == 404 || r.status == 409 ? kExitUsage : kExitFailure;
}

int Run(const StatsOptions& o) {
  int actions = o.enable + !o.start.empty() + !o.stop.empty() + !o.job.empty() + o.pid.has_value() +
                !o.remove.empty() + o.list;
  if (actions != 1) {
    fmt::print(stderr,
               "gpulse stats: give one of -e, -s JOB, -x JOB, -j JOB, -p PID, -r JOB, --list\n");
    return kExitUsage;
  }
  const std::string host = ResolveAgentHost(o.host);
  const int group = o.group.value_or(0);
  Result<AgentReply> r = Error{ErrorCode::kInternal, ""};
  int want = 200;
  if (o.enable) {
    json body{{"group", group}, {"update_ms", o.update_ms}, {"keep_age_s", o.keep_age_s}};
    r = CallAgent(host, "POST", "/api/v1/stats", body.dump());
    want = 201;
  } else if (!o.start.empty()) {
    r = CallAgent(host, "POST", "/api/v1/jobs", json{{"id", o.start}, {"group", group}}.dump());
    want = 201;
  } else if (!o.stop.empty()) {
    r = CallAgent(host, "POST", "/api/v1/jobs/" + net::PercentEncode(o.stop) + "/stop");
  } else if (!o.job.empty()) {
    r = CallAgent(host, "GET", "/api/v1/jobs/" + net::PercentEncode(o.job));
  } else if (!o.remove.empty()) {
    r = CallAgent(host, "DELETE", "/api/v1/jobs/" + net::PercentEncode(o.remove));
  } else if (o.list) {
    r = CallAgent(host, "GET", "/api/v1/jobs");
  } else {
    r = CallAgent(
        host, "GET",
        "/api/v1/processes/" + std::to_string(*o.pid) + "?group=" + std::to_string(group));
  }
  if (!r) {
    fmt::print(stderr, "gpulse stats: {}\n", r.error().message);
    return kExitFailure;
  }
  if (r->status != want) return Report(*r);
  const json& j = r->json;
  if (o.out.machine()) return PrintAnswer(o.out, j, {"jobs", "gpus"}), kExitOk;
  if (o.enable) return fmt::print("Successfully started process watches.\n"), kExitOk;
  if (!o.start.empty())
    return fmt::print("Successfully started recording stats for {}.\n", o.start), kExitOk;
  if (!o.stop.empty())
    return fmt::print("Successfully stopped recording stats for {}.\n", o.stop), kExitOk;
  if (!o.remove.empty()) return fmt::print("Successfully removed job {}.\n", o.remove), kExitOk;
  if (o.list) {
    fmt::print("{:<24} {:>6} {:>8} {:>26} {:>26}\n", "JOB", "GROUP", "STATE", "START", "END");
    for (const json& x : j["jobs"]) {
      fmt::print("{:<24} {:>6} {:>8} {:>26} {:>26}\n", x["id"].get<std::string>(),
                 x["group"].get<int>(), x["running"].get<bool>() ? "running" : "stopped",
                 Time(x["start_unix_ns"]), Time(x["stop_unix_ns"]));
    }
    return kExitOk;
  }
  if (o.pid) {
    fmt::print("Successfully retrieved process info for PID: {}. Process ran on {} GPUs.\n", *o.pid,
               At(j, "gpus").size());
    json window{
        {"start_unix_ns", At(j, "first_seen_unix_ns")},
        {"stop_unix_ns", At(j, "last_seen_unix_ns")},
        {"duration_s", At(j, "last_seen_unix_ns").is_number() && At(j, "first_seen_unix_ns").is_number()
                           ? json((At(j, "last_seen_unix_ns").get<double>() -
                                   At(j, "first_seen_unix_ns").get<double>()) / 1e9)
                           : json(nullptr)}};
    if (o.verbose) {
      for (const json& g : At(j, "gpus")) GpuBox(window, g, View::kProcess);
    } else {
      SummaryBox(window, At(j, "gpus"), View::kProcess);
    }
    fmt::print("(*) Represents a process statistic. Otherwise device statistic during\n"
               "    process lifetime listed.\n");
    return kExitOk;
  }
  fmt::print("Successfully retrieved statistics for job: {}.\n", o.job);
  for (const json& n : At(j, "notes")) fmt::print("Note: {}\n", n.get<std::string>());
  if (o.verbose) {
    for (const json& g : At(j, "gpus")) GpuBox(j, g, View::kJob);
  } else {
    SummaryBox(j, At(j, "gpus"), View::kJob);
  }
  return kExitOk;
}

}  // namespace

Subcommand SetupStats(CLI::App& parent) {
  auto o = std::make_shared<StatsOptions>();
  CLI::App* app = parent.add_subcommand(
      "stats", "Job and process statistics from the agent, like dcgmi stats (see docs/agent.md)");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group (default: 0, every GPU)");
  app->add_flag("-e,--enable", o->enable, "Enable process watches on the group");
  app->add_option("-u,--update-interval", o->update_ms, "With -e: update interval in ms")
      ->capture_default_str()
      ->check(CLI::Range(10, 3'600'000));
  app->add_option("-m,--max-keep-age", o->keep_age_s, "With -e: seconds of history kept")
      ->capture_default_str()
      ->check(CLI::Range(1, 30 * 86'400));
  app->add_option("-s,--jstart", o->start, "Start recording a job on the group");
  app->add_option("-x,--jstop", o->stop, "Stop recording a job");
  app->add_option("-j,--job", o->job, "Show a job's statistics");
  app->add_option("-p,--pid", o->pid, "Show a process's statistics");
  app->add_option("-r,--jremove", o->remove, "Remove a job's record");
  app->add_flag("--list", o->list, "List the jobs");
  app->add_flag("-v,--verbose", o->verbose, "Per GPU (with -j or -p)");
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
