#include "cli/output_format.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <vector>

#include "core/csv.h"

namespace gpulse::cli {
namespace {

// Flattens `v` under `prefix` into `out` (name -> cell text).
void Flatten(const nlohmann::json& v, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) Flatten(x, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  if (v.is_null()) {
    out[prefix] = "";
  } else if (v.is_string()) {
    out[prefix] = v.get<std::string>();
  } else {
    out[prefix] = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace

void AddFormatOptions(CLI::App& app, OutputFormat& f, const std::string& json_help,
                      const std::string& json_names) {
  CLI::Option* format = app.add_option("--format", f.format, "Output format (json: " + json_help + ")")
                            ->capture_default_str()
                            ->check(CLI::IsMember({"table", "csv", "json"}));
  app.add_flag(json_names, f.json_alias, "The same as --format json")->excludes(format);
}

std::string JsonRowsToCsv(const nlohmann::json& rows) {
  std::vector<std::map<std::string, std::string>> flat;
  std::vector<std::string> columns;
  std::map<std::string, bool> seen;
  for (const nlohmann::json& row : rows) {
    std::map<std::string, std::string> cells;
    Flatten(row.is_object() ? row : nlohmann::json{{"value", row}}, "", cells);
    for (const auto& [name, cell] : cells) {
      if (!seen[name]) columns.push_back(name), seen[name] = true;
    }
    flat.push_back(std::move(cells));
  }
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + CsvField(columns[i]);
  out += "\n";
  for (const auto& cells : flat) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      auto it = cells.find(columns[i]);
      out += (i ? "," : "") + (it == cells.end() ? std::string() : CsvField(it->second));
    }
    out += "\n";
  }
  return out;
}

void PrintAnswer(const OutputFormat& f, const nlohmann::json& answer,
                 std::initializer_list<const char*> row_keys) {
  if (!f.csv()) {
    std::fputs((answer.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(),
               stdout);
    return;
  }
  for (const char* key : row_keys) {
    auto it = answer.find(key);
    if (it != answer.end() && it->is_array()) {
      std::fputs(JsonRowsToCsv(*it).c_str(), stdout);
      return;
    }
  }
  std::fputs(JsonRowsToCsv(nlohmann::json::array({answer})).c_str(), stdout);
}

}  // namespace gpulse::cli
