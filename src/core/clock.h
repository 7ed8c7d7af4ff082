// One clock for everything: monotonic nanoseconds for cadence and durations, unix nanoseconds for
// wall time. Anchored pairs are taken together so the two can be related later.
#pragma once

#include <cstdint>

namespace gpulse {

std::int64_t MonotonicNowNs();
std::int64_t UnixNowNs();
// Sleeps until MonotonicNowNs() >= deadline_ns (returns at once when it already is).
void SleepUntilMonotonicNs(std::int64_t deadline_ns);

}  // namespace gpulse
