#include "sys/strict_yaml.h"

#include <map>

namespace gpulse::yaml {
namespace {

constexpr int kMaxDepth = 64;

int Line(const YAML::Node& n) { return n.Mark().line + 1; }
int Column(const YAML::Node& n) { return n.Mark().column + 1; }

std::string KeyText(const YAML::Node& key) {
  if (key.IsScalar()) return key.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << key;
  return out.c_str();
}

std::optional<DuplicateKey> Walk(const YAML::Node& node, const std::string& path, int depth) {
  if (depth > kMaxDepth) return DuplicateKey{"<too deep>", path, Line(node), Column(node), Line(node)};
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (auto d = Walk(node[i], path + "[" + std::to_string(i) + "]", depth + 1)) return d;
    }
  } else if (node.IsMap()) {
    std::map<std::string, int> seen;  // key -> first line
    for (const auto& kv : node) {
      std::string key = KeyText(kv.first);
      auto [it, fresh] = seen.emplace(key, Line(kv.first));
      if (!fresh) return DuplicateKey{key, path, Line(kv.first), Column(kv.first), it->second};
    }
    for (const auto& kv : node) {
      if (auto d = Walk(kv.second, path.empty() ? KeyText(kv.first) : path + "." + KeyText(kv.first), depth + 1)) {
        return d;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<DuplicateKey> FindDuplicateKey(const YAML::Node& root) { return Walk(root, "", 0); }

std::string Describe(const DuplicateKey& d) {
  return "duplicate key \"" + d.key + "\"" + (d.path.empty() ? "" : " in " + d.path) + " (first at line " +
         std::to_string(d.first_line) + "): a repeated key is refused, never silently dropped";
}

}  // namespace gpulse::yaml
