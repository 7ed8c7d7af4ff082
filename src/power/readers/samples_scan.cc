#include "power/readers/samples_scan.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "power/readers/byte_source.h"
#include "power/readers/contract.h"
#include "power/readers/range_parser.h"
#include "power/readers/samples_row.h"

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
  parts.reserve(cuts.size());
  for (size_t k = 0; k + 1 < cuts.size(); ++k) parts.emplace_back(opt.spans, k == 0, opt.fast_path);
  std::vector<Status> status(parts.size());
  // With one range the digest rides along with its reads: on this thread, or on a thread of its own
  // when threads > 1. With several ranges a thread reads the whole file for the digest.
  bool shared_digest = opt.digest && parts.size() == 1;
  DigestOn where = threads == 1 ? DigestOn::kThisThread : DigestOn::kOwnThread;
  Sha256 shared_sha;
  auto run = [&](size_t k) {
    RangeParser& p = parts[k];
    status[k] = ForEachBlock(
        src, cuts[k], cuts[k + 1], opt.chunk_bytes, [&p](std::string_view b) { p.OnBlock(b); },
        [&p] { p.OnOverlong(); }, shared_digest ? &shared_sha : nullptr, where);
  };
  std::optional<Result<std::string>> digest;
  if (parts.size() == 1) {
    run(0);
  } else {
    std::vector<std::thread> pool;
    if (opt.digest) pool.emplace_back([&] { digest.emplace(Sha256OfSource(src)); });
    for (size_t k = 0; k < parts.size(); ++k) pool.emplace_back(run, k);
    for (auto& t : pool) t.join();
  }
  if (shared_digest) digest.emplace(shared_sha.HexDigest());
  if (digest) {
    if (digest->ok())
      scan.sha256_hex = digest->value();
    else
      scan.digest_error = digest->error().message;
  }
  for (const auto& s : status)
    if (!s.ok() && !scan.read_error) scan.read_error = s.error().message;
  if (scan.read_error && shared_digest) {  // the shared digest saw only part of the file
    scan.sha256_hex.reset();
    scan.digest_error = scan.read_error;
  }
  scan.header_ok = parts[0].header_ok;
  if (!scan.header_ok) return scan;  // a mismatched header yields no rows
  for (auto& part : parts) part.Finish();
  RangeParser& total = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) total.Append(parts[k]);
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
