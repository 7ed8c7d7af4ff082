// What the agent reads back from its database rows besides history images, and takes from its API
// (src/health): policy specs (PolicyFromJson), configuration targets (ConfigFromJson) and health
// watch letters (ParseSubsystems). An accepted spec written back (PolicyToJson, ConfigToJson,
// SubsystemLetters) reads again to the same JSON or letters: what the agent stores, it restores.
//
// Input: byte 0 picks the reader (mod 3); the rest is the row's text.
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz/fuzz_util.h"
#include "health/config_target.h"
#include "health/policy.h"
#include "health/systems.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::Text(data + 1, size - 1);
  if (data[0] % 3 == 2) {
    auto mask = health::ParseSubsystems(text);
    if (mask) FUZZ_CHECK(health::ParseSubsystems(health::SubsystemLetters(*mask)).ok());
    return 0;
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  if (data[0] % 3 == 0) {
    auto p = health::PolicyFromJson(j);
    if (!p) return 0;
    nlohmann::json back = health::PolicyToJson(*p);
    auto again = health::PolicyFromJson(back);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(health::PolicyToJson(*again) == back);
  } else {
    auto t = health::ConfigFromJson(j);
    if (!t) return 0;
    nlohmann::json back = health::ConfigToJson(*t);
    auto again = health::ConfigFromJson(back);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(health::ConfigToJson(*again) == back);
  }
  return 0;
}
