// One sysfs attribute kept open and re-read with pread at offset 0 each tick (sysfs regenerates an
// attribute's text on every read from offset 0), so a tick costs one syscall per file and no
// allocation. The file is opened on first use. A file that does not exist (or that the caller
// may not open) is missing for good; a read that fails (EIO, or EPERM while the GPU resets) is a
// transient failure, after which the descriptor is closed and the next read opens it again.
//
// Not thread-safe: one owner thread. Movable, not copyable (it owns the descriptor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpulse::gpu::amdgpu {

enum class ReadOutcome { kOk, kMissing, kFailed };

class SysfsFile {
 public:
  SysfsFile() = default;
  explicit SysfsFile(std::string path) : path_(std::move(path)) {}
  SysfsFile(SysfsFile&& other) noexcept;
  SysfsFile& operator=(SysfsFile&& other) noexcept;
  SysfsFile(const SysfsFile&) = delete;
  SysfsFile& operator=(const SysfsFile&) = delete;
  ~SysfsFile();

  const std::string& path() const { return path_; }
  // True once an open found the file missing (or an empty path was given): it is never retried.
  bool missing() const { return missing_; }
  // Whether the file exists, without reading it (opens it when not yet open).
  bool Exists();

  // Reads the whole attribute (at most buf.size() bytes) into buf; `length` gets the byte count.
  ReadOutcome Read(std::span<char> buf, std::size_t& length);
  // Reads a decimal integer (surrounding whitespace allowed); kFailed when the text is not one.
  ReadOutcome ReadInt(std::int64_t& value);

 private:
  bool EnsureOpen();  // false when missing or the open failed transiently
  void Close();

  std::string path_;
  int fd_ = -1;
  bool missing_ = false;
};

// The decimal integer at the start of `text` after leading whitespace, when the rest is
// whitespace.
std::optional<std::int64_t> ParseInt(std::string_view text);

}  // namespace gpulse::gpu::amdgpu
