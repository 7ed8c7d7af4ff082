#include "agent/job_stats.h"

#include <algorithm>
#include <set>

#include "report/derive.h"
#include "report/run_json.h"
#include "sampling/recorder.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::int64_t kNsPerMs = 1'000'000;

std::size_t Points(const Sample& s) {
  return static_cast<std::size_t>(std::count(s.unsupported.begin(), s.unsupported.end(), false));
}

// The job fields' points of one GPU in the window, joined on their timestamps into catalogue
// samples (a field without a point at a tick is absent there, as in a record timeline).
std::map<std::int64_t, Sample> Ticks(std::size_t pos, const StatsWindow& w,
                                     const HistoryStore& history) {
  std::map<std::int64_t, Sample> ticks;
  std::vector<Point> points;
  for (FieldIndex f : JobFields()) {
    const Series* s = history.Find(SeriesKey{pos, f});
    if (s == nullptr) continue;
    points.clear();
    s->Query(w.start_unix_ns / kNsPerMs, w.end_unix_ns / kNsPerMs + 1, points);
    for (const Point& p : points) {
      auto [it, added] = ticks.try_emplace(p.t_ms);
      if (added) {
        it->second.values.assign(AllFields().size(), std::nullopt);
        it->second.unsupported.assign(AllFields().size(), true);  // here: "no point at this tick"
      }
      it->second.values[f] = p.value;
      it->second.unsupported[f] = false;
    }
  }
  // A tick is a job sample only when every job field watched there has a point at it: another
  // watch's faster or earlier ticks (the job watch may start later) would be samples without the
  // counters, and spoil first-to-last differences.
  std::size_t most = 0;
  for (const auto& [t, s] : ticks) most = std::max(most, Points(s));
  for (auto it = ticks.begin(); it != ticks.end();) {
    it = Points(it->second) < most ? ticks.erase(it) : std::next(it);
  }
  return ticks;
}

// dcgmi's conflicting processes of `pid` on `gpu`: the others seen there during its own time there.
std::set<unsigned> ConflictingPids(const Activity& activity, unsigned gpu, unsigned pid) {
  std::set<unsigned> out;
  auto self = activity.processes.find({gpu, pid});
  if (self == activity.processes.end()) return out;
  for (const auto& [k, p] : activity.processes) {
    if (p.gpu != gpu || p.pid == pid) continue;
    if (p.last_seen_unix_ns < self->second.first_seen_unix_ns ||
        p.first_seen_unix_ns > self->second.last_seen_unix_ns)
      continue;
    out.insert(p.pid);
  }
  return out;
}

json ProcessJson(const ProcessUse& p) {
  auto mean = [](double sum, std::uint64_t n) { return n == 0 ? json(nullptr) : json(sum / n); };
  return {
      {"pid", p.pid},
      {"first_seen_unix_ns", p.first_seen_unix_ns},
      {"last_seen_unix_ns", p.last_seen_unix_ns},
      {"max_memory_bytes", p.max_memory_bytes ? json(*p.max_memory_bytes) : json(nullptr)},
      {"sm_utilization_mean_percent", mean(p.sm_util_sum, p.sm_util_samples)},
      {"memory_utilization_mean_percent", mean(p.mem_util_sum, p.mem_util_samples)},
      {"gpu_instance_id", p.gpu_instance_id ? json(*p.gpu_instance_id) : json(nullptr)},
      {"compute_instance_id", p.compute_instance_id ? json(*p.compute_instance_id) : json(nullptr)},
      {"type", p.compute && p.graphics ? "compute+graphics"
               : p.graphics            ? "graphics"
                                       : "compute"}};
}

}  // namespace

std::vector<FieldIndex> JobFields() {
  std::vector<FieldIndex> f = sampling::RequiredTimelineFields();
  for (FieldIndex x : sampling::OptionalTimelineFields()) f.push_back(x);
  return f;
}

