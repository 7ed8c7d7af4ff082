// Kubernetes and Slurm modes: the exporter's attribution of its reads' processes, kept between
// reads. Who holds each listed process (which pod, container or job: procfs cgroups joined with
// the kubelet's answer) is worked out again only when it can have changed: the PIDs listed on an
// entity change, the kubelet's answer changes, a PID's procfs facts were missing kRetryMissingNs ago, or
// kRecheckNs have passed (bounding how long a reused PID keeps its predecessor's holder). A read
// with new process lists and the same PIDs only apportions its own numbers by the kept holders,
// so the once-a-second list costs a scrape no procfs read and no pod naming.
//
// Thread-safety: one caller at a time (the exporter's reader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/pod_usage.h"
#include "exporter/snapshot.h"
#include "identity/attribution.h"
#include "k8s/pod_resources_watcher.h"
#include "sys/rooted_fs.h"

namespace gpulse::exporter {

// The exporter's work between reads (exporter.h, BetweenReads): when to list the GPUs' processes
// next, given the last read's start and when the newest kept list was taken (0: none yet). Lists
// fall due gpu::kProcessListMinIntervalNs after they were taken; nullopt when nothing is to be
// done between reads (no list yet, or no read within that interval: each read then lists the
// processes itself). A time not after `now_ns` means now.
std::optional<std::int64_t> NextListingBetweenReads(std::int64_t now_ns, std::int64_t last_read_ns,
                                                    std::int64_t listed_ns);

class AttributionCache {
 public:
  static constexpr std::int64_t kRecheckNs = 30'000'000'000;
  static constexpr std::int64_t kRetryMissingNs = 5'000'000'000;

  // `proc`: the procfs tree (none: simulated PIDs, attributed to no one); `jobs`: Slurm mode.
  AttributionCache(std::optional<sys::RootedFs> proc, bool jobs);

  // The attribution of `snap`'s process lists at `now_ns`: pods under `state` when it answered,
  // jobs in Slurm mode. Holders due to be worked out again within `early_ns` of `now_ns` are
  // worked out now (the exporter's work between reads, ahead of its next read).
  const Attribution& Update(const SystemInfo& info, const std::vector<Entity>& entities,
                            const Snapshot& snap, std::shared_ptr<const k8s::PodState> state,
                            std::int64_t now_ns, std::int64_t early_ns = 0);

  // How many times the holders were worked out, and the PIDs procfs was read for, so far.
  std::size_t holder_passes() const { return holder_passes_; }
  std::size_t procfs_reads() const { return procfs_reads_; }

 private:
  // Where each PID is listed: (device position, PID, GPU instance, compute instance).
  using Placement = std::tuple<std::size_t, unsigned, std::optional<unsigned>, std::optional<unsigned>>;
  static std::vector<Placement> PlacementsOf(const Snapshot& snap);
  void FindHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                   const Snapshot& snap, const k8s::PodState* state, std::int64_t now_ns);

  bool jobs_;
  identity::ListedProcessCache procs_;
  // What the holders were worked out from (state_: the kubelet's last answer, whose assignments
  // the next one's are compared with), and when they must be again.
  std::vector<Placement> placements_;
  std::shared_ptr<const k8s::PodState> state_;
  std::int64_t recheck_at_ns_ = 0;
  Holders pod_holders_, job_holders_;
  std::vector<std::vector<std::string>> job_labels_;
  // The process lists (their times) the attribution apportions.
  std::vector<std::int64_t> listed_;
  Attribution attribution_;
  std::size_t holder_passes_ = 0;
  std::size_t procfs_reads_ = 0;
};

}  // namespace gpulse::exporter
