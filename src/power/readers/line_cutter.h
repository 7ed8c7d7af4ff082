// Cuts a byte stream that arrives in chunks of any size into runs of whole lines (internal to
// src/power: the samples.csv readers in byte_source.cc use it).
//
// Lines that lie inside one chunk are passed on in place, as one run per chunk; only a line that
// crosses a chunk boundary is copied, into a carry buffer. A line of `capacity` bytes or more
// (terminator excluded) is skipped and reported once, in order, so the carry never grows past
// `capacity`. Chunks must not be longer than `capacity` (so an in-place line is always shorter).
// Thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace gpulse::power {

class LineCutter {
 public:
  using BlockFn = std::function<void(std::string_view)>;
  using OverlongFn = std::function<void()>;

  // The callbacks must outlive the cutter. on_block gets runs of lines that end with '\n', and
  // from Finish() the final line if it has none.
  LineCutter(size_t capacity, const BlockFn& on_block, const OverlongFn& on_overlong)
      : capacity_(capacity), on_block_(on_block), on_overlong_(on_overlong) {}

  // REQUIRES: chunk.size() <= capacity.
  void Feed(std::string_view chunk);
  // The end of the stream: passes on an unfinished last line.
  void Finish();

 private:
  void Overlong();

  size_t capacity_;
  const BlockFn& on_block_;
  const OverlongFn& on_overlong_;
  std::string carry_;      // the start of a line that continues in the next chunk
  bool skipping_ = false;  // inside an overlong line, dropping bytes until '\n'
};

}  // namespace gpulse::power
