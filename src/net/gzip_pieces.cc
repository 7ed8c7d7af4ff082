#include "net/gzip_pieces.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace gpulse::net {
namespace {

// The smallest deflate window (9..15 bits) that sees the whole piece, and a hash table to match.
int WindowBits(std::size_t size) {
  const int bits = size <= 1 ? 1 : std::bit_width(size - 1);
  return std::clamp(bits, 9, 15);
}

void AppendLittleEndian32(std::uint32_t v, std::string& out) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

Result<DeflatedPiece> DeflatePiece(std::string_view data, int level) {
  if (data.empty()) return DeflatedPiece{};  // nothing to add to the stream
  if (data.size() > std::numeric_limits<uInt>::max()) {
    return Error{ErrorCode::kInvalidArgument, "gzip: a piece over 4 GiB"};
  }
  const int bits = WindowBits(data.size());
  z_stream z{};
  // Negative windowBits: raw deflate, no zlib or gzip wrapper of its own.
  if (deflateInit2(&z, level, Z_DEFLATED, -bits, std::max(1, bits - 7), Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Error{ErrorCode::kInternal, "gzip: deflateInit2 failed"};
  }
  DeflatedPiece piece;
  // deflateBound covers the stream's end; a sync flush adds at most an empty stored block.
  piece.bytes.resize(deflateBound(&z, data.size()) + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(piece.bytes.data());
  z.avail_out = static_cast<uInt>(piece.bytes.size());
  const int rc = deflate(&z, Z_SYNC_FLUSH);
  const bool whole = rc == Z_OK && z.avail_in == 0 && z.avail_out > 0;
  piece.bytes.resize(piece.bytes.size() - z.avail_out);
  deflateEnd(&z);
  if (!whole) return Error{ErrorCode::kInternal, "gzip: deflate did not take the whole piece"};
  piece.crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
  piece.size = data.size();
  return piece;
}

void GzipJoin(std::span<const DeflatedPiece* const> pieces, std::string& out) {
  // Magic, deflate, no flags, no time, no extra flags, OS unknown (RFC 1952 §2.3).
  static constexpr char kHeader[] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\xff'};
  std::size_t compressed = 0;
  for (const DeflatedPiece* p : pieces) compressed += p->bytes.size();
  out.reserve(out.size() + sizeof kHeader + compressed + 2 + 8);
  out.append(kHeader, sizeof kHeader);
  uLong crc = crc32(0, nullptr, 0);
  std::uint64_t size = 0;
  for (const DeflatedPiece* p : pieces) {
    out += p->bytes;
    crc = crc32_combine(crc, p->crc, static_cast<z_off_t>(p->size));
    size += p->size;
  }
  // The final block: BFINAL 1, fixed Huffman codes, end-of-block at once (10 bits).
  out += '\x03';
  out += '\x00';
  AppendLittleEndian32(static_cast<std::uint32_t>(crc), out);
  AppendLittleEndian32(static_cast<std::uint32_t>(size & 0xffffffffu), out);  // ISIZE: mod 2^32
}

}  // namespace gpulse::net
