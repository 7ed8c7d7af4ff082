#include "power/samples_scan.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "power/byte_source.h"
#include "power/contract.h"
#include "power/samples_row.h"

namespace gpulse::power {

std::string DeviceLabel(const DeviceKey& key) {
  return key.hostname + "/" + std::to_string(key.gpu_index);
}

std::vector<std::string> SamplesScan::Reasons() const {
  std::vector<std::string> out;
  if (!present) return {std::string(reason::kSamplesCsvMissing)};
  if (!header_ok && read_error) return {std::string(reason::kSamplesCsvMalformed)};
  if (!header_ok) return {std::string(reason::kSamplesCsvHeaderMismatch)};
  if (malformed_rows > 0 || read_error) out.emplace_back(reason::kSamplesCsvMalformed);
  bool dup = false, nonmono = false;
  for (const auto& d : devices) {
    dup |= d.duplicate_rows > 0;
    nonmono |= d.non_monotonic;
  }
  if (dup) out.emplace_back(reason::kDuplicateSampleRow);
  if (nonmono) out.emplace_back(reason::kTimestampNonMonotonic);
  return out;
}

namespace {

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

  uint32_t UuidIndex(std::string_view uuid) {
    if (!uuids.empty() && uuids[cur_uuid] == uuid) return cur_uuid;
    auto it = std::find(uuids.begin(), uuids.end(), uuid);
    if (it == uuids.end()) {
      uuids.emplace_back(uuid);
      it = uuids.end() - 1;
    }
    cur_uuid = static_cast<uint32_t>(it - uuids.begin());
    return cur_uuid;
  }
};

// Maps (hostname, gpu_index) to a dense device number. Rows of one scrape cycle come host by host,
// so the last host is cached, and small GPU indices are a direct table lookup.
class DeviceIndex {
 public:
  // Returns the device number and whether it was just created.
  std::pair<size_t, bool> Find(std::string_view host, int64_t gpu) {
    if (last_ == nullptr || last_->name != host) {
      auto it = hosts_.find(host);
      if (it == hosts_.end())
        it = hosts_.emplace(std::string(host), Host{std::string(host), {}, {}}).first;
      last_ = &it->second;
    }
    if (gpu >= 0 && gpu < kDirect) {
      auto& slots = last_->direct;
      if (slots.size() <= static_cast<size_t>(gpu)) slots.resize(gpu + 1, kNone);
      if (slots[gpu] != kNone) return {slots[gpu], false};
      slots[gpu] = count_;
      return {count_++, true};
    }
    auto [it, inserted] = last_->others.try_emplace(gpu, count_);
    if (inserted) ++count_;
    return {it->second, inserted};
  }

 private:
  static constexpr int64_t kDirect = 1024;
  static constexpr size_t kNone = SIZE_MAX;
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
  RangeParser(const std::vector<TimeSpan>& spans, bool expect_header)
      : spans_(spans), expect_header_(expect_header) {}

  void OnLine(std::string_view line, int64_t line_no) {
    if (expect_header_ && line_no == 1) {
      header_ok = IsSamplesHeader(line);
      return;
    }
    ++records;
    RowParse r = ParseSampleRow(line, scratch_);
    if (!r.ok) return Malformed(line_no, std::string(r.error));
    max_seq = max_seq ? std::max(*max_seq, r.row.scrape_seq) : r.row.scrape_seq;
    auto [idx, created] = index_.Find(r.row.hostname, r.row.gpu_index);
    if (created) {
      devices.push_back(DevicePartial{});
      devices.back().key = DeviceKey{std::string(r.row.hostname), r.row.gpu_index};
      devices.back().acc.assign(spans_.size(), SpanAccumulator(TimeSpan{}));
      for (size_t i = 0; i < spans_.size(); ++i) devices.back().acc[i] = SpanAccumulator(spans_[i]);
    }
    AddRow(devices[idx], r.row);
  }

  void OnOverlong(int64_t line_no) {
    if (expect_header_ && line_no == 1) return;  // header_ok stays false
    ++records;
    Malformed(line_no, "line longer than the read buffer (a field over the 131072-byte limit)");
  }

  bool header_ok = false;
  int64_t records = 0, malformed = 0, lines_seen = 0;
  std::vector<MalformedRow> examples;
  std::optional<int64_t> max_seq;
  std::vector<DevicePartial> devices;

 private:
  void Malformed(int64_t line_no, std::string why) {
    ++malformed;
    if (examples.size() < kMaxMalformedExamples) examples.push_back({line_no, std::move(why)});
  }

