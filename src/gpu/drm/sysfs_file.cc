// SysfsFile: open once, pread at offset 0 per tick (see sysfs_file.h).
#include "gpu/drm/sysfs_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <utility>

namespace gpulse::gpu::drm {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

template <typename T>
std::optional<T> ParseInteger(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
    base = 16;
  }
  T v{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v, base);
  if (ec != std::errc() || text.empty() || p != end) return std::nullopt;
  return v;
}

template <typename T>
ReadOutcome ReadInteger(SysfsFile& file, T& value) {
  std::array<char, 64> buf;
  std::size_t n = 0;
  const ReadOutcome r = file.Read(buf, n);
  if (r != ReadOutcome::kOk) return r;
  auto v = ParseInteger<T>(std::string_view(buf.data(), n));
  if (!v) return ReadOutcome::kFailed;
  value = *v;
  return ReadOutcome::kOk;
}

}  // namespace

SysfsFile::SysfsFile(SysfsFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      missing_(other.missing_),
      opened_(other.opened_) {}

SysfsFile& SysfsFile::operator=(SysfsFile&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    missing_ = other.missing_;
    opened_ = other.opened_;
  }
  return *this;
}

SysfsFile::~SysfsFile() { Close(); }

void SysfsFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SysfsFile::EnsureOpen() {
  if (fd_ >= 0) return true;
  if (missing_) return false;
  if (path_.empty()) {
    missing_ = true;
    return false;
  }
  // O_NONBLOCK: a FIFO planted in a fixture tree must not block the tick.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ >= 0) {
    opened_ = true;
    return true;
  }
  const int err = errno;
  // A missing attribute, or one this user may not read, is not going to appear: unsupported. Once
  // the file has been read, its absence is a reset or rebind in progress: transient.
  if (!opened_ && (err == ENOENT || err == ENOTDIR || err == EACCES || err == EPERM)) {
    missing_ = true;
  }
  return false;
}

bool SysfsFile::Exists() { return EnsureOpen() || !missing_; }

ReadOutcome SysfsFile::Read(std::span<char> buf, std::size_t& length) {
  length = 0;
  if (!EnsureOpen()) return missing_ ? ReadOutcome::kMissing : ReadOutcome::kFailed;
  ssize_t n;
  do {
    n = ::pread(fd_, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    Close();  // reopened on the next read: a reset may have replaced the attribute
    return ReadOutcome::kFailed;
  }
  length = static_cast<std::size_t>(n);
  return ReadOutcome::kOk;
}

ReadOutcome SysfsFile::ReadInt(std::int64_t& value) { return ReadInteger(*this, value); }
ReadOutcome SysfsFile::ReadUint(std::uint64_t& value) { return ReadInteger(*this, value); }

std::optional<std::int64_t> ParseInt(std::string_view text) {
  return ParseInteger<std::int64_t>(text);
}
std::optional<std::uint64_t> ParseUint(std::string_view text) {
  return ParseInteger<std::uint64_t>(text);
}

}  // namespace gpulse::gpu::drm
