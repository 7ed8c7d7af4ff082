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
  bool json = false;
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

// DCGM's slowdown rows from the clock-event reasons gpulse records (docs/agent.md).
double SlowdownPercent(const json& g, std::initializer_list<const char*> reasons,
                       double duration_ns) {
  if (!At(g, "throttle_ns").is_object() || duration_ns <= 0) return std::nan("");
  double ns = 0;
  for (const char* r : reasons) {
    if (At(g, "throttle_ns").contains(r)) ns += At(g, "throttle_ns")[r].get<double>();
  }
  return 100.0 * ns / duration_ns;
}

std::string Pct(double v) { return std::isnan(v) ? "N/A" : fmt::format("{:.0f}", v); }

std::string Health(const std::string& h) {
  if (h == "healthy") return "Healthy";
  if (h == "warning") return "Warning";
  return "Failure";
}

void GpuBox(const json& job, const json& g) {
  DcgmiBox box(34);
  box.Title("GPU ID: " + std::to_string(g.value("device_index", 0)));
  const double duration_ns = job.value("duration_s", 0.0) * 1e9;
  box.Section("Execution Stats");
  box.Row("Start Time", Time(At(job, "start_unix_ns")));
  box.Row("End Time", Time(At(job, "stop_unix_ns")));
  box.Row("Total Execution Time (sec)",
          At(job, "stop_unix_ns").is_number() ? Num(At(job, "duration_s"), 2) : "Still Running");
  box.Row("No. of Processes", std::to_string(g.value("processes", json::array()).size()));
  box.Row("Samples", std::to_string(g.value("sample_count", 0)));
  box.Section("Performance Stats");
  box.Row("Energy Consumed (Joules)", Num(At(g, "energy_joules")));
  box.Row("Power Usage (Watts)", Mmm(At(g, "power_watts")));
  box.Row("Max GPU Memory Used (bytes)", Num(At(g, "max_memory_used_bytes")));
  box.Row("SM Clock (MHz)", Mmm(At(g, "sm_clock_mhz")));
  box.Row("Memory Clock (MHz)", Mmm(At(g, "memory_clock_mhz")));
  box.Row("SM Utilization (%)", Mmm(At(g, "sm_utilization_percent")));
  box.Row("Memory Utilization (%)", Mmm(At(g, "memory_utilization_percent")));
  box.Row("PCIe Rx Bandwidth (MB/s)", Mmm(g.value("pcie_rx_bytes_per_second", json()), 1e-6));
  box.Row("PCIe Tx Bandwidth (MB/s)", Mmm(g.value("pcie_tx_bytes_per_second", json()), 1e-6));
  box.Section("Event Stats");
  box.Row("Single Bit ECC Errors", Num(At(g, "ecc_sbe_errors")));
  box.Row("Double Bit ECC Errors", Num(At(g, "ecc_dbe_errors")));
  box.Row("PCIe Replay Warnings", Num(At(g, "pcie_replays")));
  box.Row("Critical XID Errors", std::to_string(g.value("xid_errors", json::array()).size()));
  box.Section("Slowdown Stats");
  box.Row("Due to - Power (%)",
          Pct(SlowdownPercent(g, {"sw_power_cap", "hw_power_brake_slowdown"}, duration_ns)));
  box.Row("       - Thermal (%)",
          Pct(SlowdownPercent(g, {"sw_thermal_slowdown", "hw_thermal_slowdown"}, duration_ns)));
  box.Row("       - Board Limit (%)", Pct(SlowdownPercent(g, {"hw_slowdown"}, duration_ns)));
  box.Row("       - Low Utilization (%)", Pct(SlowdownPercent(g, {"gpu_idle"}, duration_ns)));
  box.Row("       - Sync Boost (%)", Pct(SlowdownPercent(g, {"sync_boost"}, duration_ns)));
  box.Section("Process Utilization");
  for (const json& p : g.value("processes", json::array())) {
    box.Row("PID", std::to_string(p.value("pid", 0u)));
    box.Row("    Avg SM Utilization (%)", Num(p["sm_utilization_mean_percent"]));
    box.Row("    Avg Memory Utilization (%)", Num(p["memory_utilization_mean_percent"]));
    box.Row("    Max GPU Memory Used (bytes)", Num(p["max_memory_bytes"]));
  }
  box.Section("Overall Health");
  box.Row("Overall Health", Health(g.value("overall_health", "")));
  for (const json& i : g.value("health_incidents", json::array()))
    box.Row("", i.get<std::string>());
  fmt::print("{}", box.Render());
}

