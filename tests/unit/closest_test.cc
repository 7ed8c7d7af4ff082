// "Did you mean": the known name a typo is closest to, and none when nothing is close.
#include "core/closest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpulse {
namespace {

const std::vector<std::string> kNames = {"devices", "dmon",  "fields", "ps",     "record",
                                         "report",  "stats", "watch",  "window", "validate-power"};

TEST(EditDistance, CountsInsertionsDeletionsReplacementsAndSwaps) {
  EXPECT_EQ(EditDistance("stats", "stats"), 0u);
  EXPECT_EQ(EditDistance("stat", "stats"), 1u);
  EXPECT_EQ(EditDistance("sttas", "stats"), 1u);  // neighbours swapped
  EXPECT_EQ(EditDistance("recrod", "record"), 1u);
  EXPECT_EQ(EditDistance("", "ps"), 2u);
}

TEST(ClosestName, NamesTheTypoItIsOneOrTwoEditsFrom) {
  EXPECT_EQ(ClosestName("stat", kNames), "stats");
  EXPECT_EQ(ClosestName("devics", kNames), "devices");
  EXPECT_EQ(ClosestName("reocrd", kNames), "record");
  EXPECT_EQ(ClosestName("valid", kNames), "validate-power");  // the one name it starts
}

TEST(ClosestName, SaysNothingWhenNothingIsCloseOrTwoAreEquallyClose) {
  EXPECT_EQ(ClosestName("frobnicate", kNames), std::nullopt);
  EXPECT_EQ(ClosestName("repor", kNames), "report");
  EXPECT_EQ(ClosestName("re", kNames), std::nullopt);  // record and report: no guess
  EXPECT_EQ(ClosestName("x", kNames), std::nullopt);
}

}  // namespace
}  // namespace gpulse
