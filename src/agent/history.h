// The agent's history: one Series per watched (entity, field), bounded by the watch's keep-age
// (docs/agent.md, "History"). Appends come from the watch ticks; queries from the API; the whole
// store is spilled to the state database at checkpoints and at shutdown, and loaded at start.
//
// Thread-compatible: used on the agent's worker thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/series.h"
#include "agent/state_db.h"
#include "core/entity.h"
#include "core/fields.h"

namespace gpulse::agent {

// "0" for GPU 0, "0:1" for its GPU instance 1, "0:1:0" for that instance's compute instance 0: the
// forms SelectEntities takes, stored in groups and history.
std::string EntityKey(const Entity& e);

struct SeriesKey {
  std::size_t entity = 0;  // position in the agent's entity list
  FieldIndex field = 0;
  auto operator<=>(const SeriesKey&) const = default;
};

class HistoryStore {
 public:
  // Creates, resizes or keeps the series of `key` for `max_points` points.
  void Ensure(SeriesKey key, std::size_t max_points);
  // Drops every series whose key is not in `keep`.
  void Retain(const std::map<SeriesKey, std::size_t>& keep);
  void Append(SeriesKey key, std::int64_t t_ms, std::optional<double> value);
  void MarkUnsupported(SeriesKey key) { unsupported_[key] = true; }
  bool unsupported(SeriesKey key) const { return unsupported_.count(key) != 0; }
  void DropOlderThan(SeriesKey key, std::int64_t t_ms);

  const Series* Find(SeriesKey key) const;
  std::size_t bytes() const;
  std::size_t points() const;
  std::size_t series() const { return series_.size(); }

  // Spill images for every series (stored as "KEY@UUID"), and back (series of entities this
  // machine does not have, by key and UUID, or of unknown fields are skipped and counted in
  // `dropped`).
  std::vector<HistoryBlob> Spill(const std::vector<Entity>& entities) const;
  // The same images one at a time (nullopt at the end), for StateDb::SaveHistory's streaming form:
  // a checkpoint never holds a second copy of the whole history. Valid while the store is
  // unchanged.
  std::function<std::optional<HistoryBlob>()> SpillOneByOne(
      const std::vector<Entity>& entities) const;
  std::size_t Load(const std::vector<HistoryBlob>& blobs, const std::vector<Entity>& entities,
                   std::size_t* dropped);

 private:
  std::map<SeriesKey, Series> series_;
  std::map<SeriesKey, bool> unsupported_;
};

}  // namespace gpulse::agent
