// The mask readers' text helpers (src/identity/mask_tokens.h): identifier prefixes matched
// exactly and ignoring ASCII case, as CUDA's and ROCr's UUID tokens are.
#include "identity/mask_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpulse::identity {
namespace {

TEST(StartsWithIgnoringCase, ComparesAsciiLettersInEitherCase) {
  EXPECT_TRUE(StartsWithIgnoringCase("GPU-0a1b2c", "gpu-0A1B"));
  EXPECT_TRUE(StartsWithIgnoringCase("gpu-0a1b2c", "GPU-0A1B2C"));
  EXPECT_TRUE(StartsWithIgnoringCase("GPU-1", ""));
  EXPECT_FALSE(StartsWithIgnoringCase("GPU-1", "GPU-2"));
  EXPECT_FALSE(StartsWithIgnoringCase("GPU", "GPU-"));  // a prefix longer than the text
  EXPECT_FALSE(StartsWithIgnoringCase("", "G"));
}

TEST(StartsWithIgnoringCase, LeavesBytesOutsideAsciiAsTheyAre) {
  EXPECT_TRUE(StartsWithIgnoringCase("\xc3\xa9t\xc3\xa9", "\xc3\xa9T"));
  EXPECT_FALSE(StartsWithIgnoringCase("\xc3\xa9", "\xc3\x89"));  // é is not É here
  EXPECT_FALSE(StartsWithIgnoringCase("a", std::string("A\0", 2)));
}

TEST(MatchPrefix, GivesExactAndCaseInsensitiveHitsApart) {
  const std::vector<std::string> uuids = {"GPU-abc1", "GPU-ABC2", "", "MIG-abc3"};
  PrefixMatches m = MatchPrefix("GPU-abc", uuids);
  EXPECT_EQ(m.exact, (std::vector<std::size_t>{0}));
  EXPECT_EQ(m.ignoring_case, (std::vector<std::size_t>{0, 1}));
  m = MatchPrefix("", uuids);  // every non-empty candidate, never the empty one
  EXPECT_EQ(m.exact, (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(m.ignoring_case, (std::vector<std::size_t>{0, 1, 3}));
  m = MatchPrefix("mig-ABC3", uuids);
  EXPECT_TRUE(m.exact.empty());
  EXPECT_EQ(m.ignoring_case, (std::vector<std::size_t>{3}));
}

}  // namespace
}  // namespace gpulse::identity
