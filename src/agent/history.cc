#include "agent/history.h"

#include <memory>

namespace gpulse::agent {

std::string EntityKey(const Entity& e) {
  std::string key = std::to_string(e.gpu);
  if (e.gpu_instance_id) key += ":" + std::to_string(*e.gpu_instance_id);
  if (e.compute_instance_id) key += ":" + std::to_string(*e.compute_instance_id);
  return key;
}

void HistoryStore::Ensure(SeriesKey key, std::size_t max_points) {
  auto it = series_.find(key);
  if (it == series_.end()) {
    series_.emplace(key, Series(max_points));
  } else if (it->second.max_points() != max_points) {
    it->second.SetMaxPoints(max_points);
  }
}

void HistoryStore::Retain(const std::map<SeriesKey, std::size_t>& keep) {
  for (auto it = series_.begin(); it != series_.end();) {
    it = keep.count(it->first) != 0 ? std::next(it) : series_.erase(it);
  }
  for (auto it = unsupported_.begin(); it != unsupported_.end();) {
    it = keep.count(it->first) != 0 ? std::next(it) : unsupported_.erase(it);
  }
}

void HistoryStore::Append(SeriesKey key, std::int64_t t_ms, std::optional<double> value) {
  if (auto it = series_.find(key); it != series_.end()) it->second.Append(t_ms, value);
}

void HistoryStore::DropOlderThan(SeriesKey key, std::int64_t t_ms) {
  if (auto it = series_.find(key); it != series_.end()) it->second.DropOlderThan(t_ms);
}

const Series* HistoryStore::Find(SeriesKey key) const {
  auto it = series_.find(key);
  return it == series_.end() ? nullptr : &it->second;
}

std::size_t HistoryStore::bytes() const {
  std::size_t n = 0;
  for (const auto& [k, s] : series_) n += s.bytes();
  return n;
}

std::size_t HistoryStore::points() const {
  std::size_t n = 0;
  for (const auto& [k, s] : series_) n += s.size();
  return n;
}

std::vector<HistoryBlob> HistoryStore::Spill(const std::vector<Entity>& entities) const {
  std::vector<HistoryBlob> out;
  out.reserve(series_.size());
  for (const auto& [k, s] : series_) {
    if (s.size() == 0) continue;
    const Entity& e = entities.at(k.entity);
    out.push_back({EntityKey(e) + "@" + e.uuid, FieldAt(k.field).id, s.Serialize()});
  }
  return out;
}

std::function<std::optional<HistoryBlob>()> HistoryStore::SpillOneByOne(
    const std::vector<Entity>& entities) const {
  auto it = std::make_shared<std::map<SeriesKey, Series>::const_iterator>(series_.begin());
  return [this, it, &entities]() -> std::optional<HistoryBlob> {
    while (*it != series_.end() && (*it)->second.size() == 0) ++*it;
    if (*it == series_.end()) return std::nullopt;
    const auto& [k, s] = **it;
    ++*it;
    const Entity& e = entities.at(k.entity);
    return HistoryBlob{EntityKey(e) + "@" + e.uuid, FieldAt(k.field).id, s.Serialize()};
  };
}

std::size_t HistoryStore::Load(const std::vector<HistoryBlob>& blobs,
                               const std::vector<Entity>& entities, std::size_t* dropped) {
  std::map<std::string, std::size_t> by_key;
  // Saved under the entity's key and UUID: a series of another GPU at the same index (the state
  // directory moved, a GPU replaced) is not served as this one's.
  for (std::size_t i = 0; i < entities.size(); ++i) {
    by_key[EntityKey(entities[i]) + "@" + entities[i].uuid] = i;
  }
  std::size_t loaded = 0;
  for (const HistoryBlob& b : blobs) {
    auto e = by_key.find(b.entity);
    auto f = IndexOf(b.field_id);
    auto s = Series::Parse(b.image);
    if (e == by_key.end() || !f || !s) {
      if (dropped != nullptr) ++*dropped;
      continue;
    }
    series_.insert_or_assign(SeriesKey{e->second, *f}, std::move(s).value());
    ++loaded;
  }
  return loaded;
}

}  // namespace gpulse::agent
