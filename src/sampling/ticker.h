// A fixed-cadence ticker on the monotonic clock. Tick k is due at start + k·period. When the work of
// a tick overruns, the ticks whose time has passed are skipped (and counted), never run in a burst.
// Waiting returns early when the stop flag is raised (e.g. by a SIGINT handler).
//
// Not thread-safe; the stop flag may be set from any thread or a signal handler.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpulse::sampling {

class Ticker {
 public:
  // REQUIRES: period_ns > 0
  Ticker(std::int64_t period_ns, const std::atomic<bool>* stop);

  // Waits until the next due tick and returns its index (0 for the first, which is due at once),
  // or -1 when stopped. Skipped ticks are not returned.
  std::int64_t Next();

  std::int64_t skipped() const { return skipped_; }
  std::int64_t period_ns() const { return period_ns_; }
  std::int64_t start_ns() const { return start_ns_; }

  // Pure scheduling rule, exposed for tests: the first tick index due at or after `now`, given that
  // `last` was the previous one returned (or -1 before the first).
  static std::int64_t NextIndex(std::int64_t start, std::int64_t period, std::int64_t last,
                                std::int64_t now);

 private:
  std::int64_t period_ns_;
  const std::atomic<bool>* stop_;
  std::int64_t start_ns_ = 0;
  std::int64_t last_ = -1;
  std::int64_t skipped_ = 0;
};

}  // namespace gpulse::sampling
