// The live views' frame (docs/schema/live-frame.schema.json): one device read as `gpulse top` and
// the live page show it. Every entity with readings (GPUs, GPU instances, and GPUs lost or skipped)
// with the readings its panel needs, a short history of utilization and power for sparklines, and
// the GPU processes joined with procfs. Absent readings stay null.
//
// Thread-safety: a FrameBuilder is used from one thread at a time; LiveFields is pure.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "core/fields.h"
#include "exporter/snapshot.h"
#include "sys/rooted_fs.h"

namespace gpulse::exporter {

inline constexpr const char* kLiveFrameFormat = "gpulse.live-frame/v1";

// The fields a frame shows: read with the counters' while anyone watches.
std::span<const FieldIndex> LiveFields();

struct FrameContext {
  std::string source;  // "exporter", "agent" or "direct"
  std::string hostname;
  double interval_s = 1.0;
  std::optional<std::size_t> viewers;  // nullopt for direct reads
  std::uint64_t dropped_frames_total = 0;
};

class FrameBuilder {
 public:
  // `entities` is BuildEntities(info); `proc` is the procfs tree processes are attributed from
  // (nullopt: simulated PIDs stay anonymous).
  FrameBuilder(const SystemInfo& info, std::vector<Entity> entities,
               std::optional<sys::RootedFs> proc, std::size_t history_points = 60);

  // Adds `snap` to the history and returns its frame, with the next sequence number. Intervals
  // with no read since the previous frame (nobody watched, reads failed) are gaps (null points)
  // in the history, at most a whole history of them.
  nlohmann::json Build(const Snapshot& snap, const FrameContext& context);

  std::uint64_t seq() const { return seq_; }

 private:
  struct History {
    std::deque<std::optional<double>> util, power;
  };
  nlohmann::json EntityJson(std::size_t pos, const Snapshot& snap);
  nlohmann::json ProcessesJson(const Snapshot& snap, std::string& note) const;
  void Remember(std::size_t pos, std::optional<double> util, std::optional<double> power);
  void MarkGaps(std::int64_t t_unix_ns, double interval_s);

  const SystemInfo& info_;
  const std::vector<Entity> entities_;
  const std::optional<sys::RootedFs> proc_;
  const std::size_t history_points_;
  std::vector<History> history_;  // parallel to entities_
  std::uint64_t seq_ = 0;
  std::int64_t last_t_unix_ns_ = 0;  // of the previous frame's read
};

}  // namespace gpulse::exporter