// Without -v: the job over all its GPUs (sums of energy and events, the extremes of the ranges).
void SummaryBox(const json& job) {
  DcgmiBox box(34);
  box.Title("Summary");
  box.Section("Execution Stats");
  box.Row("Start Time", Time(At(job, "start_unix_ns")));
  box.Row("End Time", Time(At(job, "stop_unix_ns")));
  box.Row("Total Execution Time (sec)",
          At(job, "stop_unix_ns").is_number() ? Num(At(job, "duration_s"), 2) : "Still Running");
  std::size_t procs = 0;
  std::string health = "healthy";
  double max_mem = -1, max_power = -1, min_power = 1e300, power_mean = 0;
  std::uint64_t dbe = 0, replays = 0, xids = 0, power_n = 0;
  bool dbe_known = false, replays_known = false;  // N/A unless some GPU's counter was read
  for (const json& g : At(job, "gpus")) {
    procs += g.value("processes", json::array()).size();
    if (At(g, "max_memory_used_bytes").is_number())
      max_mem = std::max(max_mem, At(g, "max_memory_used_bytes").get<double>());
    if (At(g, "power_watts").is_object()) {
      max_power = std::max(max_power, At(g, "power_watts")["max"].get<double>());
      min_power = std::min(min_power, At(g, "power_watts")["min"].get<double>());
      power_mean += At(g, "power_watts")["mean"].get<double>();
      ++power_n;
    }
    if (At(g, "ecc_dbe_errors").is_number()) {
      dbe += At(g, "ecc_dbe_errors").get<std::uint64_t>();
      dbe_known = true;
    }
    if (At(g, "pcie_replays").is_number()) {
      replays += At(g, "pcie_replays").get<std::uint64_t>();
      replays_known = true;
    }
    xids += g.value("xid_errors", json::array()).size();
    std::string h = g.value("overall_health", "healthy");
    if (h == "failure" || (h == "warning" && health == "healthy")) health = h;
  }
  box.Row("No. of GPUs", std::to_string(At(job, "gpus").size()));
  box.Row("No. of Processes", std::to_string(procs));
  box.Section("Performance Stats");
  box.Row("Energy Consumed (Joules)", Num(At(job, "energy_joules")));
  box.Row("Power Usage (Watts)", power_n == 0
                                     ? "Avg: N/A, Max: N/A, Min: N/A"
                                     : fmt::format("Avg: {:.0f}, Max: {:.0f}, Min: {:.0f}",
                                                   power_mean / power_n, max_power, min_power));
  box.Row("Max GPU Memory Used (bytes)", max_mem < 0 ? "N/A" : fmt::format("{:.0f}", max_mem));
  box.Section("Event Stats");
  box.Row("Double Bit ECC Errors", dbe_known ? std::to_string(dbe) : "N/A");
  box.Row("PCIe Replay Warnings", replays_known ? std::to_string(replays) : "N/A");
  box.Row("Critical XID Errors", std::to_string(xids));
  box.Section("Overall Health");
  box.Row("Overall Health", Health(health));
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
  if (o.json) return fmt::print("{}\n", j.dump(2)), kExitOk;
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
               j["gpus"].size());
    json window{
        {"start_unix_ns", j["first_seen_unix_ns"]},
        {"stop_unix_ns", j["last_seen_unix_ns"]},
        {"duration_s",
         (j["last_seen_unix_ns"].get<double>() - j["first_seen_unix_ns"].get<double>()) / 1e9}};
    for (const json& g : j["gpus"]) GpuBox(window, g);
    return kExitOk;
  }
  fmt::print("Successfully retrieved statistics for job: {}.\n", o.job);
  for (const json& n : j["notes"]) fmt::print("Note: {}\n", n.get<std::string>());
  if (o.verbose) {
    for (const json& g : j["gpus"]) GpuBox(j, g);
  } else {
    SummaryBox(j);
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
  app->add_flag("-v,--verbose", o->verbose, "Per GPU (with -j)");
  app->add_flag("--json", o->json, "Print the agent's JSON answer");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