void Activity::NoteProcesses(unsigned gpu, const ProcessList& list, std::int64_t now_unix_ns) {
  if (!list.processes) return;
  for (const GpuProcess& p : *list.processes) {
    auto [it, added] = processes.try_emplace({gpu, p.pid});
    ProcessUse& u = it->second;
    if (added) {
      u.gpu = gpu;
      u.pid = p.pid;
      u.first_seen_unix_ns = now_unix_ns;
    }
    u.last_seen_unix_ns = now_unix_ns;
    if (p.used_memory_bytes)
      u.max_memory_bytes = std::max(u.max_memory_bytes.value_or(0), *p.used_memory_bytes);
    if (p.sm_util) u.sm_util_sum += *p.sm_util, ++u.sm_util_samples;
    if (p.mem_util) u.mem_util_sum += *p.mem_util, ++u.mem_util_samples;
    if (p.gpu_instance_id) u.gpu_instance_id = p.gpu_instance_id;
    if (p.compute_instance_id) u.compute_instance_id = p.compute_instance_id;
    u.compute = u.compute || p.compute;
    u.graphics = u.graphics || p.graphics;
  }
}

void Activity::NoteXids(unsigned gpu, const std::vector<std::uint64_t>& seen,
                        std::int64_t now_unix_ns) {
  for (std::uint64_t x : seen) xids.push_back({now_unix_ns, gpu, x});
  if (xids.size() > 4096) xids.erase(xids.begin(), xids.end() - 4096);
}

void Activity::Trim(std::size_t max) {
  while (processes.size() > max) {
    auto oldest =
        std::min_element(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
          return a.second.last_seen_unix_ns < b.second.last_seen_unix_ns;
        });
    processes.erase(oldest);
  }
}

json Activity::ToJson() const {
  json ps = json::array();
  for (const auto& [k, p] : processes) {
    ps.push_back({{"gpu", p.gpu},
                  {"pid", p.pid},
                  {"first", p.first_seen_unix_ns},
                  {"last", p.last_seen_unix_ns},
                  {"mem", p.max_memory_bytes ? json(*p.max_memory_bytes) : json(nullptr)},
                  {"sm", {p.sm_util_sum, p.sm_util_samples}},
                  {"mu", {p.mem_util_sum, p.mem_util_samples}},
                  {"gi", p.gpu_instance_id ? json(*p.gpu_instance_id) : json(nullptr)},
                  {"ci", p.compute_instance_id ? json(*p.compute_instance_id) : json(nullptr)},
                  {"type", (p.compute ? 1 : 0) | (p.graphics ? 2 : 0)}});
  }
  json xs = json::array();
  for (const XidSeen& x : xids) xs.push_back({x.unix_ns, x.gpu, x.xid});
  return {{"processes", ps}, {"xids", xs}};
}

Activity Activity::FromJson(const json& j) {
  Activity a;
  if (!j.is_object()) return a;
  for (const json& p : j.value("processes", json::array())) {
    ProcessUse u;
    u.gpu = p.value("gpu", 0u);
    u.pid = p.value("pid", 0u);
    u.first_seen_unix_ns = p.value("first", std::int64_t{0});
    u.last_seen_unix_ns = p.value("last", std::int64_t{0});
    if (p.contains("mem") && p["mem"].is_number())
      u.max_memory_bytes = p["mem"].get<std::uint64_t>();
    if (p.contains("sm") && p["sm"].size() == 2) {
      u.sm_util_sum = p["sm"][0].get<double>();
      u.sm_util_samples = p["sm"][1].get<std::uint64_t>();
    }
    if (p.contains("mu") && p["mu"].size() == 2) {
      u.mem_util_sum = p["mu"][0].get<double>();
      u.mem_util_samples = p["mu"][1].get<std::uint64_t>();
    }
    if (p.contains("gi") && p["gi"].is_number()) u.gpu_instance_id = p["gi"].get<unsigned>();
    if (p.contains("ci") && p["ci"].is_number()) u.compute_instance_id = p["ci"].get<unsigned>();
    // Saved before the type was kept: a compute process, as most are.
    const unsigned type =
        p.contains("type") && p["type"].is_number() ? p["type"].get<unsigned>() : 1;
    u.compute = (type & 1U) != 0;
    u.graphics = (type & 2U) != 0;
    a.processes[{u.gpu, u.pid}] = u;
  }
  for (const json& x : j.value("xids", json::array())) {
    if (x.is_array() && x.size() == 3) {
      a.xids.push_back({x[0].get<std::int64_t>(), x[1].get<unsigned>(), x[2].get<std::uint64_t>()});
    }
  }
  return a;
}

