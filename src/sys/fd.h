// A file descriptor closed on scope exit, and the one errno -> Error mapping of the sys readers.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/result.h"

namespace gpulse::sys {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// kNotFound for a missing file (or a /proc/PID that vanished), kNoPermission, else kIo.
inline Error ErrnoError(int err, std::string message) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ESRCH:
      return {ErrorCode::kNotFound, std::move(message)};
    case EACCES:
    case EPERM:
      return {ErrorCode::kNoPermission, std::move(message)};
    default:
      return {ErrorCode::kIo, std::move(message)};
  }
}

}  // namespace gpulse::sys
