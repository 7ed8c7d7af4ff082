// What the agent samples, from its watches (pure): DCGM merges watches of one field on one entity,
// so each (entity, field) is read at the shortest update interval and kept for the longest
// keep-age of the watches that name it. Ticks then read, per interval, the fields due on each
// entity in one backend call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/history.h"
#include "agent/state_db.h"
#include "core/entity.h"

namespace gpulse::agent {

inline constexpr int kDefaultGroupId = 0;  // every GPU (DCGM's DCGM_GROUP_ALL_GPUS)
inline constexpr const char* kDefaultGroupName = "DCGM_ALL_SUPPORTED_GPUS";

struct EffectiveWatch {
  std::int64_t update_ms = 0;
  std::int64_t keep_age_ms = 0;
  std::size_t max_points = 0;  // keep_age / update, plus the newest point
};

struct Plan {
  std::map<SeriesKey, EffectiveWatch> series;
  // interval (ms) -> entity position -> fields read at that interval
  std::map<std::int64_t, std::map<std::size_t, std::vector<FieldIndex>>> cadences;
  std::size_t worst_case_bytes = 0;  // the history bound: Series::WorstCaseBytes summed
  std::vector<std::string> notes;    // e.g. a group entity this machine does not have
};

// The entity positions of a group: the default group is every GPU; a user group its entity keys
// that name an entity here (the others are noted).
std::vector<std::size_t> GroupEntities(int group_id, const std::vector<GroupRow>& groups,
                                       const std::vector<Entity>& entities,
                                       std::vector<std::string>* notes = nullptr);

// Whether `field` can be read on entity `e` (a GPU: every field; a GPU instance: the per-instance
// ones; a compute instance or a skipped GPU: none).
bool Watchable(const Entity& e, FieldIndex field);

Plan BuildPlan(const std::vector<WatchRow>& watches, const std::vector<GroupRow>& groups,
               const std::vector<Entity>& entities);

}  // namespace gpulse::agent
