#include "faults/kmsg.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace gpulse::faults {
namespace {

template <typename T>
bool Field(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string Errno(const std::string& path, int err) {
  std::string m = path + ": " + std::strerror(err);
  if (err == EPERM || err == EACCES) {
    m += " (reading the kernel log needs CAP_SYSLOG, or kernel.dmesg_restrict=0)";
  }
  return m;
}

}  // namespace

std::optional<KmsgRecord> ParseKmsgRecord(std::string_view line) {
  std::size_t semi = line.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view head = line.substr(0, semi);
  std::string_view f[4];
  for (int i = 0; i < 4; ++i) {
    std::size_t comma = head.find(',');
    if (comma == std::string_view::npos && i < 3) return std::nullopt;
    f[i] = head.substr(0, comma);
    head = comma == std::string_view::npos ? std::string_view{} : head.substr(comma + 1);
  }
  KmsgRecord r;
  constexpr std::int64_t kMaxUsec = std::int64_t{1} << 53;
  if (!Field(f[0], r.priority) || r.priority > 0xffff || !Field(f[1], r.seq) ||
      !Field(f[2], r.usec) || r.usec < 0 || r.usec > kMaxUsec) {
    return std::nullopt;
  }
  r.message = std::string(line.substr(semi + 1));
  return r;
}

Result<std::unique_ptr<KmsgSource>> KmsgSource::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Error{err == ENOENT                     ? ErrorCode::kNotFound
                 : (err == EPERM || err == EACCES) ? ErrorCode::kNoPermission
                                                   : ErrorCode::kIo,
                 Errno(path, err)};
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))) {
    ::close(fd);
    return Error{ErrorCode::kInvalidArgument,
                 path + ": neither the kernel log device nor a regular file of its records"};
  }
  std::unique_ptr<KmsgSource> src(new KmsgSource(path, fd, S_ISCHR(st.st_mode)));
  src->inode_ = st.st_ino;
  return src;
}

KmsgSource::KmsgSource(std::string path, int fd, bool device)
    : path_(std::move(path)), fd_(fd), device_(device) {}

KmsgSource::~KmsgSource() {
  if (fd_ >= 0) ::close(fd_);
}

bool KmsgSource::TakeRestart() { return std::exchange(restarted_, false); }

std::vector<KmsgRecord> KmsgSource::Poll() {
  std::vector<KmsgRecord> out;
  stats_.error.clear();
  if (device_) {
    PollDevice(out);
  } else {
    PollFile(out);
  }
  return out;
}

void KmsgSource::Line(std::string_view line, std::vector<KmsgRecord>& out) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.empty() || line.front() == ' ') return;  // a continuation line (KEY=VALUE)
  std::optional<KmsgRecord> r = ParseKmsgRecord(line);
  if (!r) {
    ++stats_.malformed;
    return;
  }
  ++stats_.records;
  out.push_back(std::move(*r));
}

void KmsgSource::PollDevice(std::vector<KmsgRecord>& out) {
  char buf[8192];
  while (out.size() < kMaxRecordsPerPoll) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      // One record per read: its first line, then continuation lines.
      std::string_view rec(buf, static_cast<std::size_t>(n));
      Line(rec.substr(0, rec.find('\n')), out);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {  // overwritten before we read it; the next read goes on
      ++stats_.lost;
      continue;
    }
    if (n < 0 && errno != EAGAIN) stats_.error = Errno(path_, errno);
    return;
  }
}

bool KmsgSource::Reopen() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return false;  // gone for now: keep what we have
  struct stat cur {};
  const bool same = fstat(fd_, &cur) == 0 && st.st_ino == inode_;
  if (same && cur.st_size >= offset_) return true;
  if (!same) {
    int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      stats_.error = Errno(path_, errno);
      return false;
    }
    ::close(fd_);
    fd_ = fd;
    inode_ = st.st_ino;
  }
  offset_ = 0;
  partial_.clear();
  discarding_ = false;
  restarted_ = true;
  ++stats_.restarts;
  return true;
}

void KmsgSource::PollFile(std::vector<KmsgRecord>& out) {
  if (!Reopen()) return;
  std::string buf(64 << 10, '\0');
  std::size_t total = 0;
  while (total < kMaxBytesPerPoll && out.size() < kMaxRecordsPerPoll) {
    ssize_t n = ::pread(fd_, buf.data(), buf.size(), offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      stats_.error = Errno(path_, errno);
      return;
    }
    if (n == 0) return;
    offset_ += n;
    total += static_cast<std::size_t>(n);
    std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = chunk.find('\n')) != std::string_view::npos;) {
      if (std::exchange(discarding_, false)) {
        chunk.remove_prefix(nl + 1);  // the end of a line dropped as too long
        continue;
      }
      if (partial_.size() + nl > kMaxLineBytes) {
        ++stats_.malformed;  // too long to be a record: dropped whole
      } else if (partial_.empty()) {
        Line(chunk.substr(0, nl), out);
      } else {
        partial_.append(chunk.substr(0, nl));
        Line(partial_, out);
      }
      partial_.clear();
      chunk.remove_prefix(nl + 1);
    }
    if (discarding_) continue;
    if (partial_.size() + chunk.size() > kMaxLineBytes) {
      ++stats_.malformed;
      partial_.clear();
      discarding_ = true;
    } else {
      partial_.append(chunk);
    }
  }
}

}  // namespace gpulse::faults
