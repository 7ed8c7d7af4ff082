// The entity model (docs/adr/0010-entities.md): every reading belongs to an entity, and every
// output (devices, dmon, ps, record, the exporter, the JSON API) lists the same entities, so a
// device can no longer fall out of one output and stay in another.
//
// An entity is a GPU, a MIG GPU instance or a MIG compute instance (other vendors' devices are GPUs
// of their vendor). Its identity is stable across reads: the GPU's physical index, UUID and PCI bus
// id, and for instances the parent, GI/CI ids and profile. Its state is present, lost (with when)
// or skipped (with why). BuildEntities is a pure function of SystemInfo; lost states learned while
// reading are applied with MarkLost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/result.h"

namespace gpulse {

enum class EntityKind { kGpu, kGpuInstance, kComputeInstance };
enum class EntityState { kPresent, kLost, kSkipped };

struct Entity {
  EntityKind kind = EntityKind::kGpu;
  std::string vendor = "nvidia";
  unsigned gpu = 0;  // physical (NVML) index of the GPU, or of the parent GPU for an instance
  std::optional<unsigned> gpu_instance_id;      // GI and CI entities
  std::optional<unsigned> compute_instance_id;  // CI entities
  std::string profile;                          // MIG profile, e.g. "3g.20gb"; "" when unknown
  std::string name;
  std::string uuid;        // GPU-... for a GPU, MIG-... for a compute instance; "" when unknown
  std::string pci_bus_id;  // the GPU's (instances share their parent's)
  std::optional<std::size_t> parent;      // position of the parent entity in the list
  std::optional<std::size_t> device_pos;  // position in SystemInfo::devices of the GPU or parent
  // For a GI, a MIG handle of that instance (all its CIs share its memory); for a CI, its handle.
  std::optional<std::size_t> mig_pos;
  EntityState state = EntityState::kPresent;
  std::string reason;                      // why skipped or lost
  std::optional<std::int64_t> lost_unix_ns;  // when the loss was first seen (lost entities)

  // Entities with readings of their own: present GPUs and GPU instances. (A compute instance
  // has none until profiling fields; a skipped GPU cannot be read.)
  bool readable() const;
};

// GPUs in index order (skipped ones at their index), each followed by its GPU instances in GI id
// order, each followed by its compute instances.
std::vector<Entity> BuildEntities(const SystemInfo& info);

// The entities at positions `keep`, in that order (a repeated position counts once), with parent
// positions renumbered; a parent not kept becomes nullopt.
// REQUIRES: every kept instance comes after its kept parent in `keep`.
std::vector<Entity> SubsetEntities(const std::vector<Entity>& all, const std::vector<std::size_t>& keep);

// Marks entity `pos` and every instance under it lost at `unix_ns` with `reason`, unless it is
// already lost (the first loss time is kept). Returns whether anything changed.
bool MarkLost(std::vector<Entity>& entities, std::size_t pos, std::int64_t unix_ns,
              std::string_view reason);

std::string_view EntityKindName(EntityKind kind);     // "gpu", "gpu_instance", "compute_instance"
std::string_view EntityStateName(EntityState state);  // "present", "lost", "skipped"

// "GPU 0", "GPU 0/GI 2", "GPU 0/GI 2/CI 0": how tables name an entity.
std::string EntityLabel(const Entity& e);

// The entities named by a comma-separated list, in the order given: GPU indices ("0"), UUIDs
// (GPU-… or MIG-…), "gpu:gi" (a GPU instance) and "gpu:gi:ci" (a compute instance). An empty list
// selects every entity. An unknown entry fails with a message naming it.
Result<std::vector<std::size_t>> SelectEntities(const std::vector<Entity>& entities,
                                                std::string_view list);

}  // namespace gpulse
