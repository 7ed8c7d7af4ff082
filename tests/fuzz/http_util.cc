// The pure helpers of the HTTP layer (src/net/http_util.h), each over hostile text, with the
// property each must keep:
//   '0' AcceptsGzip(text): no crash;
//   '1' Base64Decode(text): a decoded text has the length its padding says;
//   '2' Base64Decode(encode(bytes)) == bytes (encoded here, RFC 4648);
//   '3' ParseListenAddress(text): an accepted address written back ("[host]:port", ":port")
//       parses to the same host and port;
//   '4' Gzip(bytes) inflates back to bytes (zlib);
//   '5' StatusReason(a status from the bytes);
//   '6' the text cut into pieces (net/gzip_pieces.h: the first byte's low four bits cuts, each
//       at an offset from the next bytes), each deflated on its own and joined, inflates back.
// Input: byte 0 picks the helper (its low three bits: seeds use the digits above), the rest is the
// text.
#include "net/http_util.h"

#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "net/gzip_pieces.h"

using namespace gpulse;

namespace {

std::string Inflate(const std::string& gz) {
  z_stream z{};
  FUZZ_CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out;
  char buf[4096];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  FUZZ_CHECK(rc == Z_STREAM_END);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::Text(data + 1, size - 1);
  switch (data[0] & 7) {
    case 0:
      (void)net::AcceptsGzip(text);
      break;
    case 1:
      if (auto d = net::Base64Decode(text)) {
        std::size_t pad = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
        FUZZ_CHECK(d->size() == text.size() / 4 * 3 - pad);
      }
      break;
    case 2: {
      auto d = net::Base64Decode(fuzz::Base64Encode(text));
      FUZZ_CHECK(d && *d == text);
      break;
    }
    case 3:
      if (auto a = net::ParseListenAddress(text); a.ok()) {
        std::string back =
            (a->host.empty() ? "" : "[" + a->host + "]") + ":" + std::to_string(a->port);
        auto again = net::ParseListenAddress(back);
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(again->host == a->host && again->port == a->port);
      }
      break;
    case 4: {
      int level = 1 + static_cast<int>(text.size() % 9);
      auto z = net::Gzip(text, level);
      FUZZ_CHECK(z.ok());
      FUZZ_CHECK(Inflate(*z) == text);
      break;
    }
    case 5: {
      int status = 0;
      std::memcpy(&status, text.data(), std::min(text.size(), sizeof status));
      (void)net::StatusReason(status);
      break;
    }
    case 6: {
      if (text.empty()) break;
      const std::size_t cuts = static_cast<unsigned char>(text[0]) & 15;
      std::vector<net::DeflatedPiece> pieces;
      std::size_t at = 0;
      for (std::size_t i = 0; i <= cuts; ++i) {
        const std::size_t left = text.size() - at;
        std::size_t n = left;
        if (i < cuts && i + 1 < text.size())
          n = static_cast<unsigned char>(text[i + 1]) * 97 % (left + 1);
        auto p = net::DeflatePiece(text.substr(at, n), 1 + static_cast<int>(i % 9));
        FUZZ_CHECK(p.ok());
        pieces.push_back(std::move(p).value());
        at += n;
      }
      std::vector<const net::DeflatedPiece*> ptrs;
      for (const auto& p : pieces) ptrs.push_back(&p);
      std::string gz;
      net::GzipJoin(ptrs, gz);
      FUZZ_CHECK(Inflate(gz) == text);
      break;
    }
    default:
      break;
  }
  return 0;
}
