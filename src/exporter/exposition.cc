#include "exporter/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "core/xid.h"
#include "exporter/hpc_job_mapping.h"
#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

prom::ValueFormat FormatOf(const FieldSpec& f) {
  return f.value_type == ValueType::kDouble ? prom::ValueFormat::kFixed
                                            : prom::ValueFormat::kInteger;
}

std::string RenderLabelList(const LabelList& labels) {
  std::vector<prom::Label> views;
  views.reserve(labels.size());
  for (const auto& [k, v] : labels) views.push_back({k, v});
  return prom::RenderLabels(views);
}

std::optional<std::string> LabelValue(const SystemInfo& info, const LabelFieldSpec& f) {
  switch (f.source) {
    case LabelSource::kDriverVersion:
      return info.driver_version;
    case LabelSource::kNvmlVersion:
      return info.library_version;
  }
  return std::nullopt;
}

// dcgm-exporter's labels on the XID gauge: the code and NVIDIA's description of it.
std::string_view XidLabels(double xid, std::string& out) {
  const auto code = static_cast<std::uint64_t>(xid);
  out = "err_code=\"" + std::to_string(code) + "\",err_msg=\"";
  prom::AppendEscapedLabelValue(out, XidDescription(code));
  out += '"';
  return out;
}

bool Selected(const Entity& e, const DeviceSelection& sel) {
  switch (sel.kind) {
    case DeviceSelection::Kind::kFlex: return true;
    case DeviceSelection::Kind::kInstances: return e.kind == EntityKind::kGpuInstance;
    case DeviceSelection::Kind::kGpus:
      return e.kind == EntityKind::kGpu &&
             (sel.gpus.empty() || std::find(sel.gpus.begin(), sel.gpus.end(), e.gpu) != sel.gpus.end());
  }
  return true;
}

void Header(std::string& out, SelfMetric m) {
  const SelfMetricSpec& s = SelfMetricAt(m);
  prom::AppendFamilyHeader(out, s.name, s.help, s.prom_type);
}

}  // namespace

std::string ReplaceBlanks(std::string_view model) {
  std::string out;
  bool blank = false;
  for (char c : model) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += '-';
    blank = false;
    out += c;
  }
  return out;
}

LabelList DeviceLabels(const SystemInfo& info, const DeviceInfo& d, const MigInstance* mig,
                       const CounterSet& counters, const PageOptions& options) {
  const std::optional<std::string>& hostname = options.hostname;
  LabelList l = {{"gpu", std::to_string(d.index)},
                 {options.use_old_namespace ? "uuid" : "UUID", d.uuid},
                 {"pci_bus_id", d.pci_bus_id},
                 {"device", DeviceNode(d)},
                 {"modelName", options.replace_blanks_in_model_name ? ReplaceBlanks(d.name) : d.name}};
  if (mig != nullptr) {
    l.emplace_back("GPU_I_PROFILE", mig->profile);
    l.emplace_back("GPU_I_ID", std::to_string(mig->gpu_instance_id));
  }
  if (hostname) l.emplace_back("Hostname", *hostname);
  // The driver and library versions are one backend's: NVML's on a host where it reads NVIDIA GPUs
  // beside others (docs/adr/0023-vendor-registry.md). Another vendor's GPU on such a host gets no
  // version label rather than NVIDIA's.
  const bool several_backends = info.backend.find('+') != std::string::npos;  // "nvml+amdgpu"
  const bool versions_are_its_own = !several_backends || VendorOf(d) == "nvidia";
  LabelList rows;
  for (const LabelRow& r : counters.labels) {
    if (!versions_are_its_own) continue;
    if (auto v = LabelValue(info, *r.field)) rows.emplace_back(r.name, *v);
  }
  std::sort(rows.begin(), rows.end());
  l.insert(l.end(), rows.begin(), rows.end());
  return l;
}

namespace {

// gpulse_device_lost's labels: the same three for every GPU, present or lost, before or after
// start, so an exporter restart does not change the series of a lost GPU ("" where unknown).
LabelList LostLabels(const Entity& e) {
  return {{"gpu", std::to_string(e.gpu)}, {"UUID", e.uuid}, {"pci_bus_id", e.pci_bus_id}};
}

// A GPU instance's MIG entry (profile and GI id) as DeviceLabels takes it.
MigInstance InstanceOf(const Entity& e) {
  MigInstance m;
  m.gpu_instance_id = e.gpu_instance_id.value_or(0);
  m.profile = e.profile;
  return m;
}

}  // namespace

