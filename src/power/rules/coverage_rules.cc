#include "power/rules/coverage_rules.h"

#include <algorithm>
#include <cmath>

#include "power/readers/contract.h"

namespace gpulse::power {

std::optional<int64_t> ExpectedIntervals(const SpanCoverage& c, std::optional<double> interval_s) {
  if (!c.bracketed() || !interval_s || !std::isfinite(*interval_s) || *interval_s <= 0)
    return std::nullopt;
  double ratio = std::floor((*c.upper_t - *c.lower_t) / *interval_s);
  constexpr double kCap =
      1e15;  // keeps the cast defined for absurd spans; such a span fails anyway
  return static_cast<int64_t>(std::isfinite(ratio) ? std::min(ratio, kCap) : kCap);
}

bool SampleLossExceeded(const SpanCoverage& c, std::optional<double> interval_s) {
  auto expected = ExpectedIntervals(c, interval_s);
  if (!expected) return true;
  int64_t missing = std::max<int64_t>(0, *expected - c.observed_intervals);
  return static_cast<double>(missing) >
         kMaxMissingIntervalFraction * static_cast<double>(*expected);
}

bool SampleGapExceeded(const SpanCoverage& c) { return c.max_gap_s > kMaxSampleGapSeconds; }

}  // namespace gpulse::power
