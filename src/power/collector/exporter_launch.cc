#include "power/collector/exporter_launch.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "power/collector/child_process.h"

namespace gpulse::power {
namespace fs = std::filesystem;
namespace {

std::string Replace(std::string text, std::string_view what, std::string_view with) {
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += with.size())
    text.replace(at, what.size(), with);
  return text;
}

// The command's words with the placeholders filled in (placeholders may sit inside a word).
std::vector<std::string> CommandWords(const CollectConfig& c, int port, std::string_view host) {
  auto words = SplitCommand(c.exporter.command);
  std::vector<std::string> out = words.ok() ? *words : std::vector<std::string>{};
  for (auto& w : out) w = Replace(Replace(w, "{port}", std::to_string(port)), "{hostname}", host);
  return out;
}

std::string HowItEnded(const ChildOutcome& o) {
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (o.exit_code) return fmt::format("exit code {} at unix {:.3f}", *o.exit_code, now);
  if (o.term_signal) return fmt::format("signal {} at unix {:.3f}", *o.term_signal, now);
  return fmt::format("an unknown status at unix {:.3f}", now);
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

std::string FileSafe(std::string_view name) {
  std::string out(name);
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-')
      ch = '_';
  if (out.empty() || out == "." || out == "..") return "_";
  return out;
}

Result<std::vector<std::string>> SplitCommand(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    if (ch == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // line continuation
      continue;
    }
    in_word = true;
    if (ch == '\\') {
      if (++i == text.size()) return InvalidArgument("the command ends with a lone backslash");
      word += text[i];
    } else if (ch == '\'') {
      size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return InvalidArgument("unterminated ' quote");
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (ch == '"') {
      for (++i;; ++i) {
        if (i == text.size()) return InvalidArgument("unterminated \" quote");
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
          ++i;  // line continuation
          continue;
        }
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos)
          ++i;
        word += text[i];
      }
    } else {
      word += ch;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return InvalidArgument("the command has no words");
  return words;
}

std::optional<int64_t> HetGroupOf(const CollectConfig& c, const std::string& hostname) {
  for (const auto& d : c.topology.devices)
    if (d.key.hostname == hostname)
      for (const auto& a : d.assignments)
        if (a.het_group) return a.het_group;
  return std::nullopt;
}

std::vector<std::string> SrunPrefix(const std::vector<std::string>& hostnames,
                                    std::optional<int64_t> het_group) {
  const char* srun = std::getenv("GPULSE_SRUN");
  std::string nodes;
  for (const auto& h : hostnames) nodes += (nodes.empty() ? "" : ",") + h;
  std::vector<std::string> argv = {srun && *srun ? srun : "srun",
                                   "--overlap",
                                   fmt::format("--nodes={}", hostnames.size()),
                                   fmt::format("--ntasks={}", hostnames.size()),
                                   "--ntasks-per-node=1",
                                   "--nodelist=" + nodes};
  if (het_group) argv.push_back(fmt::format("--het-group={}", *het_group));
  return argv;
}

std::vector<LaunchSpec> PlanExporterLaunch(const CollectConfig& c, const fs::path& log_dir) {
  std::vector<LaunchSpec> out;
  if (c.exporter.launch == LaunchMode::kLocal) {
    for (const auto& ep : c.endpoints)
      out.push_back({ep.hostname,
                     {ep.hostname},
                     CommandWords(c, ep.port, ep.hostname),
                     log_dir / ("telemetry_dcgm_exporter." + FileSafe(ep.hostname) + ".out")});
  } else if (c.exporter.launch == LaunchMode::kSrun) {
    std::map<std::optional<int64_t>, std::vector<std::string>> groups;
    for (const auto& ep : c.endpoints) groups[HetGroupOf(c, ep.hostname)].push_back(ep.hostname);
    for (const auto& [group, hosts] : groups) {
      LaunchSpec spec;
      spec.label = group ? fmt::format("g{}", *group) : "all";
      spec.hostnames = hosts;
      spec.argv = SrunPrefix(hosts, group);
      spec.argv.push_back("--kill-on-bad-exit=1");
      spec.argv.insert(spec.argv.end(), c.exporter.srun_args.begin(), c.exporter.srun_args.end());
      auto words = CommandWords(c, c.exporter.port, "");
      spec.argv.insert(spec.argv.end(), words.begin(), words.end());
      spec.output = log_dir / (group ? fmt::format("telemetry_dcgm_exporter.g{}.out", *group)
                                     : std::string("telemetry_dcgm_exporter.out"));
      out.push_back(std::move(spec));
    }
  }
  return out;
}

ExporterProcesses::~ExporterProcesses() {
  StopWatching();
  StopAll(std::chrono::milliseconds(5'000));
}

std::vector<std::string> ExporterProcesses::Launch(const std::vector<LaunchSpec>& specs) {
  std::vector<std::string> failures;
  for (const auto& spec : specs) {
    ChildOptions o;
    o.argv = spec.argv;
    o.output = spec.output;
    auto pid = SpawnChild(o);
    if (!pid.ok()) {
      failures.push_back(fmt::format("exporter {}: {}", spec.label, pid.error().message));
      continue;
    }
    std::lock_guard lock(mu_);
    procs_.push_back({spec, *pid, false, ""});
  }
  return failures;
}

std::string ExporterProcesses::Describe() const {
  std::string out;
  for (const auto& p : procs_)
    out += fmt::format("launched exporter {} (pid {}): {}; output in {}\n", p.spec.label, p.pid,
                       Joined(p.spec.argv), p.spec.output.string());
  return out;
}

bool ExporterProcesses::AnyEnded() {
  std::lock_guard lock(mu_);
  return std::any_of(procs_.begin(), procs_.end(), [](const Proc& p) { return p.ended; });
}

void ExporterProcesses::PollLocked() {
  for (auto& p : procs_) {
    if (p.ended) continue;
    if (auto outcome = PollChild(p.pid)) {
      p.ended = true;
      p.how = HowItEnded(*outcome);
    }
  }
}

void ExporterProcesses::Watch(std::chrono::milliseconds period) {
  if (procs_.empty() || supervisor_.joinable()) return;
  period = std::max(period, std::chrono::milliseconds(10));
  stop_ = false;
  supervisor_ = std::thread([this, period] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      PollLocked();
      cv_.wait_for(lock, period, [this] { return stop_; });
    }
  });
}

std::vector<std::string> ExporterProcesses::StopWatching() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  std::lock_guard lock(mu_);
  PollLocked();
  std::vector<std::string> out;
  for (auto& p : procs_)
    if (p.ended && !p.how.empty()) {
      out.push_back(
          fmt::format("exporter {} (pid {}) ended with {} while the collector ran; see {}",
                      p.spec.label, p.pid, p.how, p.spec.output.string()));
      p.how.clear();  // reported once
    }
  return out;
}

void ExporterProcesses::StopAll(std::chrono::milliseconds grace) {
  std::lock_guard lock(mu_);
  auto running = [this] {
    PollLocked();
    return std::any_of(procs_.begin(), procs_.end(), [](const Proc& p) { return !p.ended; });
  };
  auto wait_until = [&](std::chrono::steady_clock::time_point deadline) {
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  auto signal_all = [this](int sig) {
    for (auto& p : procs_)
      if (!p.ended) ::kill(-p.pid, sig);
  };
  signal_all(SIGTERM);  // one shared grace period, not one per process
  wait_until(std::chrono::steady_clock::now() + grace);
  signal_all(SIGKILL);
  wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  for (auto& p : procs_) {
    p.ended = true;  // stopped by us: never reported as an exit
    p.how.clear();
  }
}

}  // namespace gpulse::power
