// The streaming state of one byte range of samples.csv (internal to src/power; samples_scan.cc
// drives it). A RangeParser counts lines and records, keeps per device O(1) ordering state and one
// SpanAccumulator per window, and merges with the parser of the next range (Append).
//
// Fast path. A collector writes each scrape cycle as a run of rows that share the bytes
// "1,<timestamp>,<scrape_seq>," and lists the devices in the same order every cycle. So each row is
// first compared byte for byte with the previous row's prefix, and with the bytes
// "<hostname>,<gpu_index>,<gpu_uuid>" of the device predicted to come next (the one that followed
// the previous row's device last time, else that device again). Those bytes already passed every
// rule in an earlier row, and equal bytes are equal fields, so a matching row only needs its power
// value parsed. Any other row, every quoted row included, takes the general path (ParseSampleRow):
// the fast path changes speed, never a result.
// Thread-compatible: one RangeParser per thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "power/readers/coverage.h"
#include "power/readers/samples_scan.h"

namespace gpulse::power {

inline constexpr size_t kNoDevice = SIZE_MAX;

// One device's state inside one byte range, in writer order.
struct DevicePartial {
  DeviceKey key;
  std::vector<std::string> uuids;
  uint32_t cur_uuid = 0;
  int64_t rows = 0, duplicates = 0;
  int64_t first_seq = 0, last_seq = 0;
  double first_t = 0, last_t = 0, min_t = 0, max_t = 0;
  bool disordered = false;  // needs the exact (buffered) pass
  std::vector<SpanAccumulator> acc;
  // Window schedule (see RangeParser::Accumulate): the last admitted point, the position in the
  // parser's start order of the next window not yet entered, and the entered windows still open.
  Point prev;
  bool has_prev = false;
  size_t next_window = 0;
  std::vector<uint32_t> open_windows;
  // Fast path: the raw bytes "hostname,gpu_index,gpu_uuid" of this device's last accepted unquoted
  // row (empty: none yet), the index of that UUID, and the device whose row came next last time.
  std::string text;
  uint32_t text_uuid = 0;
  size_t next = kNoDevice;

  uint32_t UuidIndex(std::string_view uuid);
};

// Maps (hostname, gpu_index) to a dense device number. The last host is cached and small GPU
// indices are a direct table lookup.
class DeviceIndex {
 public:
  // Returns the device number and whether it was just created.
  std::pair<size_t, bool> Find(std::string_view host, int64_t gpu);

 private:
  static constexpr int64_t kDirect = 1024;
  struct Host {
    std::string name;
    std::vector<size_t> direct;
    std::map<int64_t, size_t> others;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Host, Hash, std::equal_to<>> hosts_;
  Host* last_ = nullptr;
  size_t count_ = 0;
};

class RangeParser {
 public:
  // `spans` must outlive the parser. The first line of a range with `expect_header` is the header.
  // Without `fast_path` every row takes the general path.
  RangeParser(const std::vector<TimeSpan>& spans, bool expect_header, bool fast_path = true);

  // Consumes whole lines: `block` ends with '\n' except at the very end of the range.
  void OnBlock(std::string_view block);
  // A line too long for the reader's buffer (it was skipped).
  void OnOverlong();
  // Completes every device's window accumulators after the range's last line. Call once, before
  // Append or reading `devices`.
  void Finish();
  // Appends the finished parser of the next byte range (its line numbers shift by our line count).
  void Append(RangeParser& later);

  bool header_ok = false;
  int64_t lines = 0;    // lines seen, the header included
  int64_t records = 0;  // lines after the header, malformed ones included
  int64_t malformed = 0;
  std::vector<MalformedRow> examples;
  std::optional<int64_t> max_seq;
  std::vector<DevicePartial> devices;

 private:
  const char* FastRow(const char* p, const char* end);
  const char* ScanPrefix(const char* p, const char* end, double& t, int64_t& seq);
  size_t PredictDevice(const char* p, const char* end) const;
  void GeneralRow(std::string_view line);
  size_t DeviceFor(std::string_view host, int64_t gpu);
  void NoteSeq(int64_t seq) {
    if (!max_seq || seq > *max_seq) max_seq = seq;
  }
  void Follow(size_t device);
  void Accumulate(DevicePartial& d, const Point& p);
  void Malformed(std::string why);

  static constexpr size_t kMaxPrefix = 64;

  const std::vector<TimeSpan>& spans_;
  std::vector<uint32_t> by_start_;  // window indices by start time (a NaN start first)
  bool expect_header_;
  bool fast_path_;
  std::string scratch_;
  DeviceIndex index_;
  size_t last_device_ = kNoDevice;
  char prefix_[kMaxPrefix];
  size_t prefix_len_ = 0;  // 0: no cached prefix
  int64_t prefix_seq_ = 0;
  double prefix_t_ = 0;
};

}  // namespace gpulse::power