MetricsPage::MetricsPage(const SystemInfo& info, std::shared_ptr<const CounterSet> counters,
                         PageOptions options)
    : info_(info),
      counters_(std::move(counters)),
      options_(std::move(options)),
      entities_(BuildEntities(info)) {
  for (const Entity& e : entities_) {
    lost_labels_.push_back(RenderLabelList(LostLabels(e)));
    LabelList skipped = LostLabels(e);
    skipped.emplace_back("reason", e.state == EntityState::kSkipped ? e.reason : "");
    skipped_labels_.push_back(RenderLabelList(skipped));
    if (!e.device_pos) {
      full_labels_.push_back(lost_labels_.back());
      short_labels_.push_back(lost_labels_.back());
      continue;
    }
    const DeviceInfo& d = info_.devices[*e.device_pos];
    std::optional<MigInstance> mig;
    if (e.kind != EntityKind::kGpu) mig = InstanceOf(e);
    LabelList full = DeviceLabels(info_, d, mig ? &*mig : nullptr, *counters_, options_);
    std::string gi_id = e.gpu_instance_id ? std::to_string(*e.gpu_instance_id) : "";  // "": unknown
    for (auto& [k, v] : full) {
      if (k == "GPU_I_ID") v = gi_id;
    }
    full_labels_.push_back(RenderLabelList(full));
    LabelList short_list = {{"gpu", std::to_string(d.index)}, {"UUID", d.uuid}};
    if (mig) short_list.emplace_back("GPU_I_ID", gi_id);
    short_labels_.push_back(RenderLabelList(short_list));
  }
  exported_.assign(entities_.size(), true);
  for (std::size_t i = 0; i < entities_.size(); ++i) exported_[i] = Selected(entities_[i], options_.devices);
  has_instances_.assign(entities_.size(), false);
  for (std::size_t i = 0; i < entities_.size(); ++i) {
    const Entity& e = entities_[i];
    if (e.kind == EntityKind::kGpuInstance && e.parent && exported_[i]) has_instances_[*e.parent] = true;
  }
  build_labels_ = RenderLabelList({{"version", options_.version}, {"commit", options_.commit}});
  backend_labels_ = RenderLabelList({{"backend", info_.backend}});
  for (const DeviceInfo& d : info_.devices) profiling_ = profiling_ || d.profiling;
}

PodLabels RenderPodLabels(const identity::PodAssignments& assignments) {
  PodLabels out;
  out.pods = assignments.pods;
  out.by_entity.reserve(assignments.by_entity.size());
  for (const auto& owners : assignments.by_entity) {
    std::vector<std::string>& rendered = out.by_entity.emplace_back();
    for (const identity::PodOwner& o : owners) {
      LabelList l = {{"pod", o.pod}, {"namespace", o.ns}, {"container", o.container}};
      if (!o.vgpu.empty()) l.emplace_back("vgpu", o.vgpu);
      rendered.push_back(RenderLabelList(l));
    }
  }
  return out;
}

void MetricsPage::Render(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out,
                         const PodLabels* pods, std::size_t* ages_at) const {
  if (ages_at != nullptr) *ages_at = std::string::npos;
  // One allocation for the body (it is 80 KB on a MIG node), sized after the previous response.
  const std::size_t start = out.size();
  std::size_t hint = size_hint_.load(std::memory_order_relaxed);
  out.reserve(start + hint + hint / 8);
  RenderCounters(snap, out, pods);
  RenderSelf(snap, now_mono_ns, out, pods, ages_at);
  size_hint_.store(out.size() - start, std::memory_order_relaxed);
}

