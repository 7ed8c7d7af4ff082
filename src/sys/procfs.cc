#include "sys/procfs.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

extern char** environ;  // NOLINT: POSIX

namespace gpulse::sys {
namespace {

std::string PidFile(unsigned pid, std::string_view name) {
  return std::to_string(pid) + "/" + std::string(name);
}

}  // namespace

std::string ChooseProcfsRoot(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("GPULSE_PROCFS_ROOT"); env != nullptr && *env != '\0')
    return env;
  return "";
}

Result<std::string> ReadComm(const RootedFs& proc, unsigned pid) {
  auto text = proc.ReadFile(PidFile(pid, "comm"), 4096);
  if (!text) return text.error();
  std::string comm = std::move(text).value();
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\r')) comm.pop_back();
  return comm;
}

Result<unsigned> ReadRealUid(const RootedFs& proc, unsigned pid) {
  const std::string file = PidFile(pid, "status");
  auto text = proc.ReadFile(file, std::size_t{64} * 1024);
  if (!text) return text.error();
  std::string_view rest = *text;
  while (!rest.empty()) {
    std::size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
    if (!line.starts_with("Uid:")) continue;
    line.remove_prefix(4);
    std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    std::size_t end = line.find_first_of(" \t", start);
    std::string digits(line.substr(start, end == std::string_view::npos ? end : end - start));
    char* stop = nullptr;
    unsigned long uid = std::strtoul(digits.c_str(), &stop, 10);
    if (digits.empty() || *stop != '\0' || uid > 0xFFFFFFFFUL) break;
    return static_cast<unsigned>(uid);
  }
  return Error{ErrorCode::kInvalidArgument, proc.PathOf(file) + ": no valid \"Uid:\" line"};
}

Result<std::vector<std::string>> ReadEnviron(const RootedFs& proc, unsigned pid) {
  auto text = proc.ReadFile(PidFile(pid, "environ"), std::size_t{4} << 20);
  if (!text) return text.error();
  std::vector<std::string> entries;
  std::string_view rest = *text;
  while (!rest.empty()) {
    std::size_t nul = rest.find('\0');
    std::string_view entry = rest.substr(0, nul);
    if (!entry.empty()) entries.emplace_back(entry);
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  return entries;
}

Result<std::string> ReadCgroup(const RootedFs& proc, unsigned pid) {
  return proc.ReadFile(PidFile(pid, "cgroup"), std::size_t{256} * 1024);
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) entries.emplace_back(*e);
  return entries;
}

std::optional<std::string> UserName(unsigned uid) {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buf(size > 0 ? static_cast<std::size_t>(size) : 16384, '\0');
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return std::string(pw.pw_name);
}

}  // namespace gpulse::sys
