#include "sys/child_process.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

extern "C" char** environ;

namespace gpulse::sys {
namespace {

ExitStatus Decode(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) s.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) s.signal = WTERMSIG(status);
  return s;
}

}  // namespace

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  // glibc's posix_spawnp reports exec failures (ENOENT, EACCES) as its return value.
  int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc == ENOENT) return NotFound(argv[0] + ": command not found");
  if (rc == EACCES || rc == ENOEXEC) {
    return Error{ErrorCode::kNoPermission, argv[0] + ": cannot execute: " + std::strerror(rc)};
  }
  if (rc != 0) return Error{ErrorCode::kIo, argv[0] + ": cannot start: " + std::strerror(rc)};
  return ChildProcess(pid);
}

std::optional<ExitStatus> ChildProcess::Poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = Decode(status);
  return status_;
}

ExitStatus ChildProcess::Wait() {
  while (!status_ && pid_ > 0) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, 0);
    if (r == pid_) status_ = Decode(status);
    if (r < 0 && errno != EINTR) status_ = ExitStatus{};
  }
  return status_.value_or(ExitStatus{});
}

}  // namespace gpulse::sys
