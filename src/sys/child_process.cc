#include "sys/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/safe_dir.h"

extern "C" char** environ;

namespace gpulse::sys {
namespace {

ExitStatus Decode(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) s.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) s.signal = WTERMSIG(status);
  return s;
}

// environ with `extra` added, a variable of the same name replaced.
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& [k, v] : extra) replaced |= kv.rfind(k + "=", 0) == 0;
    if (!replaced) out.push_back(std::move(kv));
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<pid_t> Spawn(const SpawnOptions& o) {
  std::vector<std::string> args = o.argv, env = Environment(o.env);
  std::vector<char*> argv = Pointers(args), envp = Pointers(env);
  // The output file is appended to through its directory, never through a symbolic link, and is
  // created 0644 (sys/safe_dir.h).
  UniqueFd out;
  if (!o.output.empty()) {
    auto at = Dir::OpenParent(o.output);
    auto file =
        at.ok() ? at->first.OpenFile(at->second, OpenMode::kAppend) : Result<UniqueFd>(at.error());
    if (!file.ok())
      return Error{file.error().code,
                   "cannot open " + o.output.string() + ": " + file.error().message};
    out = std::move(*file);
  }
  int out_fd = out ? out->get() : -1;
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (out_fd >= 0) {
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, out_fd, 1);
    posix_spawn_file_actions_adddup2(&files, out_fd, 2);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (o.own_group_default_signals) {
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGXFSZ}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  }
  pid_t pid = -1;
  // glibc's posix_spawnp reports exec failures (ENOENT, EACCES) as its return value.
  int rc = ::posix_spawnp(&pid, argv[0], &files, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  out.reset();
  if (rc == ENOENT) return Error{ErrorCode::kNotFound, std::strerror(rc)};
  if (rc == EACCES || rc == ENOEXEC) return Error{ErrorCode::kNoPermission, std::strerror(rc)};
  if (rc != 0) return Error{ErrorCode::kIo, std::strerror(rc)};
  return pid;
}

std::optional<ExitStatus> TryReap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return std::nullopt;
  return Decode(status);
}

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  auto pid = sys::Spawn(o);
  if (pid.ok()) return ChildProcess(*pid);
  switch (pid.error().code) {
    case ErrorCode::kNotFound:
      return NotFound(argv[0] + ": command not found");
    case ErrorCode::kNoPermission:
      return Error{ErrorCode::kNoPermission, argv[0] + ": cannot execute: " + pid.error().message};
    default:
      return Error{ErrorCode::kIo, argv[0] + ": cannot start: " + pid.error().message};
  }
}

std::optional<ExitStatus> ChildProcess::Poll() {
  if (status_ || pid_ <= 0) return status_;
  status_ = TryReap(pid_);
  return status_;
}

bool ChildProcess::HasExited(bool block) {
  if (status_) return true;
  if (pid_ <= 0) return false;
  for (;;) {
    siginfo_t info{};
    int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, flags) == 0) return info.si_pid == pid_;
    if (errno != EINTR) return true;  // ECHILD: nothing left to wait for
  }
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
