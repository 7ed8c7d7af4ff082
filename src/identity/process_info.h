// What procfs says about one process: name, user and cgroup placement (container, pod). Each fact
// is optional; a process that is gone, in another PID namespace or unreadable gives absent facts
// and the reason, never a guess.
//
// Thread-safety: pure function over the procfs tree.
#pragma once

#include <optional>
#include <string>

#include "identity/cgroup.h"
#include "sys/rooted_fs.h"

namespace gpulse::identity {

struct ProcessInfo {
  unsigned pid = 0;
  std::optional<std::string> name;  // /proc/PID/comm
  std::optional<unsigned> uid;      // real uid
  std::optional<std::string> user;  // login name of uid, when the host knows it
  std::optional<CgroupPlacement> cgroup;
  std::string error;  // why some fact is absent ("" when all were read)
};

// Which facts to read: all of them (`gpulse ps`), or only the cgroup placement (the exporter's
// pod and job attribution: one file per process and no user-name lookup, which goes through NSS).
enum class ProcFacts { kAll, kCgroupOnly };

ProcessInfo ReadProcessInfo(const sys::RootedFs& proc, unsigned pid,
                            ProcFacts facts = ProcFacts::kAll);

}  // namespace gpulse::identity
