// `gpulse top`'s pure renderer (top_render.h): the frame model and view state in, screen lines with
// attribute spans out.
#include "cli/top_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace gpulse::cli::top {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kIndent = 2;       // bars and sparklines under a panel header
constexpr int kLabelWidth = 4;   // "UTIL", "MEM ", ...
constexpr int kValueWidth = 15;  // "188.0/188.0 GiB", "1000.0/1000.0 W"
constexpr int kColumnGap = 3;    // between the two columns of bars
constexpr int kItemFixed = kLabelWidth + 1 + 2 + 1 + kValueWidth;  // all but the bar itself
constexpr int kMaxBar = 60;
constexpr int kMinBarManyColumns = 10;  // the shortest bar in two or three columns
constexpr int kMinBarOneColumn = 4;
constexpr int kMaxColumns = 3;
constexpr int kMinProcessRows = 3;  // kept under the panels when choosing a panel style

// ---- text ----

// Printable ASCII only: a control byte, or a whole non-ASCII UTF-8 sequence, becomes one '?'.
std::string Clean(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    out.push_back('?');
    if (c >= 0xc0) {
      while (i + 1 < in.size() && (static_cast<unsigned char>(in[i + 1]) & 0xc0) == 0x80) ++i;
    }
  }
  return out;
}

std::string CleanOr(const std::optional<std::string>& in, std::string_view fallback = "-") {
  return in ? Clean(*in) : std::string(fallback);
}

// The first `columns` code points of `text`.
std::string_view Head(std::string_view text, int columns) {
  if (columns <= 0) return {};
  int seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) continue;
    if (seen == columns) return text.substr(0, i);
    ++seen;
  }
  return text;
}

struct Style {
  bool bold = false;
  bool reverse = false;
  Tone tone = Tone::kNone;
};

constexpr Style kPlain{};
constexpr Style kBold{true, false, Tone::kNone};

Style ToneStyle(Tone tone, bool bold = false) { return {bold, false, tone}; }

// Builds one line no wider than `width`, recording a span for every styled piece.
class LineBuilder {
 public:
  LineBuilder(int width, bool color) : width_(width), color_(color) {}

  int column() const { return column_; }
  int room() const { return width_ - column_; }

  void Add(std::string_view text, Style style = kPlain) {
    std::string_view fits = Head(text, room());
    int n = DisplayWidth(fits);
    if (n == 0) return;
    if (!color_) style.tone = Tone::kNone;
    if (style.bold || style.reverse || style.tone != Tone::kNone) {
      line_.spans.push_back(Span{column_, n, style.bold, style.reverse, style.tone});
    }
    line_.text.append(fits);
    column_ += n;
  }

  void PadTo(int column) {
    if (column > column_) Add(std::string(static_cast<std::size_t>(column - column_), ' '));
  }

  // Shows the whole line so far in reverse video (a selected panel's header), keeping the
  // pieces' own styles.
  void ReverseAll() {
    for (Span& s : line_.spans) s.reverse = true;
    line_.spans.insert(line_.spans.begin(), Span{0, column_, false, true, Tone::kNone});
  }

  Line Take() { return std::move(line_); }

 private:
  int width_;
  bool color_;
  int column_ = 0;
  Line line_;
};

// ---- numbers ----

long long Round(double v) { return std::llround(v); }

std::string PercentText(const Reading& v) { return v ? fmt::format("{}%", Round(*v)) : "N/A"; }

std::string MemoryText(const Reading& used, const Reading& total) {
  if (!used) return "N/A";
  if (!total) return fmt::format("{:.1f} GiB", *used / kGiB);
  return fmt::format("{:.1f}/{:.1f} GiB", *used / kGiB, *total / kGiB);
}

std::string PowerText(const Reading& power, const Reading& limit) {
  if (!power) return "N/A";
  if (!limit) return fmt::format("{:.1f} W", *power);
  return fmt::format("{:.1f}/{:.1f} W", *power, *limit);
}

std::string TemperatureText(const Reading& t, bool utf8) {
  if (!t) return "N/A";
  return fmt::format("{} {}", Round(*t), utf8 ? "\u00b0C" : "C");
}

std::string ClockText(const Reading& clock, const Reading& max) {
  if (!clock) return "N/A";
  if (!max) return fmt::format("{} MHz", Round(*clock));
  return fmt::format("{}/{} MHz", Round(*clock), Round(*max));
}

