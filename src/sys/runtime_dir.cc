#include "sys/runtime_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gpulse::sys {
namespace {

std::string Parent(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

bool IsSocket(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// The system directory: made (0755) by root, used by anyone who may create a socket in it.
bool SystemDirUsable(const std::string& dir) {
  if (geteuid() == 0) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

// A per-user directory: made 0700; an existing one must be the caller's own real directory that
// no one else may write to.
Status PrepareUserDir(const std::string& dir, uid_t uid) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error{errno == EACCES ? ErrorCode::kNoPermission : ErrorCode::kIo,
                 "cannot create " + dir + ": " + std::strerror(errno)};
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    return Error{ErrorCode::kIo, "cannot inspect " + dir + ": " + std::strerror(errno)};
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(dir + " is not a directory (a symbolic link or a file is refused)");
  }
  if (st.st_uid != uid) {
    return InvalidArgument(dir + " belongs to uid " + std::to_string(st.st_uid) + ", not " +
                           std::to_string(uid));
  }
  if ((st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return InvalidArgument(dir + " is writable by others (mode " + mode + "; chmod 700 it)");
  }
  return Status::Ok();
}

}  // namespace

std::string UserAgentSocket(uid_t uid) {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] == '/') {
    struct stat st {};
    if (stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) return std::string(xdg) + "/gpulse/agent.sock";
  }
  return "/tmp/gpulse-" + std::to_string(uid) + "/agent.sock";
}

Result<AgentSocketChoice> ChooseAgentSocket(const std::string& system_path) {
  const std::string system_dir = Parent(system_path);
  if (SystemDirUsable(system_dir)) return AgentSocketChoice{system_path, ""};
  const uid_t uid = geteuid();
  const std::string path = UserAgentSocket(uid);
  if (Status s = PrepareUserDir(Parent(path), uid); !s.ok()) {
    return Error{s.error().code, system_dir + " is not writable by uid " + std::to_string(uid) +
                                     " and the per-user socket directory cannot be used: " +
                                     s.error().message + " (name one with --socket)"};
  }
  return AgentSocketChoice{path, system_dir + " is not writable by uid " + std::to_string(uid)};
}

std::string FindAgentSocket(const std::string& system_path) {
  if (IsSocket(system_path)) return system_path;
  const std::string user = UserAgentSocket(geteuid());
  if (IsSocket(user)) return user;
  return system_path;
}

}  // namespace gpulse::sys
