// The arithmetic under the time model: keyframe channels as piecewise-linear functions, their exact
// integrals, and exact integrals of a channel times a sinusoid (the power wobble). Closed forms
// only, so the energy counter is the exact integral of the power the simulator reports, at any t.
//
// Thread-safety: immutable after construction.
#pragma once

#include <vector>

#include "scenario.h"

namespace gpulse::sim {

// f(s) from keyframes: linear between them, held before the first and after the last; the constant
// `fallback` when there are none. Two keyframes with the same t make a step (f takes the later
// value from that t on).
class PiecewiseLinear {
 public:
  explicit PiecewiseLinear(const Channel& channel);

  double At(double s) const;
  // ∫_0^s f(τ) dτ for s ≥ 0.
  double Integral(double s) const;
  // ∫_0^s max(f(τ) − offset, 0) · sin(ω τ + phase) dτ for s ≥ 0, ω > 0: only where f is above
  // `offset` (a piece that crosses it is cut at the crossing).
  double SinIntegralAbove(double s, double offset, double omega, double phase) const;

 private:
  // Calls fn(a, b, value_at_a, slope) for each linear piece of f over [0, s].
  template <typename Fn>
  void ForEachPiece(double s, Fn&& fn) const;

  std::vector<Keyframe> points_;
  double fallback_;
};

// ∑_{j=0}^{n-1} cos(jθ) and ∑_{j=0}^{n-1} sin(jθ), in closed form.
struct TrigSums {
  double cos_sum;
  double sin_sum;
};
TrigSums SumOfRotations(double n, double theta);

}  // namespace gpulse::sim
