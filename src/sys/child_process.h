// Child processes: the one posix_spawn wrapper every gpulse child goes through (the workload of
// `gpulse record`; the benchmark, exporters and clock probes of `gpulse collect`, whose stop-signal
// policy lives in power/child_process.h), and a move-only handle for `gpulse record`'s workload.
// Thread-safety: Spawn and TryReap may be called from any thread; reap a pid from one thread only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpulse::sys {

struct ExitStatus {
  std::optional<int> code;    // exit(code)
  std::optional<int> signal;  // killed by this signal
  // The shell convention: the code, or 128 + signal.
  int ShellCode() const { return code ? *code : 128 + signal.value_or(0); }
};

struct SpawnOptions {
  std::vector<std::string> argv;                         // argv[0] is searched on PATH
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) environ
  // When set, stdin is /dev/null and stdout and stderr are appended to this file (created 0644,
  // opened by the parent, so a file that cannot be opened is its own error; a symbolic link or a
  // non-regular file there is refused, never followed: sys/safe_dir.h).
  std::filesystem::path output;
  // A process group of its own, an empty signal mask, and default SIGINT, SIGTERM and SIGXFSZ
  // (the caller may block or ignore them); otherwise the child inherits the caller's.
  bool own_group_default_signals = false;
};

// Starts the child and returns its pid. Errors: kNotFound (no such program), kNoPermission (not
// executable), kIo (the output file, or anything else); each message is the bare reason
// (strerror, or "cannot open FILE: reason"); callers say what they were starting.
// REQUIRES: !options.argv.empty()
Result<pid_t> Spawn(const SpawnOptions& options);

// Reaps `pid` if it has ended (WNOHANG, EINTR retried); nullopt while it runs.
std::optional<ExitStatus> TryReap(pid_t pid);

class ChildProcess {
 public:
  // Starts argv[0] (searched on PATH) with the current environment, stdio and signal state.
  // Errors as Spawn, with messages "PROGRAM: command not found" / "PROGRAM: cannot execute: ...".
  // REQUIRES: !argv.empty()
  static Result<ChildProcess> Spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reaps the child if it has exited; nullopt while it runs.
  std::optional<ExitStatus> Poll();
  // Whether the child has exited, without reaping it (waitid WNOWAIT): its /proc entry stays, a
  // zombie whose CPU times are still readable, until Poll or Wait. `block` waits for the exit.
  bool HasExited(bool block = false);
  // Blocks until the child exits and reaps it.
  ExitStatus Wait();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

}  // namespace gpulse::sys
