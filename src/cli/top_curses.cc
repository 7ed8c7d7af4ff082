// ncurses under `gpulse top` (top_curses.h). The only file that includes <ncurses.h> and <term.h>;
// NCURSES_NOMACROS keeps curses' function-like macros (move, erase, clear, ...) out of it too.
#define NCURSES_NOMACROS 1
#include "cli/top_curses.h"

#include <langinfo.h>
#include <ncurses.h>
#include <term.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

// <term.h> names every terminfo capability as a macro: `tone` is one, and a member of Span.
#undef tone

namespace gpulse::cli::top {
namespace {

enum Pair : short { kPairNone = 0, kPairOk, kPairWarn, kPairCrit, kPairLost, kPairAccent };

short PairOf(Tone tone) {
  switch (tone) {
    case Tone::kOk:
      return kPairOk;
    case Tone::kWarn:
      return kPairWarn;
    case Tone::kCrit:
      return kPairCrit;
    case Tone::kLost:
      return kPairLost;
    case Tone::kAccent:
      return kPairAccent;
    case Tone::kDim:
    case Tone::kNone:
      return kPairNone;
  }
  return kPairNone;
}

attr_t AttributesOf(const Span& s) {
  attr_t a = A_NORMAL;
  if (s.bold) a |= A_BOLD;
  if (s.reverse) a |= A_REVERSE;
  if (s.tone == Tone::kDim) a |= A_DIM;
  return a;
}

bool SameSpans(const std::vector<Span>& a, const std::vector<Span>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].column != b[i].column || a[i].length != b[i].length || a[i].bold != b[i].bold ||
        a[i].reverse != b[i].reverse || a[i].tone != b[i].tone) {
      return false;
    }
  }
  return true;
}

bool SameLines(const std::vector<Line>& a, const std::vector<Line>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].text != b[i].text || !SameSpans(a[i].spans, b[i].spans)) return false;
  }
  return true;
}

bool StartColors() {
  if (!has_colors() || start_color() != OK) return false;
  use_default_colors();
  init_pair(kPairOk, COLOR_GREEN, -1);
  init_pair(kPairWarn, COLOR_YELLOW, -1);
  init_pair(kPairCrit, COLOR_RED, -1);
  init_pair(kPairLost, COLOR_MAGENTA, -1);
  init_pair(kPairAccent, COLOR_CYAN, -1);
  return true;
}

}  // namespace

struct Terminal::Impl {
  SCREEN* screen = nullptr;
};

bool Utf8Locale() {
  const char* codeset = nl_langinfo(CODESET);
  return codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0;
}

bool InForeground() { return tcgetpgrp(STDIN_FILENO) == getpgrp(); }

bool TerminalUsable() {
  if (isatty(STDIN_FILENO) == 0 || isatty(STDOUT_FILENO) == 0) return false;
  // A background job that set the terminal up would be stopped (SIGTTOU) until brought forward.
  if (!InForeground()) return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return false;
  int err = 0;
  if (setupterm(nullptr, STDOUT_FILENO, &err) != OK) return false;
  char* cup = tigetstr(const_cast<char*>("cup"));
  bool usable = cup != nullptr && cup != reinterpret_cast<char*>(-1);
  del_curterm(cur_term);
  return usable;
}

std::unique_ptr<Terminal> Terminal::Open(bool color) {
  auto impl = std::make_unique<Impl>();
  impl->screen = newterm(nullptr, stdout, stdin);
  if (impl->screen == nullptr) return nullptr;
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  scrollok(stdscr, FALSE);
  set_escdelay(25);
  bool colors = color && StartColors();
  return std::unique_ptr<Terminal>(new Terminal(std::move(impl), colors, Utf8Locale()));
}

Terminal::Terminal(std::unique_ptr<Impl> impl, bool color, bool utf8)
    : impl_(std::move(impl)), color_(color), utf8_(utf8) {}

Terminal::~Terminal() {
  endwin();
  delscreen(impl_->screen);
}

int Terminal::width() const { return COLS; }
int Terminal::height() const { return LINES; }

int Terminal::Key(int timeout_ms) {
  wtimeout(stdscr, timeout_ms);
  int k = wgetch(stdscr);
  if (k == ERR) return kNoKey;
  if (k == KEY_RESIZE) return kResizeKey;
  return k;
}

void Terminal::Draw(const std::vector<Line>& screen, bool force) {
  if (!force && SameLines(screen, drawn_)) return;
  werase(stdscr);
  for (std::size_t y = 0; y < screen.size() && static_cast<int>(y) < LINES; ++y) {
    int row = static_cast<int>(y);
    mvwaddstr(stdscr, row, 0, screen[y].text.c_str());  // the bottom-right cell answers ERR: fine
    for (const Span& s : screen[y].spans) {
      short pair = color_ ? PairOf(s.tone) : short{kPairNone};
      mvwchgat(stdscr, row, s.column, s.length, AttributesOf(s), pair, nullptr);
    }
  }
  wrefresh(stdscr);
  drawn_ = screen;
}

}  // namespace gpulse::cli::top
