#include "cli/dcgmi_box.h"

#include <fmt/format.h>

namespace gpulse::cli {
namespace {
constexpr int kWidth = 80;
}

void DcgmiBox::Title(const std::string& line) { lines_.push_back({Line::kTitle, line, ""}); }
void DcgmiBox::Row(const std::string& key, const std::string& value) {
  lines_.push_back({Line::kRow, key, value});
}
void DcgmiBox::Section(const std::string& name) { lines_.push_back({Line::kSection, name, ""}); }

std::string DcgmiBox::Render() const {
  const int value_width = kWidth - key_width_ - 7;  // "| " key " | " value " |"
  const std::string rule =
      "+" + std::string(key_width_ + 2, '-') + "+" + std::string(value_width + 2, '-') + "+\n";
  const std::string double_rule =
      "+" + std::string(key_width_ + 2, '=') + "+" + std::string(value_width + 2, '=') + "+\n";
  std::string out = rule;
  bool titled = false, body = false;
  for (const Line& l : lines_) {
    if (l.kind == Line::kTitle) {
      out += fmt::format("| {:<{}} |\n", l.key, kWidth - 4);
      titled = true;
      continue;
    }
    if (titled && !body) out += double_rule;
    body = true;
    if (l.kind == Line::kSection) {
      std::string head = "+----- " + l.key + " ";
      if (static_cast<int>(head.size()) < key_width_ + 3)
        head += std::string(key_width_ + 3 - head.size(), '-');
      out += head + "+" + std::string(value_width + 2, '-') + "+\n";
      continue;
    }
    // Long values wrap onto continuation rows, as dcgmi does.
    std::string v = l.value;
    std::string key = l.key;
    do {
      // Break after the last ", " that fits (a list of entities), else after the last space
      // (a sentence), else at the width.
      std::size_t cut = v.size();
      if (cut > static_cast<std::size_t>(value_width)) {
        std::size_t comma = v.rfind(", ", value_width - 1);
        std::size_t space = v.rfind(' ', value_width);
        cut = comma != std::string::npos && comma > 0   ? comma + 2
              : space != std::string::npos && space > 0 ? space + 1
                                                        : value_width;
      }
      std::string piece = v.substr(0, cut);
      while (!piece.empty() && piece.back() == ' ') piece.pop_back();
      out += fmt::format("| {:<{}} | {:<{}} |\n", key, key_width_, piece, value_width);
      v = v.substr(cut);
      key.clear();
    } while (!v.empty());
  }
  if (titled && !body) out += double_rule;
  out += rule;
  return out;
}

}  // namespace gpulse::cli
