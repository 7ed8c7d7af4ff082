#include "core/entity.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace gpulse {

std::string VendorOf(const DeviceInfo& device) {
  if (device.vendor.empty()) return "nvidia";
  std::string v = device.vendor;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v;
}

std::string DeviceNode(const DeviceInfo& device) {
  const unsigned own = device.backend_index.value_or(device.index);
  return (VendorOf(device) == "nvidia" ? "nvidia" : "card") + std::to_string(own);
}

namespace {

Entity GpuEntity(const DeviceInfo& d, std::size_t pos) {
  Entity e;
  e.vendor = VendorOf(d);
  e.gpu = d.index;
  e.name = d.name;
  e.uuid = d.uuid;
  e.pci_bus_id = d.pci_bus_id;
  e.device_pos = pos;
  return e;
}

Entity SkippedEntity(const SkippedDevice& s) {
  Entity e;
  e.gpu = s.index;
  e.name = s.name;
  e.uuid = s.uuid;
  e.pci_bus_id = s.pci_bus_id;
  e.state = s.lost ? EntityState::kLost : EntityState::kSkipped;
  e.reason = s.reason;
  return e;
}

// "1c.3g.20gb" (a compute instance smaller than its GPU instance) -> "3g.20gb": the GI's profile.
std::string GpuInstanceProfile(const std::string& profile) {
  auto dot = profile.find('.');
  bool ci_prefix = dot != std::string::npos && dot >= 2 && profile[dot - 1] == 'c' &&
                   profile.find_first_not_of("0123456789") == dot - 1;
  return ci_prefix ? profile.substr(dot + 1) : profile;
}

// A GPU's instances: one GI entity per GI id (its readings through the first handle of that GI),
// then its CIs, one per MIG handle. A handle whose ids the driver did not give is a GI of its own
// with unknown ids, never merged with another.
void AppendInstances(const DeviceInfo& d, std::size_t device_pos, std::size_t gpu_entity,
                     std::vector<Entity>& out) {
  std::map<std::pair<bool, unsigned>, std::vector<std::size_t>> by_gi;  // (unknown, GI id or handle)
  for (std::size_t i = 0; i < d.mig_instances.size(); ++i) {
    const MigInstance& m = d.mig_instances[i];
    by_gi[m.ids_known ? std::pair{false, m.gpu_instance_id} : std::pair{true, static_cast<unsigned>(i)}]
        .push_back(i);
  }
  for (const auto& [key, handles] : by_gi) {
    const bool known = !key.first;
    const MigInstance& first = d.mig_instances[handles.front()];
    Entity g;
    g.kind = EntityKind::kGpuInstance;
    g.gpu = d.index;
    if (known) g.gpu_instance_id = key.second;
    g.profile = GpuInstanceProfile(first.profile);
    g.name = d.name + (g.profile.empty() ? " MIG" : " MIG " + g.profile);
    g.uuid = handles.size() == 1 ? first.uuid : "";  // a GI has no UUID of its own
    g.pci_bus_id = d.pci_bus_id;
    g.parent = gpu_entity;
    g.device_pos = device_pos;
    g.mig_pos = handles.front();
    std::size_t gi_entity = out.size();
    out.push_back(g);
    std::vector<std::size_t> sorted = handles;
    std::sort(sorted.begin(), sorted.end(), [&](std::size_t a, std::size_t b) {
      return d.mig_instances[a].compute_instance_id < d.mig_instances[b].compute_instance_id;
    });
    for (std::size_t h : sorted) {
      Entity c = g;
      c.kind = EntityKind::kComputeInstance;
      if (known) c.compute_instance_id = d.mig_instances[h].compute_instance_id;
      c.profile = d.mig_instances[h].profile;
      c.uuid = d.mig_instances[h].uuid;
      c.parent = gi_entity;
      c.mig_pos = h;
      out.push_back(c);
    }
  }
}

bool Matches(const Entity& e, std::string_view item) {
  if (item.empty()) return false;
  auto ids = [&](std::optional<unsigned> gi, std::optional<unsigned> ci) {
    std::string s = std::to_string(e.gpu);
    if (gi) s += ":" + std::to_string(*gi);
    if (ci) s += ":" + std::to_string(*ci);
    return s;
  };
  bool ids_known = e.kind == EntityKind::kGpu || e.gpu_instance_id.has_value();
  if (ids_known && item == ids(e.gpu_instance_id, e.compute_instance_id)) return true;
  return !e.uuid.empty() && (item == e.uuid);
}

}  // namespace

