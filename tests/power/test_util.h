// Small helpers shared by the power tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "power/fixture.h"
#include "power/rules/validator.h"

namespace gpulse::power::testing {

inline ValidationReport RunValidator(Package& p, ValidateOptions o = {}) {
  p.Write();
  o.power_dir = p.power_dir;
  o.result_root = p.result_root;
  return ValidatePackage(o);
}

inline bool HasFail(const ValidationReport& r, std::string_view needle) {
  for (const auto& f : r.failures)
    if (f.find(needle) != std::string::npos) return true;
  return false;
}

inline std::string Failures(const ValidationReport& r) {
  std::string out;
  for (const auto& f : r.failures) out += "  FAIL " + f + "\n";
  return out;
}

}  // namespace gpulse::power::testing
