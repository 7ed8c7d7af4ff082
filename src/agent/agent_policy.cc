// Policies on the agent (docs/health.md): a violation's delivery (its record, the listeners'
// stream, the alert, the GPU reset a policy asks for), its JSON, and the policy API routes. On the
// worker thread.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <ctime>

#include "agent/agent.h"
#include "agent/alert_sender.h"
#include "agent/api_util.h"
#include "agent/manage_util.h"
#include "core/xid_catalogue.h"
#include "faults/fault_backend.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxViolations = 1000;
constexpr std::size_t kListenerQueue = 4096;  // violations a slow listener may fall behind by
constexpr std::size_t kMaxListeners = 64;

std::string Rfc3339(std::int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(unix_ms % 1000));
}

// "00000000:18:00.0" (NVML) -> "0000:18:00.0" (sysfs).
std::string SysfsBusId(const std::string& nvml) {
  std::string id = nvml;
  if (id.size() == 16 && id[8] == ':') id = id.substr(4);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

}  // namespace

// ---- Violations --------------------------------------------------------------------------------

void Agent::Deliver(int group_id, std::size_t pos, health::Violation v) {
  ViolationRecord rec;
  rec.seq = ++violation_seq_;
  rec.group_id = group_id;
  rec.pos = pos;
  rec.violation = std::move(v);
  ++violation_counts_[{pos, rec.violation.condition}];
  const PolicyState& policy = policies_.at(group_id);
  // One reset per GPU per reading: several violations at once (or policies of two groups that
  // share the GPU) reset it once; the others say so.
  if (policy.spec.action == health::PolicyAction::kGpuReset &&
      last_reset_ms_[pos] == rec.violation.t_ms) {
    rec.action = {{"action", "gpu_reset"},
                  {"done", false},
                  {"error", "reset already, by a violation of the same reading"}};
  } else if (policy.spec.action == health::PolicyAction::kGpuReset) {
    last_reset_ms_[pos] = rec.violation.t_ms;
    rec.action = ResetForPolicy(pos);
    if (policy.spec.validation == health::PolicyValidation::kShort) {
      rec.validation = DiagJson(group_id);
    }
  }
  const json j = ViolationJson(rec);
  Log(fmt::format("policy violation on GPU {}: {}", entities_[pos].gpu, rec.violation.message));
  auto frame = std::make_shared<const std::string>(
      fmt::format("id: {}\nevent: violation\ndata: {}\n\n", rec.seq,
                  j.dump(-1, ' ', false, json::error_handler_t::replace)));
  std::erase_if(listeners_, [&](const Listener& l) {
    if (l.group_id != group_id) return l.stream->closed();
    const std::uint64_t before = l.stream->dropped();
    const bool open = l.stream->Push(frame);
    listener_dropped_ += l.stream->dropped() - before;
    return !open;
  });
  if (alerts_) {
    const Entity& e = entities_[pos];
    const bool xid = rec.violation.condition == health::kCondXid ||
                     rec.violation.condition == health::kCondAction;
    // An action needs a person when it is more than restarting the application.
    const ActionInfo* asked = FindAction(rec.violation.action);
    const bool critical = rec.violation.condition == health::kCondDbe ||
                          rec.violation.condition == health::kCondXid ||
                          (asked != nullptr && asked->rank >= FindAction("RESET_GPU")->rank);
    json labels = {{"alertname", "GpulsePolicyViolation"},
                   {"condition", std::string(health::ConditionKey(rec.violation.condition))},
                   {"gpu", std::to_string(e.gpu)},
                   {"UUID", e.uuid},
                   {"group", std::to_string(group_id)},
                   {"severity", critical ? "critical" : "warning"}};
    if (!options_.hostname.empty()) labels["Hostname"] = options_.hostname;
    json annotations = {{"summary", rec.violation.message},
                        {"value", fmt::format("{}", rec.violation.value)}};
    if (xid) {  // what the XID means and what to do (docs/faults.md)
      labels["xid"] = fmt::format("{}", rec.violation.value);
      if (!rec.violation.action.empty()) labels["action"] = rec.violation.action;
      if (!rec.violation.description.empty()) {
        annotations["description"] = rec.violation.description;
      }
      if (const ActionInfo* a = FindAction(rec.violation.action)) {
        annotations["action"] = std::string(a->summary);
      }
    }
    alerts_->Send({{"labels", labels},
                   {"annotations", annotations},
                   {"startsAt", Rfc3339(rec.violation.t_ms)}});
  }
  violations_.push_back(std::move(rec));
  while (violations_.size() > kMaxViolations) violations_.pop_front();
}

// A policy's GPU reset: simulated GPUs through the simulator; a real GPU only with --allow-reset,
// as root, through its PCI function's sysfs reset. The targets of its groups are applied again
// afterwards (the configuration is declarative).
json Agent::ResetForPolicy(std::size_t pos) {
  const Entity& e = entities_[pos];
  json out = {{"action", "gpu_reset"}};
  Status s = Status::Ok();
  if (backend_.info().simulated) {
    s = backend_.ResetGpu(*e.device_pos);
  } else if (!options_.allow_reset) {
    s = Error{ErrorCode::kNoPermission,
              "resetting a real GPU needs the agent's --allow-reset (it was not given)"};
  } else if (geteuid() != 0) {
    s = Error{ErrorCode::kNoPermission, "resetting a real GPU needs root"};
  } else {
    const std::string path =
        options_.sysfs_root + "/bus/pci/devices/" + SysfsBusId(e.pci_bus_id) + "/reset";
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || write(fd, "1", 1) != 1) {
      s = Error{ErrorCode::kIo, path + ": " + std::strerror(errno)};
    }
    if (fd >= 0) close(fd);
  }
  out["done"] = s.ok();
  if (!s.ok()) {
    out["error"] = s.error().message;
    Log(fmt::format("policy reset of GPU {} not done: {}", e.gpu, s.error().message));
    return out;
  }
  Log(fmt::format("GPU {} reset by a policy", e.gpu));
  // A simulated GPU's reset went through the fault layer; a real one's through sysfs: say so.
  if (!backend_.info().simulated) {
    if (faults::FaultBackend* f = faults::AsFaultBackend(backend_)) f->NoteReset(*e.device_pos);
  }
  bool refused = false;
  json applied = ApplyTargets({pos}, &refused);
  if (!applied.empty()) out["config"] = applied;
  return out;
}

