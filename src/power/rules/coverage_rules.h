// The coverage rules over one device's bracketing sequence in one window (power/readers/coverage.h
// computes the sequence's figures in the streaming pass): the upstream's 3 s gap rule and the
// seed's cumulative-loss rule. Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "power/readers/coverage.h"

namespace gpulse::power {

// floor((last_bracket - first_bracket) / interval); nullopt without a finite positive interval.
std::optional<int64_t> ExpectedIntervals(const SpanCoverage& c, std::optional<double> interval_s);
// More than 5% of the expected intervals missing (shared/seeds/002 cumulative coverage rule).
bool SampleLossExceeded(const SpanCoverage& c, std::optional<double> interval_s);
// The largest gap is over 3.0 s (exactly 3.0 passes).
bool SampleGapExceeded(const SpanCoverage& c);

}  // namespace gpulse::power
