// `gpulse top`'s text (top_render.h, top_renderer.h): what text from a frame may print as, how wide
// text is on the screen, and lines as plain text.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/top_render.h"
#include "cli/top_renderer.h"

namespace gpulse::cli::top {

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

std::string CleanOr(const std::optional<std::string>& in, std::string_view fallback) {
  return in ? Clean(*in) : std::string(fallback);
}

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

Style ToneStyle(Tone tone, bool bold) { return {bold, false, tone}; }

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
