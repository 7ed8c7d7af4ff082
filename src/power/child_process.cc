#include "power/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

extern char** environ;

namespace gpulse::power {
namespace {

using Clock = std::chrono::steady_clock;

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

bool Reap(int pid, ChildOutcome& out, int flags) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, flags);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return false;
  out.reaped = true;
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.term_signal = WTERMSIG(status);
  return true;
}

bool ReapUntil(int pid, ChildOutcome& out, Clock::time_point deadline) {
  while (!Reap(pid, out, WNOHANG)) {
    if (Clock::now() >= deadline) return false;
    ::usleep(20'000);
  }
  return true;
}

// A SIGINT/SIGTERM pending for this thread or the process (blocked, not taken), or 0.
int PendingStopSignal() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return 0;
  if (sigismember(&pending, SIGTERM) == 1) return SIGTERM;
  if (sigismember(&pending, SIGINT) == 1) return SIGINT;
  return 0;
}

// Group SIGTERM, SIGKILL after the grace period, then reap (unless a test fault forbids it).
void Stop(int pid, const ChildOptions& o, ChildOutcome& out) {
  ::kill(-pid, SIGTERM);
  if (ReapUntil(pid, out, Clock::now() + o.stop_grace)) return;
  ::kill(-pid, SIGKILL);
  out.force_killed = true;
  if (o.test_unreapable) return;
  ReapUntil(pid, out, Clock::now() + o.reap_timeout);
}

}  // namespace

int ChildOutcome::ShellStatus() const {
  if (exit_code) return *exit_code;
  if (term_signal) return 128 + *term_signal;
  return 1;
}

void BlockStopSignals() {
  sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGXFSZ, SIG_IGN);
}

int TakeStopSignal(std::chrono::milliseconds wait) {
  sigset_t set = StopSet();
  timespec ts{static_cast<time_t>(wait.count() / 1000),
              static_cast<long>((wait.count() % 1000) * 1'000'000)};
  int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

Result<int> SpawnChild(const ChildOptions& o) {
  if (o.argv.empty()) return InvalidArgument("no command to run");
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& [k, v] : o.env) replaced |= kv.rfind(k + "=", 0) == 0;
    if (!replaced) env_store.push_back(std::move(kv));
  }
  for (const auto& [k, v] : o.env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_fd = -1;
  if (!o.output.empty()) {
    out_fd = ::open(o.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0)
      return Error{ErrorCode::kIo,
                   "cannot open " + o.output.string() + ": " + std::strerror(errno)};
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (out_fd >= 0) {
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, out_fd, 1);
    posix_spawn_file_actions_adddup2(&files, out_fd, 2);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults = StopSet();
  sigemptyset(&empty);
  sigaddset(&defaults, SIGXFSZ);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0], &files, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  if (out_fd >= 0) ::close(out_fd);
  if (rc != 0)
    return Error{ErrorCode::kNotFound, "cannot run \"" + o.argv[0] + "\": " + std::strerror(rc)};
  return static_cast<int>(pid);
}

ChildOutcome WaitChild(int pid, const ChildOptions& o) {
  ChildOutcome out;
  for (;;) {
    if (Reap(pid, out, WNOHANG)) return out;
    int sig = TakeStopSignal(std::chrono::milliseconds(50));
    if (sig == 0) continue;
    out.stop_signal = sig;
    break;
  }
  Stop(pid, o, out);
  return out;
}

std::optional<ChildOutcome> PollChild(int pid) {
  ChildOutcome out;
  if (Reap(pid, out, WNOHANG)) return out;
  return std::nullopt;
}

ChildOutcome StopChild(int pid, const ChildOptions& o) {
  ChildOutcome out;
  if (!Reap(pid, out, WNOHANG)) Stop(pid, o, out);
  return out;
}

Result<ChildOutcome> RunChild(const ChildOptions& o, std::chrono::milliseconds timeout) {
  auto pid = SpawnChild(o);
  if (!pid.ok()) return pid.error();
  ChildOutcome out;
  auto deadline = Clock::now() + timeout;
  while (!Reap(*pid, out, WNOHANG)) {
    if (int sig = PendingStopSignal()) {
      out.stop_signal = sig;
      break;
    }
    if (Clock::now() >= deadline) {
      out.timed_out = true;
      break;
    }
    ::usleep(10'000);
  }
  if (!out.reaped) Stop(*pid, o, out);
  return out;
}

}  // namespace gpulse::power
