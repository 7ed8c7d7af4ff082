// Per-process facts read from a procfs tree (a RootedFs whose root is /proc or a fixture): the
// command name, the real user id, the exec-time environment and the raw cgroup membership. Plus the
// two host lookups that have no procfs file: the current process's own environment and a user
// name for a uid.
//
// Thread-safety: pure functions over their arguments (UserName uses getpwuid_r).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "sys/rooted_fs.h"

namespace gpulse::sys {

inline constexpr const char* kDefaultProcfsRoot = "/proc";

// The procfs root to use: `option` (--procfs-root) if set, else $GPULSE_PROCFS_ROOT, else "" (the
// caller decides: "/proc" for real GPUs, none for simulated ones).
std::string ChooseProcfsRoot(const std::string& option);

// /proc/PID/comm without its newline.
Result<std::string> ReadComm(const RootedFs& proc, unsigned pid);

// The real uid: the first number of the "Uid:" line of /proc/PID/status.
Result<unsigned> ReadRealUid(const RootedFs& proc, unsigned pid);

// /proc/PID/environ split at NUL bytes into "NAME=value" entries. This is the environment the
// process was exec'd with; later setenv() calls inside it are invisible here.
Result<std::vector<std::string>> ReadEnviron(const RootedFs& proc, unsigned pid);

// /proc/PID/cgroup as text (parsed by identity::ParseProcCgroup).
Result<std::string> ReadCgroup(const RootedFs& proc, unsigned pid);

// The environment of this process, as "NAME=value" entries.
std::vector<std::string> CurrentEnvironment();

// The login name of `uid` from the host's user database; nullopt when it has none.
std::optional<std::string> UserName(unsigned uid);

}  // namespace gpulse::sys
