// Bounded parsing (issue 13): every JSON and YAML reader checks depth, value count and size before
// its parser allocates (docs/formats.md "Limits"). Each case was a defect: a 64 MiB manifest of
// empty objects took 2.26 GB and validated; YAML had no bound but the file size.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/json_limits.h"
#include "net/web_config.h"
#include "power/collector/collect_config.h"
#include "power/readers/json_io.h"
#include "report/journal.h"
#include "report/run_json.h"
#include "sys/strict_yaml.h"

namespace gpulse {
namespace {

std::string Repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JsonLimits, CountsValuesDepthAndBytesOutsideStrings) {
  JsonLimits l{1000, 3, 10};
  EXPECT_EQ(CheckJsonShape(R"({"a": [1, 2, {"b": 3}]})", l), std::nullopt);
  EXPECT_EQ(CheckJsonShape("[[[[1]]]]", l), "nesting deeper than 3 levels");
  EXPECT_EQ(CheckJsonShape("[1,2,3,4,5,6,7,8,9,10,11]", l), "more than 10 values");
  EXPECT_EQ(CheckJsonShape(R"(["[[[[,,,,,,,,,,,,\"[[[["])", l), std::nullopt) << "inside a string";
  EXPECT_EQ(CheckJsonShape(std::string(1001, ' '), l), "larger than 1000 bytes");
}

TEST(JsonLimits, AManifestOfEmptyObjectsIsRefusedBeforeParsing) {
  std::string text = "[" + Repeat("{},", 20'000'000) + "{}]";  // 60 MiB, under the 64 MiB cap
  auto j = power::ParseJsonText(text);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("more than 2000000 values"), std::string::npos)
      << j.error().message;
}

TEST(JsonLimits, RunJsonIsBoundedToo) {
  auto r = report::ParseRunJson(Repeat("[", 100) + Repeat("]", 100), "run.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("run.json: not read: nesting deeper than 64 levels"),
            std::string::npos)
      << r.error().message;
}

// Found by fuzzing (tests/fuzz/regressions/run_json): get<int>() of a float out of range was
// undefined behaviour; an integer field must hold an integer that fits.
TEST(JsonLimits, RunJsonIntegersMustBeIntegersThatFit) {
  auto r = report::ParseRunJson(R"({"schema_version": 2e84})", "run.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected an integer that fits"), std::string::npos)
      << r.error().message;
}

// Found by fuzzing (tests/fuzz/regressions/journal/float-journal-version): the journal's header
// read its version and clock ticks with get<int>()/get<long>(), the same undefined cast.
TEST(JsonLimits, JournalHeaderIntegersMustBeIntegersThatFit) {
  for (const char* header : {R"({"gpulse_journal": 1.8e109})", R"({"gpulse_journal": -1e30})"}) {
    auto r = report::RecoverRun(std::string(header) + "\n", "run.journal");
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_NE(r.error().message.find("run.journal: line 1: expected an integer that fits"),
              std::string::npos)
        << r.error().message;
  }
}

TEST(YamlLimits, DepthAndNodeCountFromEventsBeforeANodeIsBuilt) {
  yaml::Limits l{3, 20};
  EXPECT_EQ(yaml::CheckShape("a: {b: [1, 2]}\n", l), std::nullopt);
  auto deep = yaml::CheckShape("a:\n  b:\n    c:\n      d: 1\n", l);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->what, "nesting deeper than 3 levels");
  EXPECT_EQ(deep->line, 4);
  auto many = yaml::CheckShape("[" + Repeat("1, ", 30) + "1]\n", l);
  ASSERT_TRUE(many);
  EXPECT_EQ(many->what, "more than 20 nodes");
}

TEST(YamlLimits, TheWebConfigAndTheCollectConfigAreBounded) {
  std::string deep = Repeat("[", 100) + Repeat("]", 100) + "\n";
  auto web = net::ParseWebConfig("basic_auth_users: " + deep, "/tmp", "web.yml");
  ASSERT_FALSE(web.ok());
  EXPECT_EQ(web.error().message, "web.yml:1: nesting deeper than 64 levels: refused");
  // The collect config names every endpoint and worker, so its bound is higher (4,096 nodes of 8
  // GPUs take about 180,000 nodes), and still a bound.
  auto collect =
      power::ParseCollectConfig("telemetry:\n  endpoints: [" + Repeat("a, ", 1'000'000) + "a]\n");
  ASSERT_FALSE(collect.ok());
  EXPECT_EQ(collect.error().message, "config: line 2: more than 1000000 nodes: refused");
  auto big =
      power::ParseCollectConfig("telemetry:\n  endpoints: [" + Repeat("a, ", 200'000) + "a]\n");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message.find("nodes: refused"), std::string::npos) << big.error().message;
}

// A collect config that is a FIFO used to block `gpulse collect` forever, and /dev/zero to grow
// its memory until bad_alloc: both are refused with the path.
TEST(ConfigFiles, TheCollectConfigMustBeARegularFileOfBoundedSize) {
  std::string fifo = ::testing::TempDir() + "/collect-config-fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto c = power::LoadCollectConfig(fifo);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("is not a regular file"), std::string::npos)
      << c.error().message;
  EXPECT_NE(c.error().message.find(fifo), std::string::npos) << c.error().message;
  ::unlink(fifo.c_str());
  auto z = power::LoadCollectConfig("/dev/zero");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("/dev/zero"), std::string::npos) << z.error().message;
}

}  // namespace
}  // namespace gpulse
