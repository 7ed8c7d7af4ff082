// Where samples.csv bytes come from (a file read with pread, or memory), cut into lines, and
// hashed. The line reader keeps fixed read buffers and holds at most one line of bounded length
// besides, so memory does not grow with the file. Thread-safe: a source may be shared by threads
// (pread has no cursor); each reading function keeps its own buffers.
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

// Longest read issued at once: small enough that the bytes just read are still in the core's L2
// cache when the digest and the parser walk them. (Mapping the file instead saves the kernel's copy
// but costs as much in page faults here: docs/adr/0008-power-validation-throughput.md.)
inline constexpr size_t kReadStepBytes = 256 * 1024;

// Where ForEachBlock feeds the digest: on the calling thread, or on a thread of its own that is
// handed each chunk the caller reads (so both work on one copy of the bytes, in parallel).
enum class DigestOn { kThisThread, kOwnThread };

// Calls on_block(bytes) with the bytes of [begin, end) cut into runs of whole lines: every run ends
// with '\n', except that the range's final line may lack it. A line of max(max_line_bytes, 64)
// bytes or more (terminator excluded) is skipped and reported once through on_overlong(), in line
// order. Reads kReadStepBytes at a time into one buffer (16 with DigestOn::kOwnThread); only a
// line that crosses two reads is copied again, so memory is bounded by max_line_bytes. Stops with
// the read error, if any; a file that shrinks meanwhile ends early. When `digest` is set, every
// byte read is fed to it: on this thread just before its lines are parsed (while in cache), or on
// its own thread.
Status ForEachBlock(const ByteSource& src, uint64_t begin, uint64_t end, size_t max_line_bytes,
                    const std::function<void(std::string_view)>& on_block,
                    const std::function<void()>& on_overlong, Sha256* digest = nullptr,
                    DigestOn where = DigestOn::kThisThread);

// ForEachBlock cut into single lines: on_line(line, line_number) without the '\n', and
// on_overlong(line_number) for skipped lines; line_number counts from 1 within the range.
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

Result<std::string> Sha256OfSource(const ByteSource& src);

}  // namespace gpulse::power
