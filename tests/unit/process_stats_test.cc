// The self-metrics' /proc readers (sys/process_stats.h): the stat line's fields counted after the
// command's last parenthesis, the boot time, and this process's own readings.
#include "sys/process_stats.h"

#include <gtest/gtest.h>

namespace gpulse::sys {
namespace {

TEST(ProcessStats, AStatLineIsReadAfterTheCommandsLastParenthesis) {
  // A command name with spaces and parentheses of its own, as a process may set it.
  auto line = ParseStatLine(
      "1234 (gpulse (x) y) S 1 1234 1234 0 -1 4194560 1000 0 0 0 150 42 0 0 20 0 9 0 5000 "
      "104857600 2500 18446744073709551615 1 1 0 0\n");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->utime_ticks, 150u);
  EXPECT_EQ(line->stime_ticks, 42u);
  EXPECT_EQ(line->start_ticks, 5000u);
  EXPECT_EQ(line->vsize_bytes, 104857600u);
  EXPECT_EQ(line->rss_pages, 2500u);
}

TEST(ProcessStats, ShortOrMalformedLinesAreNotRead) {
  EXPECT_FALSE(ParseStatLine("").has_value());
  EXPECT_FALSE(ParseStatLine("1234 gpulse S 1").has_value());
  EXPECT_FALSE(ParseStatLine("1234 (gpulse) S 1 2 3").has_value());
  EXPECT_FALSE(
      ParseStatLine("1234 (g) S 1 1 1 0 -1 0 0 0 0 0 x 42 0 0 20 0 9 0 5000 1 2").has_value());
}

TEST(ProcessStats, BootTimeComesFromTheBtimeLine) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nbtime 1765000000\nprocesses 5\n"), 1765000000);
  EXPECT_FALSE(ParseBootTime("cpu  1 2 3\n").has_value());
  EXPECT_FALSE(ParseBootTime("btime soon\n").has_value());
  EXPECT_FALSE(ParseBootTime("btime 17650000001765000000\n").has_value());  // over int64 (fuzzing)
}

TEST(ProcessStats, ThisProcessHasEveryReading) {
  ProcessStats s = ReadProcessStats();
  ASSERT_TRUE(s.resident_bytes && s.virtual_bytes && s.cpu_seconds && s.start_time_unix_s);
  EXPECT_GT(*s.resident_bytes, 0u);
  EXPECT_GE(*s.virtual_bytes, *s.resident_bytes);
  EXPECT_GT(*s.start_time_unix_s, 1.6e9);  // after 2020
  ASSERT_TRUE(s.open_fds && s.max_fds);
  EXPECT_GE(*s.open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_LE(*s.open_fds, *s.max_fds);
}

}  // namespace
}  // namespace gpulse::sys
