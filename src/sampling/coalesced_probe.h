// One device read shared by every concurrent caller (the coalesced probe of shared/seeds/003): a
// caller that arrives while a read is in flight waits for that read instead of starting its own,
// and a caller that arrives within `min_refresh` of the last read's start gets that read's
// snapshot. N scrapers therefore cost one read per refresh interval, not N, and no caller ever gets
// data older than min_refresh plus one read. There is no background timer: without callers, nothing
// is read.
//
// Reads run on the probe's own thread, one at a time, which also makes it the single owner thread
// a non-thread-safe backend (NVML) needs. Callers are never blocked: Get() takes a callback.
//
// Work between reads: an optional `between` task runs on the same thread after each read's
// callers have been answered and again at the time it last asked for, while no read is requested
// (a read requested meanwhile waits for it to finish, so it must be short). It owns when it runs
// next: it returns that time, or nullopt to run only after the next read. The exporter refreshes
// the GPUs' process lists there so that no scrape waits for them (exporter.h).
//
// Thread-safety: Get, Latest and InFlightSinceNs may be called from any thread. Callbacks run on
// the probe thread, or inline in Get when a fresh snapshot is at hand; they must be quick (post the
// work elsewhere) and must not call back into this object's destructor.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace gpulse::sampling {

template <typename T>
class CoalescedProbe {
 public:
  using Snapshot = std::shared_ptr<const T>;
  using ProbeFn = std::function<Snapshot()>;
  using Done = std::function<void(Snapshot)>;
  using NowFn = std::function<std::int64_t()>;  // monotonic nanoseconds
  // Called with now_(); returns when to be called again (now_()'s clock), nullopt: after a read.
  using BetweenFn = std::function<std::optional<std::int64_t>(std::int64_t now_ns)>;

  // REQUIRES: min_refresh_ns >= 0
  CoalescedProbe(ProbeFn probe, std::int64_t min_refresh_ns, NowFn now, BetweenFn between = {})
      : probe_(std::move(probe)),
        min_refresh_ns_(min_refresh_ns),
        now_(std::move(now)),
        between_(std::move(between)) {
    worker_ = std::thread([this] { Loop(); });
  }
  CoalescedProbe(const CoalescedProbe&) = delete;
  CoalescedProbe& operator=(const CoalescedProbe&) = delete;

  // Finishes the read in flight (and one requested but not started), calls their callers, joins.
  ~CoalescedProbe() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  // Calls `done` with a snapshot no older than min_refresh (measured from the start of its read),
  // or with the result of the read in flight.
  void Get(Done done) {
    std::unique_lock lock(mu_);
    bool fresh = latest_ && !in_flight_ && !stale_ && now_() - latest_start_ns_ < min_refresh_ns_;
    if (fresh || stop_) {
      Snapshot s = latest_;
      lock.unlock();
      done(std::move(s));
      return;
    }
    waiters_.push_back(std::move(done));
    if (!in_flight_) {
      in_flight_ = true;
      in_flight_since_ns_ = now_();
      lock.unlock();
      cv_.notify_all();
    }
  }

  // Marks the last snapshot out of date (what it was read from changed outside a read: the
  // agent's simulated clock moved): the next Get starts a read, or joins the one in flight.
  void Invalidate() {
    std::lock_guard lock(mu_);
    stale_ = true;
  }

  // The last completed snapshot (nullptr before the first read); starts no read.
  Snapshot Latest() const {
    std::lock_guard lock(mu_);
    return latest_;
  }

  // When the read in flight was requested, if one is.
  std::optional<std::int64_t> InFlightSinceNs() const {
    std::lock_guard lock(mu_);
    if (!in_flight_) return std::nullopt;
    return in_flight_since_ns_;
  }

  // Reads made so far.
  std::uint64_t reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }

  // Callers waiting for the read in flight (for tests).
  std::size_t waiting() const {
    std::lock_guard lock(mu_);
    return waiters_.size();
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    std::optional<std::int64_t> between_at;  // when `between_` asked to run next
    for (;;) {
      const auto requested = [this] { return in_flight_ || stop_; };
      if (between_at && !requested()) {
        cv_.wait_for(lock, std::chrono::nanoseconds(std::max<std::int64_t>(0, *between_at - now_())),
                     requested);
        if (!requested()) {
          if (now_() >= *between_at) {
            lock.unlock();
            between_at = between_(now_());
            lock.lock();
          }
          continue;
        }
      }
      cv_.wait(lock, requested);
      if (!in_flight_) return;  // stopping with nothing requested
      std::int64_t start = now_();
      stale_ = false;
      lock.unlock();
      Snapshot s = probe_();
      lock.lock();
      latest_ = s;
      latest_start_ns_ = start;
      ++reads_;
      in_flight_ = false;
      std::vector<Done> waiters = std::move(waiters_);
      waiters_.clear();
      lock.unlock();
      for (Done& d : waiters) d(s);
      if (between_) between_at = between_(now_());
      lock.lock();
    }
  }

  ProbeFn probe_;
  const std::int64_t min_refresh_ns_;
  NowFn now_;
  BetweenFn between_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Snapshot latest_;
  std::int64_t latest_start_ns_ = 0;
  bool stale_ = false;  // Invalidate() since the last read started
  bool in_flight_ = false;
  std::int64_t in_flight_since_ns_ = 0;
  bool stop_ = false;
  std::uint64_t reads_ = 0;
  std::vector<Done> waiters_;
  std::thread worker_;  // last: started after every member above is ready
};

}  // namespace gpulse::sampling
