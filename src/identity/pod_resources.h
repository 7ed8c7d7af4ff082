// Kubernetes pods from the kubelet's pod-resources API (what List answers: pod name, namespace,
// containers and the device IDs the device plugins gave each container), and their join to gpulse's
// entities: which GPU or MIG GPU instance each container holds (AssignPods), and which pod a GPU
// process's cgroup pod UID is (NamePods). The gRPC client lives in src/k8s; this file is the pure
// part, so that it is unit-tested without a kubelet.
//
// Device IDs understood (docs/exporter.md, "Kubernetes pods"): with --kubernetes-gpu-id-type uid,
// a GPU's UUID ("GPU-…") and a MIG device's UUID ("MIG-…"); with device-name, "nvidiaN" and GKE's
// "nvidiaN/giM"; with either, a time-slicing replica suffix "::K" (the replica id becomes the vgpu
// label) and GKE's "/vgpuK". Resources: nvidia.com/gpu, nvidia.com/mig-* and any extra names given.
//
// Thread-safety: pure functions; the types are plain values.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/entity.h"
#include "core/result.h"

namespace gpulse::identity {

struct ContainerDevices {
  std::string resource_name;  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ...
  std::vector<std::string> device_ids;
};

struct ContainerResources {
  std::string name;
  std::vector<ContainerDevices> devices;
};

struct PodResources {
  std::string name;
  std::string ns;
  std::vector<ContainerResources> containers;
};

enum class GpuIdType { kUid, kDeviceName };

// "uid" or "device-name" (dcgm-exporter's --kubernetes-gpu-id-type); an error names the choices.
Result<GpuIdType> ParseGpuIdType(std::string_view text);

// One container holding (part of) an entity.
struct PodOwner {
  std::string pod;
  std::string ns;
  std::string container;
  std::string vgpu;  // the time-slicing replica id ("" for a whole device)

  auto operator<=>(const PodOwner&) const = default;
};

struct PodAssignments {
  // Parallel to the entities given to AssignPods: the containers holding each, sorted, no
  // duplicates. A GPU's instances hold their own owners only.
  std::vector<std::vector<PodOwner>> by_entity;
  // Device IDs of a counted resource that name no entity of this node (sorted, unique).
  std::vector<std::string> unmatched;
  std::size_t pods = 0;  // pods in the answer

  bool operator==(const PodAssignments&) const = default;
};

// Whether devices of `resource` are attributed: nvidia.com/gpu, nvidia.com/mig-*, or one of
// `extra`.
bool CountedResource(std::string_view resource, std::span<const std::string> extra = {});

// Which containers hold which entity. `extra_resources` are more resource names to count
// (dcgm-exporter's --nvidia-resource-names).
PodAssignments AssignPods(const std::vector<Entity>& entities, std::span<const PodResources> pods,
                          GpuIdType id_type, std::span<const std::string> extra_resources = {});

// The entity a GPU process runs on: its MIG GPU instance on GPU `gpu_index` when it has one, else
// the GPU; nullopt when neither is among `entities`.
std::optional<std::size_t> ProcessEntity(const std::vector<Entity>& entities, unsigned gpu_index,
                                         const GpuProcess& process);

// A pod's name and namespace as the kubelet says, for a pod UID from a process's cgroup.
struct PodName {
  std::string pod;
  std::string ns;
};

// The GPUs (entity positions) that the processes of each pod UID run on, from cgroups.
using PodUidGpus = std::map<std::string, std::set<std::size_t>>;

struct PodNaming {
  std::map<std::string, PodName> named;       // pod UID → name
  std::map<std::string, std::string> reason;  // pod UID → why it has no name
};

// Names each pod UID by elimination: its candidates are the pods that hold every entity its
// processes run on; a UID with exactly one candidate takes it, which removes that pod from the
// others' candidates, until nothing changes. A UID left with none or several keeps its UID and the
// reason (docs/identity.md, "Pod names"); never a guess.
PodNaming NamePods(const PodAssignments& assignments, const PodUidGpus& uids);

}  // namespace gpulse::identity
