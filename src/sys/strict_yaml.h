// The one check every YAML file gpulse reads goes through before its keys are looked up (the web
// config, the collect config, simulator scenarios): a mapping that repeats a key is refused. yaml-cpp
// keeps both entries and `node["key"]` answers the first, so a file with an empty
// `tls_server_config:` at the top and the real one further down would otherwise run without TLS
// and say nothing (issue 13).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpulse::yaml {

struct DuplicateKey {
  std::string key;   // as written (a non-scalar key is shown as its YAML)
  std::string path;  // where the mapping is, "a.b[2]" ("" for the top level)
  int line = 0;      // 1-based line of the repeated key
  int column = 0;    // 1-based column of the repeated key
  int first_line = 0;  // 1-based line of its first occurrence
};

// Bounds on a YAML document, checked before yaml-cpp builds a node (docs/formats.md "Limits").
struct Limits {
  int max_depth = 64;                 // nested mappings and sequences
  std::size_t max_nodes = 100'000;    // scalars, mappings, sequences and aliases
};

struct ShapeProblem {
  std::string what;  // "nesting deeper than 64 levels", "more than 100000 nodes"
  int line = 0;      // 1-based, where the limit was passed
};

// Reads the first document of `text` as parser events, building nothing, and stops at the first
// limit passed. Throws YAML::Exception on a syntax error, as YAML::Load would.
std::optional<ShapeProblem> CheckShape(std::string_view text, const Limits& limits = {});

// The first repeated key in document order, anywhere in `root`, or nullopt. Nesting deeper than
// `limits.max_depth` (or an alias cycle) is reported as a repeated key "<too deep>", and a walk
// that meets more than `limits.max_nodes` nodes (aliases expanded: a "billion laughs" file) as
// "<too many nodes>", at the offending node.
std::optional<DuplicateKey> FindDuplicateKey(const YAML::Node& root, const Limits& limits = {});

// "duplicate key \"k\" in a.b (first at line 3)": the message part callers prefix with file:line.
std::string Describe(const DuplicateKey& d);

}  // namespace gpulse::yaml