  static void AddRow(DevicePartial& d, const SampleRow& row) {
    double t = row.timestamp_unix;
    if (d.rows == 0 && d.duplicates == 0 && !d.disordered) {
      d.first_seq = row.scrape_seq;
      d.first_t = d.min_t = d.max_t = t;
    } else if (d.disordered) {
      return;
    } else if (row.scrape_seq == d.last_seq) {
      ++d.duplicates;  // a later duplicate key is dropped
      return;
    } else if (row.scrape_seq < d.last_seq || t < d.last_t) {
      d.disordered = true;
      return;
    }
    ++d.rows;
    d.last_seq = row.scrape_seq;
    d.last_t = t;
    d.min_t = std::min(d.min_t, t);
    d.max_t = std::max(d.max_t, t);
    Point p{t, row.power_w, d.UuidIndex(row.gpu_uuid)};
    for (auto& a : d.acc) a.Add(p);
  }

  const std::vector<TimeSpan>& spans_;
  bool expect_header_;
  std::string scratch_;
  DeviceIndex index_;
};

// Appends `later` (the next byte range) into `earlier`, device by device.
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

void MergeInto(RangeParser& total, RangeParser& part, int64_t line_offset) {
  total.records += part.records;
  total.malformed += part.malformed;
  for (auto& e : part.examples)
    if (total.examples.size() < kMaxMalformedExamples)
      total.examples.push_back({e.line + line_offset, std::move(e.why)});
  if (part.max_seq)
    total.max_seq = total.max_seq ? std::max(*total.max_seq, *part.max_seq) : part.max_seq;
  std::map<DeviceKey, size_t> where;
  for (size_t i = 0; i < total.devices.size(); ++i) where[total.devices[i].key] = i;
  for (auto& d : part.devices) {
    auto it = where.find(d.key);
    if (it == where.end()) {
      where[d.key] = total.devices.size();
      total.devices.push_back(std::move(d));
    } else {
      MergeDevice(total.devices[it->second], d);
    }
  }
}

// The exact path for out-of-order devices: buffer their rows, then apply the rules on sorted data.
struct BufferedRow {
  int64_t seq;
  double t;
  double p;
  std::string uuid;
  size_t order;  // position in the file
};

DeviceSamples ExactDevice(const DeviceKey& key, std::vector<BufferedRow>& rows,
                          const std::vector<TimeSpan>& spans) {
  DeviceSamples out;
  out.key = key;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const BufferedRow& x, const BufferedRow& y) { return x.seq < y.seq; });
  std::vector<BufferedRow> kept;
  for (auto& r : rows) {
    if (!kept.empty() && kept.back().seq == r.seq) {
      ++out.duplicate_rows;
      continue;
    }
    if (!kept.empty() && r.t < kept.back().t) out.non_monotonic = true;
    kept.push_back(std::move(r));
  }
  out.rows = static_cast<int64_t>(kept.size());
  // UUIDs of the kept rows (a dropped duplicate contributes nothing), first seen in file order.
  std::vector<const BufferedRow*> by_order;
  for (const auto& r : kept) by_order.push_back(&r);
  std::sort(by_order.begin(), by_order.end(),
            [](const BufferedRow* x, const BufferedRow* y) { return x->order < y->order; });
  for (const auto* r : by_order)
    if (std::find(out.uuids.begin(), out.uuids.end(), r->uuid) == out.uuids.end())
      out.uuids.push_back(r->uuid);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const BufferedRow& x, const BufferedRow& y) { return x.t < y.t; });
  if (!kept.empty()) {
    out.first_t = kept.front().t;
    out.last_t = kept.back().t;
  }
  for (const auto& span : spans) {
    SpanAccumulator acc(span);
    for (const auto& r : kept) {
      auto u = std::find(out.uuids.begin(), out.uuids.end(), r.uuid) - out.uuids.begin();
      acc.Add(Point{r.t, r.p, static_cast<uint32_t>(u)});
    }
    out.spans.push_back(acc.Finish());
  }
  return out;
}

Status ExactPass(const ByteSource& src, uint64_t begin, const ScanOptions& opt,
                 const std::set<DeviceKey>& keys, std::vector<DeviceSamples>& out) {
  std::map<DeviceKey, std::vector<BufferedRow>> rows;
  for (const auto& k : keys) rows[k];
  std::string scratch;
  DeviceKey probe;
  size_t order = 0;
  auto on_line = [&](std::string_view line, int64_t) {
    RowParse r = ParseSampleRow(line, scratch);
    if (!r.ok) return;
    probe.hostname.assign(r.row.hostname);
    probe.gpu_index = r.row.gpu_index;
    auto it = rows.find(probe);
    if (it != rows.end())
      it->second.push_back({r.row.scrape_seq, r.row.timestamp_unix, r.row.power_w,
                            std::string(r.row.gpu_uuid), order++});
  };
  Status st = ForEachLine(src, begin, src.size(), opt.chunk_bytes, on_line, [](int64_t) {});
  for (auto& [key, list] : rows) out.push_back(ExactDevice(key, list, opt.spans));
  return st;
}