// ok below 80 % of the scale, warn below 95 %, crit from there.
Tone LevelTone(const Reading& value, const Reading& max) {
  if (!value || !max || *max <= 0) return Tone::kOk;
  double f = *value / *max;
  return f >= 0.95 ? Tone::kCrit : f >= 0.80 ? Tone::kWarn : Tone::kOk;
}

Tone TemperatureTone(const Reading& t) {
  if (!t) return Tone::kOk;
  return *t >= 85 ? Tone::kCrit : *t >= 75 ? Tone::kWarn : Tone::kOk;
}

// ---- panels ----

struct BarItem {
  const char* label;  // kLabelWidth columns
  Reading value, max;
  std::string text;
  Tone tone;
};

std::vector<BarItem> BarItems(const EntityModel& e, bool utf8) {
  std::vector<BarItem> items;
  items.push_back(
      {"UTIL", e.utilization_percent, 100.0, PercentText(e.utilization_percent), Tone::kOk});
  items.push_back({"MEM ", e.memory_used_bytes, e.memory_total_bytes,
                   MemoryText(e.memory_used_bytes, e.memory_total_bytes),
                   LevelTone(e.memory_used_bytes, e.memory_total_bytes)});
  items.push_back({"PWR ", e.power_watts, e.power_limit_watts,
                   PowerText(e.power_watts, e.power_limit_watts),
                   LevelTone(e.power_watts, e.power_limit_watts)});
  items.push_back({"TEMP", e.temperature_celsius, 100.0,
                   TemperatureText(e.temperature_celsius, utf8),
                   TemperatureTone(e.temperature_celsius)});
  if (e.sm_clock_mhz || e.sm_clock_max_mhz) {
    items.push_back({"SM  ", e.sm_clock_mhz, e.sm_clock_max_mhz,
                     ClockText(e.sm_clock_mhz, e.sm_clock_max_mhz), Tone::kAccent});
  }
  if (e.memory_clock_mhz || e.memory_clock_max_mhz) {
    items.push_back({"MCLK", e.memory_clock_mhz, e.memory_clock_max_mhz,
                     ClockText(e.memory_clock_mhz, e.memory_clock_max_mhz), Tone::kAccent});
  }
  return items;
}

// How a panel's bars are laid out: in how many columns, and how long each bar is.
struct Grid {
  int columns = 0;  // 0: no room for bars (compact lines only)
  int bar = 0;
};

// `columns` columns of bars at this width; columns 0 when they do not fit.
Grid GridFor(int width, int columns) {
  int bar = (width - kIndent - (columns - 1) * kColumnGap - columns * kItemFixed) / columns;
  if (bar < (columns == 1 ? kMinBarOneColumn : kMinBarManyColumns)) return {};
  return {columns, std::min(bar, kMaxBar)};
}

// The widest grid of at most two columns (the plain-text layout).
Grid WidestGrid(int width) {
  for (int columns = 2; columns >= 1; --columns) {
    if (Grid g = GridFor(width, columns); g.columns > 0) return g;
  }
  return {};
}

enum class PanelStyle { kFull, kBars, kCompact };

bool Drawable(const EntityModel& e) { return e.state == PanelState::kOk; }

int PanelLines(const EntityModel& e, PanelStyle style, const Grid& grid) {
  if (style == PanelStyle::kCompact || !Drawable(e) || grid.columns == 0) return 1;
  int items = static_cast<int>(BarItems(e, false).size());
  int lines = 1 + (items + grid.columns - 1) / grid.columns;
  if (style == PanelStyle::kFull) lines += grid.columns == 1 ? 2 : 1;
  return lines;
}

std::string EntityLabel(const EntityModel& e) {
  if (!e.instance) return fmt::format("GPU {}", e.gpu);
  std::string label = fmt::format("GPU {}/GI {}", e.gpu,
                                  e.gpu_instance_id ? std::to_string(*e.gpu_instance_id) : "?");
  if (e.profile) label += " " + Clean(*e.profile);
  return label;
}

// "GPU-00000000…": the prefix and the first 8 characters after it.
std::string ShortUuid(const std::string& uuid, bool utf8) {
  std::string clean = Clean(uuid);
  std::size_t dash = clean.find('-');
  std::size_t keep = (dash == std::string::npos ? 0 : dash + 1) + 8;
  if (clean.size() <= keep) return clean;
  return clean.substr(0, keep) + (utf8 ? "\u2026" : "...");
}