void MetricsPage::RenderCounters(const Snapshot& snap, std::string& out,
                                 const PodLabels* pods) const {
  std::size_t n = std::min(snap.entities.size(), entities_.size());
  std::string xid_extra, joined;
  static const std::vector<std::string> kNoOwner = {""};
  for (const Counter& c : counters_->counters) {
    const FieldSpec& spec = FieldAt(c.field);
    const bool per_instance = PerInstance(spec);
    bool header = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Sample& s = snap.entities[i].sample;
      if (!exported_[i] || !entities_[i].readable() || s.state != DeviceState::kOk || c.field >= s.values.size() ||
          !s.values[c.field]) {
        continue;
      }
      // A MIG GPU's per-instance readings are its instances' series, not also the parent's:
      // summing a family over its series never counts the same memory twice.
      if (per_instance && has_instances_[i]) continue;
      if (!header) {
        prom::AppendFamilyHeader(out, c.name, c.help, c.type);
        header = true;
      }
      std::string_view extra;
      if (spec.nvml == NvmlSource::kLastXid) extra = XidLabels(*s.values[c.field], xid_extra);
      // Kubernetes mode: once per container holding the entity (once, unlabelled, when none).
      // Slurm mode or the HPC job mapping directory: once per job using it. With -k and the
      // mapping directory, once per container and job.
      const auto& owners =
          pods != nullptr && i < pods->by_entity.size() && !pods->by_entity[i].empty()
              ? pods->by_entity[i]
              : kNoOwner;
      const auto& jobs =
          i < snap.job_labels.size() && !snap.job_labels[i].empty() ? snap.job_labels[i] : kNoOwner;
      for (const std::string& owner : owners) {
        for (const std::string& job : jobs) {
          std::string_view labels = extra;
          if (!owner.empty() || !job.empty()) {
            joined = owner;
            if (!job.empty()) {
              if (!joined.empty()) joined += ',';
              joined += job;
            }
            if (!extra.empty()) joined.append(",").append(extra);
            labels = joined;
          }
          prom::AppendSample(out, c.name, full_labels_[i], labels, *s.values[c.field],
                             FormatOf(spec));
        }
      }
    }
  }
}

bool MetricsPage::Lost(const Snapshot& snap, std::size_t i) const {
  return entities_[i].state == EntityState::kLost ||
         snap.entities[i].sample.state == DeviceState::kLost;
}

bool MetricsPage::Live(const Snapshot& snap, std::size_t i) const {
  return exported_[i] && entities_[i].readable() && !Lost(snap, i);
}

void MetricsPage::RenderAges(const Snapshot& snap, std::int64_t now_mono_ns,
                             std::string& out) const {
  const std::size_t n = std::min(snap.entities.size(), entities_.size());
  bool header = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!Live(snap, i)) continue;
    if (!std::exchange(header, true)) Header(out, SelfMetric::kDeviceSampleAge);
    double age = std::max<std::int64_t>(0, now_mono_ns - snap.entities[i].sample.t_mono_ns) / 1e9;
    prom::AppendSample(out, SelfMetricAt(SelfMetric::kDeviceSampleAge).name, short_labels_[i], "",
                       age, prom::ValueFormat::kShortest);
  }
}

