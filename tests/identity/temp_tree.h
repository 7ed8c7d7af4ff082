// A directory tree in a fresh temporary directory, removed with the object: procfs fixtures built
// by the test itself (node_exporter's buildFakeSysfs idea).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpulse::identity::testing {

class TempTree {
 public:
  TempTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpulse-identity-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) root_ = tmpl;
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  ~TempTree() {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  const std::string& root() const { return root_; }

  // Writes `content` (bytes, NULs included) to root/relative, creating directories.
  void Write(const std::string& relative, const std::string& content) const {
    std::filesystem::path p = std::filesystem::path(root_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }

  // A /proc/PID with comm, status (real uid) and cgroup.
  void Process(unsigned pid, const std::string& comm, unsigned uid,
               const std::string& cgroup) const {
    const std::string dir = std::to_string(pid) + "/";
    Write(dir + "comm", comm + "\n");
    Write(dir + "status", "Name:\t" + comm + "\nPid:\t" + std::to_string(pid) + "\nUid:\t" +
                              std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
                              std::to_string(uid) + "\t" + std::to_string(uid) + "\n");
    Write(dir + "cgroup", cgroup);
  }

 private:
  std::string root_;
};

}  // namespace gpulse::identity::testing
