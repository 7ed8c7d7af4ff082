// Opening the files gpulse writes in its own trees (a power package and the collect log directory,
// a `gpulse record` run directory, the window state directory) without ever following a symbolic
// link planted in them (issue 13, docs/adr/0011-files-opened-relative-to-a-directory.md).
//
// A tree's root is the directory the user named (--log-dir, -o, the parent of --windows-dir): it is
// resolved as the kernel resolves any path, so a symlinked scratch directory the user chose works.
// Every component below the root is opened with openat(O_NOFOLLOW | O_DIRECTORY) relative to its
// parent, and every file with openat(O_NOFOLLOW) relative to its directory: a symbolic link where
// gpulse reads or writes is refused with its full path ("... is a symbolic link"), never followed.
// Files are created O_EXCL (or replaced whole by a temp file and renameat) with one mode,
// kArtifactFileMode, whatever the umask. Reads are O_NONBLOCK with a regular-file check, so a FIFO
// is refused instead of blocking the reader.
//
// Errors are values: kInvalidArgument for something in the tree the user can fix (a symbolic link,
// a file where a directory belongs, a file that already exists), kNotFound for a missing entry,
// kNoPermission, kIo otherwise; every message names the full path.
// Thread-safety: a Dir is an immutable handle; its copies share one descriptor and any of them may
// be used from any thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sys/fd.h"

namespace gpulse::sys {

// The mode of every file gpulse writes into its trees: none of them is secret.
inline constexpr mode_t kArtifactFileMode = 0644;
// Directories gpulse creates (before the umask).
inline constexpr mode_t kArtifactDirMode = 0755;

// An open file descriptor owned by the caller.
using UniqueFd = std::unique_ptr<Fd>;

enum class EntryType { kMissing, kRegular, kDirectory, kSymlink, kOther };

// How OpenFile treats an existing entry. Every mode refuses a symbolic link or a non-regular file;
// a file it creates gets kArtifactFileMode.
enum class OpenMode {
  kCreateNew,  // O_EXCL: an existing file is kInvalidArgument "already exists" (nothing is lost)
  kAppend,     // O_APPEND: created when missing, else appended to
  kTruncate,   // created when missing, else cut to 0 bytes (write-only, position 0)
};

class Dir {
 public:
  // The root of a tree: `path` as the kernel resolves it ("" is "."). With `create`, missing
  // components are made (kArtifactDirMode) with mkdirat and opened O_NOFOLLOW from their parent.
  static Result<Dir> OpenRoot(const std::filesystem::path& path, bool create);
  // `path`'s parent as a root (OpenRoot), then its last component O_NOFOLLOW: for a directory
  // inside a tree that is named by a full path (the package's windows/ in --windows-dir).
  static Result<Dir> OpenNoFollow(const std::filesystem::path& path, bool create);
  // The directory of `file` as a root and the file's name in it, for a file named by a full path.
  // Errors: kInvalidArgument when `file` has no file name ("dir/", ".", "..").
  static Result<std::pair<Dir, std::string>> OpenParent(const std::filesystem::path& file);

  // `rel` below this directory, one component at a time with O_NOFOLLOW | O_DIRECTORY ("." parts
  // skipped); with `create`, missing components are made with mkdirat. A component that is a
  // symbolic link or not a directory is kInvalidArgument naming its full path; "..", an absolute
  // `rel` or an empty one are kInvalidArgument.
  Result<Dir> Sub(const std::filesystem::path& rel, bool create) const;

  // What `name` is, without following it. REQUIRES (for this and every `name` below): one path
  // component, not "." or ".." (else kInvalidArgument).
  Result<EntryType> TypeOf(std::string_view name) const;
  // OK when `name` is missing or a regular file; else kInvalidArgument "... is a symbolic link" or
  // "... is not a regular file". For checks before a run starts; the opens below check again.
  Status RefuseNonRegular(std::string_view name) const;

  // Opens `name` for writing (see OpenMode), close-on-exec.
  Result<UniqueFd> OpenFile(std::string_view name, OpenMode mode) const;
  // Replaces `name` whole: a temp file ".NAME.XXXXXXXX" created O_EXCL in this directory,
  // filled by `fill` (given the descriptor; its error is returned as is), fsynced, renamed over
  // `name` with renameat, then the directory fsynced. A symbolic link or non-regular file at `name`
  // is refused before anything is written; the temp file never outlives a failure.
  Status WriteAtomic(std::string_view name, const std::function<Status(int fd)>& fill) const;
  Status WriteAtomic(std::string_view name, std::string_view bytes) const;
  // The whole of `name`: O_RDONLY | O_NONBLOCK | O_NOFOLLOW, a regular file of at most
  // `max_bytes` (else kInvalidArgument naming the size).
  Result<std::string> ReadFile(std::string_view name, std::size_t max_bytes) const;
  // Removes the file `name` (unlinkat); a missing one is OK.
  Status Remove(std::string_view name) const;
  // The names in this directory (no "." or ".."), unsorted.
  Result<std::vector<std::string>> List() const;

  // The path this directory was opened by, for messages; the descriptor for *at() calls.
  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_->get(); }
  // `name`'s path, for messages.
  std::string PathOf(std::string_view name) const;

 private:
  Dir(std::shared_ptr<const Fd> fd, std::filesystem::path path)
      : fd_(std::move(fd)), path_(std::move(path)) {}
  // One component `name` below this directory, O_NOFOLLOW (made first with `create`).
  Result<Dir> Child(std::string_view name, bool create) const;
  // The error for `name` after an open failed with `err` while trying to `action` it.
  Error Explain(std::string_view name, int err, std::string_view action, bool want_dir) const;

  std::shared_ptr<const Fd> fd_;
  std::filesystem::path path_;
};

// Writes all of `bytes` to `fd` (EINTR retried). Errors: kIo naming `what` and the errno.
Status WriteAllTo(int fd, std::string_view bytes, const std::string& what);

}  // namespace gpulse::sys
