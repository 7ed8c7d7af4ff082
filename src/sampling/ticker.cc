#include "sampling/ticker.h"

#include <cerrno>
#include <ctime>

#include "core/clock.h"

namespace gpulse::sampling {

Ticker::Ticker(std::int64_t period_ns, const std::atomic<bool>* stop)
    : period_ns_(period_ns), stop_(stop) {}

std::int64_t Ticker::NextIndex(std::int64_t start, std::int64_t period, std::int64_t last,
                               std::int64_t now) {
  std::int64_t next = last + 1;
  if (now > start + next * period) {
    // Late: the next tick is the first one whose due time has not passed yet.
    std::int64_t elapsed = now - start;
    std::int64_t due = elapsed / period + ((elapsed % period) != 0 ? 1 : 0);
    if (due > next) next = due;
  }
  return next;
}

std::int64_t Ticker::Next() {
  if (stop_ != nullptr && stop_->load()) return -1;
  if (last_ < 0) {
    start_ns_ = MonotonicNowNs();
    last_ = 0;
    return 0;
  }
  std::int64_t next = NextIndex(start_ns_, period_ns_, last_, MonotonicNowNs());
  skipped_ += next - last_ - 1;
  std::int64_t due = start_ns_ + next * period_ns_;
  timespec ts{static_cast<time_t>(due / 1'000'000'000), static_cast<long>(due % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    if (stop_ != nullptr && stop_->load()) return -1;
  }
  if (stop_ != nullptr && stop_->load()) return -1;
  last_ = next;
  return next;
}

}  // namespace gpulse::sampling
