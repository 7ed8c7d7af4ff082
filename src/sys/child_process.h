// A child process gpulse starts and waits for (the workload of `gpulse record`). Move-only; the
// destructor does not kill or reap: the owner decides.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpulse::sys {

struct ExitStatus {
  std::optional<int> code;    // exit(code)
  std::optional<int> signal;  // killed by this signal
  // The shell convention: the code, or 128 + signal.
  int ShellCode() const { return code ? *code : 128 + signal.value_or(0); }
};

class ChildProcess {
 public:
  // Starts argv[0] (searched on PATH) with the current environment, stdio inherited.
  // Errors: NotFound when there is no such program, kNoPermission when it is not executable.
  // REQUIRES: !argv.empty()
  static Result<ChildProcess> Spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reaps the child if it has exited; nullopt while it runs.
  std::optional<ExitStatus> Poll();
  // Blocks until the child exits and reaps it.
  ExitStatus Wait();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

}  // namespace gpulse::sys
