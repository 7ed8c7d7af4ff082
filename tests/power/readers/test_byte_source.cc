// How samples.csv bytes are cut into lines and hashed (power/byte_source.h): the rule for lines and
// overlong lines stated directly, for every buffer size and line length, from memory and from a
// file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "power/fixture.h"
#include "power/readers/byte_source.h"
#include "power/readers/json_io.h"
#include "power/readers/line_cutter.h"

namespace gpulse::power {
namespace {

using testing::Sha256Hex;
using testing::TempDir;
using testing::WriteText;

struct Events {
  std::vector<std::string> lines;  // "<overlong>" for a skipped line
  std::string digest;
  bool blocks_end_with_newline = true;  // except the range's last block
};

// Collects what a reader reports: lines (split out of the runs) and overlong markers.
struct Collector {
  Events e;
  std::string last_block;
  std::function<void(std::string_view)> on_block = [this](std::string_view block) {
    if (!last_block.empty() && last_block.back() != '\n') e.blocks_end_with_newline = false;
    last_block.assign(block);
    while (!block.empty()) {
      size_t nl = block.find('\n');
      e.lines.emplace_back(block.substr(0, nl));
      block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    }
  };
  std::function<void()> on_overlong = [this] { e.lines.emplace_back("<overlong>"); };
};

Events Read(const ByteSource& src, size_t max_line, DigestOn where = DigestOn::kThisThread) {
  Collector c;
  Sha256 sha;
  Status st = ForEachBlock(src, 0, src.size(), max_line, c.on_block, c.on_overlong, &sha, where);
  EXPECT_TRUE(st.ok());
  c.e.digest = sha.HexDigest();
  return c.e;
}

// The rule, stated directly: lines split at '\n'; one of max(max_line, 64) bytes or more is
// overlong; a final piece without '\n' is a line when not empty.
std::vector<std::string> Expected(const std::string& text, size_t max_line) {
  size_t cap = std::max<size_t>(max_line, 64);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t stop = nl == std::string::npos ? text.size() : nl;
    out.push_back(stop - pos >= cap ? "<overlong>" : text.substr(pos, stop - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::string RandomText(std::mt19937& rng) {
  std::string text;
  int lines = static_cast<int>(rng() % 200);
  for (int i = 0; i < lines; ++i) {
    size_t len = rng() % 8 == 0 ? rng() % 700 : rng() % 90;
    for (size_t k = 0; k < len; ++k) text.push_back(static_cast<char>('a' + rng() % 26));
    if (i + 1 < lines || rng() % 2) text.push_back('\n');
  }
  return text;
}

TEST(ByteSource, LinesOverlongLinesAndDigestForAnyBufferSize) {
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    std::string text = RandomText(rng);
    size_t max_line = std::vector<size_t>{1, 64, 65, 100, 257, 4096}[rng() % 6];
    auto mem = MemorySource(text);
    for (DigestOn where : {DigestOn::kThisThread, DigestOn::kOwnThread}) {
      Events a = Read(*mem, max_line, where);
      ASSERT_EQ(a.lines, Expected(text, max_line)) << "round " << round << " max " << max_line;
      EXPECT_EQ(a.digest, Sha256Hex(text));
      EXPECT_TRUE(a.blocks_end_with_newline);
    }
  }
}

// The cutter sees chunks of every size the readers could hand it, not only their read steps.
TEST(ByteSource, LineCutterAgreesWithTheRuleForAnyChunking) {
  std::mt19937 rng(9);
  for (int round = 0; round < 300; ++round) {
    std::string text = RandomText(rng);
    size_t cap = std::vector<size_t>{64, 65, 100, 257}[rng() % 4];
    Collector c;
    LineCutter cutter(cap, c.on_block, c.on_overlong);
    for (size_t pos = 0; pos < text.size();) {
      size_t n = std::min<size_t>(text.size() - pos, 1 + rng() % cap);
      cutter.Feed(std::string_view(text).substr(pos, n));
      pos += n;
    }
    cutter.Finish();
    ASSERT_EQ(c.e.lines, Expected(text, cap)) << "round " << round << " cap " << cap;
    EXPECT_TRUE(c.e.blocks_end_with_newline);
  }
}

TEST(ByteSource, FileReadsLikeMemory) {
  TempDir tmp;
  std::mt19937 rng(5);
  std::string text;
  while (text.size() < (3u << 20)) text += RandomText(rng) + "\n";  // many 256 KiB reads
  WriteText(tmp.path() / "f.csv", text);
  auto file = OpenFileSource(tmp.path() / "f.csv");
  ASSERT_TRUE(file.ok());
  auto mem = MemorySource(text);
  for (size_t max_line : {size_t{100}, size_t{70000}, size_t{1} << 20}) {
    Events a = Read(**file, max_line), b = Read(*mem, max_line),
           c = Read(**file, max_line, DigestOn::kOwnThread);
    EXPECT_EQ(a.lines, b.lines) << max_line;
    EXPECT_EQ(c.lines, b.lines) << max_line;
    EXPECT_EQ(a.digest, Sha256Hex(text));
    EXPECT_EQ(c.digest, a.digest);
  }
  auto whole = Sha256OfSource(**file);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, Sha256Hex(text));
}

TEST(ByteSource, AFifoIsRefusedAtOnceNotWaitedOn) {
  TempDir tmp;
  auto fifo = tmp.path() / "samples.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto src = OpenFileSource(fifo);  // used to block forever in open(2) waiting for a writer
  ASSERT_FALSE(src.ok());
  EXPECT_NE(src.error().message.find("not a regular file"), std::string::npos)
      << src.error().message;
}

TEST(JsonText, AByteOrderMarkIsRefused) {
  auto bom = ParseJsonText("\xEF\xBB\xBF{\"schema_version\": 1}");
  ASSERT_FALSE(bom.ok());
  EXPECT_NE(bom.error().message.find("byte-order mark"), std::string::npos);
  EXPECT_TRUE(ParseJsonText("{\"schema_version\": 1}").ok());
}

}  // namespace
}  // namespace gpulse::power
