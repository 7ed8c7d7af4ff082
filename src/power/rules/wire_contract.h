// The manifest's wire contract: fixed identity strings, lifecycle fields, settings, counters,
// stored reason codes and exporter identity, each checked by type (bool is never a number) and
// value. Every failure message starts with the key it is about. Thread-safe: pure function.
#pragma once

#include <string>
#include <vector>

#include "power/readers/json_io.h"

namespace gpulse::power {

// REQUIRES: manifest.is_object().
std::vector<std::string> CheckWireContract(const Json& manifest);

// The stored reason_codes, then gpulse_reason_codes, the strings of each that is a list (others
// are skipped).
std::vector<std::string> StoredReasons(const Json& manifest);

}  // namespace gpulse::power
