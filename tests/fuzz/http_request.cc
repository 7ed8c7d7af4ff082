// The exporter server's request reading (src/net/server_session.cc): Boost.Beast's request_parser
// with the server's limits (ServerOptions: 8 KiB of header, 4 KiB of body) over bytes that arrive
// in fuzzer-chosen read sizes, requests pipelined on one keep-alive connection, and what the server
// then reads from each request: method, target and path, keep-alive, Accept-Encoding (AcceptsGzip)
// and the Authorization header (ParseBasicAuthorization; never bcrypt). A request over a limit must
// fail with that limit's error (the server answers 431 or 413), and an accepted body is within its
// limit. Memory: the read buffer has the server's maximum (ReadBufferLimit), so a line longer than it
// (a chunk-size line with a huge extension) fails with buffer_overflow (400 or 431), and the buffer
// never grows past the maximum whatever arrives.
//
// Input: byte 0 is the read size (0: everything at once), the rest is what the client sends. The
// read size is at least 1/256 of the input: Beast re-scans an unfinished line at each read, so a
// 64 KiB input read a byte at a time costs quadratic time in the fuzzer (about 600 exec/s) while
// the server itself never holds more than ReadBufferLimit; small inputs still get 1-byte reads.
#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <string>

#include "fuzz/fuzz_util.h"
#include "fuzz/http_stream.h"
#include "net/basic_auth.h"
#include "net/http_util.h"
#include "net/server.h"

using namespace gpulse;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const net::ServerOptions opt;
  const std::size_t read_size = data[0] ? std::max<std::size_t>(data[0], size / 256) : 0;
  fuzz::ByteStream stream(fuzz::Text(data + 1, size - 1), read_size);
  beast::flat_buffer buffer;
  const std::size_t limit = net::ReadBufferLimit(opt);
  buffer.max_size(limit);
  for (int n = 0; n < 64; ++n) {  // a keep-alive connection: one request after another
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(opt.max_header_bytes));
    parser.body_limit(opt.max_body_bytes);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    FUZZ_CHECK(buffer.capacity() <= limit);
    if (ec == http::error::header_limit || ec == http::error::body_limit ||
        ec == http::error::buffer_overflow)
      break;        // 431, 413, 400: closed
    if (ec) break;  // end of stream or a malformed request: closed
    FUZZ_CHECK(parser.is_done());
    const auto& req = parser.get();
    FUZZ_CHECK(req.body().size() <= opt.max_body_bytes);
    bool keep_alive = req.keep_alive();
    bool head = req.method() == http::verb::head;
    (void)head;
    if (auto creds = net::ParseBasicAuthorization(View(req[http::field::authorization]))) {
      FUZZ_CHECK(creds->user.find(':') == std::string::npos);
    }
    net::HttpRequest hr;
    hr.method = std::string(req.method_string());
    hr.target = std::string(req.target());
    hr.path = hr.target.substr(0, hr.target.find('?'));
    hr.accepts_gzip = net::AcceptsGzip(View(req[http::field::accept_encoding]));
    FUZZ_CHECK(!hr.method.empty());
    if (!keep_alive) break;
  }
  return 0;
}
