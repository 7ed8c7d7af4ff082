#include "yaml_check.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

namespace gpulse::sim {
namespace {

std::string Where(const std::string& source, const YAML::Mark& mark) {
  if (mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The scalar text of `at` for messages, shortened.
std::string Shown(const At& at) {
  if (!at.node.IsScalar())
    return at.node.IsMap() ? "a map" : at.node.IsSequence() ? "a list" : "null";
  std::string s = at.node.Scalar();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return "'" + s + "'";
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string FormatNumber(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

void YamlCheck::Fail(const At& at, std::string_view problem) const {
  std::string msg = Where(source_, at.mark) + ": ";
  if (!at.path.empty()) msg += at.path + ": ";
  msg += problem;
  throw ScenarioError(msg);
}

void YamlCheck::Fail(const YAML::Mark& mark, std::string_view problem) const {
  throw ScenarioError(Where(source_, mark) + ": " + std::string(problem));
}

At YamlCheck::Root(const YAML::Node& doc) { return At{doc, "", doc.Mark(), true}; }

At YamlCheck::Child(const At& parent, std::string_view key) {
  std::string path = parent.path.empty() ? std::string(key) : parent.path + "." + std::string(key);
  const YAML::Node& map = parent.node;
  YAML::Node child = map[std::string(key)];
  if (!child.IsDefined()) return At{YAML::Node(), path, parent.mark, false};
  return At{child, path, child.Mark(), true};
}

At YamlCheck::Element(const At& parent, size_t i) {
  const YAML::Node& seq = parent.node;
  YAML::Node child = seq[i];
  return At{child, parent.path + "[" + std::to_string(i) + "]", child.Mark(), true};
}

void YamlCheck::ExpectMap(const At& at) const {
  if (!at.node.IsMap()) Fail(at, "expected a map of keys, got " + Shown(at));
}

void YamlCheck::ExpectSeq(const At& at) const {
  if (!at.node.IsSequence()) Fail(at, "expected a list, got " + Shown(at));
}

void YamlCheck::CheckKeys(const At& at, std::span<const std::string_view> allowed) const {
  ExpectMap(at);
  for (const auto& kv : at.node) {
    const YAML::Node& key = kv.first;
    std::string name = key.IsScalar() ? key.Scalar() : std::string("<non-scalar key>");
    bool known = false;
    for (std::string_view a : allowed) known = known || a == name;
    if (known) continue;
    std::string path = at.path.empty() ? name : at.path + "." + name;
    Fail(At{key, path, key.Mark(), true},
         "unknown key" + Suggestion(name, allowed) + "; allowed here: " + Join(allowed));
  }
}

void YamlCheck::Require(const At& at) const {
  if (!at.present) Fail(at, "required key is missing");
}

std::string YamlCheck::String(const At& at) const {
  if (!at.node.IsScalar()) Fail(at, "expected a string, got " + Shown(at));
  return at.node.Scalar();
}

bool YamlCheck::Bool(const At& at) const {
  bool v = false;
  if (!at.node.IsScalar() || !YAML::convert<bool>::decode(at.node, v)) {
    Fail(at, "expected true or false, got " + Shown(at));
  }
  return v;
}

double YamlCheck::Number(const At& at, double min, double max) const {
  double v = 0;
  bool ok = at.node.IsScalar();
  if (ok) {
    const std::string& s = at.node.Scalar();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ok = ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
  }
  if (!ok) Fail(at, "expected a finite number, got " + Shown(at));
  if (v < 0 && min >= 0) Fail(at, FormatNumber(v) + " is negative");
  if (v < min || v > max) {
    Fail(at, FormatNumber(v) + " is out of range [" + FormatNumber(min) + ", " + FormatNumber(max) +
                 "]");
  }
  return v;
}

int64_t YamlCheck::Integer(const At& at, int64_t min, int64_t max) const {
  int64_t v = 0;
  bool ok = at.node.IsScalar();
  if (ok) {
    const std::string& s = at.node.Scalar();
    int base = 10;
    size_t skip = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, skip = 2;
    auto [end, ec] = std::from_chars(s.data() + skip, s.data() + s.size(), v, base);
    ok = !s.empty() && ec == std::errc() && end == s.data() + s.size();
  }
  if (!ok) Fail(at, "expected a whole number, got " + Shown(at));
  if (v < 0 && min >= 0) Fail(at, std::to_string(v) + " is negative");
  if (v < min || v > max) {
    Fail(at, std::to_string(v) + " is out of range [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]");
  }
  return v;
}

}  // namespace gpulse::sim
