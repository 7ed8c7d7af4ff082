// `gpulse top`'s pure renderer (top_render.h): the frame model and view state in, screen lines with
// attribute spans out. This file lays out the frame (header, status line, panels, process list,
// footer, help); the panels are drawn by top_panel.cc.
#include "cli/top_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/top_renderer.h"

namespace gpulse::cli::top {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kMinProcessRows = 3;  // kept under the panels when choosing a panel style

}  // namespace

Line Renderer::HeaderLine() const {
  LineBuilder b = Builder();
  b.Add("gpulse top", kBold);
  b.Add("  " + Clean(frame_.hostname.empty() ? std::string("?") : frame_.hostname), kBold);
  std::size_t gpus = GpuCount(frame_);
  b.Add(fmt::format("  {} GPU{}", gpus, gpus == 1 ? "" : "s"));
  if (frame_.simulated) {
    b.Add("  simulated: " + CleanOr(frame_.scenario, "?"), ToneStyle(Tone::kWarn));
  }
  if (frame_.interval_seconds > 0) b.Add(fmt::format("  every {:g} s", frame_.interval_seconds));
  b.Add(fmt::format("  seq {}", frame_.seq));
  if (frame_.timestamp_unix > 0) {
    std::time_t t = static_cast<std::time_t>(frame_.timestamp_unix);
    std::tm tm{};
    localtime_r(&t, &tm);
    char when[16];
    std::strftime(when, sizeof when, "%H:%M:%S", &tm);
    b.Add(std::string("  ") + when);
  }
  if (frame_.viewers) b.Add(fmt::format("  viewers {}", *frame_.viewers));
  if (frame_.dropped_frames_total > 0) {
    b.Add(fmt::format("  dropped {}", frame_.dropped_frames_total), ToneStyle(Tone::kWarn));
  }
  // Last: the longest part, and the one that changes least.
  std::string source = Clean(screen_.source.empty() ? frame_.source : screen_.source);
  bool named = source.rfind("via ", 0) == 0 || source.rfind("direct", 0) == 0;
  b.Add(named ? "  " + source : "  via " + source);
  return b.Take();
}

Line Renderer::StatusLine() const {
  LineBuilder b = Builder();
  if (view_.paused) b.Add("PAUSED", {true, true, Tone::kWarn});
  if (view_.paused && !view_.status.empty()) b.Add("  ");
  if (!view_.status.empty()) b.Add(Clean(view_.status), ToneStyle(Tone::kCrit, true));
  return b.Take();
}

Line Renderer::FooterLine() const {
  LineBuilder b = Builder();
  const std::pair<const char*, std::string> keys[] = {
      {"q", "quit"},    {"s", std::string("sort:") + SortKeyName(view_.sort)},
      {"r", "reverse"}, {"0-9", "GPU"},
      {"a", "all"},     {"p", view_.paused ? "resume" : "pause"},
      {"h", "help"},
  };
  bool first = true;
  for (const auto& [key, what] : keys) {
    if (!first) b.Add("  ");
    first = false;
    b.Add(key, {true, true, Tone::kNone});
    b.Add(" " + what);
  }
  return b.Take();
}

std::vector<Line> Renderer::HelpLines() const {
  static const char* const kHelp[][2] = {
      {"q", "quit"},
      {"s", "sort the processes by the next column: memory, SM%, PID, GPU"},
      {"r", "reverse the sort order"},
      {"0-9", "select that GPU: its processes only, its panel marked"},
      {"a", "all GPUs"},
      {"space, p", "pause (freeze the frame) or resume"},
      {"h, ?", "show or hide this help (Esc hides it too)"},
  };
  std::vector<Line> out;
  LineBuilder title = Builder();
  title.Add("Keys", kBold);
  out.push_back(title.Take());
  for (const auto& [key, what] : kHelp) {
    LineBuilder b = Builder();
    b.Add("  ");
    b.Add(key, kBold);
    b.PadTo(14);
    b.Add(what);
    out.push_back(b.Take());
  }
  return out;
}

// The lines the process list wants at least: a blank line, its title and header, a few rows.
int Renderer::ProcessReserve() const {
  int rows = static_cast<int>(ListedProcesses(frame_, view_).size());
  return 3 + std::max(1, std::min(rows, kMinProcessRows)) + (frame_.process_note ? 1 : 0);
}

Line Renderer::ProcessHeader() const {
  LineBuilder b = Builder();
  const struct {
    const char* text;
    int width;
    bool right;
    std::optional<SortKey> key;
  } kColumns[] = {
      {"PID", 7, true, SortKey::kPid},     {"USER", 10, false, std::nullopt},
      {"GPU", 6, false, SortKey::kGpu},    {"MEM", 10, true, SortKey::kMemory},
      {"SM%", 4, true, SortKey::kSm},      {"CONTAINER/POD", 14, false, std::nullopt},
      {"COMMAND", 0, false, std::nullopt},
  };
  bool first = true;
  for (const auto& c : kColumns) {
    if (!first) b.Add(" ");
    first = false;
    std::string text =
        c.right ? fmt::format("{:>{}}", c.text, c.width) : fmt::format("{:<{}}", c.text, c.width);
    bool sorted = c.key && *c.key == view_.sort;
    b.Add(text, {true, sorted, Tone::kNone});
  }
  return b.Take();
}

