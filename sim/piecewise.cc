#include "piecewise.h"

#include <algorithm>
#include <cmath>

namespace gpulse::sim {

PiecewiseLinear::PiecewiseLinear(const Channel& channel)
    : points_(channel.points), fallback_(channel.fallback) {}

template <typename Fn>
void PiecewiseLinear::ForEachPiece(double s, Fn&& fn) const {
  if (s <= 0) return;
  if (points_.empty()) {
    fn(0.0, s, fallback_, 0.0);
    return;
  }
  const Keyframe& first = points_.front();
  if (first.t > 0) fn(0.0, std::min(s, first.t), first.value, 0.0);
  for (size_t i = 0; i + 1 < points_.size(); ++i) {
    const Keyframe& a = points_[i];
    const Keyframe& b = points_[i + 1];
    if (s <= a.t) return;
    if (b.t <= a.t) continue;  // a step: zero width
    fn(a.t, std::min(s, b.t), a.value, (b.value - a.value) / (b.t - a.t));
  }
  const Keyframe& last = points_.back();
  if (s > last.t) fn(last.t, s, last.value, 0.0);
}

double PiecewiseLinear::At(double s) const {
  if (points_.empty()) return fallback_;
  if (s < points_.front().t) return points_.front().value;
  // Right-continuous: at a step's time the value after the step.
  auto hi = std::upper_bound(points_.begin(), points_.end(), s,
                             [](double v, const Keyframe& k) { return v < k.t; });
  if (hi == points_.end()) return points_.back().value;
  auto lo = hi - 1;
  return lo->value + (hi->value - lo->value) * (s - lo->t) / (hi->t - lo->t);
}

double PiecewiseLinear::Integral(double s) const {
  double sum = 0;
  ForEachPiece(s, [&](double a, double b, double va, double slope) {
    double len = b - a;
    sum += len * (va + 0.5 * slope * len);
  });
  return sum;
}

double PiecewiseLinear::SinIntegralAbove(double s, double offset, double omega,
                                         double phase) const {
  double sum = 0;
  ForEachPiece(s, [&](double a, double b, double va, double slope) {
    // With u = τ − a: ∫ (c + k·u)·sin(ωu + ψ) du over the part of [0, L] where c + k·u > 0;
    // antiderivative −(c+ku)cos/ω + k·sin/ω².
    const double c = va - offset;
    const double psi = omega * a + phase;
    double from = 0, to = b - a;
    if (slope == 0) {
      if (c <= 0) return;
    } else {
      const double cross = -c / slope;  // where c + k·u = 0
      if (slope > 0) from = std::max(from, cross);
      if (slope < 0) to = std::min(to, cross);
      if (from >= to) return;
    }
    auto antiderivative = [&](double u) {
      double x = omega * u + psi;
      return -(c + slope * u) * std::cos(x) / omega + slope * std::sin(x) / (omega * omega);
    };
    sum += antiderivative(to) - antiderivative(from);
  });
  return sum;
}

TrigSums SumOfRotations(double n, double theta) {
  if (n <= 0) return {0, 0};
  const double half = std::sin(theta / 2);
  if (std::abs(half) < 1e-12) return {n, 0};  // θ a multiple of 2π: every term is (1, 0)
  const double scale = std::sin(n * theta / 2) / half;
  const double mid = (n - 1) * theta / 2;
  return {scale * std::cos(mid), scale * std::sin(mid)};
}

}  // namespace gpulse::sim
