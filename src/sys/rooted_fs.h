// A read-only view of a file tree rooted at a configurable path: "/proc", "/sys", or a fixture
// directory in tests (node_exporter's --path.procfs idea). Every procfs/sysfs read in gpulse goes
// through one of these, so tests swap the root and never touch the real /proc.
//
// Thread-safety: immutable after construction; const methods may run concurrently.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::sys {

class RootedFs {
 public:
  // `root` is used as given ("/proc", "tests/testdata/procfs/x"); relative paths below are joined
  // to it with one '/'.
  explicit RootedFs(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string PathOf(std::string_view relative) const;

  // The whole file, at most `max_bytes` (procfs files report size 0, so this reads until EOF).
  // Errors: kNotFound (no such file or directory), kNoPermission, kIo, each naming the path.
  Result<std::string> ReadFile(std::string_view relative, std::size_t max_bytes = 1 << 20) const;

  // The entry names of a directory, unsorted, without "." and "..".
  Result<std::vector<std::string>> ListDir(std::string_view relative) const;

 private:
  std::string root_;
};

}  // namespace gpulse::sys
