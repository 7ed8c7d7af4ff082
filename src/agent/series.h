// One field of one entity over time, as the agent's history keeps it (docs/agent.md, "History"):
// a ring of compressed chunks, bounded by a number of points and by age. Time is unix milliseconds;
// a tick whose reading was absent (failed, unsupported that tick) is stored as an absent point,
// never as 0.
//
// Encoding (docs/agent.md, "Series encoding"): each chunk holds up to kChunkPoints points as one
// bit stream. Timestamps are delta-of-delta coded (a regular cadence costs one bit per point);
// values are coded against the previous value: an unchanged value costs one bit, a changed one a
// short prefix and the smallest of a few fixed widths. Integer-valued readings (and readings with
// at most three decimals, such as watts from milliwatts) are coded as scaled integer deltas; any
// other double as the XOR of its bits with the previous value's. Decoding gives back exactly the
// doubles appended.
//
// Thread-compatible: the agent guards each Series with its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::agent {

struct Point {
  std::int64_t t_ms = 0;
  std::optional<double> value;  // absent: the reading was missing at that tick
};

class Series {
 public:
  static constexpr std::size_t kChunkPoints = 1024;

  // Keeps at least the newest `max_points` points (and at most max_points + kChunkPoints: whole
  // chunks are dropped). REQUIRES: max_points >= 1.
  explicit Series(std::size_t max_points);

  // Appends one point. A point not newer than the newest one is ignored and false is returned
  // (time never goes backwards in a series).
  bool Append(std::int64_t t_ms, std::optional<double> value);

  // Appends to `out` the points with from_ms <= t_ms < until_ms, oldest first.
  void Query(std::int64_t from_ms, std::int64_t until_ms, std::vector<Point>& out) const;

  std::optional<Point> Latest() const;
  std::optional<std::int64_t> OldestMs() const;

  // Drops the chunks whose newest point is older than `t_ms` (keep-age). Returns points dropped.
  std::size_t DropOlderThan(std::int64_t t_ms);

  // Changes the bound (a watch changed); drops whole chunks now if over it.
  void SetMaxPoints(std::size_t max_points);

  std::size_t size() const;   // points held
  std::size_t bytes() const;  // heap bytes held (chunk streams and bookkeeping)
  std::size_t max_points() const { return max_points_; }

  // The most heap bytes a series bounded by `max_points` can ever hold, whatever its values (used
  // to compute and report the history bound before a watch is accepted).
  static std::size_t WorstCaseBytes(std::size_t max_points);

  // A self-contained byte image (format version, bound, chunks) for spilling to the state
  // database, and back. Parse refuses a truncated, corrupt or foreign image with a message.
  std::string Serialize() const;
  static Result<Series> Parse(std::string_view image);

  struct Chunk;  // series.cc

  Series(Series&&) noexcept;
  Series& operator=(Series&&) noexcept;
  ~Series();

 private:
  std::size_t max_points_;
  std::vector<Chunk> chunks_;  // oldest first; only the last is open for appends
};

}  // namespace gpulse::agent
