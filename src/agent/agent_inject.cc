// `gpulse inject` on the agent (docs/faults.md, "Fault injection"): raises a fault on a simulated
// GPU now, through the simulator (NVML's events and counters) and, for Xids, as the driver's line
// in the kernel-log file the agent reads (--kmsg), so both sources and their de-duplication are
// exercised. On the worker thread.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/agent.h"
#include "agent/api_util.h"
#include "core/clock.h"
#include "core/xid_catalogue.h"
#include "faults/xid_line.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxText = 400;

struct InjectRequest {
  std::string kind;
  std::size_t pos = 0;
  std::uint64_t xid = 0;
  std::string message;
  std::optional<std::uint32_t> pid;
  std::string process;
  bool nvml = true, kernel_log = true;
  std::int64_t sbe = 0, dbe = 0;
  double duration_s = 10;
};

// A single line of text without the separators the driver's line uses around the process.
Result<std::string> Text(const json& body, const char* key, std::size_t max) {
  if (!body.contains(key)) return std::string();
  const json& v = body[key];
  if (!v.is_string()) return InvalidArgument(fmt::format("inject: '{}' must be a string", key));
  std::string s = v.get<std::string>();
  if (s.size() > max || s.find_first_of("\n\r") != std::string::npos) {
    return InvalidArgument(
        fmt::format("inject: '{}' must be one line of at most {} bytes", key, max));
  }
  return s;
}

Status Sources(const json& body, InjectRequest& r) {
  if (!body.contains("sources")) return Status::Ok();
  const json& s = body["sources"];
  if (!s.is_array() || s.empty()) {
    return InvalidArgument(
        "inject: 'sources' must be a non-empty array of \"nvml\", \"kernel_log\"");
  }
  r.nvml = r.kernel_log = false;
  for (const json& v : s) {
    if (v == "nvml") {
      r.nvml = true;
    } else if (v == "kernel_log") {
      r.kernel_log = true;
    } else {
      return InvalidArgument("inject: unknown source " + v.dump() + " (nvml, kernel_log)");
    }
  }
  return Status::Ok();
}

Result<InjectRequest> Parse(const json& body) {
  static const char* kKnown[] = {"gpu",     "kind",    "xid", "message", "pid",
                                 "process", "sources", "sbe", "dbe",     "duration_s"};
  if (!body.is_object()) return InvalidArgument("inject: the body must be a JSON object");
  for (const auto& [k, v] : body.items()) {
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) return InvalidArgument("inject: unknown member '" + k + "'");
  }
  InjectRequest r;
  if (!body.contains("kind") || !body["kind"].is_string()) {
    return InvalidArgument("inject: 'kind' must be one of xid, ecc, thermal, power, lost");
  }
  r.kind = body["kind"].get<std::string>();
  if (r.kind != "xid" && r.kind != "ecc" && r.kind != "thermal" && r.kind != "power" &&
      r.kind != "lost") {
    return InvalidArgument("inject: unknown kind '" + r.kind +
                           "' (xid, ecc, thermal, power, lost)");
  }
  auto xid = IntField(body, "xid", -1, 0, 0xffffffffLL);
  if (!xid) return xid.error();
  if ((r.kind == "xid") != (*xid >= 0)) {
    return InvalidArgument(r.kind == "xid" ? "inject: kind xid needs 'xid', the code"
                                           : "inject: 'xid' goes with kind xid");
  }
  r.xid = *xid >= 0 ? static_cast<std::uint64_t>(*xid) : 0;
  auto message = Text(body, "message", kMaxText);
  if (!message) return message.error();
  r.message = *message;
  auto process = Text(body, "process", 64);
  if (!process) return process.error();
  r.process = *process;
  if (r.process.find(", ") != std::string::npos) {
    return InvalidArgument("inject: 'process' must not contain \", \"");
  }
  auto pid = IntField(body, "pid", 0, 1, 4'194'304);
  if (!pid) return pid.error();
  if (body.contains("pid")) r.pid = static_cast<std::uint32_t>(*pid);
  if (Status s = Sources(body, r); !s.ok()) return s.error();
  auto sbe = IntField(body, "sbe", 0, 0, 1'000'000);
  if (!sbe) return sbe.error();
  auto dbe = IntField(body, "dbe", 0, 0, 1'000'000);
  if (!dbe) return dbe.error();
  r.sbe = *sbe;
  r.dbe = *dbe;
  if ((r.kind == "ecc") != (body.contains("sbe") || body.contains("dbe"))) {
    return InvalidArgument("inject: 'sbe' and 'dbe' go with kind ecc, which needs one of them");
  }
  if (r.kind == "ecc" && r.sbe + r.dbe == 0) {
    return InvalidArgument("inject: kind ecc needs 'sbe' or 'dbe' above 0");
  }
  if (body.contains("duration_s")) {
    const json& d = body["duration_s"];
    if (r.kind != "thermal" && r.kind != "power") {
      return InvalidArgument("inject: 'duration_s' goes with kinds thermal and power");
    }
    if (!d.is_number() || d.get<double>() <= 0 || d.get<double>() > 86'400) {
      return InvalidArgument("inject: 'duration_s' must be seconds in (0, 86400]");
    }
    r.duration_s = d.get<double>();
  }
  return r;
}

