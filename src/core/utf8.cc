#include "core/utf8.h"

#include <cstdint>
#include <cstring>

namespace gpulse {
namespace {

// The length of the well-formed sequence that `s` begins with, 0 when it begins none.
std::size_t SequenceLength(const unsigned char* s, std::size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  std::size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (len > n) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i + 8 <= n) {  // ASCII fast path, eight bytes at a time
    uint64_t word;
    std::memcpy(&word, s + i, 8);
    if (word & 0x8080808080808080ull) break;
    i += 8;
  }
  while (i < n) {
    std::size_t len = SequenceLength(s + i, n - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string ReplaceInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = SequenceLength(s + i, text.size() - i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace gpulse
