// Small pure helpers of the HTTP layer: header value parsing, addresses, base64, gzip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpulse::net {

// Whether an Accept-Encoding header value admits gzip (a `gzip` or `*` coding whose q is not 0).
bool AcceptsGzip(std::string_view accept_encoding);

// A listen address as dcgm-exporter and the Prometheus exporters take it: ":9400" (all interfaces),
// "127.0.0.1:9400", "[::1]:9400", "[::]:9400", "localhost:9400". Port 0 asks for a free port.
struct ListenAddress {
  std::string host;  // "" = all interfaces
  std::uint16_t port = 0;
};
Result<ListenAddress> ParseListenAddress(std::string_view text);

// Standard base64 (RFC 4648, padding required); nullopt on any invalid character or length.
std::optional<std::string> Base64Decode(std::string_view text);

// Decodes %XX escapes, and '+' as a space when `plus_is_space` (query strings; a path keeps its
// '+'); nullopt on a malformed escape or a decoded NUL.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space = true);

// Escapes every byte but letters, digits and "-_.~" as %XX (RFC 3986 unreserved): safe in a path
// segment and a query value. PercentDecode(PercentEncode(x), false) == x.
std::string PercentEncode(std::string_view text);

// Standard base64 with padding (RFC 4648), the inverse of Base64Decode.
std::string Base64Encode(std::string_view bytes);

// The compression level of gzip answers: the fastest (a scrape pays it).
inline constexpr int kDefaultGzipLevel = 1;

// The body gzip-compressed (RFC 1952) at `level` (1 fastest .. 9 smallest).
Result<std::string> Gzip(std::string_view body, int level);

// "Not Found" for 404 etc.
std::string_view StatusReason(int status);

}  // namespace gpulse::net