// The container id, else the pod UID, shortened to the column.
std::string Renderer::ContainerText(const ProcessModel& p) const {
  std::string id = p.container ? Clean(*p.container) : p.pod ? Clean(*p.pod) : "-";
  if (id.size() <= 14) return id;
  return screen_.utf8 ? id.substr(0, 13) + "\u2026" : id.substr(0, 11) + "...";
}

Line Renderer::ProcessRow(const ProcessModel& p) const {
  std::string gpu =
      p.gpu_instance_id ? fmt::format("{}/{}", p.gpu, *p.gpu_instance_id) : std::to_string(p.gpu);
  std::string mem =
      p.memory_bytes ? fmt::format("{} MiB", static_cast<long long>(*p.memory_bytes / kMiB)) : "-";
  std::string sm = p.sm_percent ? fmt::format("{}", Round(*p.sm_percent)) : "-";
  std::string text =
      fmt::format("{:>7} {:<10} {:<6} {:>10} {:>4} {:<14} {}", p.pid, CleanOr(p.user).substr(0, 10),
                  gpu, mem, sm, ContainerText(p), CleanOr(p.command));
  LineBuilder b = Builder();
  b.Add(text);
  return b.Take();
}

std::vector<Line> Renderer::ProcessLines(int limit) const {
  std::vector<Line> out;
  std::vector<ProcessModel> rows = ListedProcesses(frame_, view_);
  LineBuilder title = Builder();
  title.Add("PROCESSES", kBold);
  title.Add(
      fmt::format("  {} shown  sort: {} {}", rows.size(), SortKeyName(view_.sort),
                  ((view_.sort == SortKey::kMemory || view_.sort == SortKey::kSm) != view_.reverse)
                      ? "(descending)"
                      : "(ascending)"));
  title.Add(view_.selected_gpu ? fmt::format("  GPU {} only", *view_.selected_gpu)
                               : std::string("  all GPUs"));
  out.push_back(title.Take());
  if (frame_.process_note) {
    LineBuilder note = Builder();
    note.Add(Clean(*frame_.process_note), ToneStyle(Tone::kDim));
    out.push_back(note.Take());
  }
  out.push_back(ProcessHeader());
  if (rows.empty()) {
    LineBuilder none = Builder();
    none.Add("(no GPU processes)", ToneStyle(Tone::kDim));
    out.push_back(none.Take());
    return out;
  }
  int room = limit == 0 ? static_cast<int>(rows.size())
                        : std::max(0, limit - static_cast<int>(out.size()));
  int shown =
      static_cast<int>(rows.size()) <= room ? static_cast<int>(rows.size()) : std::max(0, room - 1);
  for (int i = 0; i < shown; ++i) out.push_back(ProcessRow(rows[static_cast<std::size_t>(i)]));
  if (shown < static_cast<int>(rows.size()) && room > 0) {
    LineBuilder more = Builder();
    more.Add(fmt::format("{} {} more", Ellipsis(), rows.size() - static_cast<std::size_t>(shown)),
             ToneStyle(Tone::kDim));
    out.push_back(more.Take());
  }
  return out;
}

std::vector<Line> Renderer::Run() {
  std::vector<Line> out;
  int height = screen_.height;
  out.push_back(HeaderLine());
  bool status = view_.paused || !view_.status.empty();
  if (status) out.push_back(StatusLine());
  bool footer = height >= 3;  // the keys: only where keys work
  int body =
      height == 0 ? 0 : std::max(0, height - static_cast<int>(out.size()) - (footer ? 1 : 0));

  std::vector<Line> lines;
  if (view_.help) {
    lines = HelpLines();
  } else {
    PanelStyle style = ChooseLayout(body);
    for (const EntityModel& e : frame_.entities) Panel(e, style, lines);
    if (frame_.entities.empty()) {
      LineBuilder none = Builder();
      none.Add("(no GPUs in this frame)", ToneStyle(Tone::kDim));
      lines.push_back(none.Take());
    }
    int left = body == 0 ? 0 : body - static_cast<int>(lines.size()) - 1;
    if (body == 0 || left > 0) {
      lines.emplace_back();  // a blank line between the panels and the processes
      std::vector<Line> procs = ProcessLines(body == 0 ? 0 : left);
      lines.insert(lines.end(), std::make_move_iterator(procs.begin()),
                   std::make_move_iterator(procs.end()));
    }
  }
  if (body > 0 && static_cast<int>(lines.size()) > body)
    lines.resize(static_cast<std::size_t>(body));
  if (height > 0 && body == 0) lines.clear();
  out.insert(out.end(), std::make_move_iterator(lines.begin()),
             std::make_move_iterator(lines.end()));
  if (height > 0) {
    // Pad so the footer sits on the last line.
    while (static_cast<int>(out.size()) < height - (footer ? 1 : 0)) out.emplace_back();
    if (static_cast<int>(out.size()) > height) out.resize(static_cast<std::size_t>(height));
  }
  if (footer) out.push_back(FooterLine());
  if (height > 0 && static_cast<int>(out.size()) > height)
    out.resize(static_cast<std::size_t>(height));
  return out;
}

std::vector<Line> Render(const FrameModel& frame, const ViewState& view, const Screen& screen) {
  Screen s = screen;
  s.width = std::max(1, s.width);
  s.height = std::max(0, s.height);
  return Renderer(frame, view, s).Run();
}

}  // namespace gpulse::cli::top
