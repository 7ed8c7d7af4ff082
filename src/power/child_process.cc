#include "power/child_process.h"

#include <signal.h>
#include <unistd.h>

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
  auto pid = sys::Spawn(
      {.argv = o.argv, .env = o.env, .output = o.output, .own_group_default_signals = true});
  if (pid.ok()) return static_cast<int>(*pid);
  if (pid.error().message.rfind("cannot open ", 0) == 0) return pid.error();  // the output file
  return Error{pid.error().code, "cannot run \"" + o.argv[0] + "\": " + pid.error().message};
}

ChildOutcome WaitChild(int pid, const ChildOptions& o) {
  ChildOutcome out;
  for (;;) {
    if (Reap(pid, out)) return out;
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
