#include "net/work_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpulse::net {

WorkPool::WorkPool(std::size_t threads, std::size_t queue_limit) : queue_limit_(queue_limit) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkPool::~WorkPool() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool WorkPool::TrySubmit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= queue_limit_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

std::size_t WorkPool::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void WorkPool::Work() {
  // Linux schedules threads one by one. SCHED_IDLE (allowed without privileges) runs this thread
  // only on time no normal thread wants, and a normal thread that wakes preempts it at once: the
  // event loop never waits behind a bcrypt. Where it is refused, nice +10.
  sched_param none{};
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  }
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace gpulse::net
