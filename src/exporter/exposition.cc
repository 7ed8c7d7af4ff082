#include "exporter/exposition.h"

#include <algorithm>

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

void Header(std::string& out, SelfMetric m) {
  const SelfMetricSpec& s = SelfMetricAt(m);
  prom::AppendFamilyHeader(out, s.name, s.help, s.prom_type);
}

}  // namespace

LabelList DeviceLabels(const SystemInfo& info, const DeviceInfo& d, const MigInstance* mig,
                       const CounterSet& counters, const std::optional<std::string>& hostname) {
  LabelList l = {{"gpu", std::to_string(d.index)},
                 {"UUID", d.uuid},
                 {"pci_bus_id", d.pci_bus_id},
                 {"device", "nvidia" + std::to_string(d.index)},
                 {"modelName", d.name}};
  if (mig != nullptr) {
    l.emplace_back("GPU_I_PROFILE", mig->profile);
    l.emplace_back("GPU_I_ID", std::to_string(mig->gpu_instance_id));
  }
  if (hostname) l.emplace_back("Hostname", *hostname);
  LabelList rows;
  for (const LabelRow& r : counters.labels) {
    if (auto v = LabelValue(info, *r.field)) rows.emplace_back(r.name, *v);
  }
  std::sort(rows.begin(), rows.end());
  l.insert(l.end(), rows.begin(), rows.end());
  return l;
}

MetricsPage::MetricsPage(const SystemInfo& info, std::shared_ptr<const CounterSet> counters,
                         PageOptions options)
    : info_(info), counters_(std::move(counters)), options_(std::move(options)) {
  for (const DeviceInfo& d : info_.devices) {
    full_labels_.push_back(
        RenderLabelList(DeviceLabels(info_, d, nullptr, *counters_, options_.hostname)));
    short_labels_.push_back(RenderLabelList({{"gpu", std::to_string(d.index)}, {"UUID", d.uuid}}));
  }
  build_labels_ = RenderLabelList({{"version", options_.version}, {"commit", options_.commit}});
  backend_labels_ = RenderLabelList({{"backend", info_.backend}});
}

void MetricsPage::Render(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out) const {
  RenderCounters(snap, out);
  RenderSelf(snap, now_mono_ns, out);
}

void MetricsPage::RenderCounters(const Snapshot& snap, std::string& out) const {
  std::size_t n = std::min(snap.devices.size(), full_labels_.size());
  for (const Counter& c : counters_->counters) {
    const FieldSpec& spec = FieldAt(c.field);
    bool header = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Sample& s = snap.devices[i].sample;
      if (s.state != DeviceState::kOk || c.field >= s.values.size() || !s.values[c.field]) continue;
      if (!header) {
        prom::AppendFamilyHeader(out, c.name, c.help, c.type);
        header = true;
      }
      prom::AppendSample(out, c.name, full_labels_[i], "", *s.values[c.field], FormatOf(spec));
    }
  }
}

void MetricsPage::RenderSelf(const Snapshot& snap, std::int64_t now_mono_ns,
                             std::string& out) const {
  using prom::AppendSample;
  constexpr auto kInt = prom::ValueFormat::kInteger;
  constexpr auto kFloat = prom::ValueFormat::kShortest;
  std::size_t n = std::min(snap.devices.size(), full_labels_.size());
  auto ok = [&](std::size_t i) { return snap.devices[i].sample.state == DeviceState::kOk; };

  Header(out, SelfMetric::kBuildInfo);
  AppendSample(out, SelfMetricAt(SelfMetric::kBuildInfo).name, build_labels_, "", 1, kInt);
  Header(out, SelfMetric::kBackendUp);
  AppendSample(out, SelfMetricAt(SelfMetric::kBackendUp).name, backend_labels_, "",
               snap.AnyDeviceRead() ? 1 : 0, kInt);
  Header(out, SelfMetric::kBackendFailedCalls);
  AppendSample(out, SelfMetricAt(SelfMetric::kBackendFailedCalls).name, backend_labels_, "",
               static_cast<double>(snap.failed_calls_total), kInt);
  Header(out, SelfMetric::kScrapeDuration);
  AppendSample(out, SelfMetricAt(SelfMetric::kScrapeDuration).name, "", "", snap.duration_ns / 1e9,
               kFloat);
  if (n == 0) return;

  Header(out, SelfMetric::kDeviceLost);
  for (std::size_t i = 0; i < n; ++i) {
    AppendSample(out, SelfMetricAt(SelfMetric::kDeviceLost).name, short_labels_[i], "",
                 ok(i) ? 0 : 1, kInt);
  }
  bool any_ok = false;
  for (std::size_t i = 0; i < n; ++i) any_ok = any_ok || ok(i);
  if (!any_ok) return;
  Header(out, SelfMetric::kDeviceInfo);
  for (std::size_t i = 0; i < n; ++i) {
    if (ok(i))
      AppendSample(out, SelfMetricAt(SelfMetric::kDeviceInfo).name, full_labels_[i], "", 1, kInt);
  }
  Header(out, SelfMetric::kDeviceSampleAge);
  for (std::size_t i = 0; i < n; ++i) {
    if (!ok(i)) continue;
    double age = std::max<std::int64_t>(0, now_mono_ns - snap.devices[i].sample.t_mono_ns) / 1e9;
    AppendSample(out, SelfMetricAt(SelfMetric::kDeviceSampleAge).name, short_labels_[i], "", age,
                 kFloat);
  }
  bool xid_header = false;
  std::string extra;
  for (std::size_t i = 0; i < n; ++i) {
    if (!ok(i)) continue;
    for (const XidCount& x : snap.devices[i].sample.xid_counts) {
      if (!xid_header) {
        Header(out, SelfMetric::kXidErrorsTotal);
        xid_header = true;
      }
      extra = "xid=\"" + std::to_string(x.xid) + "\"";
      AppendSample(out, SelfMetricAt(SelfMetric::kXidErrorsTotal).name, full_labels_[i], extra,
                   static_cast<double>(x.count), kInt);
    }
  }
}

}  // namespace gpulse::exporter