void MetricsPage::RenderSelf(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out,
                             const PodLabels* pods, std::size_t* ages_at) const {
  using prom::AppendSample;
  constexpr auto kInt = prom::ValueFormat::kInteger;
  constexpr auto kFloat = prom::ValueFormat::kShortest;
  std::size_t n = std::min(snap.entities.size(), entities_.size());
  auto lost = [&](std::size_t i) { return Lost(snap, i); };
  auto live = [&](std::size_t i) { return Live(snap, i); };
  auto gpu = [&](std::size_t i) { return entities_[i].kind == EntityKind::kGpu; };

  Header(out, SelfMetric::kBuildInfo);
  AppendSample(out, SelfMetricAt(SelfMetric::kBuildInfo).name, build_labels_, "", 1, kInt);
  Header(out, SelfMetric::kBackendUp);
  AppendSample(out, SelfMetricAt(SelfMetric::kBackendUp).name, backend_labels_, "",
               snap.AnyDeviceRead() ? 1 : 0, kInt);
  Header(out, SelfMetric::kBackendFailedCalls);
  AppendSample(out, SelfMetricAt(SelfMetric::kBackendFailedCalls).name, backend_labels_, "",
               static_cast<double>(snap.failed_calls_total), kInt);
  if (profiling_) {
    Header(out, SelfMetric::kProfilingFailedCalls);
    AppendSample(out, SelfMetricAt(SelfMetric::kProfilingFailedCalls).name, backend_labels_, "",
                 static_cast<double>(snap.profiling_failed_total), kInt);
    Header(out, SelfMetric::kProfilingRejectedValues);
    AppendSample(out, SelfMetricAt(SelfMetric::kProfilingRejectedValues).name, backend_labels_, "",
                 static_cast<double>(snap.profiling_rejected_total), kInt);
  }
  if (pods != nullptr) RenderPods(snap, *pods, out);
  RenderUsage(snap.job_usage,
              {SelfMetric::kJobGpuMemoryUsed, SelfMetric::kJobSmUtilization,
               SelfMetric::kJobPowerEstimate, SelfMetric::kJobEnergyEstimate},
              out);
  if (snap.job_mapping) {  // --hpc-job-mapping-dir
    Header(out, SelfMetric::kJobMappingDirPresent);
    AppendSample(out, SelfMetricAt(SelfMetric::kJobMappingDirPresent).name, "", "",
                 snap.job_mapping->dir_present ? 1 : 0, kInt);
    Header(out, SelfMetric::kJobMappingFailures);
    AppendSample(out, SelfMetricAt(SelfMetric::kJobMappingFailures).name, "", "",
                 static_cast<double>(snap.job_mapping->failures_total), kInt);
  }
  Header(out, SelfMetric::kScrapeDuration);
  AppendSample(out, SelfMetricAt(SelfMetric::kScrapeDuration).name, "", "", snap.duration_ns / 1e9,
               kFloat);
  RenderKernelLog(snap, out);
  bool any_gpu = false, any_listed = false, any_live = false;
  for (std::size_t i = 0; i < n; ++i) {
    any_gpu = any_gpu || gpu(i);
    any_listed = any_listed || (gpu(i) && (entities_[i].device_pos || lost(i)));
    any_live = any_live || live(i);
  }
  if (!any_gpu) return;

  // Every GPU that is or was there: present (0), lost after or before start (1). A GPU skipped
  // for another reason (no permission) is not lost: it has gpulse_device_skipped 1 and its reason.
  if (any_listed) Header(out, SelfMetric::kDeviceLost);
  for (std::size_t i = 0; i < n; ++i) {
    if (!gpu(i) || (!entities_[i].device_pos && !lost(i))) continue;
    AppendSample(out, SelfMetricAt(SelfMetric::kDeviceLost).name, lost_labels_[i], "",
                 lost(i) ? 1 : 0, kInt);
  }
  Header(out, SelfMetric::kDeviceSkipped);  // every GPU, so no entity vanishes (issue 40)
  for (std::size_t i = 0; i < n; ++i) {
    if (!gpu(i)) continue;
    AppendSample(out, SelfMetricAt(SelfMetric::kDeviceSkipped).name, skipped_labels_[i], "",
                 entities_[i].state == EntityState::kSkipped ? 1 : 0, kInt);
  }
  if (any_live) {
    Header(out, SelfMetric::kDeviceInfo);
    for (std::size_t i = 0; i < n; ++i) {
      if (live(i))
        AppendSample(out, SelfMetricAt(SelfMetric::kDeviceInfo).name, full_labels_[i], "", 1, kInt);
    }
    if (ages_at != nullptr) {
      *ages_at = out.size();
    } else {
      RenderAges(snap, now_mono_ns, out);
    }
  }
  if (profiling_ && any_live) {
    Header(out, SelfMetric::kProfilingStuck);
    for (std::size_t i = 0; i < n; ++i) {
      if (!live(i) || !gpu(i) || !entities_[i].device_pos ||
          !info_.devices[*entities_[i].device_pos].profiling) {
        continue;
      }
      AppendSample(out, SelfMetricAt(SelfMetric::kProfilingStuck).name, short_labels_[i], "",
                   snap.entities[i].sample.profiling_stuck ? 1 : 0, kInt);
    }
  }
  RenderXids(snap, out);
}

void MetricsPage::RenderKernelLog(const Snapshot& snap, std::string& out) const {
  using prom::AppendSample;
  constexpr auto kInt = prom::ValueFormat::kInteger;
  if (!snap.kernel_log || snap.kernel_log->path.empty()) return;
  const faults::KernelLogStatus& k = *snap.kernel_log;
  std::string path = "path=\"";
  prom::AppendEscapedLabelValue(path, k.path);
  path += '"';
  auto one = [&](SelfMetric m, double v) {
    Header(out, m);
    AppendSample(out, SelfMetricAt(m).name, "", path, v, kInt);
  };
  one(SelfMetric::kKernelLogReadable, k.readable && k.error.empty() ? 1 : 0);
  one(SelfMetric::kKernelLogRecords, static_cast<double>(k.records));
  one(SelfMetric::kKernelLogLost, static_cast<double>(k.lost));
  if (snap.sxids.empty()) return;
  Header(out, SelfMetric::kSxidErrorsTotal);
  std::string labels;
  for (const faults::SxidCount& x : snap.sxids) {
    labels = "nvswitch=\"" + (x.nvswitch ? std::to_string(*x.nvswitch) : std::string()) +
             "\",pci_bus_id=\"";
    prom::AppendEscapedLabelValue(labels, x.pci_bus_id);
    labels += "\",sxid=\"" + std::to_string(x.sxid) + "\"";
    AppendSample(out, SelfMetricAt(SelfMetric::kSxidErrorsTotal).name, "", labels,
                 static_cast<double>(x.count), kInt);
  }
}

