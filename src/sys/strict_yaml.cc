#include "sys/strict_yaml.h"

#include <yaml-cpp/eventhandler.h>

#include <map>
#include <sstream>

namespace gpulse::yaml {
namespace {

int Line(const YAML::Node& n) { return n.Mark().line + 1; }
int Column(const YAML::Node& n) { return n.Mark().column + 1; }

std::string KeyText(const YAML::Node& key) {
  if (key.IsScalar()) return key.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << key;
  return out.c_str();
}

struct Walker {
  const Limits& limits;
  std::size_t visited = 0;
  std::optional<DuplicateKey> Walk(const YAML::Node& node, const std::string& path, int depth);
};

std::optional<DuplicateKey> Walker::Walk(const YAML::Node& node, const std::string& path, int depth) {
  if (depth > limits.max_depth) return DuplicateKey{"<too deep>", path, Line(node), Column(node), Line(node)};
  if (++visited > limits.max_nodes) {
    return DuplicateKey{"<too many nodes>", path, Line(node), Column(node), Line(node)};
  }
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

// Counts nodes and depth from parser events; throws Stop at the first limit passed.
class ShapeCounter : public YAML::EventHandler {
 public:
  struct Stop {
    ShapeProblem problem;
  };
  explicit ShapeCounter(const Limits& limits) : limits_(limits) {}
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(m);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(m);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Node(const YAML::Mark& m) {
    if (++nodes_ > limits_.max_nodes) {
      throw Stop{{"more than " + std::to_string(limits_.max_nodes) + " nodes", m.line + 1}};
    }
  }
  void Open(const YAML::Mark& m) {
    Node(m);
    if (++depth_ > limits_.max_depth) {
      throw Stop{{"nesting deeper than " + std::to_string(limits_.max_depth) + " levels", m.line + 1}};
    }
  }
  const Limits& limits_;
  std::size_t nodes_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<ShapeProblem> CheckShape(std::string_view text, const Limits& limits) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  ShapeCounter counter(limits);
  try {
    parser.HandleNextDocument(counter);
  } catch (const ShapeCounter::Stop& stop) {
    return stop.problem;
  }
  return std::nullopt;
}

std::optional<DuplicateKey> FindDuplicateKey(const YAML::Node& root, const Limits& limits) {
  return Walker{limits}.Walk(root, "", 0);
}

std::string Describe(const DuplicateKey& d) {
  if (d.key == "<too deep>" || d.key == "<too many nodes>") {
    return std::string(d.key == "<too deep>" ? "nesting too deep" : "too many nodes (aliases expanded)") +
           (d.path.empty() ? "" : " at " + d.path) + ": refused";
  }
  return "duplicate key \"" + d.key + "\"" + (d.path.empty() ? "" : " in " + d.path) + " (first at line " +
         std::to_string(d.first_line) + "): a repeated key is refused, never silently dropped";
}

}  // namespace gpulse::yaml
