// `gpulse top`: a live per-GPU view in the terminal, fed by a live source (live_source.h: a node
// agent's stream, sharing its one read per interval with every other viewer, or reads of its own).
// The screen comes from the pure renderer (top_render.h); this file owns the options, the terminal
// and the read loop.
//
// Modes:
//   - ncurses, when stdin and stdout are terminals and $TERM names one with cursor addressing;
//   - plain text otherwise (TERM=dumb, a pipe, a terminal ncurses cannot drive, a background job):
//     one frame per interval as text, separated by a blank line, until q (when stdin is a terminal
//     in the foreground) or a signal;
//   - --once: one frame as text (width $COLUMNS, else 100) and exit; with --json the frame's
//     JSON as the source gave it.
// NO_COLOR (set to anything) turns colours off; bold and reverse video stay.
//
// The loop calls the source with a short timeout (kPollTimeout) so keys stay responsive, and draws
// only on a new frame, a key that changed the view, a resize, or a change of connection. It draws
// with erase() and refresh(), so ncurses sends only what changed.
//
// When the source fails mid-way (the agent stopped, the stream broke) the last frame stays on
// screen, the status line says "disconnected: ..." and the source is reopened every second until it
// answers again (without --host or --direct, a reopen may fall back to direct reads, which the
// header then says). --once exits 1 instead. SIGINT and SIGTERM end every mode cleanly, with the
// terminal restored, exit status 0; so does q.
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/agent_client.h"
#include "cli/gpu_options.h"
#include "cli/live_source.h"
#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "cli/top_curses.h"
#include "cli/top_model.h"
#include "cli/top_render.h"

namespace gpulse::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollTimeout{150};
constexpr milliseconds kRetryPeriod{1000};
constexpr int kDefaultWidth = 100;

struct TopOptions {
  std::string host;
  bool direct = false;
  gpu::BackendOptions gpu;
  bool backend_flags = false;
  std::string procfs_root;
  int delay_ms = 1000;
  bool once = false;
  bool json = false;
  std::string sort = "memory";
};

std::atomic<bool> g_stop{false};
extern "C" void OnTopSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnTopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a wait in the source must wake up
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A closed terminal or a quit key ends the run the same way, with the terminal restored; a
  // closed pipe (`top | head`) shows up as a failed write, which ends the plain-text loop, instead
  // of killing the process.
  sigaction(SIGHUP, &sa, nullptr);
  sigaction(SIGQUIT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool NoColor() { return std::getenv("NO_COLOR") != nullptr; }

// $COLUMNS when it is a positive number.
std::optional<int> EnvColumns() {
  const char* env = std::getenv("COLUMNS");
  if (env == nullptr) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || v <= 0 || v >= 10000) return std::nullopt;
  return static_cast<int>(v);
}

// $COLUMNS, else the terminal's width, else kDefaultWidth.
int TextWidth() {
  if (auto columns = EnvColumns()) return *columns;
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return kDefaultWidth;
}

LiveSourceOptions SourceOptions(const TopOptions& o) {
  LiveSourceOptions s;
  s.host = o.host;
  s.direct = o.direct;
  s.gpu = o.gpu;
  s.backend_flags = o.backend_flags;
  s.procfs_root = o.procfs_root;
  s.interval_ms = o.delay_ms;
  return s;
}

// The live source, reopened (at most once per kRetryPeriod) after it fails.
class Feed {
 public:
  Feed(LiveSourceOptions options, std::unique_ptr<LiveSource> source)
      : options_(std::move(options)), source_(std::move(source)), describe_(source_->Describe()) {}

  bool connected() const { return source_ != nullptr; }
  const std::string& describe() const { return describe_; }
  // "" while connected, else "disconnected: WHY (retrying every second)".
  const std::string& status() const { return status_; }

  // The next frame, waiting at most `timeout`. Without a source, tries to reopen it when due and
  // returns at once (the caller waits for keys meanwhile).
  std::optional<nlohmann::json> Next(milliseconds timeout) {
    if (!source_) {
      Reopen();
      return std::nullopt;
    }
    auto next = source_->Next(timeout);
    if (next) return std::move(*next);
    Lost(next.error().message);
    return std::nullopt;
  }

 private:
  void Lost(const std::string& why) {
    source_.reset();
    status_ = "disconnected: " + why + " (retrying every second)";
    retry_at_ = Clock::now() + kRetryPeriod;
  }

  void Reopen() {
    if (Clock::now() < retry_at_) return;
    auto opened = OpenLiveSource(options_);
    if (!opened) {
      Lost(opened.error().message);
      return;
    }
    source_ = std::move(*opened);
    describe_ = source_->Describe();
    status_.clear();
  }

  LiveSourceOptions options_;
  std::unique_ptr<LiveSource> source_;
  std::string describe_;
  std::string status_;
  Clock::time_point retry_at_{};
};

