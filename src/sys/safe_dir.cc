#include "sys/safe_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gpulse::sys {
namespace fs = std::filesystem;
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

Error SysError(int err, const std::string& what) {
  return ErrnoError(err, what + ": " + std::strerror(err));
}

Error SymlinkRefused(const std::string& path) {
  return InvalidArgument(
      path + " is a symbolic link: refused (gpulse never follows a link where it writes)");
}

bool ValidName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

Error BadName(std::string_view name) {
  return InvalidArgument("\"" + std::string(name) + "\" is not a single file name");
}

EntryType TypeOfMode(mode_t mode) {
  if (S_ISLNK(mode)) return EntryType::kSymlink;
  if (S_ISREG(mode)) return EntryType::kRegular;
  if (S_ISDIR(mode)) return EntryType::kDirectory;
  return EntryType::kOther;
}

// Eight hex digits for a temp file name: getrandom, or a per-process counter when it fails.
std::string RandomSuffix() {
  static std::atomic<unsigned> counter{0};
  unsigned v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v))
    v = static_cast<unsigned>(::getpid()) * 2654435761u + counter.fetch_add(1);
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// Clears O_NONBLOCK, set only so that opening a FIFO could not block.
bool ClearNonBlock(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

}  // namespace

Status WriteAllTo(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{ErrorCode::kIo, "cannot write " + what + ": " + std::strerror(errno)};
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

std::string Dir::PathOf(std::string_view name) const {
  if (path_.empty()) return std::string(name);
  return (path_ / std::string(name)).string();
}

Result<Dir> Dir::OpenRoot(const fs::path& path, bool create) {
  const fs::path& at = path.empty() ? fs::path(".") : path;
  int fd = ::open(at.c_str(), kDirFlags);
  if (fd >= 0) return Dir(std::make_shared<const Fd>(fd), path);
  int err = errno;
  if (err == ENOENT && create) {
    // Make the missing part below the deepest existing ancestor, one component at a time.
    fs::path p = path;
    if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "a/b/" -> "a/b"
    std::string leaf = p.filename().string();
    if (ValidName(leaf)) {
      auto parent = OpenRoot(p.parent_path(), true);
      if (!parent.ok()) return parent.error();
      return parent->Child(leaf, true);
    }
  }
  struct stat st {};
  if (err == ENOTDIR && ::stat(at.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return InvalidArgument(at.string() + " is not a directory");
  return SysError(err, "cannot open directory " + at.string());
}

Result<Dir> Dir::OpenNoFollow(const fs::path& path, bool create) {
  fs::path p = path;
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  std::string leaf = p.filename().string();
  if (!ValidName(leaf)) return OpenRoot(path, create);  // "/", ".": nothing below a root to check
  auto parent = OpenRoot(p.parent_path(), create);
  if (!parent.ok()) return parent.error();
  return parent->Child(leaf, create);
}

Result<std::pair<Dir, std::string>> Dir::OpenParent(const fs::path& file) {
  std::string name = file.filename().string();
  if (!ValidName(name)) return InvalidArgument(file.string() + " does not name a file");
  auto dir = OpenRoot(file.parent_path(), false);
  if (!dir.ok()) return dir.error();
  return std::make_pair(std::move(*dir), std::move(name));
}

Result<Dir> Dir::Sub(const fs::path& rel, bool create) const {
  if (rel.empty() || rel.has_root_path())
    return InvalidArgument("\"" + rel.string() + "\" is not a relative path below " +
                           path_.string());
  Dir cur = *this;
  for (const fs::path& part : rel) {
    std::string c = part.string();
    if (c.empty() || c == ".") continue;
    if (c == "..")
      return InvalidArgument(PathOf(rel.string()) + ": \"..\" is not allowed in a path below " +
                             path_.string());
    auto next = cur.Child(c, create);
    if (!next.ok()) return next.error();
    cur = std::move(*next);
  }
  return cur;
}

Result<Dir> Dir::Child(std::string_view name, bool create) const {
  std::string n(name);
  int fd = ::openat(this->fd(), n.c_str(), kDirFlags | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT && create) {
    if (::mkdirat(this->fd(), n.c_str(), kArtifactDirMode) != 0 && errno != EEXIST)
      return SysError(errno, "cannot create directory " + PathOf(name));
    fd = ::openat(this->fd(), n.c_str(), kDirFlags | O_NOFOLLOW);
  }
  if (fd < 0) return Explain(name, errno, "open directory", true);
  return Dir(std::make_shared<const Fd>(fd), path_.empty() ? fs::path(n) : path_ / n);
}

Error Dir::Explain(std::string_view name, int err, std::string_view action, bool want_dir) const {
  auto type = TypeOf(name);
  EntryType t = type.ok() ? *type : EntryType::kMissing;
  std::string path = PathOf(name);
  if (err == ELOOP || t == EntryType::kSymlink) return SymlinkRefused(path);
  if (want_dir && t != EntryType::kMissing && t != EntryType::kDirectory)
    return InvalidArgument(path + " is not a directory");
  if (!want_dir && (t == EntryType::kDirectory || t == EntryType::kOther))
    return InvalidArgument(path + " is not a regular file");
  if (err == EEXIST && t == EntryType::kRegular)
    return InvalidArgument(path + " already exists: refused (gpulse does not overwrite it)");
  return SysError(err, "cannot " + std::string(action) + " " + path);
}

Result<EntryType> Dir::TypeOf(std::string_view name) const {
  if (!ValidName(name)) return BadName(name);
  struct stat st {};
  if (::fstatat(fd(), std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    return TypeOfMode(st.st_mode);
  if (errno == ENOENT) return EntryType::kMissing;
  return SysError(errno, "cannot stat " + PathOf(name));
}

Status Dir::RefuseNonRegular(std::string_view name) const {
  auto t = TypeOf(name);
  if (!t.ok()) return t.error();
  switch (*t) {
    case EntryType::kMissing:
    case EntryType::kRegular:
      return Status::Ok();
    case EntryType::kSymlink:
      return SymlinkRefused(PathOf(name));
    default:
      return InvalidArgument(PathOf(name) + " is not a regular file");
  }
}

Result<UniqueFd> Dir::OpenFile(std::string_view name, OpenMode mode) const {
  if (!ValidName(name)) return BadName(name);
  std::string n(name);
  int base =
      O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | (mode == OpenMode::kAppend ? O_APPEND : 0);
  // Creating with O_EXCL never follows a link and never opens a FIFO or a device.
  int fd = ::openat(this->fd(), n.c_str(), base | O_CREAT | O_EXCL, kArtifactFileMode);
  if (fd >= 0) {
    auto file = std::make_unique<Fd>(fd);
    if (::fchmod(fd, kArtifactFileMode) != 0) {  // the umask may have narrowed the mode
      int err = errno;
      ::unlinkat(this->fd(), n.c_str(), 0);
      return SysError(err, "cannot set the mode of " + PathOf(name));
    }
    return file;
  }
  int err = errno;
  if (err != EEXIST || mode == OpenMode::kCreateNew) return Explain(name, err, "create", false);
  // It exists: O_NONBLOCK so a FIFO without a reader fails (ENXIO) instead of blocking; then it
  // must be a regular file.
  fd = ::openat(this->fd(), n.c_str(), base | O_NONBLOCK);
  if (fd < 0) return Explain(name, errno, "open", false);
  auto file = std::make_unique<Fd>(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysError(errno, "cannot stat " + PathOf(name));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(PathOf(name) + " is not a regular file");
  if (!ClearNonBlock(fd)) return SysError(errno, "cannot open " + PathOf(name));
  if (mode == OpenMode::kTruncate && ::ftruncate(fd, 0) != 0)
    return SysError(errno, "cannot truncate " + PathOf(name));
  return file;
}

Status Dir::WriteAtomic(std::string_view name, const std::function<Status(int fd)>& fill) const {
  if (Status s = RefuseNonRegular(name); !s.ok()) return s;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = "." + std::string(name) + "." + RandomSuffix();
    fd = ::openat(this->fd(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  kArtifactFileMode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return SysError(errno, "cannot create a temp file in " + path_.string());
  Fd file(fd);
  auto fail = [&](Error e) -> Status {
    ::unlinkat(this->fd(), tmp.c_str(), 0);
    return e;
  };
  if (::fchmod(fd, kArtifactFileMode) != 0)
    return fail(SysError(errno, "cannot set the mode of " + PathOf(tmp)));
  if (Status s = fill(fd); !s.ok()) return fail(s.error());
  if (::fsync(fd) != 0) return fail(SysError(errno, "cannot write " + PathOf(name)));
  // renameat replaces the name itself: even a link planted since the check above is not followed.
  if (::renameat(this->fd(), tmp.c_str(), this->fd(), std::string(name).c_str()) != 0)
    return fail(SysError(errno, "cannot write " + PathOf(name)));
  ::fsync(this->fd());  // best effort: the rename itself already happened
  return Status::Ok();
}

Status Dir::WriteAtomic(std::string_view name, std::string_view bytes) const {
  std::string what = PathOf(name);
  return WriteAtomic(name, [&](int fd) { return WriteAllTo(fd, bytes, what); });
}

Result<std::string> Dir::ReadFile(std::string_view name, std::size_t max_bytes) const {
  if (!ValidName(name)) return BadName(name);
  std::string path = PathOf(name);
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it is refused below.
  int raw = ::openat(fd(), std::string(name).c_str(),
                     O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (raw < 0) {
    int err = errno;
    if (err == ELOOP) return SymlinkRefused(path);
    if (err == ENOENT) return NotFound(path + " does not exist");
    return SysError(err, "cannot read " + path);
  }
  Fd file(raw);
  struct stat st {};
  if (::fstat(raw, &st) != 0) return SysError(errno, "cannot read " + path);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return InvalidArgument(path + " is " + std::to_string(st.st_size) + " bytes, more than the " +
                           std::to_string(max_bytes) + " it may have");
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(raw, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError(errno, "cannot read " + path);
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)  // grew while being read
      return InvalidArgument(path + " is larger than the " + std::to_string(max_bytes) +
                             " bytes it may have");
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Status Dir::Remove(std::string_view name) const {
  if (!ValidName(name)) return BadName(name);
  if (::unlinkat(fd(), std::string(name).c_str(), 0) != 0 && errno != ENOENT)
    return SysError(errno, "cannot remove " + PathOf(name));
  return Status::Ok();
}

Result<std::vector<std::string>> Dir::List() const {
  // A descriptor of its own: readdir moves the offset, which a dup would share with fd().
  int raw = ::openat(fd(), ".", kDirFlags);
  if (raw < 0) return SysError(errno, "cannot list " + path_.string());
  DIR* d = ::fdopendir(raw);
  if (d == nullptr) {
    int err = errno;
    ::close(raw);
    return SysError(err, "cannot list " + path_.string());
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return SysError(err, "cannot list " + path_.string());
  return names;
}

}  // namespace gpulse::sys
