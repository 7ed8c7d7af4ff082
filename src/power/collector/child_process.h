// Children of `gpulse collect` and `gpulse window run`: the benchmark, the exporters collect
// launches and the clock-sync probes, and the stop-signal policy around them. Each is spawned
// through sys::Spawn (sys/child_process.h) in its own process group with default SIGINT/SIGTERM
// handling and an extra environment; the benchmark is waited for while the caller's
// blocked SIGINT/SIGTERM are taken with sigtimedwait, and stopped (group SIGTERM, then SIGKILL
// after a grace period) when one arrives. "Reaped" is proven by waitpid, never assumed.
// Thread-safety: BlockStopSignals, TakeStopSignal and WaitChild belong to the thread that blocked
// the signals before starting any other thread. SpawnChild, PollChild, StopChild and RunChild may
// be called from any thread for children no other thread waits for (waitpid on that pid only).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpulse::power {

// Blocks SIGINT and SIGTERM in the calling thread (threads started later inherit the mask), and
// ignores SIGXFSZ so a file size limit is an EFBIG write error, not death. Idempotent.
void BlockStopSignals();

// Takes a pending SIGINT/SIGTERM, waiting at most `wait`; the signal number or 0.
int TakeStopSignal(std::chrono::milliseconds wait);

struct ChildOutcome {
  bool reaped = false;
  bool force_killed = false;
  std::optional<int> exit_code;    // when it exited
  std::optional<int> term_signal;  // when a signal ended it
  int stop_signal = 0;             // the SIGINT/SIGTERM that interrupted the wait, or 0
  bool timed_out = false;          // RunChild: it outlived its timeout and was stopped
  bool stragglers = false;         // WaitChild: its group outlived it and was stopped
  // The shell convention: exit code, or 128 + signal.
  int ShellStatus() const;
};

struct ChildOptions {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) environ
  // When set, stdin is /dev/null and stdout and stderr are appended to this file (created 0644,
  // opened by the parent: a file that cannot be opened is an error naming it, not the command).
  std::filesystem::path output;
  std::chrono::milliseconds stop_grace{10'000};   // SIGTERM -> SIGKILL
  std::chrono::milliseconds reap_timeout{5'000};  // after SIGKILL
  // WaitChild: once the leader is reaped, stop and reap what is left in its process group.
  bool stop_stragglers = false;
  // Fault injection for tests (GPULSE_COLLECT_TEST_FAULT=unreapable_child): after SIGKILL, behave
  // as if waitpid never returned the child within reap_timeout (an unkillable child in
  // uninterruptible sleep cannot be made without root). The zombie is left to process exit.
  bool test_unreapable = false;
};

// Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): a child's orphaned
// descendants are re-parented here instead of to init, so WaitChild can reap them. Best effort.
void AdoptOrphans();

// Spawns the child and returns its pid. REQUIRES: BlockStopSignals() was called.
Result<int> SpawnChild(const ChildOptions& options);
// Waits for `pid`; on SIGINT/SIGTERM stops it as described above. With stop_stragglers, once the
// leader is reaped, what is left in its process group (a worker that ignored SIGTERM, a background
// helper) is stopped the same way and reaped, so nothing the child started outlives the call;
// members that cannot be proved gone leave the outcome unreaped. A descendant that left the group
// (setsid) is not followed.
ChildOutcome WaitChild(int pid, const ChildOptions& options);

// Reaps `pid` if it has ended; nullopt while it runs. Safe from any thread for a pid no other
// thread waits for.
std::optional<ChildOutcome> PollChild(int pid);

// Stops a running child now: group SIGTERM, SIGKILL after options.stop_grace, then reaps it
// (at most options.reap_timeout more).
ChildOutcome StopChild(int pid, const ChildOptions& options);

// Runs a short command to completion: spawned as above, stopped like StopChild when it outlives
// `timeout` or when SIGINT/SIGTERM is pending in the caller (left pending, and named in
// outcome.stop_signal). Errors: the command could not be started.
Result<ChildOutcome> RunChild(const ChildOptions& options, std::chrono::milliseconds timeout);

}  // namespace gpulse::power
