#include "power/rules/integrity.h"

#include <fmt/format.h>

namespace gpulse::power {
namespace {

const Json& Get(const Json& doc, const char* key) {
  static const Json kNull;
  if (!doc.is_object()) return kNull;
  auto it = doc.find(key);
  return it == doc.end() ? kNull : *it;
}

}  // namespace

bool CheckDigest(const Json& m, const SamplesScan& s, std::vector<std::string>& failures) {
  const Json& d = Get(m, "samples_sha256");
  if (d.is_null()) {
    failures.push_back("samples_sha256 is missing");
    return false;
  }
  if (!d.is_string() || !IsLowerHex(d.get<std::string>(), 64)) {
    failures.push_back("samples_sha256 is not a lowercase SHA-256 digest");
    return false;
  }
  if (!s.present) {
    failures.push_back("samples_sha256 could not be verified: samples.csv is missing");
    return false;
  }
  if (!s.sha256_hex) {
    failures.push_back("samples_sha256 could not be verified: " +
                       s.digest_error.value_or("read error"));
    return false;
  }
  if (*s.sha256_hex != d.get<std::string>()) {
    failures.push_back("samples_sha256 mismatch: manifest records " + d.get<std::string>() +
                       ", recomputed " + *s.sha256_hex);
    return false;
  }
  return true;
}

void CheckRowCount(const Json& m, const SamplesScan& s, std::vector<std::string>& failures) {
  auto rows = AsStrictInt(Get(m, "sample_row_count"));
  if (rows && s.header_ok && *rows != s.data_rows)
    failures.push_back(
        fmt::format("sample_row_count is {}, samples.csv has {} rows", *rows, s.data_rows));
}

std::vector<std::string> SamplesIntegrityFailures(const Json& m, const SamplesScan& s) {
  std::vector<std::string> failures;
  CheckDigest(m, s, failures);
  CheckRowCount(m, s, failures);
  return failures;
}

}  // namespace gpulse::power
