// `gpulse top`'s entity panels (top_renderer.h): the numbers and their tones, the bars and
// sparklines of a panel, the compact one-line form, and the layout the height allows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "cli/top_render.h"
#include "cli/top_renderer.h"

namespace gpulse::cli::top {

struct BarItem {
  const char* label;  // kLabelWidth columns
  Reading value, max;
  std::string text;
  Tone tone;
};

long long Round(double v) { return std::llround(v); }

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kIndent = 2;       // bars and sparklines under a panel header
constexpr int kLabelWidth = 4;   // "UTIL", "MEM ", ...
constexpr int kValueWidth = 15;  // "188.0/188.0 GiB", "1000.0/1000.0 W"
constexpr int kColumnGap = 3;    // between the two columns of bars
constexpr int kItemFixed = kLabelWidth + 1 + 2 + 1 + kValueWidth;  // all but the bar itself
constexpr int kMaxBar = 60;
constexpr int kMinBarManyColumns = 10;  // the shortest bar in two or three columns
constexpr int kMinBarOneColumn = 4;
constexpr int kMaxColumns = 3;

// ---- numbers ----

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

// `columns` columns of bars at this width; columns 0 when they do not fit.
Grid GridFor(int width, int columns) {
  int bar = (width - kIndent - (columns - 1) * kColumnGap - columns * kItemFixed) / columns;
  if (bar < (columns == 1 ? kMinBarOneColumn : kMinBarManyColumns)) return {};
  return {columns, std::min(bar, kMaxBar)};
}

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
    case PanelState::kOk:  // a pending recommended action (docs/faults.md) replaces "ok"
      if (e.action) {
        return "ACTION: " + Clean(*e.action) +
               (e.action_xid ? fmt::format(" (Xid {})", *e.action_xid) : std::string());
      }
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
      return e.action ? ToneStyle(Tone::kLost, true) : ToneStyle(Tone::kOk);
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

}  // namespace

Grid WidestGrid(int width) {
  for (int columns = 2; columns >= 1; --columns) {
    if (Grid g = GridFor(width, columns); g.columns > 0) return g;
  }
  return {};
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

}  // namespace gpulse::cli::top
