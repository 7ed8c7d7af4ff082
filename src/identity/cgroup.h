// PID → cgroup → container and Kubernetes pod. /proc/PID/cgroup names the cgroup of each hierarchy
// (cgroup v1: one line per controller set; v2: the single "0::" line); container runtimes and the
// kubelet name the cgroups they create in recognisable ways, with the systemd cgroup driver
// ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
// cri-containerd-<id>.scope") and with the cgroupfs one ("/kubepods/burstable/pod<uid>/<id>");
// Slurm's slurmstepd names its job and step cgroups ("job_<id>/step_<id>").
// The recognised forms are listed in docs/identity.md. A path gpulse does not recognise yields no
// container and no pod (absent, never a guess).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::identity {

enum class ContainerRuntime { kUnknown, kDocker, kContainerd, kCrio, kPodman };
enum class QosClass { kGuaranteed, kBurstable, kBestEffort };

std::string_view RuntimeName(ContainerRuntime runtime);  // "docker", "containerd", "cri-o", ...
std::string_view QosName(QosClass qos);                  // "Guaranteed", "Burstable", "BestEffort"

// One line of /proc/PID/cgroup: "hierarchy-ID:controller-list:cgroup-path".
struct CgroupLine {
  unsigned hierarchy = 0;
  std::string controllers;  // "" on the v2 line
  std::string path;
};

// Errors: kInvalidArgument naming the first malformed line (1-based).
Result<std::vector<CgroupLine>> ParseProcCgroup(std::string_view text);

struct ContainerRef {
  std::string id;                                         // 64 hex digits
  ContainerRuntime runtime = ContainerRuntime::kUnknown;  // unknown: a bare id (cgroupfs driver)
};

struct PodRef {
  std::string uid;  // 8-4-4-4-12 (or the 32 hex digits of a static pod), dashes restored
  QosClass qos = QosClass::kGuaranteed;
};

// A Slurm job step's cgroup: "…/slurmstepd.scope/job_N/step_S/…" (cgroup/v2 plugin) or
// "/slurm[_NODE]/uid_U/job_N/step_S/…" (cgroup/v1 plugin).
struct SlurmJobRef {
  std::string job_id;               // "N"
  std::optional<std::string> step;  // "0", "batch", "extern", "interactive"; nullopt: job level
  std::optional<unsigned> uid;      // v1 paths name the job's user
};

struct CgroupPlacement {
  int version = 2;   // the hierarchy the path comes from: 1 or 2
  std::string path;  // "" when the process has no cgroup line at all
  std::optional<ContainerRef> container;
  std::optional<PodRef> pod;
  std::optional<SlurmJobRef> slurm;
};

// What one cgroup path says (version and path left to the caller).
CgroupPlacement ClassifyPath(std::string_view path);

// The placement of a process: the v2 line when it names a container, pod or Slurm job, else the
// first v1 line (pids, memory, cpu, devices, name=systemd, then the rest) that does, else the v2
// path (or the first v1 path) with none.
CgroupPlacement Place(std::span<const CgroupLine> lines);

}  // namespace gpulse::identity
