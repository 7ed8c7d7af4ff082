// `gpulse dmon`: one row per device per tick, like `dcgmi dmon`. Fixed cadence on the monotonic
// clock, late ticks skipped, N/A for absent readings, Ctrl-C ends cleanly. With --since, the rows
// come from a node agent's history instead (docs/agent.md), printed the same way.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/agent_client.h"
#include "cli/gpu_options.h"
#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "gpu/registry.h"
#include "net/http_util.h"
#include "sampling/ticker.h"

namespace gpulse::cli {
namespace {

// The default columns, nvidia-smi dmon's "puc" plus memory and clocks.
constexpr const char* kDefaultFields = "155,150,140,203,204,206,207,252,100,101";

struct DmonOptions {
  gpu::BackendOptions gpu;
  std::string fields = kDefaultFields;
  int delay_ms = 1000;
  long long count = 0;  // 0 = until interrupted
  std::string devices;  // "" = all
  std::string format = "table";
  std::string timestamps;  // -o: "D", "T" or "DT" (nvidia-smi dmon's), table only
  bool no_header = false;
  // History from an agent.
  std::string host;
  std::string since, until;
  std::string group;
};

std::atomic<bool> g_stop{false};
extern "C" void OnSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the ticker's sleep must wake up
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const char* StateName(const Entity& e, const Sample& s) {
  if (e.state == EntityState::kSkipped) return "skipped";
  return s.state == DeviceState::kLost || e.state == EntityState::kLost ? "lost" : "ok";
}

class Printer {
 public:
  Printer(const DmonOptions& o, const SystemInfo& info, std::vector<FieldIndex> fields)
      : o_(o), info_(info), fields_(std::move(fields)) {}

  void Header() const {
    if (o_.no_header || o_.format == "json") return;
    if (o_.format == "csv") {
      std::string line = "timestamp_unix,gpu,gpu_instance_id,gpu_instance_profile,uuid,state";
      for (FieldIndex f : fields_) line += "," + std::string(FieldAt(f).name);
      fmt::print("{}\n", line);
      return;
    }
    std::string names = StampHeader() + fmt::format("{:<14}", Stamped() ? "Entity" : "#Entity");
    std::string units = StampUnits() + fmt::format("{:<14}", "ID");
    for (FieldIndex f : fields_) {
      names += fmt::format(" {:>10}", FieldAt(f).short_name);
      units += fmt::format(" {:>10}", UnitSymbol(FieldAt(f).unit));
    }
    fmt::print("{}\n{}\n", names, units);
  }

  // `last_xid`: the last XID the GPU raised, which a lost GPU keeps showing (issue 40: a lost row
  // showed XIDER N/A though the GPU had raised XID 79 as it fell off).
  void Row(const Entity& e, const Sample& s, std::optional<double> last_xid) const {
    const char* state = StateName(e, s);
    bool ok = std::string_view(state) == "ok";
    const bool lost = std::string_view(state) == "lost";
    auto value = [&](FieldIndex f) -> std::optional<double> {
      if (lost && FieldAt(f).nvml == NvmlSource::kLastXid) return last_xid;
      return ok && f < s.values.size() ? s.values[f] : std::nullopt;
    };
    if (o_.format == "json") {
      nlohmann::json values = nlohmann::json::object();
      for (FieldIndex f : fields_) {
        auto v = value(f);
        values[std::string(FieldAt(f).name)] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      }
      nlohmann::json row{{"timestamp_unix", s.t_unix_ns / 1e9},
                         {"gpu", e.gpu},
                         {"uuid", e.uuid},
                         {"state", state},
                         {"simulated", info_.simulated},
                         {"fields", values}};
      if (e.kind != EntityKind::kGpu) {
        row["gpu_instance_id"] = *e.gpu_instance_id;
        row["gpu_instance_profile"] = e.profile;
      }
      if (!ok) row["reason"] = e.reason.empty() ? "the driver answered GPU_IS_LOST" : e.reason;
      if (lost && e.lost_unix_ns) row["lost_unix"] = *e.lost_unix_ns / 1e9;
      fmt::print("{}\n", row.dump());
      return;
    }
    if (o_.format == "csv") {
      std::string gi = e.gpu_instance_id ? std::to_string(*e.gpu_instance_id) : "";
      std::string line = fmt::format("{:.3f},{},{},{},{},{}", s.t_unix_ns / 1e9, e.gpu, gi,
                                     e.profile, e.uuid, state);
      for (FieldIndex f : fields_) line += "," + FormatValue(FieldAt(f), value(f));
      fmt::print("{}\n", line);
      return;
    }
    std::string line = Stamp(s.t_unix_ns) + fmt::format("{:<14}", EntityLabel(e));
    for (FieldIndex f : fields_) line += fmt::format(" {:>10}", FormatValue(FieldAt(f), value(f)));
    if (!ok) line += std::string("  (GPU ") + state + ")";
    fmt::print("{}\n", line);
  }

