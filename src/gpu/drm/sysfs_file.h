// One sysfs (or hwmon) attribute kept open and re-read with pread at offset 0 each tick: sysfs
// regenerates an attribute's text on every read from offset 0 (Documentation/filesystems/sysfs.rst,
// and the one-value-per-file rule of the sysfs ABI, Documentation/ABI/), so a tick costs one
// syscall per file and no allocation. Shared by the amdgpu and Intel (i915, xe) backends.
//
// The file is opened on first use. When that first open finds no file (or one the caller may not
// open), the attribute is missing for good: the reading is unsupported and never retried. Any
// other failure is transient (kFailed): a read error (EIO, or EPERM while the GPU resets) closes
// the descriptor, and the next read opens the file again, because a reset or a driver rebind may
// have replaced the attribute. An attribute that was once opened is never declared missing later.
//
// Not thread-safe: one owner thread. Movable, not copyable (it owns the descriptor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpulse::gpu::drm {

enum class ReadOutcome { kOk, kMissing, kFailed };

class SysfsFile {
 public:
  // A missing file (no attribute to read).
  SysfsFile() = default;
  explicit SysfsFile(std::string path) : path_(std::move(path)) {}
  SysfsFile(SysfsFile&& other) noexcept;
  SysfsFile& operator=(SysfsFile&& other) noexcept;
  SysfsFile(const SysfsFile&) = delete;
  SysfsFile& operator=(const SysfsFile&) = delete;
  ~SysfsFile();

  const std::string& path() const { return path_; }
  // True once the first open found the file missing (or an empty path was given).
  bool missing() const { return missing_; }
  // Whether the file exists, without reading it (opens it when not yet open).
  bool Exists();

  // Reads the whole attribute (at most buf.size() bytes) into buf; `length` gets the byte count.
  ReadOutcome Read(std::span<char> buf, std::size_t& length);
  // Reads the attribute as one integer (ParseInt, ParseUint); kFailed when the text is not one.
  ReadOutcome ReadInt(std::int64_t& value);
  ReadOutcome ReadUint(std::uint64_t& value);

 private:
  bool EnsureOpen();  // false when missing or the open failed transiently
  void Close();

  std::string path_;
  int fd_ = -1;
  bool missing_ = false;
  bool opened_ = false;  // an open has succeeded once: later open failures are transient
};

// The integer that is the whole of `text` but for surrounding whitespace: decimal, or hex with a
// "0x" prefix. nullopt for anything else (empty text, trailing words, out of range).
std::optional<std::int64_t> ParseInt(std::string_view text);
std::optional<std::uint64_t> ParseUint(std::string_view text);

}  // namespace gpulse::gpu::drm
