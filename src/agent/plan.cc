#include "agent/plan.h"

#include <algorithm>

namespace gpulse::agent {

std::vector<std::size_t> GroupEntities(int group_id, const std::vector<GroupRow>& groups,
                                       const std::vector<Entity>& entities,
                                       std::vector<std::string>* notes) {
  std::vector<std::size_t> out;
  if (group_id == kDefaultGroupId) {
    for (std::size_t i = 0; i < entities.size(); ++i) {
      if (entities[i].kind == EntityKind::kGpu) out.push_back(i);
    }
    return out;
  }
  auto g = std::find_if(groups.begin(), groups.end(),
                        [&](const GroupRow& r) { return r.id == group_id; });
  if (g == groups.end()) return out;
  for (const std::string& key : g->entities) {
    auto e = std::find_if(entities.begin(), entities.end(),
                          [&](const Entity& x) { return EntityKey(x) == key; });
    if (e == entities.end()) {
      if (notes != nullptr) {
        notes->push_back("group " + std::to_string(group_id) + " names entity " + key +
                         ", which this machine does not have");
      }
      continue;
    }
    out.push_back(static_cast<std::size_t>(e - entities.begin()));
  }
  return out;
}

bool Watchable(const Entity& e, FieldIndex field) {
  if (e.state == EntityState::kSkipped) return false;
  switch (e.kind) {
    case EntityKind::kGpu:
      return true;
    case EntityKind::kGpuInstance:
      return PerInstance(FieldAt(field));
    case EntityKind::kComputeInstance:
      return false;
  }
  return false;
}

Plan BuildPlan(const std::vector<WatchRow>& watches, const std::vector<GroupRow>& groups,
               const std::vector<Entity>& entities) {
  Plan plan;
  for (const WatchRow& w : watches) {
    for (std::size_t pos : GroupEntities(w.group_id, groups, entities, &plan.notes)) {
      for (int id : w.field_ids) {
        auto f = IndexOf(id);
        if (!f || !Watchable(entities[pos], *f)) continue;
        EffectiveWatch& e = plan.series[SeriesKey{pos, *f}];
        e.update_ms = e.update_ms == 0 ? w.update_ms : std::min(e.update_ms, w.update_ms);
        e.keep_age_ms = std::max(e.keep_age_ms, w.keep_age_s * 1000);
      }
    }
  }
  for (auto& [key, e] : plan.series) {
    e.max_points = static_cast<std::size_t>(e.keep_age_ms / e.update_ms) + 1;
    plan.cadences[e.update_ms][key.entity].push_back(key.field);
    plan.worst_case_bytes += Series::WorstCaseBytes(e.max_points);
  }
  return plan;
}

}  // namespace gpulse::agent
