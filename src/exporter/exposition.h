// /metrics: the dcgm-exporter-compatible exposition of one snapshot, plus gpulse's own metrics.
//
// Families follow the counters file order, each with HELP/TYPE once and one sample per entity that
// has the reading (an absent reading is no series; a lost GPU has no field series but
// gpulse_device_lost 1 and keeps its XID counters). A MIG GPU instance is its own series with
// GPU_I_PROFILE and GPU_I_ID, carrying only the readings NVML gives per instance (memory); the
// parent GPU keeps its device-level readings once, and leaves the per-instance ones to its
// instances so that no sum counts them twice (docs/exporter.md, "MIG"). Labels are dcgm-exporter's, in its order: gpu, UUID, pci_bus_id, device,
// modelName, [GPU_I_PROFILE, GPU_I_ID], [Hostname], then the counters file's label rows sorted by
// name (DCGM_FI_DRIVER_VERSION, ...). Values print as dcgm-exporter prints them: integers for
// int64 fields, six decimals for doubles.
//
// A MetricsPage renders each device's label set once, at construction; Render is then a walk over
// the snapshot appending bytes. Immutable after construction; Render is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/counters.h"
#include "exporter/device_selection.h"
#include "exporter/snapshot.h"
#include "identity/pod_resources.h"

namespace gpulse::exporter {

struct PageOptions {
  std::optional<std::string> hostname;  // the Hostname label; nullopt drops it (--no-hostname)
  std::string version;                  // gpulse_build_info labels
  std::string commit;
  bool replace_blanks_in_model_name = false;  // dcgm-exporter's flag: "NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"
  DeviceSelection devices;
  bool use_old_namespace = false;  // dcgm-exporter's -o: the 1.x label name "uuid" for "UUID"
};

// dcgm-exporter's modelName with --replace-blanks-in-model-name: each run of blanks becomes one "-",
// leading and trailing blanks go.
std::string ReplaceBlanks(std::string_view model);

using LabelList = std::vector<std::pair<std::string, std::string>>;

// dcgm-exporter's label set of one GPU (mig == nullptr) or one MIG GPU instance of it.
LabelList DeviceLabels(const SystemInfo& info, const DeviceInfo& device, const MigInstance* mig,
                       const CounterSet& counters, const PageOptions& options);

// Kubernetes mode (-k): the containers holding each entity, rendered once per kubelet answer (never
// per scrape), and the state of the kubelet for the self metrics. An entity held by several
// containers (time slicing) has its series once per container (docs/exporter.md, "Kubernetes
// pods").
struct PodLabels {
  // Parallel to the page's entities: `pod="…",namespace="…",container="…"[,vgpu="…"]` per holder.
  std::vector<std::vector<std::string>> by_entity;
  bool up = false;  // the kubelet's last List answered
  std::uint64_t lists_total = 0;
  std::uint64_t failures_total = 0;
  std::size_t pods = 0;
};

// The rendered labels of `assignments` (parallel to the same entities).
PodLabels RenderPodLabels(const identity::PodAssignments& assignments);

class MetricsPage {
 public:
  MetricsPage(const SystemInfo& info, std::shared_ptr<const CounterSet> counters,
              PageOptions options);

  // Appends the exposition of `snap` to `out`; ages are measured at `now_mono_ns`. With `pods`
  // (Kubernetes mode), an entity's series carry the labels of the containers holding it. With
  // `ages_at`, the sample-age family is left out and *ages_at is where RenderAges would put it
  // (npos: nowhere), so that a body can be kept and only the ages rendered per scrape.
  void Render(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out,
              const PodLabels* pods = nullptr, std::size_t* ages_at = nullptr) const;
  // gpulse_device_sample_age_seconds of every live entity at `now_mono_ns` (nothing when none).
  void RenderAges(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out) const;

  const CounterSet& counters() const { return *counters_; }

  void RenderCounters(const Snapshot& snap, std::string& out,
                      const PodLabels* pods = nullptr) const;
  void RenderSelf(const Snapshot& snap, std::int64_t now_mono_ns, std::string& out,
                  const PodLabels* pods = nullptr, std::size_t* ages_at = nullptr) const;
  void RenderPods(const Snapshot& snap, const PodLabels& pods, std::string& out) const;
  // The kernel log's state and the NVSwitches' SXids (node-wide), and each GPU's Xid counts and
  // recommended action (docs/faults.md).
  void RenderKernelLog(const Snapshot& snap, std::string& out) const;
  void RenderXids(const Snapshot& snap, std::string& out) const;
  // The four usage families (memory, SM, power, energy) of `rows`, in that order.
  void RenderUsage(const std::vector<HolderUsage>& rows, const std::array<SelfMetric, 4>& families,
                   std::string& out) const;

  const std::vector<Entity>& entities() const { return entities_; }

 private:
  bool Lost(const Snapshot& snap, std::size_t i) const;
  // Present entities with readings of their own, among those selected (-d). gpulse_device_lost and
  // the XID counters stay for every GPU: they are the health of the node, not a device's readings.
  bool Live(const Snapshot& snap, std::size_t i) const;

  const SystemInfo& info_;
  std::shared_ptr<const CounterSet> counters_;
  PageOptions options_;
  std::vector<Entity> entities_;           // BuildEntities(info_): parallel to Snapshot::entities
  std::vector<std::string> full_labels_;   // per entity, rendered
  std::vector<std::string> short_labels_;  // per entity: gpu, UUID[, GPU_I_ID] (or pci_bus_id)
  std::vector<std::string> lost_labels_;   // per entity: gpu, UUID, pci_bus_id
  std::vector<std::string> skipped_labels_;  // per entity: those and the reason it is skipped
  std::vector<bool> has_instances_;        // per entity: a GPU with exported MIG GPU instances
  std::vector<bool> exported_;             // per entity: selected by options_.devices
  mutable std::atomic<std::size_t> size_hint_{0};  // the last body's size (a reserve hint only)
  std::string build_labels_;
  std::string backend_labels_;
  bool profiling_ = false;  // some GPU has GPM: the profiling self metrics are exported
};

}  // namespace gpulse::exporter
