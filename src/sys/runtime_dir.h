// Where the agent's unix socket lives when no --socket names it (issue 40: the agent exited at
// once on any machine without /run/gpulse), and where the CLI looks for it, one rule for both:
//   - the system path /run/gpulse/agent.sock: the agent creates /run/gpulse (0755) as root, and
//     uses it as any user who may write there (a package that made it with a group);
//   - otherwise a per-user path: $XDG_RUNTIME_DIR/gpulse/agent.sock when that variable names an
//     absolute directory, else /tmp/gpulse-UID/agent.sock. The agent makes the directory 0700 and
//     refuses one that is a symbolic link, belongs to another user or is open to others.
// Errors are values; messages name the path. Thread-safe: reads the environment only.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace gpulse::sys {

inline constexpr const char* kSystemAgentSocket = "/run/gpulse/agent.sock";

// The per-user socket path for `uid` ($XDG_RUNTIME_DIR/gpulse/agent.sock or /tmp/gpulse-UID/...).
std::string UserAgentSocket(uid_t uid);

// The agent's socket when --socket is not given, with its directory made ready.
struct AgentSocketChoice {
  std::string path;
  std::string why;  // "" for the system path; else why the per-user path was taken
};
Result<AgentSocketChoice> ChooseAgentSocket(const std::string& system_path = kSystemAgentSocket);

// The socket the CLI tries when neither --host nor $GPULSE_HOST names one: the system path when a
// socket is there, else the caller's per-user path when a socket is there, else the system path
// (so the error names where the agent is expected).
std::string FindAgentSocket(const std::string& system_path = kSystemAgentSocket);

}  // namespace gpulse::sys
