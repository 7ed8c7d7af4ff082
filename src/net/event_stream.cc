#include "net/event_stream.h"

#include <algorithm>

namespace gpulse::net {

EventStream::EventStream(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

bool EventStream::Push(Frame frame) {
  std::lock_guard lock(mu_);
  if (closed_ || detached_) return false;
  if (queue_.size() >= capacity_) {
    queue_.pop_front();
    ++dropped_;
  }
  queue_.push_back(std::move(frame));
  if (waker_) waker_();
  return true;
}

void EventStream::Close() {
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  if (waker_) waker_();
}

bool EventStream::closed() const {
  std::lock_guard lock(mu_);
  return closed_ || detached_;
}

std::uint64_t EventStream::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void EventStream::SetWaker(std::function<void()> waker) {
  std::lock_guard lock(mu_);
  if (!detached_) waker_ = std::move(waker);
}

EventStream::Frame EventStream::Pop(bool* done) {
  std::lock_guard lock(mu_);
  Frame f;
  if (!queue_.empty()) {
    f = std::move(queue_.front());
    queue_.pop_front();
  }
  *done = queue_.empty() && f == nullptr && (closed_ || detached_);
  return f;
}

void EventStream::Detach() {
  std::lock_guard lock(mu_);
  detached_ = true;
  queue_.clear();
  waker_ = nullptr;
}

}  // namespace gpulse::net
