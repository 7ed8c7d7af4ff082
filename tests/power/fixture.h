// A power package built in a temp dir for tests: a valid 1P1D job (2 nodes x 4 GPUs, prefill on
// node-a in het group 0, decode on node-b in het group 1), 1 s samples from t0 to t0+80, one
// completed sa-bench/4 window [t0+10.25, t0+70.25] and its result file. The stored evidence is
// computed here independently of the library, so a passing package tests the rule engine.
// Tests mutate the model (rows, manifest, windows, results) and call Write() again.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpulse::power::testing {

using Json = nlohmann::json;
namespace fs = std::filesystem;

inline constexpr double kT0 = 1700000000.0;

struct CsvRow {
  int64_t seq;
  double t;
  std::string host;
  int64_t gpu;
  std::string uuid;
  double power;
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string Sha256Hex(const std::string& bytes);
std::string Repr(double v);  // shortest round-trip text, like Python's repr
std::string CsvText(const std::vector<CsvRow>& rows);
std::string ReadText(const fs::path& p);
void WriteText(const fs::path& p, const std::string& text);

struct Package {
  TempDir tmp;
  fs::path result_root;  // <tmp>/logs
  fs::path power_dir;    // <tmp>/logs/power
  std::vector<CsvRow> rows;
  std::optional<std::string> csv_override;  // exact bytes instead of rows
  bool write_csv = true;
  bool refresh_digest = true;  // set samples_sha256 from the bytes written
  Json manifest;
  std::map<std::string, Json> windows;             // file name under windows/ -> document
  std::map<std::string, std::string> raw_windows;  // file name -> exact text
  std::map<std::string, Json> results;             // path under result_root -> document

  Package();
  void Write();
  std::string CsvBytes() const;
  // Recomputes the stored evidence for the current rows the simple way (regular 1 s data only).
  void RefreshEvidence();
};

// The standard job. `seconds` samples per device after t0 (inclusive of both ends).
void BuildValid1P1D(Package& p, int seconds = 80);
Json WindowDoc(double start, double end, double duration, const std::string& result_path);
Json ResultDoc(double start, double end, double duration);

}  // namespace gpulse::power::testing
