// `gpulse top`'s renderer: a frame model and the view state (sort, filter, pause, help) in, screen
// lines out, each line its text and attribute spans. Pure (no terminal, no ncurses), so every
// layout is unit-tested; the ncurses driver and the plain-text modes in top.cc only copy lines out.
//
// Layout, top to bottom: a header line (host, GPU count, simulated scenario, interval, seq, time,
// then the source: "via agent ...", or "direct ..."), a status line when paused or disconnected,
// one panel per entity, the process list, and a footer naming the keys. A panel is a header
// ("GPU 0  NVIDIA A40  GPU-00000000…  ok") and bars for utilization, memory, power against its
// limit, temperature (0-100 °C) and clocks against their max (when the entity has clocks), each
// with its number as text, then sparklines of the utilization and power history. An absent reading
// shows "N/A" and an empty bar; a lost or skipped GPU shows "LOST: reason" / "SKIPPED: reason" and
// no bars. Bars sit in two columns (one on a narrow screen); when the height does not hold every
// panel and a few process rows, the bars move into three columns (on a wide screen), then the
// sparklines go, then the panels shrink to one line per entity; whatever still does not fit is cut
// at the bottom. Every line is at most `width` columns.
//
// Text from the frame (names, users, commands) is shown as printable ASCII only: other bytes become
// '?', so no escape sequence reaches the terminal and every character is one column wide. The
// renderer's own glyphs (sparkline blocks, "…", "°") are one column wide too, and are replaced by
// ASCII when `utf8` is false.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/top_model.h"

namespace gpulse::cli::top {

enum class SortKey { kMemory, kSm, kPid, kGpu };

// "memory", "sm", "pid", "gpu" (what --sort takes).
std::optional<SortKey> ParseSortKey(std::string_view name);
const char* SortKeyName(SortKey key);

struct ViewState {
  SortKey sort = SortKey::kMemory;
  bool reverse = false;                  // flips the key's natural order
  std::optional<unsigned> selected_gpu;  // filters the process list; marks the GPU's panels
  bool paused = false;
  bool help = false;
  std::string status;  // e.g. "disconnected: ..." (shown on the status line)
};

// What the view says about the frame's origin and how it may draw.
struct Screen {
  int width = 100;
  int height = 0;  // 0: unlimited (plain text)
  bool color = true;
  bool utf8 = true;
  std::string
      source;  // the live source's Describe(); "via " is added unless it says "via"/"direct"
};

// Attribute classes; the driver maps them to colour pairs (or to nothing under NO_COLOR).
enum class Tone { kNone, kOk, kWarn, kCrit, kLost, kDim, kAccent };

struct Span {
  int column = 0;  // display columns
  int length = 0;
  bool bold = false;
  bool reverse = false;
  Tone tone = Tone::kNone;
};

struct Line {
  std::string text;  // UTF-8; one column per code point
  std::vector<Span> spans;
};

std::vector<Line> Render(const FrameModel& frame, const ViewState& view, const Screen& screen);

// What a key did to the view.
enum class KeyAction { kIgnored, kChanged, kQuit };

// s: next sort key (memory, sm, pid, gpu), r: reverse, 0-9: select that GPU (when the frame has
// it), a: all GPUs, space or p: pause, h or ?: help, q: quit. Esc also closes the help.
KeyAction ApplyKey(int key, const FrameModel* frame, ViewState& view);

// The processes as the list shows them: filtered to the selected GPU and sorted. Natural orders:
// memory and SM% descending, PID and GPU ascending; absent values last either way; ties by GPU,
// then PID.
std::vector<ProcessModel> ListedProcesses(const FrameModel& frame, const ViewState& view);

// The last `width` points of `history` as a sparkline scaled to `max`: ▁▂▃▄▅▆▇█ with `utf8`, else
// " .:-=+*#"; a gap (absent point) is a space. Right-aligned: padded with spaces on the left.
std::string Sparkline(const History& history, double max, int width, bool utf8);

// Display columns of UTF-8 text (code points; every glyph the renderer uses is one column).
int DisplayWidth(std::string_view text);

// Lines as plain text (for --once and dumb terminals): each line's text and '\n'.
std::string PlainText(const std::vector<Line>& lines);

// Printable ASCII only (a control byte or a non-ASCII character becomes '?'): what any text from
// a server may print as, so no escape sequence reaches the terminal.
std::string CleanText(std::string_view text);

}  // namespace gpulse::cli::top