std::string StateText(const EntityModel& e) {
  switch (e.state) {
    case PanelState::kOk:
      return "ok";
    case PanelState::kLost:
      return e.reason ? "LOST: " + Clean(*e.reason) : "LOST";
    case PanelState::kSkipped:
      return e.reason ? "SKIPPED: " + Clean(*e.reason) : "SKIPPED";
  }
  return "";
}

Style StateStyle(const EntityModel& e) {
  switch (e.state) {
    case PanelState::kOk:
      return ToneStyle(Tone::kOk);
    case PanelState::kLost:
      return ToneStyle(Tone::kLost, true);
    case PanelState::kSkipped:
      return ToneStyle(Tone::kDim, true);
  }
  return kPlain;
}

bool Selected(const EntityModel& e, const ViewState& view) {
  return view.selected_gpu && *view.selected_gpu == e.gpu;
}

class Renderer {
 public:
  Renderer(const FrameModel& frame, const ViewState& view, const Screen& screen)
      : frame_(frame), view_(view), screen_(screen), grid_(WidestGrid(screen.width)) {}

  std::vector<Line> Run();  // once

 private:
  LineBuilder Builder() const { return LineBuilder(screen_.width, screen_.color); }
  const char* Ellipsis() const { return screen_.utf8 ? "\u2026" : "..."; }

  Line HeaderLine() const;
  Line StatusLine() const;
  Line FooterLine() const;
  std::vector<Line> HelpLines() const;
  PanelStyle ChooseLayout(int body);
  void Panel(const EntityModel& e, PanelStyle style, std::vector<Line>& out) const;
  Line PanelHeader(const EntityModel& e) const;
  Line CompactLine(const EntityModel& e) const;
  void Bar(LineBuilder& b, const BarItem& item) const;
  void Spark(LineBuilder& b, const char* label, const History& h, double max) const;
  std::vector<Line> ProcessLines(int limit) const;
  Line ProcessHeader() const;
  Line ProcessRow(const ProcessModel& p) const;
  std::string ContainerText(const ProcessModel& p) const;
  int ProcessReserve() const;

  const FrameModel& frame_;
  const ViewState& view_;
  const Screen& screen_;
  Grid grid_;  // ChooseLayout's
};

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

void Renderer::Bar(LineBuilder& b, const BarItem& item) const {
  b.Add(item.label, kBold);
  b.Add(" [");
  int fill = 0;
  if (item.value && item.max && *item.max > 0) {
    fill = static_cast<int>(std::lround(std::clamp(*item.value / *item.max, 0.0, 1.0) * grid_.bar));
  }
  b.Add(std::string(static_cast<std::size_t>(fill), '|'), ToneStyle(item.tone));
  b.Add(std::string(static_cast<std::size_t>(grid_.bar - fill), ' '));
  b.Add("] ");
  std::string text = item.text;
  text.resize(std::max<std::size_t>(text.size(), kValueWidth), ' ');
  b.Add(text, item.value ? kPlain : ToneStyle(Tone::kDim));
}

void Renderer::Spark(LineBuilder& b, const char* label, const History& h, double max) const {
  b.Add(label, kBold);
  b.Add("  ");
  b.Add(Sparkline(h, max, grid_.bar, screen_.utf8), ToneStyle(Tone::kAccent));
}

Line Renderer::PanelHeader(const EntityModel& e) const {
  bool selected = Selected(e, view_);
  std::string prefix = selected ? (screen_.utf8 ? "\u25b6 " : "> ") : "";
  std::string label = EntityLabel(e);
  std::string name = CleanOr(e.name, "");
  std::string uuid = e.uuid ? ShortUuid(*e.uuid, screen_.utf8) : "";
  std::string pci = CleanOr(e.pci_bus_id, "");
  std::string state = StateText(e);
  // Drop the least useful parts until the state fits.
  std::vector<std::string> middle = {name, uuid, pci};
  auto width_of = [&] {
    int w = DisplayWidth(prefix) + DisplayWidth(label) + 2 + DisplayWidth(state);
    for (const auto& m : middle) w += m.empty() ? 0 : DisplayWidth(m) + 2;
    return w;
  };
  while (!middle.empty() && width_of() > screen_.width) middle.pop_back();

  LineBuilder b = Builder();
  b.Add(prefix + label, kBold);
  for (const auto& m : middle) {
    if (!m.empty()) b.Add("  " + m);
  }
  b.Add("  ");
  b.Add(state, StateStyle(e));
  if (selected) b.ReverseAll();
  return b.Take();
}