json DeriveStats(const StatsWindow& w, const HistoryStore& history,
                 const std::vector<Entity>& entities, const SystemInfo& info,
                 const Activity& activity) {
  report::Run run;
  run.info.start_unix_ns = w.start_unix_ns;
  run.devices = info.devices;
  std::map<unsigned, std::uint64_t> samples;
  std::vector<std::pair<std::int64_t, report::GpuSample>> timeline;
  for (std::size_t pos : w.gpus) {
    const Entity& e = entities.at(pos);
    for (auto& [t_ms, s] : Ticks(pos, w, history)) {
      // From the tick that found the GPU lost on, it has no readings: no samples, as in record.
      if (e.lost_unix_ns && t_ms * kNsPerMs >= *e.lost_unix_ns) continue;
      auto g = sampling::ToGpuSample(s, e.gpu, t_ms * kNsPerMs - w.start_unix_ns);
      if (!g) continue;
      timeline.emplace_back(t_ms, *g);
      ++samples[e.gpu];
    }
  }
  std::stable_sort(timeline.begin(), timeline.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [t, g] : timeline) run.gpu_samples.push_back(g);
  for (const XidSeen& x : activity.xids) {
    if (x.unix_ns >= w.start_unix_ns && x.unix_ns <= w.end_unix_ns) {
      run.xid_events.push_back({x.unix_ns - w.start_unix_ns, x.gpu, x.xid});
    }
  }
  report::Report r = report::Derive(run);
  json gpus = json::array();
  for (std::size_t pos : w.gpus) {
    const Entity& e = entities.at(pos);
    auto d = std::find_if(r.gpu.per_device.begin(), r.gpu.per_device.end(),
                          [&](const report::DeviceReport& x) { return x.device_index == e.gpu; });
    report::DeviceReport none;  // a GPU without samples: every key, null or empty
    none.device_index = e.gpu;
    none.uuid = e.uuid;
    if (d == r.gpu.per_device.end()) report::JudgeHealth(none.stats);
    json g = json::parse(report::JobStatisticsJson(d != r.gpu.per_device.end() ? *d : none));
    if (d == r.gpu.per_device.end()) {
      g["health_incidents"].push_back(std::string("no samples (the GPU is ") +
                                      std::string(EntityStateName(e.state)) + ")");
    }
    g["uuid"] = e.uuid;
    g["state"] = std::string(EntityStateName(e.state));
    g["sample_count"] = samples[e.gpu];
    const json& mj = g.contains("energy_millijoules") ? g["energy_millijoules"] : json(nullptr);
    g["energy_joules"] = mj.is_number() ? json(mj.get<double>() / 1000.0) : json(nullptr);
    const json& bj =
        g.contains("energy_bound_millijoules") ? g["energy_bound_millijoules"] : json(nullptr);
    g["energy_bound_joules"] =
        mj.is_number() && bj.is_number() ? json(bj.get<double>() / 1000.0) : json(nullptr);
    json ps = json::array();
    for (const auto& [k, p] : activity.processes) {
      if (p.gpu != e.gpu || (w.only_pid && p.pid != *w.only_pid)) continue;
      if (p.last_seen_unix_ns < w.start_unix_ns || p.first_seen_unix_ns > w.end_unix_ns) continue;
      ps.push_back(ProcessJson(p));
    }
    g["processes"] = ps;
    if (w.only_pid) g["conflicting_pids"] = ConflictingPids(activity, e.gpu, *w.only_pid);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace gpulse::agent