// What the view shows: the frame on screen (frozen while paused), the newest one, the view state.
struct Session {
  std::optional<top::FrameModel> shown;
  std::optional<top::FrameModel> latest;
  top::ViewState view;
  std::string frame_error;  // the last frame that could not be read

  // Takes a new frame from the source; true when what is shown changed.
  bool Take(const nlohmann::json& json) {
    auto model = top::ParseFrame(json);
    if (!model) {
      bool changed = frame_error != model.error().message;
      frame_error = model.error().message;
      return changed;
    }
    frame_error.clear();
    latest = std::move(*model);
    if (view.paused && shown) return false;
    shown = latest;
    return true;
  }

  top::KeyAction Key(int key) {
    const top::FrameModel* frame = shown ? &*shown : nullptr;
    bool was_paused = view.paused;
    top::KeyAction action = top::ApplyKey(key, frame, view);
    if (was_paused && !view.paused && latest) shown = latest;  // resume at the newest frame
    return action;
  }

  void SetStatus(const Feed& feed) {
    view.status = !feed.status().empty() ? feed.status()
                  : !frame_error.empty() ? "bad frame: " + frame_error
                                         : std::string();
  }
};

std::vector<top::Line> Waiting(const Feed& feed, const top::ViewState& view, int width) {
  std::string text = view.status.empty()
                         ? "gpulse top: waiting for the first frame from " + feed.describe()
                         : "gpulse top: " + view.status;
  top::Line line;
  line.text = text.substr(0, static_cast<std::size_t>(std::max(0, width)));
  return {line};
}

// ---- plain text (dumb terminals, pipes) ----

// Keys from stdin without waiting for Enter, when stdin is a terminal; restored on destruction.
class RawStdin {
 public:
  RawStdin() {
    if (!isatty(STDIN_FILENO)) return;
    // In the background, changing or reading the terminal would stop the process (SIGTTOU,
    // SIGTTIN): no keys then, frames until a signal.
    if (!top::InForeground()) {
      open_ = false;
      return;
    }
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));  // ISIG stays: Ctrl-C still signals
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawStdin() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawStdin(const RawStdin&) = delete;
  RawStdin& operator=(const RawStdin&) = delete;

  bool open() const { return open_; }

  // One key, waiting at most `timeout`; -1 when none. End of input closes stdin for good.
  int Key(milliseconds timeout) {
    if (!open_) {
      if (timeout.count() > 0) std::this_thread::sleep_for(timeout);
      return -1;
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return -1;
    unsigned char c = 0;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open_ = false;
    return n == 1 ? c : -1;
  }

 private:
  termios saved_{};
  bool active_ = false;
  bool open_ = true;
};

// False when the frame could not be written: the reader is gone (a closed pipe, a hung-up terminal).
bool PrintFrame(const top::FrameModel& frame, const top::ViewState& view, const std::string& source,
                bool first) {
  top::Screen screen{TextWidth(), 0, false, top::Utf8Locale(), source};
  std::string text = top::PlainText(top::Render(frame, view, screen));
  std::fputs(first ? "" : "\n", stdout);
  std::fputs(text.c_str(), stdout);
  return std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
}

int RunPlain(Feed& feed, Session& s) {
  RawStdin keys;
  bool first = true;
  std::string reported;
  while (!g_stop.load()) {
    for (int k = keys.Key(milliseconds(0)); k >= 0; k = keys.Key(milliseconds(0))) {
      if (s.Key(k) == top::KeyAction::kQuit) return kExitOk;
    }
    bool was_connected = feed.connected();
    auto json = feed.Next(kPollTimeout);
    if (json && s.Take(*json) && !s.view.paused) {
      // Nobody reads any more (`top | head` done, the terminal gone): the run is over.
      if (!PrintFrame(*s.shown, s.view, feed.describe(), first)) return kExitOk;
      first = false;
    }
    s.SetStatus(feed);
    if (s.view.status != reported) {
      if (!s.view.status.empty()) fmt::print(stderr, "gpulse top: {}\n", s.view.status);
      reported = s.view.status;
    }
    if (!feed.connected() && !was_connected) {
      int k = keys.Key(kPollTimeout);  // wait here: the feed returned at once
      if (k >= 0 && s.Key(k) == top::KeyAction::kQuit) return kExitOk;
    }
  }
  return kExitOk;
}

// ---- ncurses ----

std::vector<top::Line> Screenful(const top::Terminal& c, const Feed& feed, const Session& s) {
  if (!s.shown) return Waiting(feed, s.view, c.width());
  top::Screen screen{c.width(), c.height(), c.color(), c.utf8(), feed.describe()};
  return top::Render(*s.shown, s.view, screen);
}

// Handles the keys waiting (or the first within `timeout`); false on q.
bool HandleKeys(top::Terminal& c, Session& s, milliseconds timeout, bool& dirty, bool& resized) {
  for (int k = c.Key(static_cast<int>(timeout.count())); k != top::kNoKey; k = c.Key(0)) {
    if (k == top::kResizeKey) {
      dirty = resized = true;
      continue;
    }
    top::KeyAction a = s.Key(k);
    if (a == top::KeyAction::kQuit) return false;
    if (a == top::KeyAction::kChanged) dirty = true;
  }
  return true;
}

