#include "identity/process_info.h"

#include "sys/procfs.h"

namespace gpulse::identity {
namespace {

void Note(ProcessInfo& info, const std::string& what) {
  if (!info.error.empty()) info.error += "; ";
  info.error += what;
}

std::string NoProcess(const sys::RootedFs& proc, unsigned pid) {
  return "no process " + std::to_string(pid) + " under " + proc.root() +
         " (it exited, or runs in another PID namespace)";
}

}  // namespace

ProcessInfo ReadProcessInfo(const sys::RootedFs& proc, unsigned pid, ProcFacts facts) {
  ProcessInfo info;
  info.pid = pid;
  if (facts == ProcFacts::kAll) {
    auto comm = sys::ReadComm(proc, pid);
    if (!comm && comm.error().code == ErrorCode::kNotFound) {
      info.error = NoProcess(proc, pid);
      return info;
    }
    if (comm) {
      info.name = *comm;
    } else {
      Note(info, comm.error().message);
    }
    if (auto uid = sys::ReadRealUid(proc, pid)) {
      info.uid = *uid;
      info.user = sys::UserName(*uid);
    } else {
      Note(info, uid.error().message);
    }
  }
  auto text = sys::ReadCgroup(proc, pid);
  if (!text && facts == ProcFacts::kCgroupOnly && text.error().code == ErrorCode::kNotFound) {
    info.error = NoProcess(proc, pid);
    return info;
  }
  if (!text) {
    Note(info, text.error().message);
    return info;
  }
  auto lines = ParseProcCgroup(*text);
  if (!lines) {
    Note(info, proc.PathOf(std::to_string(pid) + "/cgroup") + ": " + lines.error().message);
    return info;
  }
  info.cgroup = Place(*lines);
  return info;
}

}  // namespace gpulse::identity
