// `gpulse xid [CODE...] [--format table|csv|json]`: entries of NVIDIA's Xid catalogue
// (core/xid_catalogue.h) with NVIDIA's columns as NVIDIA spells them and gpulse's recommended
// action beside them (docs/faults.md). A code the catalogue does not list is printed as unknown
// and makes the exit status 1, as grep's is when it finds nothing; a CODE that is not a number is a
// usage error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/output_format.h"
#include "cli/subcommand.h"
#include "core/result.h"
#include "core/split.h"
#include "core/xid_catalogue.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct XidOptions {
  std::vector<std::string> codes;  // as given: parsed in Run, so a bad one is named by gpulse
  OutputFormat out;
};

// One requested code: its entry, or null when the catalogue does not list it.
struct XidRow {
  std::uint64_t xid;
  const XidEntry* entry;
};

Result<std::uint64_t> ParseCode(const std::string& word) {
  std::uint64_t value = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    return InvalidArgument(fmt::format("Xid code '{}' is too large", word));
  }
  if (word.empty() || ec != std::errc() || ptr != end) {
    return InvalidArgument(
        fmt::format("'{}' is not an Xid code (a decimal number, 0 or more)", word));
  }
  return value;
}

// Every entry when no code is given, else the codes in the order given.
Result<std::vector<XidRow>> SelectRows(const std::vector<std::string>& codes) {
  std::vector<XidRow> rows;
  if (codes.empty()) {
    for (const XidEntry& e : XidCatalogue()) {
      rows.push_back({e.xid, &e});
    }
    return rows;
  }
  for (const std::string& word : codes) {
    Result<std::uint64_t> xid = ParseCode(word);
    if (!xid) {
      return xid.error();
    }
    rows.push_back({*xid, FindXid(*xid)});
  }
  return rows;
}

json TextOrNull(std::string_view s) { return s.empty() ? json(nullptr) : json(s); }

// "A100=YES;H100=NO;..." as {"A100": true, "H100": false, ...}; null when NVIDIA lists no product.
// A value other than YES or NO (none in the catalogue; core's test checks) is null: not known.
json AppliesTo(std::string_view products) {
  if (products.empty()) {
    return nullptr;
  }
  json out = json::object();
  for (const std::string& pair : SplitNonEmpty(products, ';')) {
    const std::size_t eq = pair.find('=');
    const std::string product = pair.substr(0, eq);
    const std::string answer = eq == std::string::npos ? "" : pair.substr(eq + 1);
    out[product] = answer == "YES" ? json(true) : answer == "NO" ? json(false) : json(nullptr);
  }
  return out;
}

json RowJson(const XidRow& row) {
  const XidEntry* e = row.entry;
  return {{"xid", row.xid},
          {"mnemonic", e ? json(e->mnemonic) : json(nullptr)},
          {"description", e ? TextOrNull(e->description) : json(nullptr)},
          {"applies_to", e ? AppliesTo(e->applies_to) : json(nullptr)},
          {"immediate_action", e ? TextOrNull(e->immediate_action) : json(nullptr)},
          {"investigatory_action", e ? TextOrNull(e->investigatory_action) : json(nullptr)},
          {"source", e ? json(XidSourceKey(e->source)) : json(nullptr)},
          {"known", e != nullptr},
          {"recommended_action", CatalogueAction(row.xid).name}};
}

json CatalogueJson() {
  const XidCatalogueProvenance& p = XidCatalogueSource();
  return {{"title", p.title},   {"url", p.url},           {"file", p.file},
          {"sha256", p.sha256}, {"modified", p.modified}, {"driver_header", p.driver_header}};
}

json RowsJson(const std::vector<XidRow>& rows) {
  json out = json::array();
  for (const XidRow& row : rows) {
    out.push_back(RowJson(row));
  }
  return out;
}

// The table's cells of one row, "-" for a missing value; the description last, in full.
using Cells = std::array<std::string, 5>;

std::string OrDash(std::string_view s) { return s.empty() ? "-" : std::string(s); }

Cells RowCells(const XidRow& row) {
  const XidEntry* e = row.entry;
  if (e == nullptr) {
    return {std::to_string(row.xid), "-", "-", "-", "(unknown Xid)"};
  }
  return {std::to_string(row.xid), OrDash(e->mnemonic), OrDash(e->immediate_action),
          OrDash(e->investigatory_action), OrDash(e->description)};
}

void PrintTable(const std::vector<XidRow>& rows) {
  std::vector<Cells> lines{{"XID", "MNEMONIC", "IMMEDIATE", "INVESTIGATORY", "DESCRIPTION"}};
  for (const XidRow& row : rows) {
    lines.push_back(RowCells(row));
  }
  std::array<std::size_t, 4> width{};  // the last column is not padded
  for (const Cells& c : lines) {
    for (std::size_t i = 0; i < width.size(); ++i) {
      width[i] = std::max(width[i], c[i].size());
    }
  }
  for (const Cells& c : lines) {
    fmt::print("{:>{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", c[0], width[0], c[1], width[1], c[2],
               width[2], c[3], width[3], c[4]);
  }
}

int Run(const XidOptions& o) {
  Result<std::vector<XidRow>> rows = SelectRows(o.codes);
  if (!rows) {
    fmt::print(stderr, "gpulse xid: {}\n", rows.error().message);
    return kExitUsage;
  }
  if (o.out.json()) {
    fmt::print("{}\n", json{{"catalogue", CatalogueJson()}, {"xids", RowsJson(*rows)}}.dump(2));
  } else if (o.out.csv()) {
    fmt::print("{}", JsonRowsToCsv(RowsJson(*rows)));
  } else {
    PrintTable(*rows);
  }
  int status = kExitOk;
  for (const XidRow& row : *rows) {
    if (row.entry != nullptr) {
      continue;
    }
    fmt::print(stderr, "gpulse xid: Xid {} is unknown: not in NVIDIA's catalogue or nverror.h\n",
               row.xid);
    status = kExitFailure;
  }
  return status;
}

}  // namespace

Subcommand SetupXid(CLI::App& parent) {
  auto o = std::make_shared<XidOptions>();
  CLI::App* app = parent.add_subcommand(
      "xid", "Print NVIDIA's Xid catalogue: mnemonic, description, NVIDIA's actions");
  AddFormatOptions(*app, o->out, "docs/schema/xid.schema.json");
  app->add_option("code", o->codes,
                  "Xid codes to print (decimal), in the order given (default: every code)");
  app->footer(
      "Exit status: 0 when every code is in the catalogue, 1 when one is not (it is printed as "
      "unknown and named on stderr), 2 for a CODE that is not a decimal number or a bad flag. "
      "docs/faults.md says what the columns mean.");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
