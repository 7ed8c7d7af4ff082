#include "power/collector/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "sys/child_process.h"

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

bool Reap(int pid, ChildOutcome& out) {
  auto status = sys::TryReap(pid);
  if (!status) return false;
  out.reaped = true;
  out.exit_code = status->code;
  out.term_signal = status->signal;
  return true;
}

bool ReapUntil(int pid, ChildOutcome& out, Clock::time_point deadline) {
  while (!Reap(pid, out)) {
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

// Reaps every ended child in process group `pgid` (with AdoptOrphans, the leader's orphaned
// descendants are this process's children too).
void ReapGroup(int pgid) {
  for (;;) {
    pid_t r = ::waitpid(-pgid, nullptr, WNOHANG);
    if (r > 0 || (r < 0 && errno == EINTR)) continue;
    return;
  }
}

bool GroupAlive(int pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

bool GroupGoneBy(int pgid, Clock::time_point deadline) {
  for (;;) {
    ReapGroup(pgid);
    if (!GroupAlive(pgid)) return true;
    if (Clock::now() >= deadline) return false;
    ::usleep(20'000);
  }
}

// After the leader was reaped: what it left running in its group (a worker that ignores SIGTERM,
// a daemonized helper) is stopped the same way — SIGTERM, SIGKILL after the grace period — and
// reaped. Members that cannot be proved gone make the whole child unreaped.
void StopStragglers(int pgid, const ChildOptions& o, ChildOutcome& out) {
  ReapGroup(pgid);
  if (!GroupAlive(pgid)) return;
  out.stragglers = true;
  ::kill(-pgid, SIGTERM);
  if (GroupGoneBy(pgid, Clock::now() + o.stop_grace)) return;
  ::kill(-pgid, SIGKILL);
  out.force_killed = true;
  if (!GroupGoneBy(pgid, Clock::now() + o.reap_timeout)) out.reaped = false;
}

}  // namespace

void AdoptOrphans() { (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

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
  auto pid = sys::Spawn(
      {.argv = o.argv, .env = o.env, .output = o.output, .own_group_default_signals = true});
  if (pid.ok()) return static_cast<int>(*pid);
  if (pid.error().message.rfind("cannot open ", 0) == 0) return pid.error();  // the output file
  return Error{pid.error().code, "cannot run \"" + o.argv[0] + "\": " + pid.error().message};
}

ChildOutcome WaitChild(int pid, const ChildOptions& o) {
  ChildOutcome out;
  for (;;) {
    if (Reap(pid, out)) break;
    int sig = TakeStopSignal(std::chrono::milliseconds(50));
    if (sig == 0) continue;
    out.stop_signal = sig;
    Stop(pid, o, out);
    break;
  }
  if (o.stop_stragglers && out.reaped && !o.test_unreapable) StopStragglers(pid, o, out);
  return out;
}

std::optional<ChildOutcome> PollChild(int pid) {
  ChildOutcome out;
  if (Reap(pid, out)) return out;
  return std::nullopt;
}

ChildOutcome StopChild(int pid, const ChildOptions& o) {
  ChildOutcome out;
  if (!Reap(pid, out)) Stop(pid, o, out);
  return out;
}

Result<ChildOutcome> RunChild(const ChildOptions& o, std::chrono::milliseconds timeout) {
  auto pid = SpawnChild(o);
  if (!pid.ok()) return pid.error();
  ChildOutcome out;
  auto deadline = Clock::now() + timeout;
  while (!Reap(*pid, out)) {
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
