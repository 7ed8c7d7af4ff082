// The reports' command lines quoted as a shell needs them (issue 40).
#include "core/shell_words.h"

#include <gtest/gtest.h>

namespace gpulse {
namespace {

TEST(ShellWords, PlainWordsStayAndOthersAreSingleQuoted) {
  EXPECT_EQ(ShellQuote("python3"), "python3");
  EXPECT_EQ(ShellQuote("--model=/data/x-1.5b,tp:2"), "--model=/data/x-1.5b,tp:2");
  EXPECT_EQ(ShellQuote("echo a b"), "'echo a b'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellJoin({"sh", "-c", "echo a b > /tmp/x"}), "sh -c 'echo a b > /tmp/x'");
}

}  // namespace
}  // namespace gpulse
