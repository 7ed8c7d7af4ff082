// One output convention (issue 42): `--format table|csv|json` on the commands that list, the older
// `--json` kept as its alias. CSV is the JSON's rows, flattened: one line per element of the
// command's list, one column per member (nested objects as dotted names, arrays as JSON text),
// quoted as RFC 4180 says; absent readings are empty cells, never 0.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gpulse::cli {

struct OutputFormat {
  std::string format = "table";
  bool json_alias = false;  // --json
  bool json() const { return json_alias || format == "json"; }
  bool csv() const { return !json_alias && format == "csv"; }
  bool machine() const { return json() || csv(); }  // not the table
};

// Adds --format table|csv|json and `json_names` (--json, or -j,--json where dcgmi has -j) as its
// alias; both given is a usage error. `json_help` says which schema the JSON follows.
void AddFormatOptions(CLI::App& app, OutputFormat& f, const std::string& json_help,
                      const std::string& json_names = "--json");

// The CSV of `rows`, an array: an object is a row of its members, anything else a row whose one
// column is `value`.
std::string JsonRowsToCsv(const nlohmann::json& rows);

// An agent's answer as --format asks (not the table): JSON as it came, or the CSV of its rows, the
// first of `row_keys` that is a list in it, else the answer as one row.
void PrintAnswer(const OutputFormat& f, const nlohmann::json& answer,
                 std::initializer_list<const char*> row_keys);

}  // namespace gpulse::cli
