// Where samples.csv bytes come from (a file read with pread, or memory), cut into lines, and
// hashed. The line reader keeps one fixed buffer, so memory does not grow with the file or with a
// line. Thread-compatible: one LineReader per thread; a FileSource may be shared (pread has no
// cursor).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::power {

class Sha256;

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads up to n bytes at offset; 0 at the end. Errors carry the OS message.
  virtual Result<size_t> ReadAt(uint64_t offset, char* buf, size_t n) const = 0;
};

Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::filesystem::path& path);
std::unique_ptr<ByteSource> MemorySource(std::string_view bytes);

// Calls on_line(line, line_number) for every line in [begin, end) (terminator '\n' removed), and
// on_overlong(line_number) for a line longer than the buffer, which is skipped. line_number counts
// from 1 within the range. Stops with the read error, if any. When `digest` is set, every byte read
// is also fed to it, so one pass both parses and hashes.
Status ForEachLine(const ByteSource& src, uint64_t begin, uint64_t end, size_t buffer_bytes,
                   const std::function<void(std::string_view, int64_t)>& on_line,
                   const std::function<void(int64_t)>& on_overlong, Sha256* digest = nullptr);

// Offset just after the first '\n' at or after `offset` (or size()).
Result<uint64_t> NextLineStart(const ByteSource& src, uint64_t offset);

// Incremental SHA-256 (OpenSSL EVP).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view bytes);
  std::string HexDigest();  // lowercase, 64 characters; call once

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Result<std::string> Sha256OfSource(const ByteSource& src, size_t buffer_bytes);

}  // namespace gpulse::power
