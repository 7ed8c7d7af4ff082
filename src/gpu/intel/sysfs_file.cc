#include "gpu/intel/sysfs_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <utility>

namespace gpulse::gpu::intel {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Parses the first token of `text` as an integer; false when it is not one.
template <typename T>
bool ParseFirstInteger(std::string_view text, T& out) {
  text = TrimSpace(text);
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
    base = 16;
  }
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out, base);
  if (ec != std::errc() || ptr == text.data()) return false;
  return ptr == end || *ptr == ' ' || *ptr == '\t' || *ptr == '\n';
}

int OpenReadOnly(const std::string& path) {
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

}  // namespace

SysfsFile::SysfsFile(std::string path) : path_(std::move(path)) {
  fd_ = OpenReadOnly(path_);
  present_ = fd_ >= 0;
}

SysfsFile::SysfsFile(SysfsFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), present_(other.present_) {}

SysfsFile& SysfsFile::operator=(SysfsFile&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    present_ = other.present_;
  }
  return *this;
}

SysfsFile::~SysfsFile() { Close(); }

void SysfsFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

long SysfsFile::ReadText(char* buf, std::size_t size) {
  if (fd_ < 0) {
    fd_ = OpenReadOnly(path_);
    if (fd_ < 0) return -1;
  }
  ssize_t n;
  do {
    n = ::pread(fd_, buf, size - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    Close();  // reopened on the next read (a driver rebind replaces the attribute)
    return -1;
  }
  buf[n] = '\0';
  return n;
}

SysfsFile::ReadStatus SysfsFile::ReadInt(std::int64_t& out) {
  if (!present_) return ReadStatus::kMissing;
  char buf[64];
  long n = ReadText(buf, sizeof buf);
  if (n < 0) return ReadStatus::kFailed;
  if (!ParseFirstInteger(std::string_view(buf, static_cast<std::size_t>(n)), out)) {
    return ReadStatus::kFailed;
  }
  return ReadStatus::kOk;
}

SysfsFile::ReadStatus SysfsFile::ReadUint(std::uint64_t& out) {
  if (!present_) return ReadStatus::kMissing;
  char buf[64];
  long n = ReadText(buf, sizeof buf);
  if (n < 0) return ReadStatus::kFailed;
  if (!ParseFirstInteger(std::string_view(buf, static_cast<std::size_t>(n)), out)) {
    return ReadStatus::kFailed;
  }
  return ReadStatus::kOk;
}

}  // namespace gpulse::gpu::intel