// The driver's line for an Xid (faults/xid_line.h): "NVRM: Xid (PCI:0000:18:00): 95, pid=..".
std::string XidLine(const Entity& e, const InjectRequest& r, std::uint64_t xid,
                    const std::string& message) {
  auto pci = faults::ParsePciAddress(e.pci_bus_id);
  std::string line = fmt::format("NVRM: Xid (PCI:{:04x}:{:02x}:{:02x}): {}, ", pci->domain,
                                 pci->bus, pci->device, xid);
  if (r.pid) {
    line += fmt::format("pid={}, name={}, ", *r.pid, r.process.empty() ? "unknown" : r.process);
  }
  return line + message;
}

}  // namespace

Agent::Reply Agent::Inject(const json& body) {
  if (!backend_.info().simulated) {
    return Route::Error(409, "inject: faults are injected into simulated GPUs only (--simulate)");
  }
  auto req = Parse(body);
  if (!req) return Route::FromError(req.error());
  auto gpu = IntField(body, "gpu", -1, 0, 0xffff);
  if (!gpu || !body.contains("gpu")) return Route::Error(400, "inject: 'gpu' must be a GPU index");
  std::optional<std::size_t> found;
  for (std::size_t pos = 0; pos < entities_.size(); ++pos) {
    if (entities_[pos].kind == EntityKind::kGpu && entities_[pos].gpu == *gpu) found = pos;
  }
  if (!found || !entities_[*found].device_pos) {
    return Route::Error(404, fmt::format("inject: no GPU {} that the simulator can fault", *gpu));
  }
  const Entity& e = entities_[*found];
  const std::size_t device = *e.device_pos;
  InjectRequest& r = *req;
  if (r.kernel_log && options_.inject_kernel_log.empty() && r.kind != "thermal" &&
      r.kind != "power") {
    if (body.contains("sources")) {
      return Route::Error(409,
                          "inject: the agent reads no kernel-log file (--kmsg FILE), so no "
                          "line can be written to it");
    }
    r.kernel_log = false;
  }
  // What to do, in order: the simulator's faults, and the Xid the driver would log.
  std::vector<std::string> faults;
  std::optional<std::uint64_t> xid;
  std::string message = r.message;
  if (r.kind == "xid") {
    xid = r.xid;
  } else if (r.kind == "ecc") {
    faults.push_back(fmt::format("{{kind: ecc, sbe: {}, dbe: {}}}", r.sbe, r.dbe));
    if (r.dbe > 0) {
      xid = 48;  // the driver raises Xid 48 for a double-bit error
      if (message.empty()) message = "An uncorrectable double bit error (DBE) has been detected.";
    }
  } else if (r.kind == "thermal" || r.kind == "power") {
    faults.push_back(fmt::format("{{kind: throttle, reasons: [{}], duration_s: {}}}",
                                 r.kind == "thermal" ? "sw_thermal_slowdown" : "sw_power_cap",
                                 r.duration_s));
  } else {  // lost: Xid 79 first (a lost GPU takes no more faults), then the loss
    xid = 79;
    if (message.empty()) message = "GPU has fallen off the bus.";
  }
  // The Xid after the fault it reports (an ECC fault the simulator refuses leaves no Xid behind),
  // except a loss: a lost GPU takes no more faults, so its Xid 79 goes first.
  if (xid && r.nvml) {
    auto at = r.kind == "lost" ? faults.begin() : faults.end();
    faults.insert(at, fmt::format("{{kind: xid, xid: {}}}", *xid));
  }
  if (r.kind == "lost") faults.push_back("{kind: gpu_lost}");
  // The fault happens now: on a simulated clock, the simulator's time must be the agent's.
  if (clock_.simulated()) backend_.SetSimulatedClock(clock_.SimulatedSeconds(clock_.NowUnixNs()));
  json done = json::array();
  for (const std::string& f : faults) {
    if (Status s = backend_.InjectFault(device, f); !s.ok()) {
      std::string why = "inject: " + s.error().message;
      if (!done.empty()) why += " (already injected: " + done.dump() + ")";
      return Route::Error(s.error().code == ErrorCode::kInvalidArgument ? 400 : 409, why);
    }
    done.push_back(f);
  }
  json out = {{"gpu", e.gpu}, {"uuid", e.uuid}, {"kind", r.kind}, {"simulator", done}};
  if (xid && r.kernel_log) {
    if (message.empty()) {
      const XidEntry* entry = FindXid(*xid);
      message = entry != nullptr && !entry->description.empty() ? std::string(entry->description)
                                                                : "injected by gpulse";
    }
    const std::string line = XidLine(e, r, *xid, message);
    const std::int64_t usec = MonotonicNowNs() / 1000;
    const std::string record = fmt::format("4,{},{},-;{}\n", usec, usec, line);
    int fd = ::open(options_.inject_kernel_log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 ||
        ::write(fd, record.data(), record.size()) != static_cast<ssize_t>(record.size())) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return Route::Error(500, "inject: " + options_.inject_kernel_log + ": " + why +
                                   " (the simulator's part was injected: " + done.dump() + ")");
    }
    ::close(fd);
    out["kernel_log"] = line;
  }
  if (xid) out["xid"] = *xid;
  {
    std::lock_guard lock(stale_mu_);  // the next scrape reads the fault, not a snapshot before it
    if (stale_hook_) stale_hook_();
  }
  return Route::Ok(out, 201);
}

}  // namespace gpulse::agent
