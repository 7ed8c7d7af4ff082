#include "sys/rooted_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/fd.h"

namespace gpulse::sys {
namespace {

Error ErrnoError(int err, const std::string& what, const std::string& path) {
  return sys::ErrnoError(err, what + " " + path + ": " + std::strerror(err));
}

}  // namespace

std::string RootedFs::PathOf(std::string_view relative) const {
  std::string path = root_;
  if (!path.empty() && path.back() != '/' && !relative.starts_with('/')) path += '/';
  if (!path.empty() && path.back() == '/' && relative.starts_with('/')) relative.remove_prefix(1);
  path += relative;
  return path;
}

Result<std::string> RootedFs::ReadFile(std::string_view relative, std::size_t max_bytes) const {
  const std::string path = PathOf(relative);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, "cannot open", path);
  std::string out;
  char buf[4096];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "cannot read", path);
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (out.size() > max_bytes) out.resize(max_bytes);
  return out;
}

Result<std::vector<std::string>> RootedFs::ListDir(std::string_view relative) const {
  const std::string path = PathOf(relative);
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ErrnoError(errno, "cannot list", path);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

}  // namespace gpulse::sys
