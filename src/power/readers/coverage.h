// Per-(device, window) coverage and energy, computed in one streaming pass. A SpanAccumulator sees
// one device's samples in nondecreasing time order and keeps O(1) state plus the distinct UUIDs it
// saw, so memory depends on devices × windows, never on the length of samples.csv.
//
// The bracketing sequence of a window [start, end] is: the last sample at or before start, every
// sample strictly inside, and the first sample at or after end. Everything here is derived from it.
// Thread-compatible: one accumulator per thread; Append() merges a later, time-ordered partial.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gpulse::power {

struct TimeSpan {
  double start = 0;
  double end = 0;
};

struct Point {
  double t = 0;
  double power_w = 0;
  uint32_t uuid = 0;  // index into the owning device's UUID list
};

struct SpanCoverage {
  std::optional<double> lower_t;  // bracketing sample at or before start
  std::optional<double> upper_t;  // bracketing sample at or after end
  bool bracketed() const { return lower_t.has_value() && upper_t.has_value(); }
  // Valid only when bracketed():
  double max_gap_s = 0;            // largest consecutive difference in the bracketing sequence
  int64_t observed_intervals = 0;  // distinct sample times in the sequence - 1
  std::vector<uint32_t> uuids;     // distinct UUIDs in the sequence, first seen first
  double energy_j = 0;             // trapezoid, linear interpolation at the window edges
  double power_min_w = 0, power_max_w = 0;    // over the bracketing samples
  double edge_lower_s = 0, edge_upper_s = 0;  // part of each edge segment inside the window
};

class SpanAccumulator {
 public:
  explicit SpanAccumulator(TimeSpan span) : span_(span) {}

  // REQUIRES: p.t >= the time of every point added before. Inline: called per row and window.
  // Because times never decrease, a point at or after the end closes the sequence and every later
  // point lands in the last branch too.
  void Add(const Point& p) {
    if (p.t <= span_.start)
      lower_ = p;
    else if (p.t < span_.end)
      AddInside(p);
    else if (!upper_)
      upper_ = p;
  }
  // Merges the partial state of a later segment of the same device (its times >= ours).
  void Append(const SpanAccumulator& later);
  // Rewrites UUID indices (after partial device tables are merged). map[old] = new.
  void RemapUuids(std::span<const uint32_t> map);
  SpanCoverage Finish() const;

 private:
  void AddInside(const Point& p) {
    if (!first_in_) {
      first_in_ = p;
      in_pmin_ = in_pmax_ = p.power_w;
      in_distinct_ = 1;
    } else {
      const Point& prev = *last_in_;
      in_max_gap_ = std::max(in_max_gap_, p.t - prev.t);
      in_energy_j_ += 0.5 * (prev.power_w + p.power_w) * (p.t - prev.t);
      if (p.t != prev.t) ++in_distinct_;
      in_pmin_ = std::min(in_pmin_, p.power_w);
      in_pmax_ = std::max(in_pmax_, p.power_w);
    }
    last_in_ = p;
    if (in_uuids_.empty() || in_uuids_.back() != p.uuid) NoteUuid(p.uuid);  // usually one UUID
  }
  void NoteUuid(uint32_t uuid);

  TimeSpan span_;
  std::optional<Point> lower_, first_in_, last_in_, upper_;
  double in_max_gap_ = 0;
  double in_energy_j_ = 0;
  int64_t in_distinct_ = 0;
  double in_pmin_ = 0, in_pmax_ = 0;
  std::vector<uint32_t> in_uuids_;
};

// Integral of the straight line through a and b over [max(a.t, lo), min(b.t, hi)].
double ClippedSegmentEnergy(const Point& a, const Point& b, double lo, double hi);

}  // namespace gpulse::power
