// One sysfs (or hwmon) attribute kept open for the life of a backend and re-read each tick with
// pread at offset 0: sysfs regenerates an attribute's text on every read from offset 0, so one
// descriptor serves every tick without reopening (Documentation/filesystems/sysfs.rst). The value
// is the first integer of the text, parsed with std::from_chars; no allocation per read.
//
// A file that does not exist (or that we may not open) when the backend opens is missing for good:
// the reading is unsupported, never retried. A read or parse error is transient: the descriptor is
// closed and reopened on the next read.
//
// Thread-safety: one thread at a time (the owning backend's).
#pragma once

#include <cstdint>
#include <string>

namespace gpulse::gpu::intel {

class SysfsFile {
 public:
  enum class ReadStatus { kOk, kMissing, kFailed };

  SysfsFile() = default;
  // Opens `path` now; missing when that fails (no such file, no permission).
  explicit SysfsFile(std::string path);
  SysfsFile(SysfsFile&& other) noexcept;
  SysfsFile& operator=(SysfsFile&& other) noexcept;
  SysfsFile(const SysfsFile&) = delete;
  SysfsFile& operator=(const SysfsFile&) = delete;
  ~SysfsFile();

  bool present() const { return present_; }
  const std::string& path() const { return path_; }

  // The file's first (optionally signed) decimal integer; "0x"-prefixed text is read as hex.
  ReadStatus ReadInt(std::int64_t& out);
  ReadStatus ReadUint(std::uint64_t& out);

 private:
  // The file's text into buf (NUL-terminated, at most size-1 bytes); -1 on error.
  long ReadText(char* buf, std::size_t size);
  void Close();

  std::string path_;
  int fd_ = -1;
  bool present_ = false;
};

}  // namespace gpulse::gpu::intel
