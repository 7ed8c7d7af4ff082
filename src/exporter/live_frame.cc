#include "exporter/live_frame.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "identity/attribution.h"

namespace gpulse::exporter {
namespace {

using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

// Field ids the frame reads: utilization, frame buffer used and total, power, enforced power
// limit, GPU temperature, SM and memory clocks.
constexpr std::array<FieldId, 8> kLiveIds = {203, 252, 250, 155, 164, 150, 100, 101};

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json Str(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::optional<double> Value(const Sample& s, FieldId id) {
  auto i = IndexOf(id);
  if (!i || *i >= s.values.size()) return std::nullopt;
  return s.values[*i];
}

std::optional<double> Scaled(std::optional<double> v, double factor) {
  if (v) *v *= factor;
  return v;
}

template <typename T>
std::optional<double> AsDouble(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

json HistoryJson(const std::deque<std::optional<double>>& points) {
  json a = json::array();
  for (const auto& p : points) a.push_back(Num(p));
  return a;
}

}  // namespace

std::span<const FieldIndex> LiveFields() {
  static const std::vector<FieldIndex> fields = [] {
    std::vector<FieldIndex> out;
    for (FieldId id : kLiveIds)
      if (auto i = IndexOf(id)) out.push_back(*i);
    return out;
  }();
  return fields;
}

FrameBuilder::FrameBuilder(const SystemInfo& info, std::vector<Entity> entities,
                           std::optional<sys::RootedFs> proc, std::size_t history_points)
    : info_(info),
      entities_(std::move(entities)),
      proc_(std::move(proc)),
      history_points_(std::max<std::size_t>(history_points, 1)),
      history_(entities_.size()) {}

void FrameBuilder::Remember(std::size_t pos, std::optional<double> util,
                            std::optional<double> power) {
  History& h = history_[pos];
  h.util.push_back(util);
  h.power.push_back(power);
  while (h.util.size() > history_points_) h.util.pop_front();
  while (h.power.size() > history_points_) h.power.pop_front();
}

void FrameBuilder::MarkGaps(std::int64_t t_unix_ns, double interval_s) {
  if (last_t_unix_ns_ != 0 && interval_s > 0 && t_unix_ns > last_t_unix_ns_) {
    const double intervals = (t_unix_ns - last_t_unix_ns_) / (interval_s * 1e9);
    const auto missed = static_cast<std::size_t>(
        std::clamp(std::llround(intervals) - 1, 0LL, static_cast<long long>(history_points_)));
    for (std::size_t pos = 0; pos < history_.size(); ++pos)
      for (std::size_t i = 0; i < missed; ++i) Remember(pos, std::nullopt, std::nullopt);
  }
  last_t_unix_ns_ = t_unix_ns;
}

json FrameBuilder::EntityJson(std::size_t pos, const Snapshot& snap) {
  const Entity& e = entities_[pos];
  const Sample* s = pos < snap.entities.size() ? &snap.entities[pos].sample : nullptr;
  const bool lost = e.state == EntityState::kLost || (s && s->state == DeviceState::kLost);
  const bool skipped = e.state == EntityState::kSkipped && !lost;
  const bool readings = s != nullptr && !lost && !skipped;
  auto read = [&](FieldId id) { return readings ? Value(*s, id) : std::nullopt; };

  std::optional<double> used = read(252), total = read(250), limit = read(164);
  const DeviceInfo* d = e.device_pos ? &info_.devices[*e.device_pos] : nullptr;
  std::optional<double> max_sm, max_mem;
  if (d != nullptr && e.kind == EntityKind::kGpu && !lost && !skipped) {
    if (!total) total = Scaled(AsDouble(d->memory_total_bytes), 1 / kMiB);
    if (!limit) limit = d->power_limit_watts;
    max_sm = AsDouble(d->max_sm_clock_mhz);
    max_mem = AsDouble(d->max_memory_clock_mhz);
  }
  if (d != nullptr && e.kind == EntityKind::kGpuInstance && e.mig_pos && !total && !lost &&
      *e.mig_pos < d->mig_instances.size()) {
    total = Scaled(AsDouble(d->mig_instances[*e.mig_pos].memory_total_bytes), 1 / kMiB);
  }
  auto bytes = [](std::optional<double> mib) { return Scaled(mib, kMiB); };
  const std::optional<double> util = read(203), power = read(155);
  Remember(pos, util, power);
  std::string reason = e.reason;
  if (lost && reason.empty()) reason = "the driver answered GPU_IS_LOST";
  const char* state = lost ? "lost" : skipped ? "skipped" : "ok";
  json action = nullptr;  // what the GPU's pending faults call for (docs/faults.md)
  if (s != nullptr && s->recommended_action && s->recommended_action->action != "NONE") {
    const XidAction& a = *s->recommended_action;
    action = {{"action", a.action}, {"xid", a.xid}, {"description", a.description}};
  }
  return {{"entity", pos},
          {"kind", EntityKindName(e.kind)},
          {"gpu", e.gpu},
          {"gpu_instance_id", e.gpu_instance_id ? json(*e.gpu_instance_id) : json(nullptr)},
          {"profile", Str(e.profile)},
          {"name", Str(e.name)},
          {"uuid", Str(e.uuid)},
          {"pci_bus_id", Str(e.pci_bus_id)},
          {"state", state},
          {"reason", lost || skipped ? Str(reason) : json(nullptr)},
          {"recommended_action", action},
          {"utilization_percent", Num(util)},
          {"memory_used_bytes", Num(bytes(used))},
          {"memory_total_bytes", Num(bytes(total))},
          {"power_watts", Num(power)},
          {"power_limit_watts", Num(limit)},
          {"temperature_celsius", Num(read(150))},
          {"sm_clock_mhz", Num(read(100))},
          {"sm_clock_max_mhz", Num(max_sm)},
          {"memory_clock_mhz", Num(read(101))},
          {"memory_clock_max_mhz", Num(max_mem)},
          {"history",
           {{"utilization_percent", HistoryJson(history_[pos].util)},
            {"power_watts", HistoryJson(history_[pos].power)}}}};
}

json FrameBuilder::ProcessesJson(const Snapshot& snap, std::string& note) const {
  json out = json::array();
  if (snap.processes.empty()) {
    note = "no process list in this read";
    return out;
  }
  identity::PsReport report = identity::Attribute(
      info_, snap.processes, identity::ReadListedProcesses(snap.processes, proc_));
  for (const identity::DeviceProcesses& d : report.devices) {
    if (d.error.empty()) continue;
    if (!note.empty()) note += "; ";
    note += "GPU " + std::to_string(d.index) + ": " + d.error;
  }
  if (!proc_ && !report.rows.empty()) {
    if (!note.empty()) note += "; ";
    note += "simulated PIDs: no procfs tree, so no user or command";
  }
  for (const identity::PsRow& r : report.rows) {
    const auto& cg = r.process.cgroup;
    json container = nullptr, pod = nullptr;
    if (cg && cg->container) container = cg->container->id.substr(0, 12);
    if (cg && cg->pod) pod = cg->pod->uid;
    out.push_back(
        {{"pid", r.gpu.pid},
         {"user", r.process.user ? json(*r.process.user) : json(nullptr)},
         {"gpu", r.gpu_index},
         {"gpu_instance_id", r.gpu.gpu_instance_id ? json(*r.gpu.gpu_instance_id) : json(nullptr)},
         {"memory_bytes", Num(AsDouble(r.gpu.used_memory_bytes))},
         {"sm_percent", Num(r.gpu.sm_util)},
         {"container", container},
         {"pod", pod},
         {"command", r.process.name ? json(*r.process.name) : json(nullptr)}});
  }
  return out;
}

json FrameBuilder::Build(const Snapshot& snap, const FrameContext& c) {
  std::int64_t t_unix_ns = 0;
  for (const DeviceReading& r : snap.entities) t_unix_ns = std::max(t_unix_ns, r.sample.t_unix_ns);
  MarkGaps(t_unix_ns, c.interval_s);
  json entities = json::array();
  for (std::size_t pos = 0; pos < entities_.size(); ++pos) {
    const Entity& e = entities_[pos];
    if (e.kind == EntityKind::kComputeInstance) continue;  // no readings of its own
    entities.push_back(EntityJson(pos, snap));
  }
  std::string note;
  json processes = ProcessesJson(snap, note);
  return {{"format", kLiveFrameFormat},
          {"seq", ++seq_},
          {"timestamp_unix", t_unix_ns / 1e9},
          {"interval_seconds", c.interval_s},
          {"source", c.source},
          {"hostname", c.hostname},
          {"simulated", info_.simulated},
          {"scenario", info_.simulated ? json(info_.scenario) : json(nullptr)},
          {"viewers", c.viewers ? json(*c.viewers) : json(nullptr)},
          {"dropped_frames_total", c.dropped_frames_total},
          {"history_points", history_points_},
          {"entities", std::move(entities)},
          {"processes", std::move(processes)},
          {"process_note", note.empty() ? json(nullptr) : json(note)}};
}

}  // namespace gpulse::exporter