DeviceSamples Finish(DevicePartial& d) {
  DeviceSamples out;
  out.key = std::move(d.key);
  out.uuids = std::move(d.uuids);
  out.rows = d.rows;
  out.duplicate_rows = d.duplicates;
  out.first_t = d.min_t;
  out.last_t = d.max_t;
  for (const auto& a : d.acc) out.spans.push_back(a.Finish());
  return out;
}

SamplesScan Scan(const ByteSource& src, const ScanOptions& opt) {
  SamplesScan scan;
  scan.present = true;
  scan.bytes = src.size();
  int threads = std::max(1, opt.threads);
  auto header_end = NextLineStart(src, 0);
  if (!header_end.ok()) {
    scan.read_error = header_end.error().message;
    return scan;
  }
  // Ranges after the header, each starting at a line start.
  int parsers = threads == 1 ? 1 : std::max(1, threads - 1);
  std::vector<uint64_t> cuts{0};
  uint64_t body = src.size() - *header_end;
  for (int k = 1; k < parsers; ++k) {
    auto c = NextLineStart(src, *header_end + body * k / parsers);
    if (c.ok() && *c > cuts.back()) cuts.push_back(*c);
  }
  cuts.push_back(src.size());
  std::vector<RangeParser> parts;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) parts.emplace_back(opt.spans, k == 0);
  std::vector<Status> status(parts.size());
  std::vector<int64_t> lines(parts.size(), 0);
  Sha256 inline_sha;
  bool inline_digest = opt.digest && threads == 1;
  auto run = [&](size_t k) {
    RangeParser& p = parts[k];
    status[k] = ForEachLine(
        src, cuts[k], cuts[k + 1], opt.chunk_bytes,
        [&p, &lines, k](std::string_view line, int64_t n) {
          lines[k] = n;
          p.OnLine(line, n);
        },
        [&p, &lines, k](int64_t n) {
          lines[k] = n;
          p.OnOverlong(n);
        },
        inline_digest ? &inline_sha : nullptr);
  };
  std::optional<Result<std::string>> digest;
  if (threads == 1) {
    run(0);
  } else {
    std::vector<std::thread> pool;
    if (opt.digest)
      pool.emplace_back([&] { digest.emplace(Sha256OfSource(src, opt.chunk_bytes)); });
    for (size_t k = 0; k < parts.size(); ++k) pool.emplace_back(run, k);
    for (auto& t : pool) t.join();
  }
  if (inline_digest) digest.emplace(inline_sha.HexDigest());
  if (digest) {
    if (digest->ok())
      scan.sha256_hex = digest->value();
    else
      scan.digest_error = digest->error().message;
  }
  for (const auto& s : status)
    if (!s.ok() && !scan.read_error) scan.read_error = s.error().message;
  if (scan.read_error && inline_digest) {  // the inline digest saw only part of the file
    scan.sha256_hex.reset();
    scan.digest_error = scan.read_error;
  }
  scan.header_ok = parts[0].header_ok;
  if (!scan.header_ok) return scan;  // a mismatched header yields no rows
  RangeParser& total = parts[0];
  int64_t offset = lines[0];
  for (size_t k = 1; k < parts.size(); ++k) {
    MergeInto(total, parts[k], offset);
    offset += lines[k];
  }
  scan.data_rows = total.records;
  scan.malformed_rows = total.malformed;
  scan.malformed_examples = std::move(total.examples);
  scan.max_scrape_seq = total.max_seq;
  std::set<DeviceKey> exact;
  for (auto& d : total.devices) {
    if (d.disordered)
      exact.insert(d.key);
    else
      scan.devices.push_back(Finish(d));
  }
  if (!exact.empty()) {
    Status st = ExactPass(src, *header_end, opt, exact, scan.devices);
    if (!st.ok() && !scan.read_error) scan.read_error = st.error().message;
  }
  std::sort(scan.devices.begin(), scan.devices.end(),
            [](const DeviceSamples& a, const DeviceSamples& b) { return a.key < b.key; });
  return scan;
}

}  // namespace

SamplesScan ScanSamplesFile(const std::filesystem::path& csv, const ScanOptions& options) {
  auto src = OpenFileSource(csv);
  if (!src.ok()) {
    SamplesScan scan;
    if (src.error().code != ErrorCode::kNotFound) {
      scan.present = true;  // it exists but cannot be read: malformed, and the digest fails
      scan.read_error = src.error().message;
      scan.digest_error = src.error().message;
    }
    return scan;
  }
  return Scan(**src, options);
}

SamplesScan ScanSamplesBytes(std::string_view bytes, const ScanOptions& options) {
  auto src = MemorySource(bytes);
  return Scan(*src, options);
}

}  // namespace gpulse::power
