// The terminal under `gpulse top`'s interactive view: ncurses (ncursesw) behind a small interface,
// so that no curses or terminfo macro reaches the rest of the code. It copies the renderer's lines
// (top_render.h) onto the screen with erase() and refresh(), mapping tones to colour pairs.
//
// Thread-safety: one Terminal per process, used from one thread.
#pragma once

#include <memory>
#include <vector>

#include "cli/top_render.h"

namespace gpulse::cli::top {

inline constexpr int kNoKey = -1;      // no key came in time
inline constexpr int kResizeKey = -2;  // the terminal changed size

// Whether the locale's character set is UTF-8 (call setlocale first).
bool Utf8Locale();

// Whether this process is in its terminal's foreground process group (false when stdin is not a
// terminal).
bool InForeground();

// Whether ncurses can drive this process's terminal: stdin and stdout are terminals, the process is
// in the foreground, and $TERM names one with cursor addressing (not "dumb").
bool TerminalUsable();

class Terminal {
 public:
  // nullptr when ncurses cannot start. `color`: use colours when the terminal has them.
  static std::unique_ptr<Terminal> Open(bool color);
  ~Terminal();  // restores the terminal
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const;
  int height() const;
  bool color() const { return color_; }
  bool utf8() const { return utf8_; }

  // One key, waiting at most `timeout_ms` (0: do not wait): a character, kResizeKey, or kNoKey.
  int Key(int timeout_ms);

  // Draws `lines` unless they are what the screen shows already (`force`: draw anyway).
  void Draw(const std::vector<Line>& lines, bool force);

 private:
  struct Impl;
  Terminal(std::unique_ptr<Impl> impl, bool color, bool utf8);

  std::unique_ptr<Impl> impl_;
  bool color_;
  bool utf8_;
  std::vector<Line> drawn_;
};

}  // namespace gpulse::cli::top
