// Checked reads from a yaml-cpp node tree for the scenario parser: every getter names the source,
// the line and column, the key path and the problem when a value is missing, of the wrong type or
// out of range. Failures throw ScenarioError, which the parser turns into an error value at its
// boundary; no exception leaves the parser.
//
// Thread-safety: a YamlCheck is used by one parse at a time.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpulse::sim {

// A scenario that cannot be used; what() is the complete user-facing message.
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The shortest text that reads back as `v` ("0.2", "1e+06"), for messages.
std::string FormatNumber(double v);

// "a, b, c" (with `separator` between), for messages.
template <typename Words>
std::string Join(const Words& words, std::string_view separator = ", ") {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += separator;
    out += w;
  }
  return out;
}

// Levenshtein distance, for typo suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" when a word in `known` is a likely typo of `word` (edit distance <= 2),
// else "".
template <typename Words>
std::string Suggestion(std::string_view word, const Words& known) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view k : known) {
    size_t d = EditDistance(word, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best.empty() ? "" : " (did you mean '" + std::string(best) + "'?)";
}

// A YAML value together with the key path that reached it ("devices[2].load[1].util") and where it
// is in the text. An absent map key has present == false and its parent's position.
//
// Not assignable: YAML::Node's operator= rewrites the node it refers to (inside the document)
// instead of rebinding, so assigning an At would silently corrupt the tree. Construct a new one.
struct At {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
  bool present = true;

  At& operator=(const At&) = delete;
};

class YamlCheck {
 public:
  // `source` names the text in messages: a file path, or "built-in scenario 'faults'".
  explicit YamlCheck(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void Fail(const At& at, std::string_view problem) const;
  [[noreturn]] void Fail(const YAML::Mark& mark, std::string_view problem) const;

  // The whole document.
  static At Root(const YAML::Node& doc);
  // Child `key` of the map `parent` (present == false when absent), with its path.
  static At Child(const At& parent, std::string_view key);
  // Element i of the sequence `parent`.
  static At Element(const At& parent, size_t i);

  void ExpectMap(const At& at) const;
  void ExpectSeq(const At& at) const;
  // Fails on the first key of the map `at` that is not in `allowed`, listing the allowed keys.
  void CheckKeys(const At& at, std::span<const std::string_view> allowed) const;
  void CheckKeys(const At& at, std::initializer_list<std::string_view> allowed) const {
    CheckKeys(at, std::span<const std::string_view>(allowed.begin(), allowed.size()));
  }
  // Fails unless `at` (a map child) is present.
  void Require(const At& at) const;

  std::string String(const At& at) const;
  bool Bool(const At& at) const;
  // A finite number in [min, max].
  double Number(const At& at, double min, double max) const;
  // A whole number (decimal, or 0x hex) in [min, max].
  int64_t Integer(const At& at, int64_t min, int64_t max) const;

 private:
  std::string source_;
};

}  // namespace gpulse::sim
