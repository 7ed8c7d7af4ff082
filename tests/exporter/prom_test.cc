// The exposition writer and the streaming parser: escaping, value formats, and that the parser
// reads back what the writer writes, however the body is split into chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "prom/parser.h"
#include "prom/writer.h"

namespace gpulse::prom {
namespace {

TEST(PromWriter, LabelValuesEscapeBackslashQuoteAndNewline) {
  std::string out;
  AppendEscapedLabelValue(out, "a\\b\"c\nd");
  EXPECT_EQ(out, "a\\\\b\\\"c\\nd");
}

TEST(PromWriter, ALabelValueThatIsNotUtf8HasEachBadByteReplaced) {
  // A GPU name from a driver with a stray Latin-1 byte, and a truncated sequence at the end: the
  // page must still parse (Prometheus refuses the whole page over one such value).
  std::string out;
  AppendEscapedLabelValue(out, "Tesla\xe9 \"X\"\xe2\x82");
  EXPECT_EQ(out, "Tesla\xEF\xBF\xBD \\\"X\\\"\xEF\xBF\xBD\xEF\xBF\xBD");
  out.clear();
  AppendEscapedLabelValue(out, "caf\xc3\xa9 \xe2\x82\xac");  // valid: kept as it is
  EXPECT_EQ(out, "caf\xc3\xa9 \xe2\x82\xac");
}

TEST(PromWriter, HelpEscapesBackslashAndNewlineButNotQuotes) {
  std::string out;
  AppendEscapedHelp(out, "say \"hi\"\\\n");
  EXPECT_EQ(out, "say \"hi\"\\\\\\n");
}

TEST(PromWriter, FamilyHeaderKeepsTheSpaceOfAnEmptyHelp) {
  std::string out;
  AppendFamilyHeader(out, "TEST_METRIC", "", PromType::kGauge);
  EXPECT_EQ(out, "# HELP TEST_METRIC \n# TYPE TEST_METRIC gauge\n");
}

TEST(PromWriter, ValueFormats) {
  struct Case {
    double v;
    ValueFormat f;
    const char* want;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : std::vector<Case>{
           {42, ValueFormat::kInteger, "42"},
           {41.6, ValueFormat::kInteger, "42"},
           {-3, ValueFormat::kInteger, "-3"},
           {302.206, ValueFormat::kFixed, "302.206000"},
           {0, ValueFormat::kFixed, "0.000000"},
           {0.25, ValueFormat::kShortest, "0.25"},
           {inf, ValueFormat::kFixed, "+Inf"},
           {-inf, ValueFormat::kInteger, "-Inf"},
           {std::nan(""), ValueFormat::kShortest, "NaN"},
       }) {
    std::string out;
    AppendValue(out, c.v, c.f);
    EXPECT_EQ(out, c.want) << c.v;
  }
}

TEST(PromWriter, SampleWithLabelsAndExtra) {
  Label labels[] = {{"gpu", "0"}, {"UUID", "GPU-1"}};
  std::string rendered = RenderLabels(labels);
  EXPECT_EQ(rendered, "gpu=\"0\",UUID=\"GPU-1\"");
  std::string out;
  AppendSample(out, "m", rendered, "xid=\"94\"", 2, ValueFormat::kInteger);
  AppendSample(out, "n", "", "", 1, ValueFormat::kInteger);
  EXPECT_EQ(out, "m{gpu=\"0\",UUID=\"GPU-1\",xid=\"94\"} 2\nn 1\n");
}

TEST(PromWriter, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_TRUE(IsValidMetricName("cluster:gpu:count"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_TRUE(IsValidLabelName("GPU_I_ID"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

struct Collected {
  std::vector<std::string> lines;  // "name|labels...|value"
  std::vector<std::string> helps;
  ParseCallbacks Callbacks() {
    ParseCallbacks cb;
    cb.on_help = [this](std::string_view n, std::string_view h) {
      helps.push_back(std::string(n) + "|" + std::string(h));
    };
    cb.on_sample = [this](const ParsedSample& s) {
      std::string line(s.name);
      for (const auto& l : s.labels) line += "|" + l.name + "=" + l.value;
      char buf[64];
      std::snprintf(buf, sizeof buf, "|%g", s.value);
      line += buf;
      if (s.timestamp_ms) line += "@" + std::to_string(*s.timestamp_ms);
      lines.push_back(line);
    };
    return cb;
  }
};

constexpr const char* kBody =
    "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"say \\\"x\\\" \\\\ \\n\"} "
    "302.206000\n"
    "\n"
    "# a plain comment\n"
    "  up 1 1700000000000\n"
    "nolabels{} +Inf\n"
    "trailing{a=\"1\",} -3e2\n";

TEST(PromParser, ReadsSamplesLabelsEscapesAndTimestamps) {
  Collected c;
  ASSERT_TRUE(ParseExposition(kBody, c.Callbacks()).ok());
  ASSERT_EQ(c.lines.size(), 4u);
  EXPECT_EQ(c.lines[0],
            "DCGM_FI_DEV_POWER_USAGE|gpu=0|UUID=GPU-a|modelName=say \"x\" \\ \n|302.206");
  EXPECT_EQ(c.lines[1], "up|1@1700000000000");
  EXPECT_EQ(c.lines[2], "nolabels|inf");
  EXPECT_EQ(c.lines[3], "trailing|a=1|-300");
  ASSERT_EQ(c.helps.size(), 1u);
  EXPECT_EQ(c.helps[0], "DCGM_FI_DEV_POWER_USAGE|Power draw (in W).");
}

// Found by fuzzing (issue 13, tests/fuzz/regressions/scrape): "NAME.5" was read as NAME = 0.5.
TEST(PromParser, AMetricNameEndsAtABraceOrABlank) {
  Collected c;
  EXPECT_FALSE(ParseExposition("DCGM_FI_DEV_POWER_USAGE.5\n", c.Callbacks()).ok());
  EXPECT_FALSE(ParseExposition("up+1\n", c.Callbacks()).ok());
  Collected tab;
  ASSERT_TRUE(ParseExposition("up\t1\n", tab.Callbacks()).ok());
  ASSERT_EQ(tab.lines.size(), 1u);
  EXPECT_EQ(tab.lines[0], "up|1");
}

TEST(PromParser, ChunkBoundariesDoNotMatter) {
  Collected whole;
  ASSERT_TRUE(ParseExposition(kBody, whole.Callbacks()).ok());
  std::string body = kBody;
  for (std::size_t step : {1u, 2u, 3u, 7u, 64u}) {
    Collected parts;
    Parser p(parts.Callbacks());
    for (std::size_t i = 0; i < body.size(); i += step)
      ASSERT_TRUE(p.Feed(std::string_view(body).substr(i, step)).ok());
    ASSERT_TRUE(p.Finish().ok());
    EXPECT_EQ(parts.lines, whole.lines) << "chunks of " << step;
  }
}

TEST(PromParser, LastLineWithoutNewlineIsParsedByFinish) {
  Collected c;
  Parser p(c.Callbacks());
  ASSERT_TRUE(p.Feed("a 1\nb 2").ok());
  EXPECT_EQ(c.lines.size(), 1u);
  ASSERT_TRUE(p.Finish().ok());
  EXPECT_EQ(c.lines.size(), 2u);
}

TEST(PromParser, MalformedLinesFailNamingTheLine) {
  struct Case {
    const char* body;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{
           {"ok 1\nbad{a=\"1\" 2\n", "line 2"},
           {"m{a=1} 2\n", "expected '\"'"},
           {"m{a=\"x\\q\"} 2\n", "invalid escape"},
           {"m{a=\"1\",a=\"2\"} 2\n", "duplicate label a"},
           {"m{a=\"1\"} abc\n", "bad sample value"},
           {"m 1 12x\n", "bad timestamp"},
           {"# TYPE m strange\n", "unknown metric type"},
           {"m{a=\"unterminated} 1\n", "unterminated"},
           {"-m 1\n", "bad metric name"},
       }) {
    Status s = ParseExposition(c.body, {});
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_NE(s.error().message.find(c.want), std::string::npos)
        << c.body << " -> " << s.error().message;
  }
}

TEST(PromParser, ValuesInGoSyntax) {
  EXPECT_EQ(*ParseValue("1.5"), 1.5);
  EXPECT_EQ(*ParseValue("-2e3"), -2000);
  EXPECT_EQ(*ParseValue("+7"), 7);
  EXPECT_TRUE(std::isinf(*ParseValue("+Inf")));
  EXPECT_TRUE(std::isinf(*ParseValue("-inf")));
  EXPECT_TRUE(std::isnan(*ParseValue("NaN")));
  EXPECT_FALSE(ParseValue(""));
  EXPECT_FALSE(ParseValue("1,5"));
  EXPECT_FALSE(ParseValue("--1"));
}

TEST(PromRoundTrip, WhatTheWriterWritesTheParserReadsBack) {
  Label labels[] = {{"gpu", "3"}, {"modelName", "A \"quoted\" name\\with\nnewline"}};
  std::string out;
  AppendFamilyHeader(out, "x_total", "help with \\ and\nnewline", PromType::kCounter);
  AppendSample(out, "x_total", RenderLabels(labels), "", 12345, ValueFormat::kInteger);
  Collected c;
  ASSERT_TRUE(ParseExposition(out, c.Callbacks()).ok());
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0], "x_total|gpu=3|modelName=A \"quoted\" name\\with\nnewline|12345");
  EXPECT_EQ(c.helps[0], "x_total|help with \\ and\nnewline");
}

}  // namespace
}  // namespace gpulse::prom