bool Entity::readable() const {
  return state != EntityState::kSkipped && device_pos.has_value() &&
         kind != EntityKind::kComputeInstance;
}

std::vector<Entity> BuildEntities(const SystemInfo& info) {
  std::vector<Entity> out;
  std::size_t next_skipped = 0;
  std::vector<const SkippedDevice*> skipped;
  for (const SkippedDevice& s : info.skipped) skipped.push_back(&s);
  std::sort(skipped.begin(), skipped.end(),
            [](const SkippedDevice* a, const SkippedDevice* b) { return a->index < b->index; });
  auto flush_skipped = [&](unsigned below) {
    while (next_skipped < skipped.size() && skipped[next_skipped]->index < below) {
      out.push_back(SkippedEntity(*skipped[next_skipped++]));
    }
  };
  for (std::size_t pos = 0; pos < info.devices.size(); ++pos) {
    const DeviceInfo& d = info.devices[pos];
    flush_skipped(d.index);
    std::size_t gpu_entity = out.size();
    out.push_back(GpuEntity(d, pos));
    AppendInstances(d, pos, gpu_entity, out);
  }
  flush_skipped(~0u);
  return out;
}

std::vector<Entity> SubsetEntities(const std::vector<Entity>& all, const std::vector<std::size_t>& keep) {
  std::map<std::size_t, std::size_t> renumber;
  std::vector<Entity> out;
  for (std::size_t pos : keep) {
    if (renumber.count(pos) != 0) continue;  // listed twice: the first place counts
    Entity e = all.at(pos);
    if (e.parent) {
      auto it = renumber.find(*e.parent);
      e.parent = it == renumber.end() ? std::nullopt : std::optional<std::size_t>(it->second);
    }
    renumber[pos] = out.size();
    out.push_back(std::move(e));
  }
  return out;
}

bool MarkLost(std::vector<Entity>& entities, std::size_t pos, std::int64_t unix_ns,
              std::string_view reason) {
  bool changed = false;
  auto mark = [&](Entity& e) {
    if (e.state == EntityState::kLost) return;
    e.state = EntityState::kLost;
    e.lost_unix_ns = unix_ns;
    e.reason = std::string(reason);
    changed = true;
  };
  mark(entities.at(pos));
  // A parent always comes before its instances, so one forward pass finds every descendant (they
  // need not follow their GPU contiguously in a subset).
  std::vector<bool> under(entities.size(), false);
  under[pos] = true;
  for (std::size_t i = pos + 1; i < entities.size(); ++i) {
    auto p = entities[i].parent;
    if (p && *p < i && under[*p]) {
      under[i] = true;
      mark(entities[i]);
    }
  }
  return changed;
}

std::string_view EntityKindName(EntityKind kind) {
  switch (kind) {
    case EntityKind::kGpu: return "gpu";
    case EntityKind::kGpuInstance: return "gpu_instance";
    case EntityKind::kComputeInstance: return "compute_instance";
  }
  return "gpu";
}

std::string_view EntityStateName(EntityState state) {
  switch (state) {
    case EntityState::kPresent: return "present";
    case EntityState::kLost: return "lost";
    case EntityState::kSkipped: return "skipped";
  }
  return "present";
}

std::string EntityLabel(const Entity& e) {
  std::string s = "GPU " + std::to_string(e.gpu);
  if (e.kind == EntityKind::kGpu) return s;
  s += e.gpu_instance_id ? "/GI " + std::to_string(*e.gpu_instance_id) : "/GI ?";
  if (e.kind == EntityKind::kComputeInstance) {
    s += e.compute_instance_id ? "/CI " + std::to_string(*e.compute_instance_id) : "/CI ?";
  }
  return s;
}

Result<std::vector<std::size_t>> SelectEntities(const std::vector<Entity>& entities,
                                                std::string_view list) {
  std::vector<std::size_t> out;
  if (list.empty()) {
    for (std::size_t i = 0; i < entities.size(); ++i) out.push_back(i);
    return out;
  }
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = std::min(list.find(',', start), list.size());
    std::string_view item = list.substr(start, end - start);
    std::size_t found = entities.size();
    for (std::size_t i = 0; i < entities.size() && found == entities.size(); ++i) {
      if (Matches(entities[i], item)) found = i;  // a MIG UUID names its GPU instance first
    }
    if (found == entities.size()) {
      return InvalidArgument("no GPU or MIG instance \"" + std::string(item) +
                             "\" (use a GPU index, a GPU-/MIG- UUID, gpu:gi or gpu:gi:ci)");
    }
    out.push_back(found);
    start = end + 1;
  }
  return out;
}

}  // namespace gpulse