Line Renderer::CompactLine(const EntityModel& e) const {
  bool selected = Selected(e, view_);
  LineBuilder b = Builder();
  b.Add((selected ? (screen_.utf8 ? "\u25b6 " : "> ") : "") + EntityLabel(e),
        {true, selected, Tone::kNone});
  if (!Drawable(e)) {
    b.Add("  ");
    b.Add(StateText(e), StateStyle(e));
    return b.Take();
  }
  for (const BarItem& item : BarItems(e, screen_.utf8)) {
    if (std::string_view(item.label) == "SM  " || std::string_view(item.label) == "MCLK") continue;
    std::string label = item.label;
    label.erase(label.find_last_not_of(' ') + 1);
    b.Add("  " + label + " ");
    b.Add(item.text, item.value ? ToneStyle(item.tone) : ToneStyle(Tone::kDim));
  }
  return b.Take();
}

void Renderer::Panel(const EntityModel& e, PanelStyle style, std::vector<Line>& out) const {
  if (style == PanelStyle::kCompact || grid_.columns == 0) {
    out.push_back(CompactLine(e));
    return;
  }
  out.push_back(PanelHeader(e));
  if (!Drawable(e)) return;
  std::vector<BarItem> items = BarItems(e, screen_.utf8);
  auto column_at = [&](std::size_t k) {
    return kIndent + static_cast<int>(k) * (kItemFixed + grid_.bar + kColumnGap);
  };
  auto columns = static_cast<std::size_t>(grid_.columns);
  for (std::size_t i = 0; i < items.size(); i += columns) {
    LineBuilder b = Builder();
    for (std::size_t k = 0; k < columns && i + k < items.size(); ++k) {
      b.PadTo(column_at(k));
      Bar(b, items[i + k]);
    }
    out.push_back(b.Take());
  }
  if (style != PanelStyle::kFull) return;
  double power_max = e.power_limit_watts.value_or(0);
  if (power_max <= 0) {
    for (const Reading& p : e.power_history) power_max = std::max(power_max, p.value_or(0));
  }
  LineBuilder b = Builder();
  b.PadTo(kIndent);
  Spark(b, "util", e.utilization_history, 100.0);
  if (grid_.columns == 1) {
    out.push_back(b.Take());
    b = Builder();
    b.PadTo(kIndent);
  } else {
    b.PadTo(column_at(1));
  }
  Spark(b, "pwr ", e.power_history, power_max);
  out.push_back(b.Take());
}

// The lines the process list wants at least: a blank line, its title and header, a few rows.
int Renderer::ProcessReserve() const {
  int rows = static_cast<int>(ListedProcesses(frame_, view_).size());
  return 3 + std::max(1, std::min(rows, kMinProcessRows)) + (frame_.process_note ? 1 : 0);
}

// The most detailed layout whose panels leave the process list a few rows: sparklines before
// bars in fewer columns (longer bars), bars before one line per entity. Plain text (no height)
// takes the widest two-column grid with sparklines.
PanelStyle Renderer::ChooseLayout(int body) {
  grid_ = WidestGrid(screen_.width);
  if (screen_.height == 0) return PanelStyle::kFull;
  if (grid_.columns == 0) return PanelStyle::kCompact;
  int reserve = ProcessReserve();
  for (PanelStyle style : {PanelStyle::kFull, PanelStyle::kBars}) {
    for (int columns = grid_.columns == 1 ? 1 : 2; columns <= kMaxColumns; ++columns) {
      Grid grid = GridFor(screen_.width, columns);
      if (grid.columns == 0) break;
      int lines = 0;
      for (const EntityModel& e : frame_.entities) lines += PanelLines(e, style, grid);
      if (lines + reserve <= body) {
        grid_ = grid;
        return style;
      }
    }
  }
  return PanelStyle::kCompact;
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

// The sort value of a process for `key`; nullopt sorts last.
Reading SortValue(const ProcessModel& p, SortKey key) {
  switch (key) {
    case SortKey::kMemory:
      return p.memory_bytes;
    case SortKey::kSm:
      return p.sm_percent;
    case SortKey::kPid:
      return static_cast<double>(p.pid);
    case SortKey::kGpu:
      return static_cast<double>(p.gpu);
  }
  return std::nullopt;
}

}  // namespace

