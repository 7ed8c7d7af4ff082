#include "core/energy_bound.h"

#include <algorithm>
#include <cmath>

namespace gpulse {

namespace {
constexpr double kLimitHeadroom = 1.1;  // power may exceed the enforced limit briefly
}  // namespace

std::optional<double> CeilingW(std::optional<double> limit_w, std::optional<double> max_reading_w) {
  std::optional<double> c;
  if (limit_w && *limit_w > 0) c = *limit_w * kLimitHeadroom;
  if (max_reading_w && *max_reading_w > 0) c = std::max(c.value_or(0), *max_reading_w);
  return c;
}

double CounterBoundJ(const PowerSensor& s, double observed_period_s) {
  const double period = std::max(s.counter_period_s, observed_period_s);
  // Each end: the counter shows energy up to an instant in [t − period − stamp, t + stamp]; the
  // difference of two such ends is off by at most (period + 2·stamp) at the ceiling.
  return 2 * s.counter_resolution_j + (period + 2 * s.stamp_s) * s.ceiling_w;
}

void IntegralBound::Add(double dt_s, double p0_w, double p1_w) {
  if (!(dt_s > 0)) return;
  const double e = 0.5 * (p0_w + p1_w) * dt_s;
  energy_j_ += e;
  const double top = std::max(ceiling_w_, std::max(p0_w, p1_w)) * dt_s;
  bound_j_ += std::max(e, top - e);
}

bool Disagree(double a_j, double a_bound_j, double b_j, double b_bound_j) {
  return std::abs(a_j - b_j) > a_bound_j + b_bound_j;
}

}  // namespace gpulse
