#include "power/clock_sync.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "power/child_process.h"
#include "power/exporter_launch.h"

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

std::string ReadFrom(const fs::path& path, std::streamoff offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Runs one tool, its output appended to `out_file` after a "$ command" line.
ToolVerdict RunTool(const Tool& tool, const std::vector<std::string>& prefix,
                    const fs::path& out_file, std::chrono::milliseconds timeout) {
  ChildOptions o;
  o.argv = prefix;
  o.argv.insert(o.argv.end(), tool.argv.begin(), tool.argv.end());
  o.output = out_file;
  o.reap_timeout = std::chrono::milliseconds(2'000);
  std::streamoff start = 0;
  {
    std::ofstream log(out_file, std::ios::app);
    log << "$ " << Joined(o.argv) << "\n";
    log.flush();
    start = log.tellp();
  }
  auto outcome = RunChild(o, timeout);
  std::ofstream log(out_file, std::ios::app);
  if (!outcome.ok()) {
    log << "(" << outcome.error().message << ")\n";
    return {SyncVerdict::kNoAnswer, "not installed"};
  }
  std::string output = ReadFrom(out_file, start);
  if (outcome->force_killed) {
    log << "(no answer within " << timeout.count() << " ms; killed)\n";
    return {SyncVerdict::kNoAnswer, fmt::format("no answer within {} ms", timeout.count())};
  }
  int code = outcome->ShellStatus();
  log << "(exit code " << code << ")\n";
  return tool.parse(code, output);
}

}  // namespace

ToolVerdict ParseTimedatectl(int exit_code, std::string_view output) {
  std::string_view v = Trim(output);
  if (exit_code == 0 && v == "yes") return {SyncVerdict::kSynced, "NTPSynchronized=yes"};
  if (exit_code == 0 && v == "no") return {SyncVerdict::kNotSynced, "NTPSynchronized=no"};
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

ToolVerdict ParseNtpqPeers(int exit_code, std::string_view output) {
  if (exit_code != 0) return NoAnswer(exit_code, output);
  std::istringstream in{std::string(output)};
  bool peers = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.find("remote") != std::string::npos || line.rfind("==", 0) == 0)
      continue;
    peers = true;
    if (line[0] == '*') {
      std::string_view peer = Trim(std::string_view(line).substr(1));
      return {SyncVerdict::kSynced, "system peer " + std::string(peer.substr(0, peer.find(' ')))};
    }
  }
  if (peers) return {SyncVerdict::kNotSynced, "no system peer (no line starting with '*')"};
  return NoAnswer(exit_code, output);
}

std::string LocalHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

ClockSyncResult ProbeClockSync(const std::string& hostname, const std::vector<std::string>& prefix,
                               const fs::path& log_dir, std::chrono::milliseconds timeout) {
  ClockSyncResult r{hostname, false, "", log_dir / ("clock_sync_" + FileSafe(hostname) + ".out")};
  { std::ofstream truncate(r.output, std::ios::trunc); }
  for (const auto& tool : Tools()) {
    ToolVerdict v = RunTool(tool, prefix, r.output, timeout);
    if (v.verdict == SyncVerdict::kSynced) {
      r.verified = true;
      r.detail = std::string(tool.name) + ": " + v.detail;
      return r;
    }
    r.detail += (r.detail.empty() ? "" : "; ") + std::string(tool.name) + ": " + v.detail;
  }
  return r;
}

std::vector<ClockSyncResult> CheckClockSync(const CollectConfig& c, const fs::path& log_dir) {
  constexpr std::chrono::milliseconds kToolTimeout{10'000};
  std::vector<ClockSyncResult> out;
  out.push_back(ProbeClockSync(LocalHostname(), {}, log_dir, kToolTimeout));
  if (c.exporter.launch == LaunchMode::kSrun)
    for (const auto& ep : c.endpoints)
      out.push_back(ProbeClockSync(ep.hostname,
                                   SrunPrefix({ep.hostname}, HetGroupOf(c, ep.hostname)), log_dir,
                                   kToolTimeout));
  return out;
}

}  // namespace gpulse::power