std::optional<SortKey> ParseSortKey(std::string_view name) {
  if (name == "memory") return SortKey::kMemory;
  if (name == "sm") return SortKey::kSm;
  if (name == "pid") return SortKey::kPid;
  if (name == "gpu") return SortKey::kGpu;
  return std::nullopt;
}

const char* SortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kMemory:
      return "memory";
    case SortKey::kSm:
      return "sm";
    case SortKey::kPid:
      return "pid";
    case SortKey::kGpu:
      return "gpu";
  }
  return "?";
}

std::vector<Line> Render(const FrameModel& frame, const ViewState& view, const Screen& screen) {
  Screen s = screen;
  s.width = std::max(1, s.width);
  s.height = std::max(0, s.height);
  return Renderer(frame, view, s).Run();
}

KeyAction ApplyKey(int key, const FrameModel* frame, ViewState& view) {
  switch (key) {
    case 'q':
    case 'Q':
      return KeyAction::kQuit;
    case 's':
      view.sort = static_cast<SortKey>((static_cast<int>(view.sort) + 1) % 4);
      view.reverse = false;  // each column starts in its natural order
      return KeyAction::kChanged;
    case 'r':
      view.reverse = !view.reverse;
      return KeyAction::kChanged;
    case 'a':
      if (!view.selected_gpu) return KeyAction::kIgnored;
      view.selected_gpu.reset();
      return KeyAction::kChanged;
    case ' ':
    case 'p':
      view.paused = !view.paused;
      return KeyAction::kChanged;
    case 'h':
    case '?':
      view.help = !view.help;
      return KeyAction::kChanged;
    case 27:  // Esc
      if (!view.help) return KeyAction::kIgnored;
      view.help = false;
      return KeyAction::kChanged;
    default:
      break;
  }
  if (key >= '0' && key <= '9' && frame != nullptr) {
    auto gpu = static_cast<unsigned>(key - '0');
    bool known = std::any_of(frame->entities.begin(), frame->entities.end(),
                             [&](const EntityModel& e) { return e.gpu == gpu; });
    if (!known || view.selected_gpu == gpu) return KeyAction::kIgnored;
    view.selected_gpu = gpu;
    return KeyAction::kChanged;
  }
  return KeyAction::kIgnored;
}

std::vector<ProcessModel> ListedProcesses(const FrameModel& frame, const ViewState& view) {
  std::vector<ProcessModel> out;
  for (const ProcessModel& p : frame.processes) {
    if (!view.selected_gpu || p.gpu == *view.selected_gpu) out.push_back(p);
  }
  bool descending = (view.sort == SortKey::kMemory || view.sort == SortKey::kSm) != view.reverse;
  std::stable_sort(out.begin(), out.end(), [&](const ProcessModel& a, const ProcessModel& b) {
    Reading av = SortValue(a, view.sort), bv = SortValue(b, view.sort);
    if (av.has_value() != bv.has_value()) return av.has_value();
    if (av && *av != *bv) return descending ? *av > *bv : *av < *bv;
    if (a.gpu != b.gpu) return a.gpu < b.gpu;
    return a.pid < b.pid;
  });
  return out;
}

std::string Sparkline(const History& history, double max, int width, bool utf8) {
  static const char* const kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
  static const char kAscii[] = " .:-=+*#";
  if (width <= 0) return {};
  std::size_t n = std::min(history.size(), static_cast<std::size_t>(width));
  std::string out(static_cast<std::size_t>(width) - n, ' ');
  for (std::size_t i = history.size() - n; i < history.size(); ++i) {
    const Reading& v = history[i];
    if (!v) {
      out.push_back(' ');
      continue;
    }
    double f = max > 0 ? *v / max : 0.0;
    int level = std::clamp(static_cast<int>(std::floor(f * 8)), 0, 7);
    if (utf8) {
      out += kBlocks[level];
    } else {
      out.push_back(kAscii[level]);
    }
  }
  return out;
}

int DisplayWidth(std::string_view text) {
  int n = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++n;
  }
  return n;
}

std::string PlainText(const std::vector<Line>& lines) {
  std::string out;
  for (const Line& l : lines) {
    std::string_view t = l.text;
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);  // no trailing blanks
    out.append(t);
    out.push_back('\n');
  }
  return out;
}

std::string CleanText(std::string_view text) { return Clean(text); }

}  // namespace gpulse::cli::top
