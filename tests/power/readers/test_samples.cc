// samples.csv strict reader (upstream tests/test_power_artifacts.py "CSV").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "power/fixture.h"
#include "power/readers/contract.h"
#include "power/readers/samples_row.h"
#include "power/readers/samples_scan.h"

namespace gpulse::power {
namespace {

using testing::CsvRow;
using testing::CsvText;

const std::string kHeader = std::string(kSamplesHeader) + "\n";

SamplesScan Scan(const std::string& text, std::vector<TimeSpan> spans = {}, int threads = 1) {
  ScanOptions o;
  o.spans = std::move(spans);
  o.threads = threads;
  o.chunk_bytes =
      100;  // tiny buffer (the header is 75 bytes): lines cross chunk boundaries all the time
  return ScanSamplesBytes(text, o);
}

bool HasReason(const SamplesScan& s, std::string_view r) {
  auto v = s.Reasons();
  return std::find(v.begin(), v.end(), r) != v.end();
}

TEST(SamplesCsv, HeaderIsPinnedLiterally) {
  EXPECT_TRUE(IsSamplesHeader(
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w"));
  EXPECT_TRUE(IsSamplesHeader(
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\r"));
  EXPECT_FALSE(
      IsSamplesHeader("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,uuid,power_w"));
  EXPECT_FALSE(IsSamplesHeader(
      " schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w"));
}

TEST(SamplesCsv, RoundTrip) {
  std::vector<CsvRow> rows = {{0, 1000.5, "h", 0, "GPU-a", 250.25},
                              {0, 1000.5, "h", 1, "GPU-b", 0.0},
                              {1, 1001.5, "h", 0, "GPU-a", 251.0}};
  SamplesScan s = Scan(CsvText(rows));
  ASSERT_TRUE(s.header_ok);
  EXPECT_TRUE(s.Reasons().empty());
  EXPECT_EQ(s.data_rows, 3);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].key.hostname, "h");
  EXPECT_EQ(s.devices[0].rows, 2);
  EXPECT_EQ(s.devices[0].first_t, 1000.5);
  EXPECT_EQ(s.devices[0].last_t, 1001.5);
  EXPECT_EQ(s.devices[1].uuids, std::vector<std::string>{"GPU-b"});
  EXPECT_EQ(s.max_scrape_seq, 1);
}

TEST(SamplesCsv, CrLfLineEndingsAndNoFinalNewline) {
  std::string text =
      std::string(kSamplesHeader) + "\r\n1,1000.0,0,h,0,GPU-a,1.0\r\n1,1001.0,1,h,0,GPU-a,2.0";
  SamplesScan s = Scan(text);
  EXPECT_TRUE(s.Reasons().empty());
  EXPECT_EQ(s.data_rows, 2);
}

TEST(SamplesCsv, QuotedFieldsAreUnquoted) {
  SamplesScan s = Scan(kHeader + "1,1000.0,0,\"host,with\"\"comma\",0,GPU-a,1.0\n");
  ASSERT_TRUE(s.Reasons().empty());
  EXPECT_EQ(s.devices[0].key.hostname, "host,with\"comma");
}

TEST(SamplesCsv, UuidChangeIsRetainedAndFlagged) {
  SamplesScan s = Scan(kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n1,1001.0,1,h,0,GPU-b,1.0\n");
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].uuids, (std::vector<std::string>{"GPU-a", "GPU-b"}));
}

struct MalformedCase {
  const char* name;
  std::string row;
};

class SamplesCsvMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(SamplesCsvMalformed, RowIsMalformed) {
  SamplesScan s = Scan(kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n" + GetParam().row + "\n");
  EXPECT_TRUE(HasReason(s, reason::kSamplesCsvMalformed)) << GetParam().row;
  EXPECT_EQ(s.malformed_rows, 1);
  ASSERT_FALSE(s.malformed_examples.empty());
  EXPECT_EQ(s.malformed_examples[0].line, 3);
  EXPECT_EQ(s.devices.size(), 1u) << "a malformed row is never attributed to a device";
}

INSTANTIATE_TEST_SUITE_P(
    Rules, SamplesCsvMalformed,
    ::testing::Values(MalformedCase{"power_not_a_number", "1,1001.0,1,h,0,GPU-a,not-a-number"},
                      MalformedCase{"power_nan", "1,1001.0,1,h,0,GPU-a,NaN"},
                      MalformedCase{"power_negative", "1,1001.0,1,h,0,GPU-a,-5"},
                      MalformedCase{"power_inf", "1,1001.0,1,h,0,GPU-a,inf"},
                      MalformedCase{"six_columns", "1,1001.0,1,h,0,GPU-a"},
                      MalformedCase{"eight_columns", "1,1001.0,1,h,0,GPU-a,1.0,9"},
                      MalformedCase{"schema_not_int", "x,1001.0,1,h,0,GPU-a,1.0"},
                      MalformedCase{"schema_2", "2,1001.0,1,h,0,GPU-a,1.0"},
                      MalformedCase{"timestamp_nan", "1,nan,1,h,0,GPU-a,1.0"},
                      MalformedCase{"timestamp_text", "1,soon,1,h,0,GPU-a,1.0"},
                      MalformedCase{"seq_float", "1,1001.0,1.5,h,0,GPU-a,1.0"},
                      MalformedCase{"seq_negative", "1,1001.0,-1,h,0,GPU-a,1.0"},
                      MalformedCase{"gpu_negative", "1,1001.0,1,h,-1,GPU-a,1.0"},
                      MalformedCase{"gpu_not_int", "1,1001.0,1,h,zero,GPU-a,1.0"},
                      MalformedCase{"empty_hostname", "1,1001.0,1,,0,GPU-a,1.0"},
                      MalformedCase{"empty_uuid", "1,1001.0,1,h,0,,1.0"},
                      MalformedCase{"invalid_utf8", "1,1001.0,1,h\xff\xfe,0,GPU-a,1.0"},
                      MalformedCase{"overlong_utf8", "1,1001.0,1,h\xc0\xaf,0,GPU-a,1.0"},
                      MalformedCase{"oversized_field",
                                    "1,1001.0,1,h,0," + std::string(200000, 'u') + ",1.0"},
                      MalformedCase{"unterminated_quote", "1,1001.0,1,\"h,0,GPU-a,1.0"},
                      MalformedCase{"blank_line", ""},
                      MalformedCase{"nul_in_host", std::string("1,1001.0,1,h\0x,0,GPU-a,1.0", 26)}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SamplesCsv, OverlongLineIsOneMalformedRowAndReadingContinues) {
  ScanOptions o;
  o.chunk_bytes = 4096;
  std::string text =
      kHeader + "1,1000.0,0,h,0," + std::string(10000, 'u') + ",1.0\n1,1001.0,1,h,0,GPU-a,2.0\n";
  SamplesScan s = ScanSamplesBytes(text, o);
  EXPECT_EQ(s.malformed_rows, 1);
  EXPECT_EQ(s.data_rows, 2);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].rows, 1);
}

TEST(SamplesCsv, HeaderMismatchReturnsNoRows) {
  SamplesScan s = Scan("timestamp,power\n1,2\n");
  EXPECT_EQ(s.Reasons(), std::vector<std::string>{"samples_csv_header_mismatch"});
  EXPECT_TRUE(s.devices.empty());
  SamplesScan empty = Scan("");
  EXPECT_EQ(empty.Reasons(), std::vector<std::string>{"samples_csv_header_mismatch"});
}

TEST(SamplesCsv, MissingFileIsReported) {
  SamplesScan s = ScanSamplesFile("/nonexistent/gpulse/samples.csv", {});
  EXPECT_EQ(s.Reasons(), std::vector<std::string>{"samples_csv_missing"});
  EXPECT_FALSE(s.sha256_hex);
}

TEST(SamplesCsv, DuplicateKeyIsReportedAndLaterDropped) {
  SamplesScan s = Scan(
      kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n1,1000.0,0,h,0,GPU-a,9.0\n1,1001.0,1,h,0,GPU-a,1.0\n");
  EXPECT_TRUE(HasReason(s, reason::kDuplicateSampleRow));
  EXPECT_EQ(s.devices[0].rows, 2);
  EXPECT_EQ(s.devices[0].duplicate_rows, 1);
}

TEST(SamplesCsv, NonAdjacentDuplicateFoundByExactPass) {
  SamplesScan s = Scan(
      kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n1,1001.0,1,h,0,GPU-a,1.0\n1,1000.0,0,h,0,GPU-a,1.0\n");
  EXPECT_TRUE(HasReason(s, reason::kDuplicateSampleRow));
  EXPECT_FALSE(HasReason(s, reason::kTimestampNonMonotonic));
  EXPECT_EQ(s.devices[0].rows, 2);
}

TEST(SamplesCsv, NonMonotonicTimestampsAreFlagged) {
  SamplesScan s = Scan(kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n1,999.0,1,h,0,GPU-a,1.0\n");
  EXPECT_TRUE(HasReason(s, reason::kTimestampNonMonotonic));
}

TEST(SamplesCsv, EqualTimestampsAreAllowed) {
  SamplesScan s = Scan(kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n1,1000.0,1,h,0,GPU-a,1.0\n");
  EXPECT_TRUE(s.Reasons().empty());
}

TEST(SamplesCsv, MonotonicityIsJudgedInScrapeSeqOrder) {
  // File order differs from scrape_seq order, but by seq the timestamps rise: not a violation.
  SamplesScan s = Scan(kHeader + "1,1001.0,1,h,0,GPU-a,1.0\n1,1000.0,0,h,0,GPU-a,1.0\n");
  EXPECT_TRUE(s.Reasons().empty());
  EXPECT_EQ(s.devices[0].first_t, 1000.0);
}

TEST(SamplesCsv, DigestMatchesTheBytes) {
  std::string text = kHeader + "1,1000.0,0,h,0,GPU-a,1.0\n";
  SamplesScan one = Scan(text, {}, 1), two = Scan(text, {}, 3);
  ASSERT_TRUE(one.sha256_hex);
  EXPECT_EQ(*one.sha256_hex, testing::Sha256Hex(text));
  EXPECT_EQ(one.sha256_hex, two.sha256_hex);
}

// Threads split the file into byte ranges and merge; the result must equal the one-thread pass.
TEST(SamplesCsv, ParallelScanEqualsSequentialScan) {
  std::vector<CsvRow> rows;
  for (int i = 0; i < 400; ++i)
    for (int g = 0; g < 3; ++g)
      rows.push_back({i, 1000.0 + i * 0.5 + g * 0.01, "h" + std::to_string(g % 2), g,
                      i > 300 && g == 2 ? "GPU-new" : "GPU-" + std::to_string(g),
                      100.0 + (i * 7 % 13)});
  std::string text = CsvText(rows) + "garbage\n";
  std::vector<TimeSpan> spans = {{1010.3, 1100.7}, {1000.0, 1199.0}, {900, 2000}};
  SamplesScan a = Scan(text, spans, 1);
  for (int threads : {2, 3, 5}) {
    SamplesScan b = Scan(text, spans, threads);
    EXPECT_EQ(a.Reasons(), b.Reasons());
    EXPECT_EQ(a.data_rows, b.data_rows);
    ASSERT_EQ(b.malformed_examples.size(), 1u);
    EXPECT_EQ(b.malformed_examples[0].line, a.malformed_examples[0].line);
    ASSERT_EQ(a.devices.size(), b.devices.size());
    for (size_t d = 0; d < a.devices.size(); ++d) {
      EXPECT_EQ(a.devices[d].uuids, b.devices[d].uuids);
      EXPECT_EQ(a.devices[d].rows, b.devices[d].rows);
      for (size_t k = 0; k < spans.size(); ++k) {
        const auto &x = a.devices[d].spans[k], &y = b.devices[d].spans[k];
        EXPECT_EQ(x.lower_t, y.lower_t);
        EXPECT_EQ(x.upper_t, y.upper_t);
        EXPECT_EQ(x.max_gap_s, y.max_gap_s);
        EXPECT_EQ(x.observed_intervals, y.observed_intervals);
        EXPECT_EQ(x.uuids, y.uuids);
        EXPECT_NEAR(x.energy_j, y.energy_j, 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace gpulse::power

namespace gpulse::power {
namespace {

// Found by the fuzzer: a dropped duplicate must not add its UUID, whichever pass handles the
// device.
TEST(SamplesCsv, DroppedDuplicateContributesNoUuidInAnyPass) {
  std::string text =
      std::string(kSamplesHeader) + "\n1,999.5,0,h,0,GPU-a1,0.0\nbad\n1,999.5,0,h,0,GPU-a,100.0\n";
  for (int threads : {1, 2, 3, 4}) {
    SamplesScan s = Scan(text, {}, threads);
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_EQ(s.devices[0].uuids, std::vector<std::string>{"GPU-a1"}) << threads;
    EXPECT_EQ(s.devices[0].duplicate_rows, 1) << threads;
  }
}

}  // namespace
}  // namespace gpulse::power

namespace gpulse::power {
namespace {

void ExpectSameScan(const SamplesScan& a, const SamplesScan& b) {
  EXPECT_EQ(a.Reasons(), b.Reasons());
  EXPECT_EQ(a.data_rows, b.data_rows);
  EXPECT_EQ(a.malformed_rows, b.malformed_rows);
  EXPECT_EQ(a.max_scrape_seq, b.max_scrape_seq);
  ASSERT_EQ(a.malformed_examples.size(), b.malformed_examples.size());
  for (size_t i = 0; i < a.malformed_examples.size(); ++i) {
    EXPECT_EQ(a.malformed_examples[i].line, b.malformed_examples[i].line);
    EXPECT_EQ(a.malformed_examples[i].why, b.malformed_examples[i].why);
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    const DeviceSamples &x = a.devices[d], &y = b.devices[d];
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.uuids, y.uuids);
    EXPECT_EQ(x.rows, y.rows);
    EXPECT_EQ(x.duplicate_rows, y.duplicate_rows);
    EXPECT_EQ(x.non_monotonic, y.non_monotonic);
    EXPECT_EQ(x.first_t, y.first_t);
    EXPECT_EQ(x.last_t, y.last_t);
    ASSERT_EQ(x.spans.size(), y.spans.size());
    for (size_t k = 0; k < x.spans.size(); ++k) {
      const SpanCoverage &c = x.spans[k], &e = y.spans[k];
      EXPECT_EQ(c.lower_t, e.lower_t);
      EXPECT_EQ(c.upper_t, e.upper_t);
      EXPECT_EQ(c.max_gap_s, e.max_gap_s);
      EXPECT_EQ(c.observed_intervals, e.observed_intervals);
      EXPECT_EQ(c.uuids, e.uuids);
      EXPECT_EQ(c.energy_j, e.energy_j);  // same additions in the same order: bit-identical
      EXPECT_EQ(c.power_min_w, e.power_min_w);
      EXPECT_EQ(c.power_max_w, e.power_max_w);
      EXPECT_EQ(c.edge_lower_s, e.edge_lower_s);
      EXPECT_EQ(c.edge_upper_s, e.edge_upper_s);
    }
  }
}

// Rows written the way a collector writes them, then every kind of deviation the fast path must
// hand to the general parser: quoted fields, CRLF, exponents, signs, other number forms, a device
// order change, a UUID change, duplicates, reordering, malformed rows, a missing final newline.
std::string TrickyCsv() {
  std::string t = std::string(kSamplesHeader) + "\n";
  for (int seq = 0; seq < 40; ++seq) {
    std::string prefix = fmt::format("1,{},{},", testing::Repr(1000.0 + seq + 0.25), seq);
    for (int g = 0; g < 3; ++g) {
      std::string dev = fmt::format("h{},{},GPU-{}", g % 2, g, g);
      if (seq == 20 && g == 2) dev = "h0,2,GPU-swapped";
      std::string power = testing::Repr(100 + seq * 1.5 + g);
      switch ((seq * 3 + g) % 23) {
        case 3:
          power = "1.5e2";
          break;
        case 5:
          power += "\r";
          break;
        case 7:
          dev = fmt::format("\"h{}\",{},GPU-{}", g % 2, g, g);
          break;
        case 9:
          power = "-" + power;
          break;
        case 11:
          power = "0" + power;
          break;
        case 13:
          power = power + "x";
          break;
        case 17:
          dev = fmt::format("h{},0{},GPU-{}", g % 2, g, g);
          break;
        case 19:
          power = power + ".5";
          break;
        default:
          break;
      }
      t += prefix + dev + "," + power + "\n";
    }
    if (seq == 10) t += "1,1009.25,9,h0,0,GPU-0,5.0\n";             // a reordered row
    if (seq == 12) t += t.substr(t.rfind('\n', t.size() - 2) + 1);  // a duplicate row
  }
  for (int g = 2; g >= 0; --g)  // reversed device order in the last cycle, no final newline
    t += fmt::format("1,1100.5,100,h{},{},GPU-{},7.25{}", g % 2, g, g, g ? "\n" : "");
  return t;
}

TEST(SamplesCsv, FastPathEqualsGeneralParser) {
  std::string text = TrickyCsv();
  std::vector<TimeSpan> spans = {{1005.3, 1020.7}, {900, 2000}, {1010.25, 1010.25}, {1030, 1200}};
  for (size_t chunk : {size_t{100}, size_t{4096}}) {
    ScanOptions fast;
    fast.spans = spans;
    fast.chunk_bytes = chunk;
    ScanOptions general = fast;
    general.fast_path = false;
    SamplesScan a = ScanSamplesBytes(text, fast), b = ScanSamplesBytes(text, general);
    EXPECT_GT(a.malformed_rows, 0);
    ExpectSameScan(a, b);
  }
}

// The scanner feeds a window only from the point that enters it (plus the one before); the result
// must equal feeding every point of the device to a SpanAccumulator, for any window layout.
TEST(SamplesCsv, WindowScheduleEqualsFeedingEveryPoint) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<CsvRow> rows;
    std::vector<std::vector<Point>> points(2);
    double t = 1000;
    for (int seq = 0; seq < 300; ++seq) {
      t += (rng() % 4) * 0.5;  // equal times happen
      for (int g = 0; g < 2; ++g) {
        double w = 50.0 + rng() % 400;
        rows.push_back({seq, t, "h", g, "GPU-" + std::to_string(g), w});
        points[g].push_back({t, w, 0});
      }
    }
    std::vector<TimeSpan> spans;
    for (int k = 0; k < 6; ++k) {
      double a = 990 + rng() % 500, b = a + static_cast<double>(rng() % 80) - 10;
      spans.push_back({a, b});  // overlapping, nested, empty and inverted windows
    }
    SamplesScan s = Scan(CsvText(rows), spans);
    ASSERT_EQ(s.devices.size(), 2u);
    for (int g = 0; g < 2; ++g)
      for (size_t k = 0; k < spans.size(); ++k) {
        SpanAccumulator direct(spans[k]);
        for (const auto& p : points[g]) direct.Add(p);
        SpanCoverage want = direct.Finish();
        const SpanCoverage& got = s.devices[g].spans[k];
        ASSERT_EQ(got.lower_t, want.lower_t) << round << " " << k;
        ASSERT_EQ(got.upper_t, want.upper_t) << round << " " << k;
        EXPECT_EQ(got.max_gap_s, want.max_gap_s);
        EXPECT_EQ(got.observed_intervals, want.observed_intervals);
        EXPECT_EQ(got.energy_j, want.energy_j);
        EXPECT_EQ(got.power_min_w, want.power_min_w);
        EXPECT_EQ(got.power_max_w, want.power_max_w);
      }
  }
}

}  // namespace
}  // namespace gpulse::power
