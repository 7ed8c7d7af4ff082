#include "power/collector/parallel_for.h"

#include <algorithm>
#include <atomic>

namespace gpulse::power {

ParallelFor::ParallelFor(unsigned threads) {
  try {
    for (unsigned k = 1; k < std::max(1u, threads); ++k)
      helpers_.emplace_back([this, k] { Helper(k); });
  } catch (...) {  // a thread that could not start: stop the ones that did
    Stop();
    throw;
  }
}

ParallelFor::~ParallelFor() { Stop(); }

void ParallelFor::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : helpers_)
    if (t.joinable()) t.join();
}

void ParallelFor::RunParts(std::size_t n, std::size_t min_part,
                           const std::function<void(std::size_t, std::size_t, std::size_t)>& fn) {
  std::size_t parts = std::min<std::size_t>(threads(), n / std::max<std::size_t>(1, min_part));
  if (parts <= 1) {
    if (n > 0) fn(0, 0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    cuts_.assign(parts + 1, n);
    for (std::size_t k = 0; k <= parts; ++k) cuts_[k] = n * k / parts;
    fn_ = &fn;
    busy_ = static_cast<unsigned>(parts - 1);  // helpers 1 .. parts-1; the others sit this one out
    ++round_;
  }
  start_cv_.notify_all();
  fn(0, cuts_[0], cuts_[1]);  // part 0 on the caller
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

void ParallelFor::RunChunks(std::size_t n, std::size_t chunk, std::size_t min_part,
                            const std::function<void(std::size_t, std::size_t, std::size_t)>& fn) {
  chunk = std::max<std::size_t>(1, chunk);
  std::atomic<std::size_t> next{0};
  RunParts(n, min_part, [&](std::size_t worker, std::size_t, std::size_t) {
    for (std::size_t begin = next.fetch_add(chunk); begin < n; begin = next.fetch_add(chunk))
      fn(worker, begin, std::min(n, begin + chunk));
  });
}

void ParallelFor::Helper(unsigned k) {
  unsigned long long seen = 0;
  std::unique_lock lock(mu_);
  while (true) {
    start_cv_.wait(lock, [&] { return stop_ || round_ != seen; });
    if (stop_) return;
    seen = round_;
    if (k + 1 >= cuts_.size()) continue;  // no part for this helper in this round
    const auto& fn = *fn_;
    std::size_t begin = cuts_[k], end = cuts_[k + 1];
    lock.unlock();
    fn(k, begin, end);
    lock.lock();
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

}  // namespace gpulse::power