 private:
  bool Stamped() const { return !o_.timestamps.empty(); }
  bool Date() const { return o_.timestamps.find('D') != std::string::npos; }
  bool Clock() const { return o_.timestamps.find('T') != std::string::npos; }

  // nvidia-smi dmon -o DT's leading columns: the reading's local date (YYYYMMDD) and time.
  std::string StampHeader() const {
    if (!Stamped()) return "";
    return std::string("#") + (Date() ? "Date      " : "") + (Clock() ? "Time      " : "");
  }
  std::string StampUnits() const {
    if (!Stamped()) return "";
    return std::string(" ") + (Date() ? "YYYYMMDD  " : "") + (Clock() ? "HH:MM:SS  " : "");
  }
  std::string Stamp(std::int64_t unix_ns) const {
    if (!Stamped()) return "";
    const std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char date[16], clock[16];
    std::strftime(date, sizeof date, "%Y%m%d", &tm);
    std::strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    return std::string(" ") + (Date() ? std::string(date) + "  " : "") +
           (Clock() ? std::string(clock) + "  " : "");
  }

  const DmonOptions& o_;
  const SystemInfo& info_;
  std::vector<FieldIndex> fields_;
};

// The rows dmon prints: GPUs and GPU instances (compute instances have no readings of their own
// yet), and GPUs that are skipped or lost, which keep a row with their state.
std::vector<std::size_t> Rows(const std::vector<Entity>& entities,
                              const std::vector<std::size_t>& selected) {
  std::vector<std::size_t> out;
  for (std::size_t pos : selected) {
    // A compute instance is shown through its GPU instance, where its readings live.
    std::size_t row = entities[pos].kind == EntityKind::kComputeInstance
                          ? entities[pos].parent.value_or(pos)
                          : pos;
    if (std::find(out.begin(), out.end(), row) == out.end()) out.push_back(row);
  }
  return out;
}

// A row of the agent's history answer as the entity and sample the live printer takes.
void FromRow(const nlohmann::json& row, const std::vector<FieldIndex>& fields, Entity& e,
             Sample& s) {
  e = Entity{};
  e.gpu = row.value("gpu", 0u);
  e.uuid = row.value("uuid", "");
  if (row.contains("gpu_instance_id")) {
    e.kind = EntityKind::kGpuInstance;
    e.gpu_instance_id = row["gpu_instance_id"].get<unsigned>();
    e.profile = row.value("gpu_instance_profile", "");
  }
  std::string state = row.value("state", "present");
  e.state = state == "lost"      ? EntityState::kLost
            : state == "skipped" ? EntityState::kSkipped
                                 : EntityState::kPresent;
  s.values.assign(AllFields().size(), std::nullopt);
  s.state = e.state == EntityState::kLost ? DeviceState::kLost : DeviceState::kOk;
  s.t_unix_ns = row.value("t_unix_ms", std::int64_t{0}) * 1'000'000;
  const auto& values = row["values"];
  for (std::size_t i = 0; i < fields.size() && i < values.size(); ++i) {
    if (values[i].is_number()) s.values[fields[i]] = values[i].get<double>();
  }
}

int RunHistory(const DmonOptions& o, const std::vector<FieldIndex>& fields) {
  std::string ids;
  for (FieldIndex f : fields) ids += (ids.empty() ? "" : ",") + std::to_string(FieldAt(f).id);
  std::string target = "/api/v1/history?format=rows&fields=" + ids;
  if (!o.since.empty()) target += "&since=" + net::PercentEncode(o.since);
  if (!o.until.empty()) target += "&until=" + net::PercentEncode(o.until);
  if (!o.devices.empty()) target += "&entities=" + net::PercentEncode(o.devices);
  if (!o.group.empty()) target += "&group=" + net::PercentEncode(o.group);
  std::string host = ResolveAgentHost(o.host);
  auto reply = CallAgent(host, "GET", target);
  if (!reply) {
    fmt::print(stderr, "gpulse dmon: {}\n", reply.error().message);
    return kExitFailure;
  }
  if (reply->status != 200 || !reply->json.is_object()) {
    fmt::print(stderr, "gpulse dmon: the agent at {}: {}\n", host, ReplyError(*reply));
    return reply->status == 400 || reply->status == 404 ? kExitUsage : kExitFailure;
  }
  SystemInfo info;
  info.simulated = reply->json.value("simulated", false);
  if (info.simulated && reply->json["scenario"].is_string())
    info.scenario = reply->json["scenario"];
  if (info.simulated && o.format == "table") {
    fmt::print("# simulated GPUs: scenario {}\n", info.scenario);
  }
  Printer printer(o, info, fields);
  printer.Header();
  Entity e;
  Sample s;
  const FieldIndex xid = *IndexOf(230);
  for (const auto& row : reply->json["rows"]) {
    FromRow(row, fields, e, s);
    printer.Row(e, s, s.values[xid]);
  }
  return kExitOk;
}

int Run(const DmonOptions& o) {
  auto fields = ParseFieldList(o.fields);
  if (!fields) {
    fmt::print(stderr, "gpulse dmon: -e: {}\n", fields.error().message);
    return kExitUsage;
  }
  if (!o.since.empty() || !o.until.empty()) return RunHistory(o, *fields);
  if (!o.host.empty() || !o.group.empty()) {
    fmt::print(stderr,
               "gpulse dmon: --host and -g read an agent's history: give --since (and "
               "--until); live rows are read from the GPUs directly\n");
    return kExitUsage;
  }
  if (Status s = CheckProcfsOption(o.gpu.procfs_root); !s.ok()) {
    fmt::print(stderr, "gpulse dmon: {}\n", s.error().message);
    return kExitUsage;
  }
  auto backend = gpu::OpenBackend(o.gpu);
  if (!backend) {
    fmt::print(stderr, "gpulse dmon: {}\n", backend.error().message);
    return backend.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  gpu::Backend& b = **backend;
  const SystemInfo& info = b.info();
  std::vector<Entity> entities = BuildEntities(info);
  for (const auto& s : info.skipped) {
    fmt::print(stderr, "gpulse dmon: GPU {} {}: {}\n", s.index,
               s.lost ? "lost before start" : "skipped", s.reason);
  }
  auto selected = SelectEntities(entities, o.devices);
  if (!selected) {
    fmt::print(stderr, "gpulse dmon: -i: {}\n", selected.error().message);
    return kExitUsage;
  }
  std::vector<std::size_t> rows = Rows(entities, *selected);
  if (info.simulated && o.format == "table") {
    fmt::print("# simulated GPUs: scenario {}\n", info.scenario);
  }
  b.PrimeProfiling(*fields);  // the first row has the profiling fields (waits 100 ms once)
  Printer printer(o, info, *fields);
  printer.Header();
  std::fflush(stdout);

  InstallSignalHandlers();
  sampling::Ticker ticker(static_cast<std::int64_t>(o.delay_ms) * 1'000'000, &g_stop);
  Sample sample;
  std::vector<std::optional<double>> last_xid(entities.size());
  const FieldIndex xid_field = *IndexOf(230);
  for (long long done = 0; o.count == 0 || done < o.count; ++done) {
    if (ticker.Next() < 0) break;
    for (std::size_t pos : rows) {
      Entity& e = entities[pos];
      gpu::ReadEntity(b, e, *fields, sample);
      if (xid_field < sample.values.size() && sample.values[xid_field])
        last_xid[pos] = sample.values[xid_field];
      if (!sample.xid_events.empty())  // a lost GPU's XIDs up to and at the loss come as events
        last_xid[pos] = static_cast<double>(sample.xid_events.back());
      if (sample.state == DeviceState::kLost && e.kind == EntityKind::kGpu &&
          MarkLost(entities, pos, sample.t_unix_ns, "the driver answered GPU_IS_LOST")) {
        fmt::print(stderr, "gpulse dmon: GPU {} lost at {:.3f}: {}\n", e.gpu,
                   sample.t_unix_ns / 1e9, e.reason);
      }
      printer.Row(e, sample, last_xid[pos]);
    }
    std::fflush(stdout);
  }
  if (ticker.skipped() > 0) {
    fmt::print(stderr, "gpulse dmon: {} late tick(s) skipped\n", ticker.skipped());
  }
  return kExitOk;
}

}  // namespace

Subcommand SetupDmon(CLI::App& parent) {
  auto o = std::make_shared<DmonOptions>();
  CLI::App* app =
      parent.add_subcommand("dmon", "Print field values per device per tick, like dcgmi dmon");
  AddGpuOptions(*app, o->gpu);
  AddProcfsOption(*app, o->gpu.procfs_root);
  app->add_option("-e,--fields", o->fields,
                  "Fields: DCGM ids or names, comma-separated (see `gpulse fields`)")
      ->capture_default_str();
  app->add_option("-d,--delay", o->delay_ms, "Tick period in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400'000));
  app->add_option("-c,--count", o->count, "Number of ticks (0: until interrupted)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_option("-i,--devices", o->devices,
                  "GPUs or MIG instances, comma-separated: index, GPU-/MIG- UUID, gpu:gi or "
                  "gpu:gi:ci (default: all)");
  app->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "csv", "json"}));
  app->add_flag("--no-header", o->no_header, "Omit the header lines (table and csv)");
  app->add_option("-o,--timestamps", o->timestamps,
                  "Table: lead each row with its reading's local date (D, YYYYMMDD), time (T, "
                  "HH:MM:SS) or both (DT), as nvidia-smi dmon -o does (csv and json always have "
                  "timestamp_unix)")
      ->check(CLI::IsMember({"D", "T", "DT", "TD"}));
  AddHostOption(*app, o->host);
  app->add_option("--since", o->since,
                  "Print the agent's history from then (2h, 90m, 1d, now, or unix seconds) instead "
                  "of reading the GPUs");
  app->add_option("--until", o->until, "End of the history range (default: now)");
  app->add_option("-g,--group", o->group,
                  "The agent's group whose entities to print (with --since)");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
