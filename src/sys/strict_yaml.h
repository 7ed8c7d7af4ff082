// The one check every YAML file gpulse reads goes through before its keys are looked up (the web
// config, the collect config, simulator scenarios): a mapping that repeats a key is refused. yaml-cpp
// keeps both entries and `node["key"]` answers the first, so a file with an empty
// `tls_server_config:` at the top and the real one further down would otherwise run without TLS
// and say nothing (issue 13).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

namespace gpulse::yaml {

struct DuplicateKey {
  std::string key;   // as written (a non-scalar key is shown as its YAML)
  std::string path;  // where the mapping is, "a.b[2]" ("" for the top level)
  int line = 0;      // 1-based line of the repeated key
  int column = 0;    // 1-based column of the repeated key
  int first_line = 0;  // 1-based line of its first occurrence
};

// The first repeated key in document order, anywhere in `root`, or nullopt. Nesting deeper than 64
// levels (or an alias cycle) is reported as a repeated key "<too deep>" at the offending node.
std::optional<DuplicateKey> FindDuplicateKey(const YAML::Node& root);

// "duplicate key \"k\" in a.b (first at line 3)": the message part callers prefix with file:line.
std::string Describe(const DuplicateKey& d);

}  // namespace gpulse::yaml
