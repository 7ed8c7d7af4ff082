// Error bounds of energy figures (docs/energy.md, "Error bounds"): how far a device's energy taken
// from its hardware counter, or integrated from its power readings, can be from the true integral
// of its power over the same span, under stated assumptions about the sensor. Pure functions and a
// one-pass accumulator; no I/O.
//
// The assumptions, each a field of PowerSensor:
//   - the device's true power never exceeds `ceiling_w` (CeilingW: 110 % of the enforced limit, or
//     the highest reading when that is higher) and is never below 0;
//   - the energy counter shows the energy up to an instant at most `counter_period_s` before the
//     read (its update period), in steps of `counter_resolution_j`;
//   - a reading's timestamp is within `stamp_s` of the instant the driver read it.
//
// Thread-safety: pure functions; IntegralBound is a value type, one writer.
#pragma once

#include <optional>

namespace gpulse {

struct PowerSensor {
  double ceiling_w = 0;
  double counter_period_s = 0.1;        // NVML's counter: assumed, not measured (see docs)
  double counter_resolution_j = 0.001;  // NVML counts whole millijoules
  double stamp_s = 0.005;
};

// The power a device is assumed never to exceed: 110 % of its enforced limit, or its highest
// reading if that is higher; nullopt without either (then no bound can be given).
std::optional<double> CeilingW(std::optional<double> limit_w, std::optional<double> max_reading_w);

// The bound on |counter energy − true energy| for a counter difference between two reads:
// two resolution steps plus, at each end, the time the counter may lag or the stamp may be off,
// at the ceiling. `observed_period_s`: the longest span over which the counter was seen not to move
// while the device drew power (a lower bound on its update period); the larger of it and the
// assumed period is used.
double CounterBoundJ(const PowerSensor& s, double observed_period_s = 0);

// The trapezoidal integral of power readings and its bound, one interval at a time. Between two
// readings the true power is only known to lie in [0, ceiling], so an interval of length dt whose
// trapezoid is e can be off by max(e, ceiling·dt − e): honest whatever the sensor (instant or
// averaged) and however fast the load moves, and loose (docs/energy.md says how loose).
class IntegralBound {
 public:
  explicit IntegralBound(double ceiling_w) : ceiling_w_(ceiling_w) {}
  // One interval of `dt_s` seconds between readings `p0_w` and `p1_w`.
  void Add(double dt_s, double p0_w, double p1_w);
  double energy_j() const { return energy_j_; }
  double bound_j() const { return bound_j_; }

 private:
  double ceiling_w_;
  double energy_j_ = 0;
  double bound_j_ = 0;
};

// Whether two estimates of one energy disagree by more than their bounds allow: then at least one
// assumption is wrong, and the figures are flagged rather than averaged.
bool Disagree(double a_j, double a_bound_j, double b_j, double b_bound_j);

}  // namespace gpulse
