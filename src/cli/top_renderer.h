// The inside of `gpulse top`'s renderer (top_render.h is its face), shared by its files:
// top_text.cc (text from a frame made printable, display widths, styles), top_panel.cc (the entity
// panels, their numbers and bars, the layout choice) and top_render.cc (the frame: header, status,
// help, process list, footer). The view state's keys and sorting are in top_view.cc. Internal to
// src/cli.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/top_model.h"
#include "cli/top_render.h"

namespace gpulse::cli::top {

// Printable ASCII only: a control byte, or a whole non-ASCII UTF-8 sequence, becomes one '?'.
std::string Clean(std::string_view in);
std::string CleanOr(const std::optional<std::string>& in, std::string_view fallback = "-");
// The first `columns` code points of `text`.
std::string_view Head(std::string_view text, int columns);

struct Style {
  bool bold = false;
  bool reverse = false;
  Tone tone = Tone::kNone;
};

constexpr Style kPlain{};
constexpr Style kBold{true, false, Tone::kNone};

Style ToneStyle(Tone tone, bool bold = false);

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

long long Round(double v);  // to the nearest whole number (top_panel.cc)

struct BarItem;  // one bar of a panel: its label, value, scale and text (top_panel.cc)

// How a panel's bars are laid out: in how many columns, and how long each bar is.
struct Grid {
  int columns = 0;  // 0: no room for bars (compact lines only)
  int bar = 0;
};

// The widest grid of at most two columns (the plain-text layout).
Grid WidestGrid(int width);

enum class PanelStyle { kFull, kBars, kCompact };

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

}  // namespace gpulse::cli::top