// XIDs of every GPU, lost and skipped ones included: counters keep their last value, never reset.
void MetricsPage::RenderXids(const Snapshot& snap, std::string& out) const {
  using prom::AppendSample;
  constexpr auto kInt = prom::ValueFormat::kInteger;
  const std::size_t n = std::min(snap.entities.size(), entities_.size());
  auto gpu = [&](std::size_t i) { return entities_[i].kind == EntityKind::kGpu; };
  bool header = false;
  std::string extra;
  for (std::size_t i = 0; i < n; ++i) {
    if (!gpu(i)) continue;
    for (const XidCount& x : snap.entities[i].sample.xid_counts) {
      if (!std::exchange(header, true)) Header(out, SelfMetric::kXidErrorsTotal);
      extra = "xid=\"" + std::to_string(x.xid) + "\"";
      AppendSample(out, SelfMetricAt(SelfMetric::kXidErrorsTotal).name, full_labels_[i], extra,
                   static_cast<double>(x.count), kInt);
    }
  }
  header = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<XidAction>& a = snap.entities[i].sample.recommended_action;
    if (!gpu(i) || !a) continue;
    if (!std::exchange(header, true)) Header(out, SelfMetric::kGpuRecommendedAction);
    extra = "action=\"";
    prom::AppendEscapedLabelValue(extra, a->action);
    extra += "\",xid=\"" + (a->xid != 0 ? std::to_string(a->xid) : std::string()) + "\"";
    AppendSample(out, SelfMetricAt(SelfMetric::kGpuRecommendedAction).name, full_labels_[i], extra,
                 1, kInt);
  }
}

void MetricsPage::RenderPods(const Snapshot& snap, const PodLabels& pods, std::string& out) const {
  using prom::AppendSample;
  constexpr auto kInt = prom::ValueFormat::kInteger;
  auto one = [&](SelfMetric m, double v) {
    Header(out, m);
    AppendSample(out, SelfMetricAt(m).name, "", "", v, kInt);
  };
  one(SelfMetric::kKubeletUp, pods.up ? 1 : 0);
  one(SelfMetric::kKubeletListsTotal, static_cast<double>(pods.lists_total));
  one(SelfMetric::kKubeletListFailuresTotal, static_cast<double>(pods.failures_total));
  one(SelfMetric::kKubeletPods, static_cast<double>(pods.pods));
  RenderUsage(snap.pod_usage,
              {SelfMetric::kPodGpuMemoryUsed, SelfMetric::kPodSmUtilization,
               SelfMetric::kPodPowerEstimate, SelfMetric::kPodEnergyEstimate},
              out);
}

void MetricsPage::RenderUsage(const std::vector<HolderUsage>& rows,
                              const std::array<SelfMetric, 4>& families, std::string& out) const {
  auto family = [&](SelfMetric m, auto value, prom::ValueFormat format) {
    bool header = false;
    for (const HolderUsage& u : rows) {
      std::optional<double> v = value(u);
      if (!v || u.entity >= short_labels_.size()) continue;
      if (!std::exchange(header, true)) Header(out, m);
      prom::AppendSample(out, SelfMetricAt(m).name, short_labels_[u.entity], u.labels, *v, format);
    }
  };
  family(
      families[0],
      [](const HolderUsage& u) -> std::optional<double> {
        if (!u.memory_bytes) return std::nullopt;
        return static_cast<double>(*u.memory_bytes);
      },
      prom::ValueFormat::kInteger);
  family(
      families[1], [](const HolderUsage& u) { return u.sm_util; }, prom::ValueFormat::kShortest);
  family(
      families[2], [](const HolderUsage& u) { return u.power_watts; },
      prom::ValueFormat::kShortest);
  family(
      families[3], [](const HolderUsage& u) { return u.energy_joules; },
      prom::ValueFormat::kShortest);
}

}  // namespace gpulse::exporter
