#include "power/readers/coverage.h"

#include <algorithm>
#include <cmath>

namespace gpulse::power {

void SpanAccumulator::NoteUuid(uint32_t uuid) {
  if (std::find(in_uuids_.begin(), in_uuids_.end(), uuid) == in_uuids_.end())
    in_uuids_.push_back(uuid);
}

void SpanAccumulator::Append(const SpanAccumulator& later) {
  if (upper_) return;
  if (later.lower_) lower_ = later.lower_;
  if (later.first_in_) {
    if (!first_in_) {
      first_in_ = later.first_in_;
      last_in_ = later.last_in_;
      in_max_gap_ = later.in_max_gap_;
      in_energy_j_ = later.in_energy_j_;
      in_distinct_ = later.in_distinct_;
      in_pmin_ = later.in_pmin_;
      in_pmax_ = later.in_pmax_;
      in_uuids_ = later.in_uuids_;
    } else {
      const Point& a = *last_in_;
      const Point& b = *later.first_in_;
      in_max_gap_ = std::max({in_max_gap_, later.in_max_gap_, b.t - a.t});
      in_energy_j_ += later.in_energy_j_ + 0.5 * (a.power_w + b.power_w) * (b.t - a.t);
      in_distinct_ += later.in_distinct_ - (a.t == b.t ? 1 : 0);
      in_pmin_ = std::min(in_pmin_, later.in_pmin_);
      in_pmax_ = std::max(in_pmax_, later.in_pmax_);
      for (uint32_t u : later.in_uuids_) NoteUuid(u);
      last_in_ = later.last_in_;
    }
  }
  if (later.upper_) upper_ = later.upper_;
}

void SpanAccumulator::RemapUuids(std::span<const uint32_t> map) {
  for (auto* p : {&lower_, &first_in_, &last_in_, &upper_})
    if (*p) (*p)->uuid = map[(*p)->uuid];
  std::vector<uint32_t> old;
  old.swap(in_uuids_);
  for (uint32_t u : old) NoteUuid(map[u]);
}

double ClippedSegmentEnergy(const Point& a, const Point& b, double lo, double hi) {
  double t0 = std::max(a.t, lo), t1 = std::min(b.t, hi);
  if (!(t1 > t0)) return 0;
  if (b.t == a.t) return a.power_w * (t1 - t0);
  double slope = (b.power_w - a.power_w) / (b.t - a.t);
  double p0 = a.power_w + slope * (t0 - a.t);
  double p1 = a.power_w + slope * (t1 - a.t);
  return 0.5 * (p0 + p1) * (t1 - t0);
}

SpanCoverage SpanAccumulator::Finish() const {
  SpanCoverage c;
  if (lower_) c.lower_t = lower_->t;
  if (upper_) c.upper_t = upper_->t;
  if (!c.bracketed()) return c;
  const Point& lo = *lower_;
  const Point& hi = *upper_;
  c.uuids.push_back(lo.uuid);
  auto note = [&c](uint32_t u) {
    if (std::find(c.uuids.begin(), c.uuids.end(), u) == c.uuids.end()) c.uuids.push_back(u);
  };
  c.power_min_w = std::min(lo.power_w, hi.power_w);
  c.power_max_w = std::max(lo.power_w, hi.power_w);
  if (!first_in_) {
    c.max_gap_s = hi.t - lo.t;
    c.observed_intervals = 1;
    c.energy_j = ClippedSegmentEnergy(lo, hi, span_.start, span_.end);
    c.edge_lower_s = span_.end - span_.start;  // one interpolated segment spans the window
    c.edge_upper_s = 0;
  } else {
    const Point& fi = *first_in_;
    const Point& la = *last_in_;
    c.max_gap_s = std::max({in_max_gap_, fi.t - lo.t, hi.t - la.t});
    c.observed_intervals = in_distinct_ + 1;
    c.energy_j = ClippedSegmentEnergy(lo, fi, span_.start, span_.end) + in_energy_j_ +
                 ClippedSegmentEnergy(la, hi, span_.start, span_.end);
    c.edge_lower_s = fi.t - span_.start;
    c.edge_upper_s = span_.end - la.t;
    c.power_min_w = std::min(c.power_min_w, in_pmin_);
    c.power_max_w = std::max(c.power_max_w, in_pmax_);
    for (uint32_t u : in_uuids_) note(u);
  }
  note(hi.uuid);
  return c;
}

}  // namespace gpulse::power
