// One output convention (issue 42): `--format table|csv|json` on the commands that list, the older
// `--json` kept as its alias. CSV is the JSON's rows, flattened: one line per element of the
// command's list, one column per member (nested objects as dotted names, arrays as JSON text),
// quoted as RFC 4180 says; absent readings are empty cells, never 0.
#pragma once

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
};

// Adds --format table|csv|json and --json (its alias; both given and disagreeing is a usage
// error, checked by Check). `json_help` says which schema the JSON follows.
void AddFormatOptions(CLI::App& app, OutputFormat& f, const std::string& json_help);

// "" when the flags agree, else the message of the usage error.
std::string CheckFormat(const OutputFormat& f);

// The CSV of `rows` (an array of objects; other elements are skipped).
std::string JsonRowsToCsv(const nlohmann::json& rows);

}  // namespace gpulse::cli
