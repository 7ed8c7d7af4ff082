// Strict number scanning for samples.csv fields, fast for the forms writers produce.
//
// A collector writes integers as plain digits and floats with Python's repr() ("1700000000.000123",
// "412.25"). Those forms are scanned inline here; every other form (a sign, an exponent, "inf",
// "nan", a bare '.', very long digit strings) is left to std::from_chars by the callers, so the set
// of accepted fields and every parsed value are exactly those of std::from_chars over the whole
// field.
//
// Values: a decimal with at most 19 digits whose digit string m fits 2^53 and whose fraction has at
// most 22 digits is m / 10^k, computed with one IEEE division of two exactly representable doubles,
// which is correctly rounded (Clinger's fast path) and so equals from_chars. Larger ones go to
// from_chars over the scanned span.
// Thread-safe: pure functions.
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace gpulse::power {

inline bool IsAsciiDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// Scans [0-9]{1,18} at p (p <= end). Returns the first byte after the digits, or nullptr when there
// is no digit or there are more than 18 (the caller falls back to from_chars).
inline const char* ScanUnsigned(const char* p, const char* end, int64_t& out) {
  const char* start = p;
  uint64_t v = 0;
  while (p < end && IsAsciiDigit(*p)) v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  if (p == start || p - start > 18) return nullptr;
  out = static_cast<int64_t>(v);
  return p;
}

namespace fast_number_internal {

inline constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
inline constexpr uint64_t kPow10Int[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

inline uint64_t Load8(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

// The eight bytes of x are characters, the first in the lowest byte (little-endian load). Returns
// how many of them, from the first, are ASCII digits (0..8). A byte is a digit iff b ^ '0' <= 9;
// adding 0x76 to the low seven bits of that sets bit 7 exactly when it is >= 10, without carries
// between bytes, and a byte >= 0x80 is caught by its own bit 7.
inline unsigned LeadingDigits8(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  uint64_t y = x ^ (kOnes * '0');
  uint64_t non_digit = (((y & (kOnes * 0x7F)) + kOnes * 0x76) | y) & (kOnes * 0x80);
  return non_digit == 0 ? 8 : static_cast<unsigned>(__builtin_ctzll(non_digit)) / 8;
}

// The value of the first k (1..8) digit characters of x. The digits are shifted to the top bytes
// (the others become leading zeros), then combined pairwise: 1-digit lanes into 2-digit, then
// 2-digit lanes into the 8-digit value with two multiplications.
inline uint64_t DigitsValue8(uint64_t x, unsigned k) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  uint64_t d = (x - kOnes * '0') << (8 * (8 - k));
  d = d * 10 + (d >> 8);
  constexpr uint64_t kLanes = 0x000000FF000000FFull;
  return (((d & kLanes) * (100 + (1000000ull << 32))) +
          (((d >> 16) & kLanes) * (1 + (10000ull << 32)))) >>
         32;
}

}  // namespace fast_number_internal

// Scans [0-9]+ ('.' [0-9]+)? at p (p <= end). Returns the first byte after the number (whatever it
// is: the caller checks its delimiter), or nullptr when the text does not start with that form or
// from_chars rejects the span (out of range).
inline const char* ScanDecimal(const char* p, const char* end, double& out) {
  using namespace fast_number_internal;
  if constexpr (std::endian::native == std::endian::little) {
    // Up to 7 integer and 7 fraction digits ("412.25"), eight bytes at a time.
    if (end - p >= 17) {
      uint64_t x = Load8(p);
      unsigned k = LeadingDigits8(x);
      if (k == 0) return nullptr;
      if (k < 8) {
        uint64_t ip = DigitsValue8(x, k);
        if (p[k] != '.') {
          out = static_cast<double>(ip);
          return p + k;
        }
        uint64_t y = Load8(p + k + 1);
        unsigned f = LeadingDigits8(y);
        if (f > 0 && f < 8) {
          out = static_cast<double>(ip * kPow10Int[f] + DigitsValue8(y, f)) / kPow10[f];
          return p + k + 1 + f;
        }
      }
    }
  }
  const char* start = p;
  uint64_t m = 0;  // wraps past 19 digits; only used when there are at most 19
  while (p < end && IsAsciiDigit(*p)) m = m * 10 + static_cast<uint64_t>(*p++ - '0');
  if (p == start) return nullptr;
  ptrdiff_t frac = 0;
  if (p < end && *p == '.') {
    const char* f = ++p;
    while (p < end && IsAsciiDigit(*p)) m = m * 10 + static_cast<uint64_t>(*p++ - '0');
    frac = p - f;
    if (frac == 0) return nullptr;  // "1." : from_chars decides
  }
  ptrdiff_t digits = p - start - (frac > 0 ? 1 : 0);
  if (digits <= 19 && m <= (uint64_t{1} << 53) && frac <= 22) {
    out = static_cast<double>(m) / kPow10[frac];
    return p;
  }
  auto [stop, ec] = std::from_chars(start, p, out);
  return ec == std::errc() && stop == p ? p : nullptr;
}

// Whole-field parsers: the field must be exactly one number. Fast for the forms above (with an
// optional '-' for floats), std::from_chars for everything else.
inline bool ParseIntField(std::string_view s, int64_t& out) {
  const char* end = s.data() + s.size();
  if (!s.empty() && ScanUnsigned(s.data(), end, out) == end) return true;
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

inline bool ParseFloatField(std::string_view s, double& out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  bool neg = s[0] == '-';
  if (ScanDecimal(s.data() + (neg ? 1 : 0), end, out) == end) {
    if (neg) out = -out;
    return true;
  }
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// Byte equality for short strings (the fast path compares ~20-100 bytes per row): 16 bytes per
// step, inlined, instead of a library call.
inline bool EqualShort(const char* a, const char* b, size_t n) {
  using fast_number_internal::Load8;
  auto eq16 = [](const char* x, const char* y) {
    return ((Load8(x) ^ Load8(y)) | (Load8(x + 8) ^ Load8(y + 8))) == 0;
  };
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16)
      if (!eq16(a + i, b + i)) return false;
    return eq16(a + n - 16, b + n - 16);  // the last 16 bytes, overlapping the loop's last step
  }
  if (n >= 8) return ((Load8(a) ^ Load8(b)) | (Load8(a + n - 8) ^ Load8(b + n - 8))) == 0;
  return std::memcmp(a, b, n) == 0;
}

}  // namespace gpulse::power
