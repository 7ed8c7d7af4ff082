// A gzip body joined from pieces compressed at different times: a piece kept from an earlier
// answer (the unchanged part of a /metrics page) is not compressed again. Each piece is a raw
// deflate stream of its own (no reference to bytes before it) ended by a sync flush, so that it
// ends on a byte boundary with a non-final block; GzipJoin writes the gzip header, the pieces in
// order, one empty final block and the trailer (the pieces' CRC-32s combined, the total length).
// Any gzip reader inflates the result as one member (RFC 1951 §3.2.3, RFC 1952).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpulse::net {

struct DeflatedPiece {
  std::string bytes;       // raw deflate, sync-flushed
  std::uint32_t crc = 0;   // CRC-32 of the uncompressed bytes
  std::uint64_t size = 0;  // uncompressed length
};

// `data` deflated at `level` (1 fastest .. 9 smallest). A small piece gets a small window, which
// costs less to set up and inflates the same.
Result<DeflatedPiece> DeflatePiece(std::string_view data, int level);

// Appends one gzip member holding the pieces' bytes in order.
void GzipJoin(std::span<const DeflatedPiece* const> pieces, std::string& out);

}  // namespace gpulse::net
