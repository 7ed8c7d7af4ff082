// Runs one index range at a time across the calling thread and a few helper threads kept for the
// object's lifetime: the collector writes a cycle's requests with it, so that the last of thousands
// starts a fraction of the time after its slot that one thread would take (docs/power-contract.md).
// A kept thread costs one wake-up per range instead of a thread start, which matters once a second.
//
// Thread-safety: RunParts and RunChunks from one thread at a time (the collector's loop thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpulse::power {

class ParallelFor {
 public:
  // `threads` counts the caller: 1 runs everything on the caller, no helper is started.
  explicit ParallelFor(unsigned threads);
  ~ParallelFor();
  ParallelFor(const ParallelFor&) = delete;
  ParallelFor& operator=(const ParallelFor&) = delete;

  unsigned threads() const { return static_cast<unsigned>(helpers_.size()) + 1; }

  // [0, n) in contiguous parts, one per thread: fn(part, begin, end) once per part, part 0 on the
  // caller; a thread gets no part smaller than `min_part` (so small ranges stay on the caller).
  // Returns once every call has returned. `fn` must not throw.
  void RunParts(std::size_t n, std::size_t min_part,
                const std::function<void(std::size_t, std::size_t, std::size_t)>& fn);
  // fn(worker, begin, end) for consecutive chunks of `chunk` indices covering [0, n), each taken
  // by whichever of the threads is free first (worker 0 is the caller; as many workers as RunParts
  // would make parts): a thread held up, its CPU taken away, delays only the chunk it holds
  // while the others take the rest.
  void RunChunks(std::size_t n, std::size_t chunk, std::size_t min_part,
                 const std::function<void(std::size_t, std::size_t, std::size_t)>& fn);

 private:
  void Helper(unsigned k);
  void Stop();  // ends and joins the helpers

  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  // The range being run: fn(part, begin, end).
  const std::function<void(std::size_t, std::size_t, std::size_t)>* fn_ = nullptr;
  // Part k is [cuts_[k], cuts_[k + 1]): one entry per part and one more.
  std::vector<std::size_t> cuts_;
  unsigned long long round_ = 0;  // bumped for every range handed to the helpers
  unsigned busy_ = 0;             // helpers with a part that are still running it
  bool stop_ = false;
  std::vector<std::thread> helpers_;
};

}  // namespace gpulse::power
