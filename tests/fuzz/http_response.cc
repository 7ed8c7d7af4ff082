// The collector's HTTP client reading a response (src/net/http_client.cc, HttpTarget::Impl::Read
// and ReadBody): Boost.Beast's response_parser with the client's limits (64 KiB of header; a body
// limit, checked on the declared Content-Length first and on the received body after), responses
// read one after another on a keep-alive connection, each 2xx body handed to the scrape parser as
// the collector does (ParsePowerScrape). The body limit here is 4 KiB instead of the client's
// 16 MiB default so that fuzz-sized inputs reach it; the code path is the same.
//
// Input: byte 0 is the read size (0: everything at once), the rest is what the exporter sends.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_util.h"
#include "fuzz/http_stream.h"
#include "power/collector/scrape_parse.h"

using namespace gpulse;
namespace beast = boost::beast;
namespace http = beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  constexpr std::size_t kMaxBody = 4096;
  fuzz::ByteStream stream(fuzz::Text(data + 1, size - 1), data[0]);
  beast::flat_buffer buf;
  for (int n = 0; n < 64; ++n) {
    std::optional<http::response_parser<http::string_body>> parser;
    parser.emplace();
    parser->body_limit(kMaxBody);
    parser->header_limit(64 * 1024);
    beast::error_code ec;
    http::read_header(stream, buf, *parser, ec);
    if (ec) break;  // ResponseTooLarge or ConnectionError: the connection is closed
    auto length = parser->content_length();
    if (length && *length > kMaxBody) break;  // ResponseTooLarge before any body is read
    http::read(stream, buf, *parser, ec);
    if (ec) break;
    auto res = parser->release();
    if (res.body().size() > kMaxBody) break;  // ResponseTooLarge
    int status = static_cast<int>(res.result_int());
    bool keep_alive = res.keep_alive();
    if (status >= 200 && status <= 299)
      (void)power::ParsePowerScrape(res.body());
    else
      keep_alive = false;  // HTTPError closes the connection
    if (!keep_alive) break;
  }
  return 0;
}
