#include "power/readers/range_parser.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "power/readers/fast_number.h"
#include "power/readers/samples_row.h"

namespace gpulse::power {
namespace {

// Longest "hostname,gpu_index,gpu_uuid" kept for the fast path; longer devices use the general
// path.
constexpr size_t kMaxDeviceText = 256;

// Writer-order bookkeeping of one row. Returns false when the row adds no sample: a later duplicate
// of the previous key (dropped), or any row of a device already out of writer order.
inline bool Admit(DevicePartial& d, int64_t seq, double t) {
  if (d.rows == 0 && d.duplicates == 0 && !d.disordered) {
    d.first_seq = seq;
    d.first_t = d.min_t = d.max_t = t;
  } else if (d.disordered) {
    return false;
  } else if (seq == d.last_seq) {
    ++d.duplicates;
    return false;
  } else if (seq < d.last_seq || t < d.last_t) {
    d.disordered = true;
    return false;
  }
  ++d.rows;
  d.last_seq = seq;
  d.last_t = t;
  d.min_t = std::min(d.min_t, t);
  d.max_t = std::max(d.max_t, t);
  return true;
}

// The bytes from the hostname to the end of the UUID, when they are one run of the line.
std::string_view DeviceText(const RowParse& r) {
  if (r.quoted) return {};
  const char* b = r.row.hostname.data();
  const char* e = r.row.gpu_uuid.data() + r.row.gpu_uuid.size();
  size_t n = static_cast<size_t>(e - b);
  return n <= kMaxDeviceText ? std::string_view(b, n) : std::string_view();
}

}  // namespace

RangeParser::RangeParser(const std::vector<TimeSpan>& spans, bool expect_header, bool fast_path)
    : spans_(spans), expect_header_(expect_header), fast_path_(fast_path) {
  for (uint32_t i = 0; i < spans.size(); ++i) by_start_.push_back(i);
  auto key = [&](uint32_t i) {
    return std::isnan(spans[i].start) ? -std::numeric_limits<double>::infinity() : spans[i].start;
  };
  std::stable_sort(by_start_.begin(), by_start_.end(),
                   [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
}

// A SpanAccumulator keeps, of the points at or before its start, only the last one. So a window is
// not fed until a point passes its start ("entered"); it then gets the device's previous point
// (the last one at or before its start) and the new one, and every point until one reaches its end.
// Finish() gives windows never entered the device's last point. Each accumulator sees the same
// state as if it had been fed every point, while a row touches only the windows it falls in.
void RangeParser::Accumulate(DevicePartial& d, const Point& p) {
  while (d.next_window < by_start_.size() && !(p.t <= spans_[by_start_[d.next_window]].start)) {
    uint32_t w = by_start_[d.next_window++];
    if (d.has_prev) d.acc[w].Add(d.prev);
    d.open_windows.push_back(w);
  }
  for (size_t i = 0; i < d.open_windows.size();) {
    uint32_t w = d.open_windows[i];
    d.acc[w].Add(p);
    if (p.t < spans_[w].end) {
      ++i;
    } else {  // closed: later points change nothing
      d.open_windows[i] = d.open_windows.back();
      d.open_windows.pop_back();
    }
  }
  d.prev = p;
  d.has_prev = true;
}

void RangeParser::Finish() {
  for (auto& d : devices) {
    if (d.has_prev)
      for (size_t k = d.next_window; k < by_start_.size(); ++k) d.acc[by_start_[k]].Add(d.prev);
    d.next_window = by_start_.size();
  }
}

uint32_t DevicePartial::UuidIndex(std::string_view uuid) {
  if (!uuids.empty() && uuids[cur_uuid] == uuid) return cur_uuid;
  auto it = std::find(uuids.begin(), uuids.end(), uuid);
  if (it == uuids.end()) {
    uuids.emplace_back(uuid);
    it = uuids.end() - 1;
  }
  cur_uuid = static_cast<uint32_t>(it - uuids.begin());
  return cur_uuid;
}

std::pair<size_t, bool> DeviceIndex::Find(std::string_view host, int64_t gpu) {
  if (last_ == nullptr || last_->name != host) {
    auto it = hosts_.find(host);
    if (it == hosts_.end())
      it = hosts_.emplace(std::string(host), Host{std::string(host), {}, {}}).first;
    last_ = &it->second;
  }
  if (gpu >= 0 && gpu < kDirect) {
    auto& slots = last_->direct;
    if (slots.size() <= static_cast<size_t>(gpu)) slots.resize(gpu + 1, kNoDevice);
    if (slots[gpu] != kNoDevice) return {slots[gpu], false};
    slots[gpu] = count_;
    return {count_++, true};
  }
  auto [it, inserted] = last_->others.try_emplace(gpu, count_);
  if (inserted) ++count_;
  return {it->second, inserted};
}

void RangeParser::OnBlock(std::string_view block) {
  const char* p = block.data();
  const char* end = p + block.size();
  while (p < end) {
    if (fast_path_ && (lines > 0 || !expect_header_)) {
      if (const char* next = FastRow(p, end)) {
        ++lines;
        p = next;
        continue;
      }
    }
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    std::string_view line(p, (nl ? nl : end) - p);
    p = nl ? nl + 1 : end;
    if (++lines == 1 && expect_header_) {
      header_ok = IsSamplesHeader(line);
      continue;
    }
    GeneralRow(line);
  }
}

void RangeParser::OnOverlong() {
  if (++lines == 1 && expect_header_) return;  // header_ok stays false
  ++records;
  Malformed("line longer than the read buffer (a field over the 131072-byte limit)");
}

// "1,<timestamp>,<scrape_seq>," at p, in the plain forms of fast_number.h. Returns the byte after
// the third comma (and caches the prefix), or nullptr.
const char* RangeParser::ScanPrefix(const char* p, const char* end, double& t, int64_t& seq) {
  if (end - p < 2 || p[0] != '1' || p[1] != ',') return nullptr;
  const char* q = ScanDecimal(p + 2, end, t);
  if (q == nullptr || q == end || *q != ',') return nullptr;
  q = ScanUnsigned(q + 1, end, seq);
  if (q == nullptr || q == end || *q != ',') return nullptr;
  ++q;
  size_t n = static_cast<size_t>(q - p);
  prefix_len_ = 0;
  if (n <= kMaxPrefix) {
    std::memcpy(prefix_, p, n);
    prefix_len_ = n;
    prefix_t_ = t;
    prefix_seq_ = seq;
  }
  return q;
}

// The device whose text is at p, followed by ',': the predicted next device or the previous one.
size_t RangeParser::PredictDevice(const char* p, const char* end) const {
  if (last_device_ == kNoDevice) return kNoDevice;
  auto matches = [&](size_t i) {
    const std::string& t = devices[i].text;
    size_t n = t.size();
    return n > 0 && static_cast<size_t>(end - p) > n && p[n] == ',' && EqualShort(p, t.data(), n);
  };
  size_t next = devices[last_device_].next;
  if (next != kNoDevice && matches(next)) return next;
  if (matches(last_device_)) return last_device_;
  return kNoDevice;
}

// The whole row, or nullptr when it needs the general path. Returns the start of the next line.
const char* RangeParser::FastRow(const char* p, const char* end) {
  double t;
  int64_t seq;
  const char* q;
  if (prefix_len_ > 0 && static_cast<size_t>(end - p) > prefix_len_ &&
      EqualShort(p, prefix_, prefix_len_)) {
    q = p + prefix_len_;
    t = prefix_t_;
    seq = prefix_seq_;
  } else {
    q = ScanPrefix(p, end, t, seq);
    if (q == nullptr) return nullptr;
  }
  size_t dev = PredictDevice(q, end);
  if (dev == kNoDevice) return nullptr;
  double power;
  const char* r = ScanDecimal(q + devices[dev].text.size() + 1, end, power);
  if (r == nullptr || r == end) return nullptr;
  if (*r == '\r' && r + 1 < end) ++r;
  if (*r != '\n') return nullptr;
  ++records;
  NoteSeq(seq);
  DevicePartial& d = devices[dev];
  if (Admit(d, seq, t)) Accumulate(d, Point{t, power, d.text_uuid});
  last_device_ = dev;
  return r + 1;
}

void RangeParser::GeneralRow(std::string_view line) {
  ++records;
  RowParse r = ParseSampleRow(line, scratch_);
  if (!r.ok) return Malformed(std::string(r.error));
  NoteSeq(r.row.scrape_seq);
  size_t dev = DeviceFor(r.row.hostname, r.row.gpu_index);
  DevicePartial& d = devices[dev];
  if (Admit(d, r.row.scrape_seq, r.row.timestamp_unix)) {
    uint32_t u = d.UuidIndex(r.row.gpu_uuid);
    Accumulate(d, Point{r.row.timestamp_unix, r.row.power_w, u});
    std::string_view text = DeviceText(r);
    if (text != d.text) d.text.assign(text);
    d.text_uuid = u;
  }
  Follow(dev);
}

size_t RangeParser::DeviceFor(std::string_view host, int64_t gpu) {
  auto [dev, created] = index_.Find(host, gpu);
  if (created) {
    devices.emplace_back();
    DevicePartial& d = devices.back();
    d.key = DeviceKey{std::string(host), gpu};
    d.acc.reserve(spans_.size());
    for (const auto& span : spans_) d.acc.emplace_back(span);
  }
  return dev;
}

void RangeParser::Follow(size_t device) {
  if (last_device_ != kNoDevice && last_device_ != device) devices[last_device_].next = device;
  last_device_ = device;
}

void RangeParser::Malformed(std::string why) {
  ++malformed;
  if (examples.size() < kMaxMalformedExamples) examples.push_back({lines, std::move(why)});
}

namespace {

// Appends `b` (the same device in the next byte range) to `a`.
void MergeDevice(DevicePartial& a, DevicePartial& b) {
  if (a.disordered || b.disordered) {
    a.disordered = true;
    return;
  }
  if (b.rows == 0) return;
  if (a.rows == 0) {
    a = std::move(b);
    return;
  }
  if (b.first_seq <= a.last_seq || b.first_t < a.last_t) {
    a.disordered = true;  // a duplicate or reordering across the boundary: exact pass decides
    return;
  }
  std::vector<uint32_t> map(b.uuids.size());
  for (size_t i = 0; i < b.uuids.size(); ++i) {
    auto it = std::find(a.uuids.begin(), a.uuids.end(), b.uuids[i]);
    if (it == a.uuids.end()) {
      a.uuids.push_back(b.uuids[i]);
      it = a.uuids.end() - 1;
    }
    map[i] = static_cast<uint32_t>(it - a.uuids.begin());
  }
  for (size_t i = 0; i < a.acc.size(); ++i) {
    b.acc[i].RemapUuids(map);
    a.acc[i].Append(b.acc[i]);
  }
  a.rows += b.rows;
  a.duplicates += b.duplicates;
  a.last_seq = b.last_seq;
  a.last_t = b.last_t;
  a.min_t = std::min(a.min_t, b.min_t);
  a.max_t = std::max(a.max_t, b.max_t);
}

}  // namespace

void RangeParser::Append(RangeParser& later) {
  records += later.records;
  malformed += later.malformed;
  for (auto& e : later.examples)
    if (examples.size() < kMaxMalformedExamples)
      examples.push_back({e.line + lines, std::move(e.why)});
  lines += later.lines;
  if (later.max_seq) NoteSeq(*later.max_seq);
  std::map<DeviceKey, size_t> where;
  for (size_t i = 0; i < devices.size(); ++i) where[devices[i].key] = i;
  for (auto& d : later.devices) {
    auto it = where.find(d.key);
    if (it == where.end()) {
      where[d.key] = devices.size();
      devices.push_back(std::move(d));
    } else {
      MergeDevice(devices[it->second], d);
    }
  }
}

}  // namespace gpulse::power
