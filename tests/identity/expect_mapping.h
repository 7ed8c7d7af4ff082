// The check every rules-table test (CUDA, ROCm, Level Zero masks) makes of a mapping. GoogleTest
// only: the fuzz targets include devices_fixture.h without it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "identity/devices_fixture.h"

namespace gpulse::identity::testing {

// A mapping against one row of a rules table: the ordinals (as Describe writes them), the refusal
// ("" for none, else a part of its reason) and a note ("" for none expected, else a part of one).
inline void ExpectMapping(const Mapping& m, const std::vector<std::string>& ordinals,
                          const std::string& refusal, const std::string& note) {
  std::vector<std::string> got;
  for (const PhysicalDevice& p : m.ordinals) got.push_back(Describe(p));
  EXPECT_EQ(got, ordinals);
  if (refusal.empty()) {
    EXPECT_FALSE(m.refusal.has_value()) << m.refusal->reason;
  } else {
    ASSERT_TRUE(m.refusal.has_value());
    EXPECT_NE(m.refusal->reason.find(refusal), std::string::npos) << m.refusal->reason;
  }
  if (!note.empty()) {
    std::string all;
    for (const auto& n : m.notes) all += n + " | ";
    EXPECT_NE(all.find(note), std::string::npos) << "no note with '" << note << "' in: " << all;
  }
}

}  // namespace gpulse::identity::testing
