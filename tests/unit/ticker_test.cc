// The ticker's scheduling rule: on time, the next index; late, skip to the first tick not yet due.
#include <gtest/gtest.h>

#include <atomic>

#include "sampling/ticker.h"

namespace gpulse::sampling {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(Ticker, OnTimeAdvancesByOne) {
  EXPECT_EQ(Ticker::NextIndex(0, 100 * kMs, 0, 40 * kMs), 1);
  EXPECT_EQ(Ticker::NextIndex(0, 100 * kMs, 0, 100 * kMs), 1);  // exactly due is not late
}

TEST(Ticker, LateSkipsInsteadOfBursting) {
  // Tick 1 was due at 100 ms; the work ended at 350 ms: ticks 1-3 are gone, the next is 4.
  EXPECT_EQ(Ticker::NextIndex(0, 100 * kMs, 0, 350 * kMs), 4);
  // Ended exactly at 300 ms: tick 3 is due now.
  EXPECT_EQ(Ticker::NextIndex(0, 100 * kMs, 0, 300 * kMs), 3);
}

TEST(Ticker, StartOffsetIsHonoured) {
  EXPECT_EQ(Ticker::NextIndex(1000 * kMs, 50 * kMs, 5, 1260 * kMs), 6);
  EXPECT_EQ(Ticker::NextIndex(1000 * kMs, 50 * kMs, 5, 1301 * kMs), 7);
}

TEST(Ticker, StopFlagEndsWaiting) {
  std::atomic<bool> stop{false};
  Ticker t(3600LL * 1000 * kMs, &stop);  // an hour-long period: only the stop flag can end it
  EXPECT_EQ(t.Next(), 0);
  stop = true;
  EXPECT_EQ(t.Next(), -1);
}

}  // namespace
}  // namespace gpulse::sampling