// ---- Answers -----------------------------------------------------------------------------------

json Agent::ViolationJson(const ViolationRecord& r) const {
  const Entity& e = entities_[r.pos];
  json j = {{"seq", r.seq},
            {"group", r.group_id},
            {"gpu", e.gpu},
            {"uuid", e.uuid},
            {"condition", std::string(health::ConditionKey(r.violation.condition))},
            {"t_unix_ms", r.violation.t_ms},
            {"time", Rfc3339(r.violation.t_ms)},
            {"value", r.violation.value},
            {"message", r.violation.message}};
  if (!r.violation.action.empty()) j["recommended_action"] = r.violation.action;
  if (!r.violation.description.empty()) j["xid_description"] = r.violation.description;
  if (!r.action.is_null()) j["action"] = r.action;
  if (!r.validation.is_null()) j["validation"] = r.validation;
  return j;
}

// ---- Routes ------------------------------------------------------------------------------------

Agent::Reply Agent::PolicyRoute(const std::string& method, const std::vector<std::string>& path,
                                const std::map<std::string, std::string>& q, const json& body) {
  const bool get = method == "GET" || method == "HEAD";
  const std::string sub = path.size() > 1 ? path[1] : "";
  if (path.size() > 2) return Route::Error(404, "no such API path");
  auto gid_q = GroupParam(q);
  if (!gid_q) return Route::Error(400, gid_q.error().message);
  if (sub == "stream") {
    if (!get) return Route::Error(405, "use GET");
    if (!FindGroup(*gid_q)) return Route::Error(404, fmt::format("no group {}", *gid_q));
    std::erase_if(listeners_, [](const Listener& l) { return l.stream->closed(); });
    if (listeners_.size() >= kMaxListeners) {
      return Route::Error(503, fmt::format("{} policy listeners are connected, the most this agent "
                                           "serves",
                                           kMaxListeners));
    }
    Reply r;
    r.stream = std::make_shared<net::EventStream>(kListenerQueue);
    r.content_type = "text/event-stream";
    // A comment at once: the listener knows it is registered before any violation.
    r.stream->Push(std::make_shared<const std::string>(
        fmt::format(": listening for violations of group {}\n\n", *gid_q)));
    listeners_.push_back({*gid_q, r.stream});
    return r;
  }
  if (sub == "violations") {
    if (!get) return Route::Error(405, "use GET");
    std::uint64_t since = 0;
    if (auto it = q.find("since"); it != q.end()) {
      auto v = ParseId(it->second);
      if (!v) return Route::Error(400, "since \"" + it->second + "\" is not a number");
      since = static_cast<std::uint64_t>(*v);
    }
    json list = json::array();
    for (const ViolationRecord& r : violations_) {
      if (r.seq > since && (q.count("group") == 0 || r.group_id == *gid_q)) {
        list.push_back(ViolationJson(r));
      }
    }
    return Route::Ok({{"violations", list}, {"last_seq", violation_seq_}});
  }
  if (!sub.empty()) return Route::Error(404, "no such API path");
  if (get) {
    if (!FindGroup(*gid_q)) return Route::Error(404, fmt::format("no group {}", *gid_q));
    auto it = policies_.find(*gid_q);
    if (it == policies_.end()) {
      return Route::Error(404, fmt::format("group {} has no policy", *gid_q));
    }
    json p = health::PolicyToJson(it->second.spec);
    p["update_ms"] = it->second.update_ms;
    return Route::Ok({{"group", *gid_q}, {"policy", p}});
  }
  if (method == "DELETE") {
    if (Status s = db_->DeleteManagement(kPolicy, *gid_q); !s.ok())
      return Route::FromError(s.error());
    policies_.erase(*gid_q);
    (void)Replan(watches_);
    return Route::Ok({{"group", *gid_q}, {"cleared", true}});
  }
  if (method != "POST") return Route::Error(405, "use GET, POST or DELETE");
  auto group = BodyGroup(body);
  if (!group) return Route::FromError(group.error());
  const int gid = *group;
  auto update = IntField(body, "update_ms", 1000, 100, 3'600'000);
  if (!update) return Route::Error(400, update.error().message);
  json spec_json = body;
  spec_json.erase("update_ms");
  auto spec = health::PolicyFromJson(spec_json);
  if (!spec) return Route::Error(400, spec.error().message);
  json stored = health::PolicyToJson(*spec);
  stored["update_ms"] = *update;
  auto previous = policies_.find(gid);
  std::optional<PolicyState> before;
  if (previous != policies_.end()) before = previous->second;
  policies_[gid] = {*spec, *update, {}};
  Status s = Replan(watches_);
  if (s.ok()) s = PutManagement(kPolicy, gid, stored);
  if (!s.ok()) {  // the policy before it, or none
    if (before)
      policies_[gid] = *before;
    else
      policies_.erase(gid);
    (void)Replan(watches_);
    return Route::FromError(s.error());
  }
  return Route::Ok({{"group", gid}, {"policy", stored}}, 201);
}

}  // namespace gpulse::agent
