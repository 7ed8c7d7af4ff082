// A small pool of worker threads with a bounded queue, for work that must never run on the
// server's event-loop thread (bcrypt: tens of milliseconds a check). Submitting never blocks: when
// the queue is full the job is refused and the caller answers "busy" at once, so a flood of work
// costs the flooder, not the loop. Workers run under SCHED_IDLE (nice +10 where refused), below the
// loop, so on a machine with few cores the loop thread still wins the CPU.
//
// Thread-safety: TrySubmit from any thread. The destructor lets running jobs finish, drops the
// queued ones (destroying them on its own thread) and joins the workers; a job must not destroy
// its pool.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpulse::net {

class WorkPool {
 public:
  // REQUIRES: threads >= 1, queue_limit >= 1.
  WorkPool(std::size_t threads, std::size_t queue_limit);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Queues `job`, or returns false (and drops it) when `queue_limit` jobs are already waiting.
  bool TrySubmit(std::function<void()> job);

  std::size_t queued() const;

 private:
  void Work();

  const std::size_t queue_limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpulse::net
