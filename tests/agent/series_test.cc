// The agent's compressed series: exact round trips of adversarial values and times, the bounds,
// queries, the byte accounting against WorstCaseBytes, and Parse against hostile images.
#include "agent/series.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace gpulse::agent {
namespace {

constexpr std::int64_t kMinMs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kChunk = Series::kChunkPoints;

// ---- Helpers ----

std::vector<Point> All(const Series& s) {
  std::vector<Point> out;
  s.Query(kMinMs, kMaxMs, out);
  return out;
}

std::string Describe(const std::optional<double>& v) {
  if (!v) return "absent";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g (0x%016llx)", *v,
                static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(*v)));
  return buf;
}

// Bit-identical: -0.0 is not 0.0 here.
bool SameValue(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::bit_cast<std::uint64_t>(*a) == std::bit_cast<std::uint64_t>(*b);
}

::testing::AssertionResult SamePoints(const std::vector<Point>& got,
                                      const std::vector<Point>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "got " << got.size() << " points, want " << want.size();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].t_ms != want[i].t_ms || !SameValue(got[i].value, want[i].value)) {
      return ::testing::AssertionFailure()
             << "point " << i << ": got (" << got[i].t_ms << ", " << Describe(got[i].value)
             << "), want (" << want[i].t_ms << ", " << Describe(want[i].value) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

Series Build(const std::vector<Point>& points, std::size_t max_points) {
  Series s(max_points);
  for (const Point& p : points) EXPECT_TRUE(s.Append(p.t_ms, p.value)) << p.t_ms;
  return s;
}

// The invariants any series must meet, whatever built it (Append, or Parse of a hostile image).
void ExpectWellFormed(const Series& s) {
  const std::vector<Point> all = All(s);
  ASSERT_EQ(all.size(), s.size());
  EXPECT_LE(s.size(), s.max_points() + kChunk - 1);
  EXPECT_LE(s.bytes(), Series::WorstCaseBytes(s.max_points()));
  for (std::size_t i = 1; i < all.size(); ++i) ASSERT_LT(all[i - 1].t_ms, all[i].t_ms) << i;
  for (const Point& p : all) {
    ASSERT_TRUE(!p.value || std::isfinite(*p.value)) << p.t_ms;
  }
  if (all.empty()) {
    EXPECT_FALSE(s.Latest().has_value());
    EXPECT_FALSE(s.OldestMs().has_value());
  } else {
    ASSERT_TRUE(s.Latest().has_value());
    EXPECT_EQ(s.Latest()->t_ms, all.back().t_ms);
    EXPECT_TRUE(SameValue(s.Latest()->value, all.back().value));
    EXPECT_EQ(s.OldestMs(), all.front().t_ms);
  }
}

// The test's own CRC-32 (IEEE, reflected), to forge images that pass the checksum and so reach
// the structural checks behind it.
std::uint32_t Crc32(std::string_view bytes) {
  static const std::vector<std::uint32_t> table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t crc = i;
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
      t[i] = crc;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes)
    crc = table[(crc ^ static_cast<std::uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

// `body` is an image without its checksum; appends a correct one.
std::string Seal(std::string body) {
  const std::uint32_t crc = Crc32(body);
  for (int i = 0; i < 4; ++i) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return body;
}
std::string Unseal(const std::string& image) { return image.substr(0, image.size() - 4); }

void PutLe(std::string& s, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Image layout (docs/agent-series-encoding.md): magic 4, version 1, max_points 8, chunk count 4,
// then per chunk first_ms 8, count 2, bit length 4 and the stream; CRC-32 last.
constexpr std::size_t kMaxPointsAt = 5;
constexpr std::size_t kChunkCountAt = 13;
constexpr std::size_t kFirstChunkAt = 17;
constexpr std::size_t kChunkHeader = 14;

// ---- Generators ----

enum class Values {
  kRandomBits,
  kIntegers,
  kThreeDecimals,
  kConstant,
  kAbsentRuns,
  kSpecial,
  kMixed
};
enum class Times { kRegular, kJitter, kMillisecond, kHugeGaps, kMixed };

double RandomFiniteBits(std::mt19937_64& rng) {
  for (;;) {
    const double v = std::bit_cast<double>(rng());
    if (std::isfinite(v)) return v;
  }
}

double RandomInteger(std::mt19937_64& rng) {
  const int bits = static_cast<int>(rng() % 64);
  const auto magnitude = static_cast<std::int64_t>(rng() >> (64 - std::max(bits, 1)) >> 1);
  const double near_limits[] = {static_cast<double>(std::numeric_limits<std::int64_t>::max()),
                                static_cast<double>(std::numeric_limits<std::int64_t>::min()),
                                9007199254740993.0,  // 2^53 + 1 rounds to 2^53
                                4611686018427387.0,  // about 2^62 / 1000: the scaled-code limit
                                -4611686018427388.0,
                                4611686018427388.0};
  if (rng() % 8 == 0) return near_limits[rng() % std::size(near_limits)];
  return static_cast<double>((rng() & 1) ? magnitude : -magnitude);
}

double RandomThreeDecimals(std::mt19937_64& rng) {
  std::normal_distribution<double> watts(300.0, 200.0);
  if (rng() % 16 == 0) {  // large, up to the edge of the scaled code
    return static_cast<double>(static_cast<std::int64_t>(rng() >> 2) % 4611686018427387903LL) /
           1000.0;
  }
  return static_cast<double>(std::llround(watts(rng) * 1000.0)) / 1000.0;
}

const std::vector<double>& SpecialValues() {
  static const std::vector<double> values = {
      0.1,
      1e-300,
      -1e-300,
      -0.0,
      0.0,
      std::numeric_limits<double>::denorm_min(),
      -std::numeric_limits<double>::denorm_min(),
      std::numeric_limits<double>::min(),
      std::numeric_limits<double>::max(),
      -std::numeric_limits<double>::max(),
      std::numeric_limits<double>::epsilon(),
      1.0 / 3.0,
      -2.0 / 3.0,
      0.001,
      -0.001,
      0.0005,
      123.456,
      -123.456,
      123.4565,
      std::nextafter(0.1, 1.0),
      4611686018427387.903,
      4611686018427388.0,
      9.2233720368547758e18,
      -9.2233720368547758e18,
      1e300,
      -1e300,
      42.0,
  };
  return values;
}

class Generator {
 public:
  Generator(Values values, Times times, std::uint64_t seed)
      : values_(values), times_(times), rng_(seed) {}

  std::vector<Point> Make(std::size_t n) {
    std::vector<Point> points;
    std::int64_t t = (rng_() & 1) ? -1'000'000'000'000 : 1'700'000'000'000;
    if (times_ == Times::kHugeGaps) t = kMinMs + 1;
    for (std::size_t i = 0; i < n; ++i) {
      points.push_back({t, NextValue(i)});
      t = NextTime(t);
    }
    return points;
  }

 private:
  std::optional<double> NextValue(std::size_t i) {
    switch (values_) {
      case Values::kRandomBits:
        return RandomFiniteBits(rng_);
      case Values::kIntegers:
        return RandomInteger(rng_);
      case Values::kThreeDecimals:
        return RandomThreeDecimals(rng_);
      case Values::kConstant:
        if (rng_() % 500 == 0) constant_ = RandomFiniteBits(rng_);
        return constant_;
      case Values::kAbsentRuns:
        if (rng_() % 40 == 0) present_ = !present_;
        if (!present_) return std::nullopt;
        return (rng_() & 1) ? RandomThreeDecimals(rng_) : constant_;
      case Values::kSpecial:
        if (rng_() % 7 == 0) return std::nullopt;
        return SpecialValues()[rng_() % SpecialValues().size()];
      case Values::kMixed:
        break;
    }
    switch (rng_() % 6) {
      case 0:
        return RandomFiniteBits(rng_);
      case 1:
        return RandomInteger(rng_);
      case 2:
        return RandomThreeDecimals(rng_);
      case 3:
        return std::nullopt;
      case 4:
        return SpecialValues()[i % SpecialValues().size()];
      default:
        return constant_;
    }
  }

  std::int64_t NextTime(std::int64_t t) {
    Times mode = times_;
    if (mode == Times::kMixed) mode = static_cast<Times>(rng_() % 4);
    std::int64_t step = 1000;
    switch (mode) {
      case Times::kRegular:
        break;
      case Times::kJitter:
        step = 1000 + static_cast<std::int64_t>(rng_() % 201) - 100;
        break;
      case Times::kMillisecond:
        step = 1;
        break;
      default: {
        // A gap of any bit width, but at most 1/4096 of the room left below kMaxMs, so that the
        // series never runs out of time (the first gap from near kMinMs spans about 2^52 ms).
        const std::uint64_t room =
            static_cast<std::uint64_t>(kMaxMs) - static_cast<std::uint64_t>(t);
        const std::uint64_t gap = (rng_() >> (rng_() % 64)) % (room / 4096 + 1);
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(t) + 1 + gap);
      }
    }
    return t + step;
  }

  Values values_;
  Times times_;
  std::mt19937_64 rng_;
  double constant_ = 17.25;
  bool present_ = true;
};

// ---- Round trips ----

class RoundTrip : public ::testing::TestWithParam<std::tuple<Values, Times>> {};

TEST_P(RoundTrip, QueryAndImageGiveBackExactlyWhatWasAppended) {
  const auto [values, times] = GetParam();
  const std::uint64_t seed = 1000 * static_cast<int>(values) + static_cast<int>(times);
  const std::vector<Point> points = Generator(values, times, seed).Make(3 * kChunk + 77);
  const Series s = Build(points, points.size());
  EXPECT_EQ(s.size(), points.size());
  EXPECT_TRUE(SamePoints(All(s), points));
  ExpectWellFormed(s);

  Result<Series> parsed = Series::Parse(s.Serialize());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->max_points(), s.max_points());
  EXPECT_TRUE(SamePoints(All(*parsed), points));
  EXPECT_EQ(parsed->Serialize(), s.Serialize());
}

// Parse recovers the state an append continues from: appending the rest to the parsed half gives
// the same bits as appending everything to one series.
TEST_P(RoundTrip, AppendingAfterParseContinuesTheSameStream) {
  const auto [values, times] = GetParam();
  const std::uint64_t seed = 7 + 1000 * static_cast<int>(values) + static_cast<int>(times);
  const std::vector<Point> points = Generator(values, times, seed).Make(2 * kChunk + 300);
  for (const std::size_t split :
       {std::size_t{1}, std::size_t{2}, kChunk - 1, kChunk, kChunk + 1, kChunk + 517}) {
    Series half(points.size());
    for (std::size_t i = 0; i < split; ++i)
      ASSERT_TRUE(half.Append(points[i].t_ms, points[i].value));
    Result<Series> resumed = Series::Parse(half.Serialize());
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    for (std::size_t i = split; i < points.size(); ++i) {
      ASSERT_TRUE(resumed->Append(points[i].t_ms, points[i].value));
    }
    EXPECT_TRUE(SamePoints(All(*resumed), points)) << "split " << split;
    EXPECT_EQ(resumed->Serialize(), Build(points, points.size()).Serialize()) << "split " << split;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Series, RoundTrip,
    ::testing::Combine(::testing::Values(Values::kRandomBits, Values::kIntegers,
                                         Values::kThreeDecimals, Values::kConstant,
                                         Values::kAbsentRuns, Values::kSpecial, Values::kMixed),
                       ::testing::Values(Times::kRegular, Times::kJitter, Times::kMillisecond,
                                         Times::kHugeGaps, Times::kMixed)));

TEST(Series, SpecialValuesComeBackBitForBit) {
  std::vector<Point> points;
  std::int64_t t = 0;
  // Each special value after each other one, and after an absent point, so that every code path
  // (scaled delta, XOR with and without a reusable window, unchanged) meets each of them.
  for (const double a : SpecialValues()) {
    for (const double b : SpecialValues()) {
      points.push_back({t += 1000, a});
      points.push_back({t += 1000, b});
      points.push_back({t += 1000, b});
      points.push_back({t += 1000, std::nullopt});
      points.push_back({t += 1000, a});
    }
  }
  const Series s = Build(points, points.size());
  EXPECT_TRUE(SamePoints(All(s), points));
  Result<Series> parsed = Series::Parse(s.Serialize());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(SamePoints(All(*parsed), points));
}

TEST(Series, NegativeZeroIsNotZero) {
  Series s(10);
  ASSERT_TRUE(s.Append(1, 0.0));
  ASSERT_TRUE(s.Append(2, -0.0));
  ASSERT_TRUE(s.Append(3, 0.0));
  const std::vector<Point> all = All(s);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_FALSE(std::signbit(*all[0].value));
  EXPECT_TRUE(std::signbit(*all[1].value));
  EXPECT_FALSE(std::signbit(*all[2].value));
}

TEST(Series, ExtremeTimestampsRoundTrip) {
  const std::vector<Point> points = {
      {kMinMs, 1.0}, {kMinMs + 1, 2.0}, {0, 3.0}, {kMaxMs - 1, std::nullopt}, {kMaxMs, 5.5}};
  const Series s = Build(points, 10);
  // The query range is half-open, so a point at kMaxMs is only ever seen through Latest.
  EXPECT_TRUE(SamePoints(All(s), {points.begin(), points.end() - 1}));
  ASSERT_TRUE(s.Latest().has_value());
  EXPECT_EQ(s.Latest()->t_ms, kMaxMs);
  EXPECT_EQ(s.Latest()->value, 5.5);
  Result<Series> parsed = Series::Parse(s.Serialize());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(SamePoints(All(*parsed), {points.begin(), points.end() - 1}));
  EXPECT_EQ(parsed->Latest()->t_ms, kMaxMs);
}

TEST(Series, NanAndInfinityAreStoredAsAbsent) {
  Series s(10);
  ASSERT_TRUE(s.Append(1, std::numeric_limits<double>::quiet_NaN()));
  ASSERT_TRUE(s.Append(2, std::numeric_limits<double>::infinity()));
  ASSERT_TRUE(s.Append(3, -std::numeric_limits<double>::infinity()));
  ASSERT_TRUE(s.Append(4, 1.5));
  EXPECT_TRUE(
      SamePoints(All(s), {{1, std::nullopt}, {2, std::nullopt}, {3, std::nullopt}, {4, 1.5}}));
}

TEST(Series, AbsentIsNotZero) {
  Series s(10);
  ASSERT_TRUE(s.Append(1, std::nullopt));
  ASSERT_TRUE(s.Append(2, 0.0));
  ASSERT_TRUE(s.Append(3, std::nullopt));
  ASSERT_TRUE(s.Append(4, std::nullopt));
  ASSERT_TRUE(s.Append(5, 0.0));
  EXPECT_TRUE(SamePoints(
      All(s), {{1, std::nullopt}, {2, 0.0}, {3, std::nullopt}, {4, std::nullopt}, {5, 0.0}}));
  EXPECT_EQ(s.Latest()->value, 0.0);
}

// ---- Append ----

TEST(Series, AppendRefusesTimeThatDoesNotMoveForward) {
  Series s(100);
  ASSERT_TRUE(s.Append(1000, 1.0));
  ASSERT_TRUE(s.Append(2000, 2.0));
  const std::string before = s.Serialize();
  EXPECT_FALSE(s.Append(2000, 3.0));
  EXPECT_FALSE(s.Append(1999, 3.0));
  EXPECT_FALSE(s.Append(kMinMs, std::nullopt));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.Serialize(), before);  // nothing half-written
  EXPECT_EQ(s.Latest()->t_ms, 2000);
  EXPECT_EQ(s.Latest()->value, 2.0);
  ASSERT_TRUE(s.Append(2001, 4.0));
  EXPECT_TRUE(SamePoints(All(s), {{1000, 1.0}, {2000, 2.0}, {2001, 4.0}}));
}

TEST(Series, EmptySeries) {
  Series s(5);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.Latest().has_value());
  EXPECT_FALSE(s.OldestMs().has_value());
  EXPECT_TRUE(All(s).empty());
  EXPECT_EQ(s.DropOlderThan(kMaxMs), 0u);
  EXPECT_LE(s.bytes(), Series::WorstCaseBytes(5));
  Result<Series> parsed = Series::Parse(s.Serialize());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->size(), 0u);
  EXPECT_EQ(parsed->max_points(), 5u);
}

