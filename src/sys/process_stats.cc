#include "sys/process_stats.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

namespace gpulse::sys {
namespace {

std::string Slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool ParseU64(std::string_view s, std::uint64_t& v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// Reading /proc/self/fd costs a directory entry per descriptor: with 2,048 connections open it took
// milliseconds, on every scrape (issue 39's crowd: it was most of the scrape's latency there).
// Since Linux 6.2 stat(2) of the directory gives the count as its size at once; an older kernel
// reports 0 there, and the count read from the directory is then kept for a second.
std::optional<std::uint64_t> CountOpenFds() {
  struct stat st {};
  if (stat("/proc/self/fd", &st) == 0 && st.st_size > 0) return static_cast<std::uint64_t>(st.st_size);
  static std::mutex mu;
  static std::optional<std::uint64_t> kept;
  static std::chrono::steady_clock::time_point kept_at;
  std::lock_guard lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (kept && now - kept_at < std::chrono::seconds(1)) return kept;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return std::nullopt;
  std::uint64_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  kept = n > 0 ? n - 1 : 0;  // less the directory's own descriptor
  kept_at = now;
  return kept;
}

}  // namespace

std::optional<StatLine> ParseStatLine(std::string_view text) {
  std::size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // After the command: field 3 (state) onwards, space-separated.
  std::string_view rest = text.substr(close + 1);
  std::uint64_t fields[25] = {};
  int field = 2;  // the last field read (pid is 1, comm 2)
  std::size_t pos = 0;
  while (field < 24) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    if (pos >= rest.size()) return std::nullopt;
    std::size_t end = rest.find_first_of(" \n", pos);
    if (end == std::string_view::npos) end = rest.size();
    ++field;
    std::string_view tok = rest.substr(pos, end - pos);
    if (field == 14 || field == 15 || field == 22 || field == 23 || field == 24) {
      if (!ParseU64(tok, fields[field])) return std::nullopt;
    }
    pos = end;
  }
  return StatLine{fields[14], fields[15], fields[22], fields[23], fields[24]};
}

std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat) {
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    std::size_t eol = proc_stat.find('\n', at);
    if (eol == std::string_view::npos) eol = proc_stat.size();
    std::string_view line = proc_stat.substr(at, eol - at);
    if (line.substr(0, 6) == "btime ") {
      std::uint64_t v = 0;
      if (!ParseU64(line.substr(6), v) || v > static_cast<std::uint64_t>(INT64_MAX)) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(v);
    }
    at = eol + 1;
  }
  return std::nullopt;
}

ProcessStats ReadProcessStats() {
  ProcessStats s;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  if (auto line = ParseStatLine(Slurp("/proc/self/stat")); line && ticks > 0) {
    s.cpu_seconds = static_cast<double>(line->utime_ticks + line->stime_ticks) / ticks;
    s.virtual_bytes = line->vsize_bytes;
    s.resident_bytes = line->rss_pages * static_cast<std::uint64_t>(page);
    if (auto boot = ParseBootTime(Slurp("/proc/stat"))) {
      s.start_time_unix_s =
          static_cast<double>(*boot) + static_cast<double>(line->start_ticks) / ticks;
    }
  }
  s.open_fds = CountOpenFds();
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) s.max_fds = r.rlim_cur;
  if (getrlimit(RLIMIT_AS, &r) == 0) {
    s.virtual_max_bytes = r.rlim_cur == RLIM_INFINITY ? -1.0 : static_cast<double>(r.rlim_cur);
  }
  return s;
}

}  // namespace gpulse::sys
