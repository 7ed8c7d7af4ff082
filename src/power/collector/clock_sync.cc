#include "power/collector/clock_sync.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "power/collector/child_process.h"
#include "power/collector/exporter_launch.h"
#include "sys/safe_dir.h"

namespace gpulse::power {
namespace fs = std::filesystem;
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string_view FirstLine(std::string_view s) {
  s = Trim(s);
  return s.substr(0, s.find('\n'));
}

ToolVerdict NoAnswer(int exit_code, std::string_view output) {
  std::string_view line = FirstLine(output);
  if (line.empty()) return {SyncVerdict::kNoAnswer, fmt::format("exit code {}", exit_code)};
  return {SyncVerdict::kNoAnswer, fmt::format("exit code {}: {}", exit_code, line)};
}

struct Tool {
  const char* name;
  std::vector<std::string> argv;
  ToolVerdict (*parse)(int, std::string_view);
};

const std::vector<Tool>& Tools() {
  static const std::vector<Tool> tools = {
      {"timedatectl",
       {"timedatectl", "show", "--property=NTPSynchronized", "--value"},
       ParseTimedatectl},
      {"chronyc", {"chronyc", "-n", "tracking"}, ParseChronycTracking},
      {"ntpq", {"ntpq", "-pn"}, ParseNtpqPeers},
  };
  return tools;
}

// A tool's output is a few lines; more than this is not read back.
constexpr size_t kMaxProbeLogBytes = 1 << 20;

// The probe log <log_dir>/clock_sync_<node>.out, opened by name for every write (the tool appends
// to it in between) and never through a symbolic link.
class ProbeLog {
 public:
  ProbeLog(sys::Dir dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
  // Appends `text`; returns the file's size after it.
  Result<off_t> Append(std::string_view text) const {
    auto file = dir_.OpenFile(name_, sys::OpenMode::kAppend);
    if (!file.ok()) return file.error();
    if (Status s = sys::WriteAllTo((*file)->get(), text, dir_.PathOf(name_)); !s.ok())
      return s.error();
    return ::lseek((*file)->get(), 0, SEEK_END);
  }
  // What the file holds from `offset` on ("" when it cannot be read).
  std::string ReadFrom(off_t offset) const {
    auto text = dir_.ReadFile(name_, kMaxProbeLogBytes);
    if (!text.ok() || static_cast<size_t>(offset) > text->size()) return "";
    return text->substr(static_cast<size_t>(offset));
  }
  std::string path() const { return dir_.PathOf(name_); }

 private:
  sys::Dir dir_;
  std::string name_;
};

std::string Joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Runs one tool, its output appended to the probe log after a "$ command" line.
ToolVerdict RunTool(const Tool& tool, const std::vector<std::string>& prefix, const ProbeLog& log,
                    std::chrono::milliseconds timeout) {
  ChildOptions o;
  o.argv = prefix;
  o.argv.insert(o.argv.end(), tool.argv.begin(), tool.argv.end());
  o.output = log.path();
  o.stop_grace = std::chrono::milliseconds(1'000);
  o.reap_timeout = std::chrono::milliseconds(2'000);
  auto start = log.Append("$ " + Joined(o.argv) + "\n");
  if (!start.ok()) return {SyncVerdict::kNoAnswer, start.error().message};
  auto outcome = RunChild(o, timeout);
  if (!outcome.ok()) {
    (void)log.Append("(" + outcome.error().message + ")\n");
    return {SyncVerdict::kNoAnswer, "not installed"};
  }
  std::string output = log.ReadFrom(*start);
  if (outcome->stop_signal) {
    (void)log.Append(fmt::format("(interrupted by signal {}; stopped)\n", outcome->stop_signal));
    return {SyncVerdict::kNoAnswer, "interrupted"};
  }
  if (outcome->timed_out) {
    (void)log.Append(fmt::format("(no answer within {} ms; stopped)\n", timeout.count()));
    return {SyncVerdict::kNoAnswer, fmt::format("no answer within {} ms", timeout.count())};
  }
  int code = outcome->ShellStatus();
  (void)log.Append(fmt::format("(exit code {})\n", code));
  return tool.parse(code, output);
}

}  // namespace

ToolVerdict ParseTimedatectl(int exit_code, std::string_view output) {
  // Line by line: a launcher (srun) may add its own lines to the combined output.
  std::istringstream in{std::string(output)};
  for (std::string line; exit_code == 0 && std::getline(in, line);) {
    std::string_view v = Trim(line);
    if (v == "yes") return {SyncVerdict::kSynced, "NTPSynchronized=yes"};
    if (v == "no") return {SyncVerdict::kNotSynced, "NTPSynchronized=no"};
  }
  return NoAnswer(exit_code, output);
}

ToolVerdict ParseChronycTracking(int exit_code, std::string_view output) {
  if (exit_code != 0) return NoAnswer(exit_code, output);
  std::istringstream in{std::string(output)};
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos ||
        Trim(std::string_view(line).substr(0, colon)) != "Leap status")
      continue;
    std::string value(Trim(std::string_view(line).substr(colon + 1)));
    auto verdict = value == "Not synchronised" ? SyncVerdict::kNotSynced : SyncVerdict::kSynced;
    return {verdict, "Leap status: " + value};
  }
  return NoAnswer(exit_code, output);
}

namespace {

// An `ntpq -pn` peer line: a tally code (' ', x . - + # * o) then remote, refid, st, t, when, poll,
// reach, delay, offset, jitter. "***Request timed out" and other messages are not peer lines.
std::optional<std::pair<char, std::string>> NtpqPeer(const std::string& line) {
  if (line.size() < 2 || std::string_view(" x.-+#*o").find(line[0]) == std::string_view::npos ||
      line[1] == '*' || line[1] == ' ')
    return std::nullopt;
  std::istringstream fields(line.substr(1));
  std::vector<std::string> f;
  for (std::string w; fields >> w;) f.push_back(w);
  if (f.size() < 10) return std::nullopt;
  return std::make_pair(line[0], f[0]);
}

}  // namespace

ToolVerdict ParseNtpqPeers(int exit_code, std::string_view output) {
  if (exit_code != 0) return NoAnswer(exit_code, output);
  std::istringstream in{std::string(output)};
  bool peers = false;
  for (std::string line; std::getline(in, line);) {
    auto peer = NtpqPeer(line);
    if (!peer) continue;
    peers = true;
    if (peer->first == '*' || peer->first == 'o')  // 'o': the system peer, PPS-disciplined
      return {SyncVerdict::kSynced, "system peer " + peer->second};
  }
  if (peers) return {SyncVerdict::kNotSynced, "no system peer (no line starting with '*' or 'o')"};
  return NoAnswer(exit_code, output);
}

std::string LocalHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

ClockSyncResult ProbeClockSync(const std::string& hostname, const std::vector<std::string>& prefix,
                               const fs::path& log_dir, std::chrono::milliseconds timeout) {
  std::string name = "clock_sync_" + FileSafe(hostname) + ".out";
  ClockSyncResult r{hostname, false, "", log_dir / name};
  // The log directory as named; the log itself is never a symbolic link (issue 13): a refused one
  // leaves the clock unverified, with the reason naming it.
  auto dir = sys::Dir::OpenRoot(log_dir, /*create=*/false);
  auto fresh =
      dir.ok() ? dir->OpenFile(name, sys::OpenMode::kTruncate) : Result<sys::UniqueFd>(dir.error());
  if (!fresh.ok()) {
    r.detail = fresh.error().message;
    return r;
  }
  fresh->reset();
  ProbeLog log(*dir, name);
  for (const auto& tool : Tools()) {
    ToolVerdict v = RunTool(tool, prefix, log, timeout);
    if (v.verdict == SyncVerdict::kSynced) {
      r.verified = true;
      r.detail = std::string(tool.name) + ": " + v.detail;
      return r;
    }
    r.detail += (r.detail.empty() ? "" : "; ") + std::string(tool.name) + ": " + v.detail;
    if (v.detail == "interrupted") break;
  }
  return r;
}

std::vector<ClockSyncResult> CheckClockSync(const CollectConfig& c, const fs::path& log_dir) {
  constexpr std::chrono::milliseconds kToolTimeout{10'000};
  struct Target {
    std::string hostname;
    std::vector<std::string> prefix;
  };
  std::vector<Target> targets = {{LocalHostname(), {}}};
  if (c.exporter.launch == LaunchMode::kSrun)
    for (const auto& ep : c.endpoints)
      if (ep.hostname != targets[0].hostname)  // the head, already probed without srun
        targets.push_back({ep.hostname, SrunPrefix({ep.hostname}, HetGroupOf(c, ep.hostname))});
  // Nodes in parallel (at most 16 at a time), each node's tools in order.
  std::vector<ClockSyncResult> out(targets.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < targets.size();)
      out[i] = ProbeClockSync(targets[i].hostname, targets[i].prefix, log_dir, kToolTimeout);
  };
  std::vector<std::thread> pool;
  for (size_t n = 0; n < std::min<size_t>(16, targets.size()); ++n) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace gpulse::power