// ---- Bounds ----

TEST(Series, SizeStaysWithinTheBoundAndKeepsTheNewestPoints) {
  const std::vector<Point> points = Generator(Values::kMixed, Times::kJitter, 3).Make(12'000);
  for (const std::size_t max : {std::size_t{1}, std::size_t{2}, kChunk - 1, kChunk, kChunk + 1,
                                2 * kChunk, std::size_t{5000}}) {
    Series s(max);
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_TRUE(s.Append(points[i].t_ms, points[i].value));
      const std::size_t n = i + 1;
      if (n < max) {
        ASSERT_EQ(s.size(), n) << "max " << max;
      } else {
        ASSERT_GE(s.size(), max) << "max " << max << " after " << n;
        ASSERT_LT(s.size(), max + kChunk) << "max " << max << " after " << n;
      }
      ASSERT_LE(s.bytes(), Series::WorstCaseBytes(max)) << "max " << max << " after " << n;
    }
    const std::vector<Point> newest(points.end() - static_cast<std::ptrdiff_t>(s.size()),
                                    points.end());
    EXPECT_TRUE(SamePoints(All(s), newest)) << "max " << max;
    EXPECT_EQ(s.OldestMs(), newest.front().t_ms);
  }
}

TEST(Series, SetMaxPointsDropsWholeChunksAndLowersTheFootprint) {
  const std::vector<Point> points = Generator(Values::kRandomBits, Times::kRegular, 4).Make(40'000);
  Series s = Build(points, 100'000);
  ASSERT_EQ(s.size(), points.size());
  s.SetMaxPoints(2000);
  EXPECT_GE(s.size(), 2000u);
  EXPECT_LT(s.size(), 2000 + kChunk);
  EXPECT_LE(s.bytes(), Series::WorstCaseBytes(2000));
  EXPECT_TRUE(
      SamePoints(All(s), {points.end() - static_cast<std::ptrdiff_t>(s.size()), points.end()}));
  const std::size_t kept = s.size();
  s.SetMaxPoints(1'000'000);  // raising drops nothing
  EXPECT_EQ(s.size(), kept);
  ASSERT_TRUE(s.Append(points.back().t_ms + 1, 1.0));
  EXPECT_EQ(s.size(), kept + 1);
}

TEST(Series, DropOlderThanDropsWholeChunksWhoseNewestPointIsOlder) {
  std::vector<Point> points;
  for (int i = 0; i < 5000; ++i) points.push_back({i * 1000LL, i * 0.5});
  Series s = Build(points, 100'000);
  EXPECT_EQ(s.DropOlderThan(0), 0u);
  EXPECT_EQ(s.DropOlderThan(1023 * 1000), 0u);          // chunk 0's newest point is not older
  EXPECT_EQ(s.DropOlderThan(1023 * 1000 + 1), kChunk);  // now it is
  EXPECT_EQ(s.OldestMs(), 1024 * 1000);
  EXPECT_EQ(s.DropOlderThan(2500 * 1000), kChunk);  // chunk 1 (up to 2047); chunk 2 holds 2500
  EXPECT_EQ(s.size(), 5000 - 2 * kChunk);
  EXPECT_EQ(s.OldestMs(), 2048 * 1000);
  EXPECT_TRUE(SamePoints(All(s), {points.begin() + 2 * kChunk, points.end()}));
  EXPECT_EQ(s.DropOlderThan(kMaxMs), 5000 - 2 * kChunk);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.Latest().has_value());
  EXPECT_FALSE(s.OldestMs().has_value());
  ASSERT_TRUE(s.Append(10'000'000, 7.0));
  EXPECT_TRUE(SamePoints(All(s), {{10'000'000, 7.0}}));
}

// ---- Query ----

class QueryTest : public ::testing::Test {
 protected:
  QueryTest() {
    for (int i = 0; i < 3000; ++i)
      points_.push_back({1000LL * (i + 1), i % 7 == 0 ? std::nullopt : std::optional<double>(i)});
    for (const Point& p : points_) s_.Append(p.t_ms, p.value);
  }
  std::vector<Point> Q(std::int64_t from, std::int64_t until) const {
    std::vector<Point> out;
    s_.Query(from, until, out);
    return out;
  }
  std::vector<Point> Expected(std::int64_t from, std::int64_t until) const {
    std::vector<Point> out;
    for (const Point& p : points_) {
      if (p.t_ms >= from && p.t_ms < until) out.push_back(p);
    }
    return out;
  }

  std::vector<Point> points_;
  Series s_{10'000};
};

TEST_F(QueryTest, EmptyAndOutsideRanges) {
  EXPECT_TRUE(Q(5000, 5000).empty());
  EXPECT_TRUE(Q(6000, 5000).empty());
  EXPECT_TRUE(Q(kMinMs, 1000).empty());       // ends just before the first point
  EXPECT_TRUE(Q(3'000'001, kMaxMs).empty());  // starts just after the last point
  EXPECT_TRUE(Q(1001, 2000).empty());         // between two points
}

TEST_F(QueryTest, BoundariesAreHalfOpen) {
  EXPECT_TRUE(SamePoints(Q(1000, 1001), Expected(1000, 1001)));
  EXPECT_EQ(Q(1000, 1001).size(), 1u);
  EXPECT_TRUE(SamePoints(Q(1000, 3000), {points_[0], points_[1]}));
  EXPECT_TRUE(SamePoints(Q(3'000'000, 3'000'001), {points_.back()}));
  EXPECT_TRUE(SamePoints(Q(kMinMs, kMaxMs), points_));
}

TEST_F(QueryTest, RangesAcrossAndAtChunkEdges) {
  // Points 1024 and 1025 (times 1'024'000 and 1'025'000) are the last of chunk 0 and the first of
  // chunk 1.
  const std::int64_t edges[] = {1'023'999, 1'024'000, 1'024'001, 1'025'000,
                                2'048'000, 2'049'000, 2'049'001, 2'999'999};
  for (const std::int64_t from : edges) {
    for (const std::int64_t until : edges) {
      EXPECT_TRUE(SamePoints(Q(from, until), Expected(from, until))) << from << ".." << until;
    }
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t a = static_cast<std::int64_t>(rng() % 3'200'000);
    const std::int64_t b = a + static_cast<std::int64_t>(rng() % 1'500'000);
    ASSERT_TRUE(SamePoints(Q(a, b), Expected(a, b))) << a << ".." << b;
  }
}

TEST_F(QueryTest, AppendsToWhatIsAlreadyThere) {
  std::vector<Point> out = {{-5, 1.0}};
  s_.Query(1000, 2001, out);
  EXPECT_TRUE(SamePoints(out, {{-5, 1.0}, points_[0], points_[1]}));
}

// ---- Footprint ----

TEST(Series, BytesNeverExceedWorstCaseUnderAdversarialValues) {
  // Each point is made about as dear as the coding allows (over 16 bytes, so that an open chunk
  // needs more than 16 KiB and its growth rule matters): a huge, random delta-of-delta, and mostly
  // a scaled delta of the full 64 bits (between the two ends of the scaled range), else a
  // full-width XOR.
  std::mt19937_64 rng(6);
  std::vector<Point> points;
  std::int64_t t = kMinMs;
  double v = 1.0;
  double end = 4611686018427387.0;  // its thousandths are just under 2^62
  for (int i = 0; i < 9000; ++i) {
    t += 1 + static_cast<std::int64_t>(rng() >> 20);
    if (i % 4 != 3) {
      end = -end;
      v = end;
    } else {
      for (;;) {
        const double next = std::bit_cast<double>(std::bit_cast<std::uint64_t>(v) ^
                                                  (rng() | 0x8000000000000001ULL));
        if (std::isfinite(next)) {
          v = next;
          break;
        }
      }
    }
    points.push_back({t, v});
  }
  for (const std::size_t max :
       {std::size_t{1}, std::size_t{1000}, kChunk, kChunk + 1, std::size_t{5000}}) {
    Series s(max);
    for (const Point& p : points) {
      ASSERT_TRUE(s.Append(p.t_ms, p.value));
      ASSERT_LE(s.bytes(), Series::WorstCaseBytes(max)) << "max " << max;
    }
    EXPECT_TRUE(
        SamePoints(All(s), {points.end() - static_cast<std::ptrdiff_t>(s.size()), points.end()}));
  }
  // The sequence is adversarial indeed: over 16 bytes a point, where readings cost one to three.
  const Series big = Build(points, points.size());
  EXPECT_GT(big.bytes(), 16 * points.size());
}

TEST(Series, WorstCaseBytesGrowsWithTheBoundAndIsAboutTheWorstPointCost) {
  std::size_t previous = 0;
  for (const std::size_t max : {1, 100, 1023, 1024, 1025, 14'400, 1'000'000}) {
    const std::size_t worst = Series::WorstCaseBytes(max);
    EXPECT_GE(worst, previous);
    previous = worst;
    // At most 148 bits (18.5 bytes) a point, over max + two chunks, plus a little bookkeeping.
    EXPECT_LE(worst, (max + 2 * kChunk) * 19 + 4096) << max;
  }
  EXPECT_EQ(Series::WorstCaseBytes(std::numeric_limits<std::size_t>::max()),
            std::numeric_limits<std::size_t>::max());  // saturates rather than wraps
}

double BytesPerPoint(const std::vector<Point>& points) {
  const Series s = Build(points, points.size());
  return static_cast<double>(s.bytes()) / static_cast<double>(points.size());
}

TEST(Series, ConstantOneHertzSeriesCostsUnderHalfAByteAPoint) {
  std::vector<Point> points;
  for (int i = 0; i < 14'400; ++i) points.push_back({1'700'000'000'000 + 1000LL * i, 412.5});
  EXPECT_LT(BytesPerPoint(points), 0.5);
}

TEST(Series, PowerLikeSeriesCostsUnderThreeBytesAPoint) {
  // Watts with milliwatt resolution: a slow swing, noise of a watt or two, and load steps.
  std::mt19937_64 rng(8);
  std::normal_distribution<double> noise(0.0, 1.5);
  std::vector<Point> points;
  double base = 250.0;
  for (int i = 0; i < 14'400; ++i) {
    if (i % 1800 == 0) base = 150.0 + static_cast<double>(rng() % 400);
    const double w = base + 40.0 * std::sin(i / 300.0) + noise(rng);
    points.push_back({1'700'000'000'000 + 1000LL * i, std::llround(w * 1000.0) / 1000.0});
  }
  EXPECT_LT(BytesPerPoint(points), 3.0);
}

// A regular cadence costs one time bit a point after the first two, an unchanged value one more
// (and so does an absent run): eight more such points, sixteen bits, two bytes of image.
TEST(Series, RegularCadenceAndUnchangedValuesCostOneBitEach) {
  for (const std::optional<double> v :
       {std::optional<double>(3.25), std::optional<double>(0.1), std::optional<double>()}) {
    auto image_size = [&v](int n) {
      Series s(10'000);
      for (int i = 0; i < n; ++i) s.Append(5'000'000 + 1000LL * i, v);
      return s.Serialize().size();
    };
    EXPECT_EQ(image_size(508), image_size(500) + 2) << Describe(v);
    EXPECT_EQ(image_size(1008), image_size(1000) + 2) << Describe(v);
  }
}

// ---- Moves ----

TEST(Series, MovesCarryTheChunks) {
  const std::vector<Point> points = Generator(Values::kMixed, Times::kMixed, 9).Make(2500);
  Series a = Build(points, 4000);
  Series b(std::move(a));
  EXPECT_TRUE(SamePoints(All(b), points));
  Series c(1);
  c = std::move(b);
  EXPECT_TRUE(SamePoints(All(c), points));
  EXPECT_EQ(c.max_points(), 4000u);
  ASSERT_TRUE(c.Append(points.back().t_ms + 1, 2.0));
  EXPECT_EQ(c.size(), points.size() + 1);
}

// ---- Parse against hostile images ----

Series Sample() {
  return Build(Generator(Values::kMixed, Times::kMixed, 10).Make(2 * kChunk + 300), 5000);
}

void ExpectRefused(std::string_view image, const std::string& what) {
  Result<Series> r = Series::Parse(image);
  ASSERT_FALSE(r.ok()) << what;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << what;
  EXPECT_FALSE(r.error().message.empty()) << what;
}

// Two chunks, the second open: every field of the format is cut somewhere.
Series SmallSample() {
  return Build(Generator(Values::kMixed, Times::kMixed, 14).Make(kChunk + 90), 5000);
}

TEST(SeriesImage, EveryTruncationIsRefused) {
  const std::string image = SmallSample().Serialize();
  for (std::size_t n = 0; n < image.size(); ++n) {
    ExpectRefused(std::string_view(image).substr(0, n), "prefix of " + std::to_string(n));
  }
}

TEST(SeriesImage, EveryTruncationIsRefusedEvenWithAValidChecksum) {
  const std::string body = Unseal(SmallSample().Serialize());
  for (std::size_t n = 0; n < body.size(); ++n) {
    ExpectRefused(Seal(body.substr(0, n)), "resealed prefix of " + std::to_string(n));
  }
}

TEST(SeriesImage, ForeignInputIsRefused) {
  ExpectRefused("", "empty");
  ExpectRefused("{\"points\": []}", "JSON");
  ExpectRefused(std::string(100, '\0'), "zeros");
  std::mt19937_64 rng(11);
  std::string noise(1 << 16, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  ExpectRefused(noise, "noise");
  std::string body = Unseal(Sample().Serialize());
  body[0] = 'X';
  ExpectRefused(Seal(body), "bad magic");
  body = Unseal(Sample().Serialize());
  body[4] = 2;
  ExpectRefused(Seal(body), "future version");
  ExpectRefused(Seal(Unseal(Sample().Serialize()) + "x"), "trailing byte");
}

TEST(SeriesImage, ForgedCountsAndLengthsAreRefused) {
  const std::string body = Unseal(Sample().Serialize());
  auto forged = [&body](std::size_t at, std::uint64_t v, int bytes) {
    std::string b = body;
    PutLe(b, at, v, bytes);
    return Seal(b);
  };
  ExpectRefused(forged(kChunkCountAt, 0xFFFFFFFF, 4), "chunk count 2^32-1");
  ExpectRefused(forged(kChunkCountAt, 4, 4), "one chunk too many");
  ExpectRefused(forged(kChunkCountAt, 2, 4), "one chunk too few");
  ExpectRefused(forged(kMaxPointsAt, 0, 8), "bound 0");
  ExpectRefused(forged(kMaxPointsAt, 1, 8), "more points than a bound of 1 keeps");
  ExpectRefused(forged(kFirstChunkAt + 8, 0, 2), "chunk of 0 points");
  ExpectRefused(forged(kFirstChunkAt + 8, kChunk + 1, 2), "chunk of 1025 points");
  ExpectRefused(forged(kFirstChunkAt + 8, kChunk - 1, 2), "chunk with fewer points than coded");
  ExpectRefused(forged(kFirstChunkAt + 10, 0xFFFFFFFF, 4), "stream of 2^32-1 bits");
  ExpectRefused(forged(kFirstChunkAt + 10, 0, 4), "empty stream");
}

// Chunks taken from separate images: each is well formed, together they are not.
TEST(SeriesImage, ChunksThatDoNotFitTogetherAreRefused) {
  auto one_chunk = [](std::int64_t t0, int n) {
    std::vector<Point> points;
    for (int i = 0; i < n; ++i) points.push_back({t0 + 1000LL * i, 1.0 * i});
    const std::string body = Unseal(Build(points, 100'000).Serialize());
    return body.substr(kFirstChunkAt);
  };
  auto image = [](std::uint64_t max, const std::vector<std::string>& chunks) {
    std::string b = "GPSR";
    b.push_back(1);
    b.append(12, '\0');
    PutLe(b, kMaxPointsAt, max, 8);
    PutLe(b, kChunkCountAt, chunks.size(), 4);
    for (const std::string& c : chunks) b += c;
    return Seal(b);
  };
  // The assembly itself is right: the same pieces in a fitting order parse.
  Result<Series> fine =
      Series::Parse(image(100'000, {one_chunk(0, kChunk), one_chunk(2'000'000, 10)}));
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_EQ(fine->size(), kChunk + 10);
  ExpectWellFormed(*fine);

  ExpectRefused(image(100'000, {one_chunk(0, 10), one_chunk(2'000'000, 10)}),
                "a chunk before the last not full");
  ExpectRefused(image(100'000, {one_chunk(2'000'000, kChunk), one_chunk(0, 10)}),
                "chunks out of time order");
  ExpectRefused(image(100'000, {one_chunk(0, kChunk), one_chunk(1'023'000, 10)}),
                "chunks sharing a timestamp");
}

TEST(SeriesImage, FlippedBytesAreRefusedOrGiveAWellFormedSeries) {
  const std::string image = Sample().Serialize();
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = image;
    for (int k = 0; k <= trial % 3; ++k)
      bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    Result<Series> r = Series::Parse(bad);
    if (r.ok()) ExpectWellFormed(*r);
  }
}

// Past the checksum: flips with a correct CRC reach the chunk streams. Whatever Parse accepts must
// be a series Query, Latest and Serialize can trust.
TEST(SeriesImage, FlippedBytesUnderAValidChecksumAreRefusedOrGiveAWellFormedSeries) {
  const std::string body = Unseal(Sample().Serialize());
  std::mt19937_64 rng(13);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = body;
    for (int k = 0; k <= trial % 3; ++k) {
      const std::size_t at = rng() % bad.size();
      if (trial % 2) {
        bad[at] ^= static_cast<char>(1u << (rng() % 8));  // one bit
      } else {
        bad[at] = static_cast<char>(rng());
      }
    }
    Result<Series> r = Series::Parse(Seal(bad));
    if (!r.ok()) continue;
    ++accepted;
    ExpectWellFormed(*r);
    Result<Series> again = Series::Parse(r->Serialize());
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_TRUE(SamePoints(All(*again), All(*r)));
  }
  // Many flips land in values and still decode: the checks must not refuse what is well formed.
  EXPECT_GT(accepted, 0);
  RecordProperty("accepted", accepted);
}

}  // namespace
}  // namespace gpulse::agent
