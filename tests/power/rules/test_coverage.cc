// Coverage rules: bracketing, largest gap (3.0 s passes, more fails), cumulative sample loss
// (shared/seeds/002), sample-order independence, and the integral on known signals.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "power/readers/coverage.h"
#include "power/rules/coverage_rules.h"

namespace gpulse::power {
namespace {

SpanCoverage Cover(TimeSpan span, const std::vector<double>& times, double watts = 100.0) {
  SpanAccumulator acc(span);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  for (double t : sorted) acc.Add({t, watts, 0});
  return acc.Finish();
}

std::vector<double> Every(double from, double to, double step) {
  std::vector<double> out;
  for (double t = from; t <= to + 1e-9; t += step) out.push_back(t);
  return out;
}

TEST(Coverage, BracketedWithSmallGapsIsValid) {
  SpanCoverage c = Cover({1000.5, 1010.5}, Every(1000, 1011, 1.0));
  ASSERT_TRUE(c.bracketed());
  EXPECT_EQ(*c.lower_t, 1000.0);
  EXPECT_EQ(*c.upper_t, 1011.0);
  EXPECT_EQ(c.max_gap_s, 1.0);
  EXPECT_FALSE(SampleGapExceeded(c));
  EXPECT_FALSE(SampleLossExceeded(c, 1.0));
}

TEST(Coverage, NotBracketedWithoutASampleBeforeStart) {
  EXPECT_FALSE(Cover({1000.0, 1010.0}, Every(1000.5, 1011, 1.0)).bracketed());
}

TEST(Coverage, NotBracketedWithoutASampleAfterEnd) {
  EXPECT_FALSE(Cover({1000.0, 1010.0}, Every(999, 1009.5, 1.0)).bracketed());
}

TEST(Coverage, SamplesExactlyOnTheBoundariesBracket) {
  SpanCoverage c = Cover({1000.0, 1010.0}, Every(1000, 1010, 1.0));
  ASSERT_TRUE(c.bracketed());
  EXPECT_EQ(*c.lower_t, 1000.0);
  EXPECT_EQ(*c.upper_t, 1010.0);
}

TEST(Coverage, MissingWindowIsNeverVacuouslyValid) {
  // No samples at all: not bracketed, so never valid.
  EXPECT_FALSE(Cover({1000.0, 1010.0}, {}).bracketed());
}

TEST(Coverage, GapOfExactlyThreeSecondsPasses) {
  SpanCoverage c = Cover({1000.0, 1009.0}, {999.0, 1002.0, 1005.0, 1008.0, 1011.0});
  EXPECT_EQ(c.max_gap_s, 3.0);
  EXPECT_FALSE(SampleGapExceeded(c));
}

TEST(Coverage, GapOfThreeAndAHalfSecondsFails) {
  SpanCoverage c = Cover({1000.0, 1009.0}, {999.0, 1002.5, 1006.0, 1009.5});
  EXPECT_EQ(c.max_gap_s, 3.5);
  EXPECT_TRUE(SampleGapExceeded(c));
}

TEST(Coverage, SixSecondStepFailsGap) {
  auto t = Every(990, 1100, 1.0);
  t.erase(std::remove_if(t.begin(), t.end(), [](double x) { return x > 1040 && x < 1046; }),
          t.end());
  SpanCoverage c = Cover({1000.0, 1090.0}, t);
  EXPECT_EQ(c.max_gap_s, 6.0);
  EXPECT_TRUE(SampleGapExceeded(c));
}

TEST(Coverage, GapIsRetainedEvenWhenCoverageIsInvalid) {
  SpanCoverage c = Cover({1000.0, 1020.0}, {999.0, 1010.0, 1021.0});
  EXPECT_EQ(c.max_gap_s, 11.0);
}

TEST(Coverage, DoesNotDependOnSampleOrder) {
  auto times = Every(995, 1030, 0.7);
  std::mt19937 rng(7);
  SpanCoverage sorted = Cover({1000.0, 1020.0}, times);
  for (int i = 0; i < 5; ++i) {
    std::shuffle(times.begin(), times.end(), rng);
    SpanCoverage c = Cover({1000.0, 1020.0}, times);  // Cover sorts, as the scan's exact pass does
    EXPECT_EQ(c.max_gap_s, sorted.max_gap_s);
    EXPECT_EQ(c.observed_intervals, sorted.observed_intervals);
  }
}

// Cumulative sample loss: expected = floor((last - first) / interval), observed = distinct - 1.
TEST(SampleLoss, OneDroppedSampleFailsBelowTwentyIntervals) {
  auto t = Every(1000, 1019, 1.0);  // 19 intervals
  t.erase(t.begin() + 10);
  SpanCoverage c = Cover({1000.0, 1019.0}, t);
  EXPECT_EQ(*ExpectedIntervals(c, 1.0), 19);
  EXPECT_EQ(c.observed_intervals, 18);
  EXPECT_TRUE(SampleLossExceeded(c, 1.0));
}

TEST(SampleLoss, OneDroppedSamplePassesFromTwentyIntervals) {
  auto t = Every(1000, 1020, 1.0);  // 20 intervals
  t.erase(t.begin() + 10);
  SpanCoverage c = Cover({1000.0, 1020.0}, t);
  EXPECT_EQ(*ExpectedIntervals(c, 1.0), 20);
  EXPECT_EQ(c.observed_intervals, 19);
  EXPECT_FALSE(SampleLossExceeded(c, 1.0));
}

TEST(SampleLoss, ThreeSecondHolePassesOnlyFromFortyIntervals) {
  auto hole = [](double last) {
    auto t = Every(1000, last, 1.0);
    t.erase(t.begin() + 10, t.begin() + 12);  // two missing samples: one 3 s gap
    return t;
  };
  SpanCoverage c40 = Cover({1000.0, 1040.0}, hole(1040));
  EXPECT_EQ(c40.max_gap_s, 3.0);
  EXPECT_FALSE(SampleGapExceeded(c40));
  EXPECT_FALSE(SampleLossExceeded(c40, 1.0));
  SpanCoverage c39 = Cover({1000.0, 1039.0}, hole(1039));
  EXPECT_TRUE(SampleLossExceeded(c39, 1.0));
}

TEST(SampleLoss, TwoSecondCadenceAgainstRecordedOneSecondFails) {
  SpanCoverage c = Cover({1000.0, 1100.0}, Every(1000, 1100, 2.0));
  EXPECT_FALSE(SampleGapExceeded(c));
  EXPECT_TRUE(SampleLossExceeded(c, 1.0));
  EXPECT_FALSE(SampleLossExceeded(c, 2.0));
}

TEST(SampleLoss, RepeatedRowTimesCountOnce) {
  auto t = Every(1000, 1040, 1.0);
  auto dup = t;
  t.insert(t.end(), dup.begin(), dup.end());
  SpanCoverage c = Cover({1000.0, 1040.0}, t);
  EXPECT_EQ(c.observed_intervals, 40);
  EXPECT_FALSE(SampleLossExceeded(c, 1.0));
}

TEST(SampleLoss, NoFinitePositiveIntervalFails) {
  SpanCoverage c = Cover({1000.0, 1040.0}, Every(1000, 1040, 1.0));
  EXPECT_TRUE(SampleLossExceeded(c, std::nullopt));
  EXPECT_TRUE(SampleLossExceeded(c, 0.0));
  EXPECT_TRUE(SampleLossExceeded(c, -1.0));
  EXPECT_TRUE(SampleLossExceeded(c, std::numeric_limits<double>::infinity()));
}

TEST(SampleLoss, EveryFifthSecondWithinTimeoutBudgetIsRejected) {
  SpanCoverage c = Cover({1000.0, 1100.0}, Every(1000, 1100, 5.0));
  EXPECT_TRUE(SampleGapExceeded(c));
  EXPECT_TRUE(SampleLossExceeded(c, 1.0));
}

// Energy on signals with a known integral.
TEST(CoverageEnergy, ConstantPowerIsPowerTimesDuration) {
  SpanCoverage c = Cover({1000.25, 1060.25}, Every(1000, 1061, 1.0), 300.0);
  EXPECT_NEAR(c.energy_j, 300.0 * 60.0, 1e-9);
}

TEST(CoverageEnergy, LinearRampIsExactWithEdgeInterpolation) {
  // P(t) = 100 + 2 (t - 1000); integral over [1000.5, 1010.25] is exact for a piecewise-linear
  // rule.
  SpanAccumulator acc({1000.5, 1010.25});
  for (double t : Every(1000, 1011, 1.0)) acc.Add({t, 100 + 2 * (t - 1000), 0});
  SpanCoverage c = acc.Finish();
  auto prim = [](double t) { return 100 * t + (t - 1000) * (t - 1000); };
  EXPECT_NEAR(c.energy_j, prim(1010.25) - prim(1000.5), 1e-6);
  EXPECT_DOUBLE_EQ(c.edge_lower_s, 0.5);
  EXPECT_DOUBLE_EQ(c.edge_upper_s, 0.25);
}

TEST(CoverageEnergy, WindowInsideOneIntervalInterpolatesBothEdges) {
  SpanAccumulator acc({1000.25, 1000.75});
  acc.Add({1000.0, 100, 0});
  acc.Add({1001.0, 200, 0});
  SpanCoverage c = acc.Finish();
  EXPECT_NEAR(c.energy_j, 75.0, 1e-9);  // 125 W to 175 W: mean 150 W x 0.5 s
}

TEST(CoverageEnergy, StepSignalTrapezoidError) {
  // 200 W then 300 W from t=1005: the trapezoid smears the step over one interval (50 J error).
  SpanAccumulator acc({1000.0, 1010.0});
  for (double t : Every(1000, 1010, 1.0)) acc.Add({t, t < 1005 ? 200.0 : 300.0, 0});
  SpanCoverage c = acc.Finish();
  EXPECT_NEAR(c.energy_j, 200 * 4 + 250 + 300 * 5, 1e-9);
}

TEST(CoverageEnergy, AppendEqualsOnePass) {
  TimeSpan span{1003.3, 1017.9};
  auto t = Every(1000, 1020, 0.5);
  SpanAccumulator whole(span), a(span), b(span);
  for (size_t i = 0; i < t.size(); ++i) {
    Point p{t[i], 100 + static_cast<double>(i % 7), static_cast<uint32_t>(i > 30)};
    whole.Add(p);
    (i < 17 ? a : b).Add(p);
  }
  a.Append(b);
  SpanCoverage x = whole.Finish(), y = a.Finish();
  EXPECT_EQ(x.max_gap_s, y.max_gap_s);
  EXPECT_EQ(x.observed_intervals, y.observed_intervals);
  EXPECT_EQ(x.uuids, y.uuids);
  EXPECT_NEAR(x.energy_j, y.energy_j, 1e-9);
  EXPECT_EQ(x.power_min_w, y.power_min_w);
  EXPECT_EQ(x.power_max_w, y.power_max_w);
}

}  // namespace
}  // namespace gpulse::power
