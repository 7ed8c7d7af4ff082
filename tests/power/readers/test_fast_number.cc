// The inline number scanners of the samples.csv fast path must accept exactly what std::from_chars
// accepts over a whole field, with bit-identical values (power/fast_number.h).
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "power/readers/fast_number.h"

namespace gpulse::power {
namespace {

struct Reference {
  bool ok = false;
  double value = 0;
};

Reference FromCharsDouble(const std::string& s) {
  Reference r;
  if (s.empty()) return r;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), r.value);
  r.ok = ec == std::errc() && p == s.data() + s.size();
  return r;
}

void ExpectSameAsFromChars(const std::string& s) {
  Reference want = FromCharsDouble(s);
  double got = -12345.678;
  bool ok = ParseFloatField(s, got);
  ASSERT_EQ(ok, want.ok) << '"' << s << '"';
  if (ok) {
    uint64_t a, b;
    std::memcpy(&a, &got, 8);
    std::memcpy(&b, &want.value, 8);
    EXPECT_EQ(a, b) << '"' << s << "\" " << got << " vs " << want.value;
  }
}

TEST(FastNumber, WriterFormsParseExactly) {
  // clang-format off
  for (const char* s : {"0", "1", "0.0", "100.25", "412.5", "1700000000.000123",
                        "1700000000.0001234", "1764000000.1234567", "0.1", "0.30000000000000004",
                        "9007199254740993", "9007199254740992.5", "123456789012345678901234",
                        "-0.0", "-12.5", "00012.50", "1e3", "1.5e-7", "1E+2", "inf", "nan",
                        "infinity", "-inf", ".5", "5.", "1..2", "1.2.3", "+1", " 1", "1 ", "1,2",
                        "", "-", ".", "e5", "0x10", "1_000", "12a", "\xff"})
    ExpectSameAsFromChars(s);
  // clang-format on
}

// Every form the scanners special-case, with random digit strings around the limits (7/8 digits
// for the word-at-a-time path, 19 digits and 2^53 for the exact division, 22 fraction digits).
TEST(FastNumber, RandomDecimalsMatchFromChars) {
  std::mt19937_64 rng(42);
  auto digits = [&](int n) {
    std::string d;
    for (int i = 0; i < n; ++i) d.push_back(static_cast<char>('0' + rng() % 10));
    return d;
  };
  for (int i = 0; i < 200000; ++i) {
    int a = static_cast<int>(rng() % 21), b = static_cast<int>(rng() % 25);
    std::string s = digits(a);
    switch (rng() % 6) {
      case 0:
        break;
      case 1:
        s += "." + digits(b);
        break;
      case 2:
        s.insert(0, "-");
        s += "." + digits(b);
        break;
      case 3:
        s += "." + digits(b) + "e" + std::to_string(static_cast<int>(rng() % 40) - 20);
        break;
      case 4:
        s += "." + digits(b) + static_cast<char>(rng() % 256);
        break;
      default:
        s = digits(static_cast<int>(rng() % 9)) + "." + digits(static_cast<int>(rng() % 9));
    }
    ExpectSameAsFromChars(s);
    if (HasFatalFailure()) return;
  }
}

TEST(FastNumber, ShortestReprOfRandomDoublesRoundTrips) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> power(0, 2000), stamp(1.6e9, 1.9e9);
  for (int i = 0; i < 200000; ++i) {
    for (double v : {power(rng), stamp(rng), std::round(power(rng) * 100) / 100}) {
      char buf[64];
      auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
      ExpectSameAsFromChars(std::string(buf, p));
    }
    if (HasFatalFailure()) return;
  }
}

TEST(FastNumber, IntegersMatchFromChars) {
  for (std::string s : {"0", "7", "007", "-1", "-0", "+1", "", "1.0", "12a", "999999999999999999",
                        "9223372036854775807", "9223372036854775808", "99999999999999999999"}) {
    int64_t want = 0, got = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
    bool ok_want = !s.empty() && ec == std::errc() && p == s.data() + s.size();
    EXPECT_EQ(ParseIntField(s, got), ok_want) << s;
    if (ok_want) {
      EXPECT_EQ(got, want) << s;
    }
  }
}

TEST(FastNumber, LeadingDigitsOfEveryByteValue) {
  using fast_number_internal::LeadingDigits8;
  for (int c = 0; c < 256; ++c)
    for (int at = 0; at < 8; ++at) {
      char bytes[8];
      std::memset(bytes, '5', 8);
      bytes[at] = static_cast<char>(c);
      uint64_t x;
      std::memcpy(&x, bytes, 8);
      unsigned want = (c >= '0' && c <= '9') ? 8u : static_cast<unsigned>(at);
      ASSERT_EQ(LeadingDigits8(x), want) << "byte " << c << " at " << at;
    }
}

TEST(FastNumber, EqualShortAgreesWithMemcmp) {
  std::string a(130, 'x');
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>('a' + i % 26);
  for (size_t n = 0; n <= 128; ++n) {
    std::string b = a;
    EXPECT_TRUE(EqualShort(a.data(), b.data(), n)) << n;
    for (size_t at = 0; at < n; ++at) {
      b[at] ^= 1;
      ASSERT_FALSE(EqualShort(a.data(), b.data(), n)) << n << " differs at " << at;
      b[at] ^= 1;
    }
  }
}

}  // namespace
}  // namespace gpulse::power
