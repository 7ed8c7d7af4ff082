#include "net/http_util.h"

#include <zlib.h>

#include <cctype>
#include <charconv>

#include "net/http_types.h"

namespace gpulse::net {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Whether the parameters after a coding (";q=0.5") give it a weight of zero.
bool QualityIsZero(std::string_view params) {
  while (!params.empty()) {
    std::size_t semi = params.find(';');
    std::string_view p = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (p.size() < 2 || std::tolower(static_cast<unsigned char>(p[0])) != 'q' || p[1] != '=')
      continue;
    std::string_view q = Trim(p.substr(2));
    bool zero = !q.empty();
    for (char c : q) {
      if (c != '0' && c != '.') zero = false;
    }
    return zero;
  }
  return false;
}

}  // namespace

HttpResponse TextResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!r.body.empty() && r.body.back() != '\n') r.body += '\n';
  return r;
}

bool AcceptsGzip(std::string_view header) {
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::size_t semi = item.find(';');
    std::string_view coding = Trim(item.substr(0, semi));
    std::string_view params =
        semi == std::string_view::npos ? std::string_view() : item.substr(semi + 1);
    if ((EqualsNoCase(coding, "gzip") || coding == "*") && !QualityIsZero(params)) return true;
  }
  return false;
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  std::string_view t = Trim(text);
  std::size_t colon = t.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("address \"" + std::string(text) + "\": expected HOST:PORT or :PORT");
  }
  std::string_view host = t.substr(0, colon);
  std::string_view port = t.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']'))
      return InvalidArgument("address \"" + std::string(text) + "\": unclosed '['");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return InvalidArgument("address \"" + std::string(text) +
                           "\": write IPv6 hosts in brackets, e.g. [::1]:9400");
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return InvalidArgument("address \"" + std::string(text) + "\": port must be a number 0-65535");
  }
  return ListenAddress{std::string(host), static_cast<std::uint16_t>(value)};
}

std::optional<std::string> Base64Decode(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      bool last_group = i + 4 == text.size();
      if (c == '=' && last_group && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = digit(c);
      if (v[k] < 0) return std::nullopt;
    }
    unsigned n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

Result<std::string> Gzip(std::string_view body, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper instead of zlib's.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Error{ErrorCode::kInternal, "gzip: deflateInit2 failed"};
  }
  std::string out;
  out.resize(deflateBound(&z, body.size()) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  std::size_t produced = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Error{ErrorCode::kInternal, "gzip: deflate did not finish"};
  out.resize(produced);
  return out;
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;  // needs two hex digits after it
      int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += kTable[v >> 18];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < in.size() ? kTable[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kTable[v & 63] : '=';
  }
  return out;
}

}  // namespace gpulse::net