int RunCurses(top::Terminal& c, Feed& feed, Session& s) {
  bool dirty = true, resized = true;
  while (!g_stop.load()) {
    if (dirty) {
      c.Draw(Screenful(c, feed, s), resized);
      dirty = resized = false;
    }
    if (!HandleKeys(c, s, milliseconds(0), dirty, resized)) return kExitOk;
    if (dirty) continue;  // draw the key's effect before waiting on the source
    bool was_connected = feed.connected();
    auto json = feed.Next(kPollTimeout);
    if (json && s.Take(*json)) dirty = true;
    std::string before = s.view.status;
    s.SetStatus(feed);
    if (s.view.status != before) dirty = true;
    if (!feed.connected() && !was_connected) {
      if (!HandleKeys(c, s, kPollTimeout, dirty, resized)) return kExitOk;
    }
  }
  return kExitOk;
}

// ---- --once ----

// The first frame, waiting at most a few intervals; an error when none comes or the source fails.
Result<nlohmann::json> FirstFrame(LiveSource& source, int delay_ms) {
  auto deadline =
      Clock::now() + milliseconds(std::max(10'000, 3 * delay_ms)) + milliseconds(20'000);
  while (!g_stop.load() && Clock::now() < deadline) {
    auto next = source.Next(kPollTimeout);
    if (!next) return next.error();
    if (*next) return std::move(**next);
  }
  if (g_stop.load()) return Unavailable("interrupted before the first frame");
  return Unavailable("no frame from " + source.Describe() + " in time");
}

int RunOnce(LiveSource& source, const TopOptions& o, const top::ViewState& view) {
  auto json = FirstFrame(source, o.delay_ms);
  if (!json) {
    fmt::print(stderr, "gpulse top: {}\n", top::CleanText(json.error().message));
    return kExitFailure;
  }
  if (o.json) {
    // Process names are the processes' own: invalid UTF-8 is replaced, never thrown on.
    fmt::print("{}\n", json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return kExitOk;
  }
  auto model = top::ParseFrame(*json);
  if (!model) {
    fmt::print(stderr, "gpulse top: bad frame ({}): {}\n", top::CleanText(source.Describe()),
               top::CleanText(model.error().message));
    return kExitFailure;
  }
  top::Screen screen{EnvColumns().value_or(kDefaultWidth), 0, false, top::Utf8Locale(),
                     source.Describe()};
  std::fputs(top::PlainText(top::Render(*model, view, screen)).c_str(), stdout);
  return kExitOk;
}

int Run(const TopOptions& o) {
  std::setlocale(LC_ALL, "");
  InstallSignalHandlers();
  top::ViewState view;
  view.sort = top::ParseSortKey(o.sort).value_or(top::SortKey::kMemory);

  LiveSourceOptions options = SourceOptions(o);
  auto source = OpenLiveSource(options);
  if (!source) {
    // The message may carry a server's answer: no control bytes reach the terminal.
    fmt::print(stderr, "gpulse top: {}\n", top::CleanText(source.error().message));
    return source.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  if (o.once) return RunOnce(**source, o, view);

  Feed feed(options, std::move(*source));
  Session session;
  session.view = view;
  if (top::TerminalUsable()) {
    if (auto terminal = top::Terminal::Open(!NoColor())) return RunCurses(*terminal, feed, session);
  }
  return RunPlain(feed, session);
}

}  // namespace

Subcommand SetupTop(CLI::App& parent) {
  auto o = std::make_shared<TopOptions>();
  CLI::App* app = parent.add_subcommand(
      "top",
      "A live view of the GPUs: bars, sparklines and processes (through the node agent "
      "when one runs)");
  AddHostOption(*app, o->host);
  app->add_flag("--direct", o->direct, "Read the GPUs directly, never through an agent");
  AddGpuOptions(*app, o->gpu);
  // A server, or reads of our own: not both.
  for (const char* local : {"--direct", "--simulate", "--nvml-lib"}) {
    app->get_option("--host")->excludes(app->get_option(local));
  }
  AddProcfsOption(*app, o->procfs_root);
  app->add_option("-d,--delay", o->delay_ms, "Refresh period of direct reads in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(100, 60'000));
  CLI::Option* once = app->add_flag("--once", o->once, "Print one frame as plain text and exit");
  app->add_flag("--json", o->json, "With --once: print the frame's JSON as the source gave it")
      ->needs(once);
  app->add_option("--sort", o->sort, "Process list order: memory, sm, pid or gpu")
      ->capture_default_str()
      ->check(CLI::IsMember({"memory", "sm", "pid", "gpu"}));
  return {app, [o, app] {
            o->backend_flags = app->count("--simulate") > 0 || app->count("--nvml-lib") > 0;
            return Run(*o);
          }};
}

}  // namespace gpulse::cli
