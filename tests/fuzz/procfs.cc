// procfs readers (src/sys/procfs.h, src/identity/process_info.h, src/sampling/process_tree.h) over
// a hostile process: the input, cut at "\n----\n", gives /proc/1/comm, status, environ, cgroup,
// stat and task/1/children of a scratch procfs tree (a part that is not there is a missing file).
// ReadComm, ReadRealUid, ReadEnviron and ReadCgroup only take a procfs tree, so the tree is
// written for every input (one per process, fuzz_util.h: Scratch); ParseStat and ParseChildren, the
// text parsers of process_tree.h, get their parts directly, and ProcessTreeSampler reads the tree.
// The environment entries hold no NUL, and Environment keeps the last value of each (non-empty)
// name.
#include "sys/procfs.h"

#include <map>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "identity/environment.h"
#include "identity/process_info.h"
#include "sampling/process_tree.h"

using namespace gpulse;

namespace {

const char* const kFiles[] = {"1/comm",   "1/status", "1/environ",
                              "1/cgroup", "1/stat",   "1/task/1/children"};
constexpr std::size_t kParts = sizeof kFiles / sizeof kFiles[0];

const fuzz::Scratch& Root() {
  static const fuzz::Scratch root("procfs");
  static bool made = [] {
    std::filesystem::create_directories(root.path() + "/1/task/1");
    return true;
  }();
  (void)made;
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string_view> parts;
  std::string_view rest = fuzz::Text(data, size);
  constexpr std::string_view kCut = "\n----\n";
  while (parts.size() < kParts) {
    std::size_t at = rest.find(kCut);
    parts.push_back(rest.substr(0, at));
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kCut.size());
  }
  const std::string& root = Root().path();
  for (std::size_t i = 0; i < kParts; ++i) {
    std::string path = root + "/" + kFiles[i];
    if (i < parts.size())
      fuzz::WriteScratch(path, parts[i]);
    else
      std::filesystem::remove(path);
  }
  sys::RootedFs proc(root);
  (void)sys::ReadComm(proc, 1);
  (void)sys::ReadRealUid(proc, 1);
  (void)sys::ReadCgroup(proc, 1);
  if (auto env = sys::ReadEnviron(proc, 1); env.ok()) {
    for (const std::string& e : *env) FUZZ_CHECK(e.find('\0') == std::string::npos);
    auto vars = identity::Environment::FromEntries(*env);
    std::map<std::string, std::string, std::less<>> last;
    for (const std::string& e : *env) {
      std::size_t eq = e.find('=');
      if (eq != std::string::npos && eq > 0) last[e.substr(0, eq)] = e.substr(eq + 1);
    }
    for (const auto& [name, value] : last) {
      auto v = vars.Get(name);
      FUZZ_CHECK(v.has_value() && *v == value);
    }
  }
  identity::ProcessInfo info = identity::ReadProcessInfo(proc, 1);
  FUZZ_CHECK(info.pid == 1);
  if (parts.size() > 4) (void)sampling::ParseStat(parts[4]);
  {
    // The recorder's sampler over the same tree, descendants included (children naming pid 1
    // itself, or pids with no directory, must neither loop nor count twice).
    sampling::ProcessTreeSampler sampler(root, 1, true);
    if (auto totals = sampler.Read(); totals.ok()) FUZZ_CHECK(totals->processes >= 1);
  }
  if (parts.size() > 5) {
    if (auto kids = sampling::ParseChildren(parts[5]); kids.ok())
      for (pid_t k : *kids) FUZZ_CHECK(k > 0);
  }
  return 0;
}
