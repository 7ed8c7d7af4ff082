#include "identity/pod_resources.h"

#include <algorithm>
#include <charconv>
#include <iterator>

namespace gpulse::identity {
namespace {

constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

std::optional<unsigned> Number(std::string_view s) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A device ID without its sharing suffix, and the replica id the suffix named ("" when none).
struct DeviceId {
  std::string_view device;
  std::string vgpu;
};

DeviceId SplitReplica(std::string_view id) {
  if (std::size_t at = id.find("::"); at != std::string_view::npos) {
    return {id.substr(0, at), std::string(id.substr(at + 2))};
  }
  if (std::size_t at = id.find("/vgpu"); at != std::string_view::npos) {
    return {id.substr(0, at), std::string(id.substr(at + 5))};
  }
  return {id, ""};
}

std::optional<std::size_t> FindGpu(const std::vector<Entity>& entities, unsigned index) {
  for (std::size_t i = 0; i < entities.size(); ++i) {
    if (entities[i].kind == EntityKind::kGpu && entities[i].gpu == index) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> FindInstance(const std::vector<Entity>& entities, unsigned gpu,
                                        unsigned gi) {
  for (std::size_t i = 0; i < entities.size(); ++i) {
    const Entity& e = entities[i];
    if (e.kind == EntityKind::kGpuInstance && e.gpu == gpu && e.gpu_instance_id == gi) return i;
  }
  return std::nullopt;
}

// "GPU-…" → the GPU; "MIG-…" → the GPU instance of the compute instance with that UUID.
std::optional<std::size_t> ByUuid(const std::vector<Entity>& entities, std::string_view uuid) {
  for (std::size_t i = 0; i < entities.size(); ++i) {
    const Entity& e = entities[i];
    if (e.uuid != uuid) continue;
    if (e.kind == EntityKind::kComputeInstance) return e.parent;
    return i;
  }
  return std::nullopt;
}

// "nvidiaN" → GPU N; "nvidiaN/giM" → GPU instance M of GPU N.
std::optional<std::size_t> ByName(const std::vector<Entity>& entities, std::string_view name) {
  if (!name.starts_with("nvidia")) return std::nullopt;
  name.remove_prefix(6);
  std::size_t slash = name.find("/gi");
  auto gpu = Number(name.substr(0, slash));
  if (!gpu) return std::nullopt;
  if (slash == std::string_view::npos) return FindGpu(entities, *gpu);
  auto gi = Number(name.substr(slash + 3));
  return gi ? FindInstance(entities, *gpu, *gi) : std::nullopt;
}

}  // namespace

bool CountedResource(std::string_view resource, std::span<const std::string> extra) {
  if (resource == kGpuResource || resource.starts_with(kMigResourcePrefix)) return true;
  return std::find(extra.begin(), extra.end(), resource) != extra.end();
}

Result<GpuIdType> ParseGpuIdType(std::string_view text) {
  if (text == "uid") return GpuIdType::kUid;
  if (text == "device-name") return GpuIdType::kDeviceName;
  return InvalidArgument("\"" + std::string(text) +
                         "\" is not a GPU id type: use uid (GPU and MIG UUIDs, the default) or "
                         "device-name (nvidia0, nvidia0/gi1)");
}

PodAssignments AssignPods(const std::vector<Entity>& entities, std::span<const PodResources> pods,
                          GpuIdType id_type, std::span<const std::string> extra_resources) {
  PodAssignments out;
  out.by_entity.resize(entities.size());
  out.pods = pods.size();
  std::set<std::string> unmatched;
  for (const PodResources& pod : pods) {
    for (const ContainerResources& c : pod.containers) {
      for (const ContainerDevices& d : c.devices) {
        if (!CountedResource(d.resource_name, extra_resources)) continue;
        for (const std::string& id : d.device_ids) {
          DeviceId split = SplitReplica(id);
          auto pos = id_type == GpuIdType::kUid ? ByUuid(entities, split.device)
                                                : ByName(entities, split.device);
          if (!pos) {
            unmatched.insert(id);
            continue;
          }
          out.by_entity[*pos].push_back({pod.name, pod.ns, c.name, split.vgpu});
        }
      }
    }
  }
  for (auto& owners : out.by_entity) {
    std::sort(owners.begin(), owners.end());
    owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
  }
  out.unmatched.assign(unmatched.begin(), unmatched.end());
  return out;
}

std::optional<std::size_t> ProcessEntity(const std::vector<Entity>& entities, unsigned gpu_index,
                                         const GpuProcess& process) {
  std::optional<std::size_t> gpu;
  for (std::size_t i = 0; i < entities.size(); ++i) {
    const Entity& e = entities[i];
    if (e.gpu != gpu_index) continue;
    if (e.kind == EntityKind::kGpu) gpu = i;
    if (process.gpu_instance_id && e.kind == EntityKind::kGpuInstance &&
        e.gpu_instance_id == process.gpu_instance_id) {
      return i;
    }
  }
  return gpu;
}

PodNaming NamePods(const PodAssignments& assignments, const PodUidGpus& uids) {
  using Key = std::pair<std::string, std::string>;  // namespace, name
  std::map<std::string, std::set<Key>> candidates;
  for (const auto& [uid, gpus] : uids) {
    std::optional<std::set<Key>> common;
    for (std::size_t pos : gpus) {
      std::set<Key> here;
      if (pos < assignments.by_entity.size()) {
        for (const PodOwner& o : assignments.by_entity[pos]) here.insert({o.ns, o.pod});
      }
      if (!common) {
        common = std::move(here);
      } else {
        std::set<Key> both;
        std::set_intersection(common->begin(), common->end(), here.begin(), here.end(),
                              std::inserter(both, both.end()));
        common = std::move(both);
      }
    }
    candidates[uid] = common.value_or(std::set<Key>{});
  }
  PodNaming out;
  for (bool changed = true; changed;) {
    changed = false;
    std::map<Key, std::vector<std::string>> single;  // a pod → the unnamed UIDs that fit only it
    for (const auto& [uid, keys] : candidates) {
      if (!out.named.contains(uid) && keys.size() == 1) single[*keys.begin()].push_back(uid);
    }
    for (const auto& [k, fit] : single) {
      if (fit.size() != 1) continue;  // two UIDs fit one pod: neither is named
      out.named[fit.front()] = {k.second, k.first};
      for (auto& [other, others] : candidates) {
        if (other != fit.front()) others.erase(k);
      }
      changed = true;
    }
  }
  for (const auto& [uid, keys] : candidates) {
    if (out.named.contains(uid)) continue;
    if (keys.empty()) {
      out.reason[uid] = "the kubelet names no pod holding every GPU its processes use";
    } else if (keys.size() == 1) {
      out.reason[uid] = "the processes of another pod UID fit the same pod";
    } else {
      out.reason[uid] = std::to_string(keys.size()) +
                        " pods hold the GPUs its processes use and none is ruled out";
    }
  }
  return out;
}

}  // namespace gpulse::identity
