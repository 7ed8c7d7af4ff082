#include "power/readers/samples_row.h"

#include <array>
#include <cmath>
#include <cstring>

#include "core/utf8.h"
#include "power/readers/contract.h"
#include "power/readers/fast_number.h"

namespace gpulse::power {
namespace {

constexpr size_t kColumns = 7;
using Fields = std::array<std::string_view, kColumns>;

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Plain split: no quotes anywhere in the line. Returns the number of fields seen.
size_t SplitPlain(std::string_view line, Fields& out) {
  size_t n = 0, begin = 0;
  while (true) {
    size_t comma = line.find(',', begin);
    std::string_view field =
        line.substr(begin, comma == std::string_view::npos ? line.npos : comma - begin);
    if (n < kColumns) out[n] = field;
    ++n;
    if (comma == std::string_view::npos) return n;
    begin = comma + 1;
  }
}

// Quote-aware split (RFC 4180 style, as Python's csv writer quotes). A field that starts with '"'
// runs to the closing quote, with "" meaning one quote; anything else is literal.
// Returns 0 on an unterminated quote or text after a closing quote.
size_t SplitQuoted(std::string_view line, Fields& out, std::string& scratch) {
  scratch.clear();
  scratch.reserve(line.size());
  std::array<std::pair<size_t, size_t>, kColumns> spans{};
  size_t n = 0, i = 0;
  while (true) {
    size_t start = scratch.size();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return 0;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            scratch.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        scratch.push_back(line[i++]);
      }
      if (i < line.size() && line[i] != ',') return 0;
    } else {
      while (i < line.size() && line[i] != ',') scratch.push_back(line[i++]);
    }
    if (n < kColumns) spans[n] = {start, scratch.size() - start};
    ++n;
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  for (size_t k = 0; k < n && k < kColumns; ++k)
    out[k] = std::string_view(scratch).substr(spans[k].first, spans[k].second);
  return n;
}

RowParse Fail(std::string_view why) { return RowParse{false, {}, why}; }

}  // namespace

bool IsSamplesHeader(std::string_view line) { return StripCr(line) == kSamplesHeader; }

RowParse ParseSampleRow(std::string_view line, std::string& scratch) {
  line = StripCr(line);
  Fields f;
  bool quoted = line.find('"') != std::string_view::npos;
  size_t n = quoted ? SplitQuoted(line, f, scratch) : SplitPlain(line, f);
  if (n == 0) return Fail("unterminated or misplaced quote");
  if (n != kColumns) return Fail("wrong column count (expected 7)");
  for (const auto& field : f)
    if (field.size() > kMaxCsvFieldBytes) return Fail("field larger than the 131072-byte limit");
  RowParse r;
  r.quoted = quoted;
  int64_t schema = 0;
  if (!ParseIntField(f[0], schema)) return Fail("schema_version is not an integer");
  if (schema != kSchemaVersion) return Fail("schema_version is not 1");
  if (!ParseFloatField(f[1], r.row.timestamp_unix)) return Fail("timestamp_unix is not a number");
  if (!std::isfinite(r.row.timestamp_unix)) return Fail("timestamp_unix is not finite");
  if (!ParseIntField(f[2], r.row.scrape_seq)) return Fail("scrape_seq is not an integer");
  if (r.row.scrape_seq < 0) return Fail("scrape_seq is negative");
  if (f[3].empty()) return Fail("hostname is empty");
  if (!IsValidUtf8(f[3])) return Fail("hostname is not valid UTF-8");
  if (f[3].find('\0') != std::string_view::npos) return Fail("hostname contains NUL");
  if (!ParseIntField(f[4], r.row.gpu_index)) return Fail("gpu_index is not an integer");
  if (r.row.gpu_index < 0) return Fail("gpu_index is negative");
  if (f[5].empty()) return Fail("gpu_uuid is empty");
  if (!IsValidUtf8(f[5])) return Fail("gpu_uuid is not valid UTF-8");
  if (f[5].find('\0') != std::string_view::npos) return Fail("gpu_uuid contains NUL");
  if (!ParseFloatField(f[6], r.row.power_w)) return Fail("power_w is not a number");
  if (!std::isfinite(r.row.power_w)) return Fail("power_w is not finite");
  if (r.row.power_w < 0) return Fail("power_w is negative");
  r.row.hostname = f[3];
  r.row.gpu_uuid = f[5];
  r.ok = true;
  return r;
}

}  // namespace gpulse::power
