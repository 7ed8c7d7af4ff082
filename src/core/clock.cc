#include "core/clock.h"

#include <ctime>

namespace gpulse {
namespace {
std::int64_t Read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

std::int64_t MonotonicNowNs() { return Read(CLOCK_MONOTONIC); }
std::int64_t UnixNowNs() { return Read(CLOCK_REALTIME); }

void SleepUntilMonotonicNs(std::int64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }  // EINTR: sleep on until the deadline
}

}  // namespace gpulse
