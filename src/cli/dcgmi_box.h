// The boxed tables dcgmi prints (`dcgmi group -l`, `dcgmi stats -v`): 80 columns, a key column of
// 19 and a value column of 58, `+===+` under the title. `gpulse group` and `gpulse stats` print the
// same shapes, so people who read dcgmi output read these.
#pragma once

#include <string>
#include <vector>

namespace gpulse::cli {

class DcgmiBox {
 public:
  explicit DcgmiBox(int key_width = 17) : key_width_(key_width) {}
  void Title(const std::string& line);  // full-width lines above the === rule
  void Row(const std::string& key, const std::string& value);
  void Section(const std::string& name);  // a "+----- name ---+---+" rule inside the box
  std::string Render() const;

 private:
  struct Line {
    enum Kind { kTitle, kRow, kSection } kind;
    std::string key, value;
  };
  int key_width_;
  std::vector<Line> lines_;
};

}  // namespace gpulse::cli
