#include "faults/kmsg.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gpulse::faults {
namespace {

namespace fs = std::filesystem;

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/gpulse-kmsg-XXXXXX";
    int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
  }
  ~TempFile() { fs::remove(path_); }
  void Append(const std::string& s) { std::ofstream(path_, std::ios::app) << s; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Kmsg, ParsesRecordsInTheDevicesFormat) {
  auto r = ParseKmsgRecord("4,1234,5140900,-;NVRM: Xid (PCI:0000:3b:00): 79, x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->usec, 5140900);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:3b:00): 79, x");
  auto more = ParseKmsgRecord("6,1,2,c,caller=T1;message; with semicolon");
  ASSERT_TRUE(more);
  EXPECT_EQ(more->message, "message; with semicolon");
  EXPECT_FALSE(ParseKmsgRecord("no header"));
  EXPECT_FALSE(ParseKmsgRecord("4,x,5,-;m"));
  EXPECT_FALSE(ParseKmsgRecord("4,1;m"));
}

TEST(Kmsg, ReadsAFileFromItsStartThenAsItGrows) {
  TempFile f;
  f.Append("4,1,100,-;first\n SUBSYSTEM=pci\nnot a record\n4,2,200,-;sec");
  auto src = KmsgSource::Open(f.path());
  ASSERT_TRUE(src) << src.error().message;
  auto a = (*src)->Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message, "first");
  EXPECT_EQ((*src)->stats().malformed, 1u);
  f.Append("ond\n4,3,300,-;third\n");
  auto b = (*src)->Poll();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].message, "second");
  EXPECT_EQ(b[1].seq, 3u);
  EXPECT_TRUE((*src)->Poll().empty());
  EXPECT_FALSE((*src)->TakeRestart());
}

TEST(Kmsg, AFileThatStartsOverIsANewLog) {
  TempFile f;
  f.Append("4,1,100,-;one\n4,2,200,-;two\n");
  auto src = KmsgSource::Open(f.path());
  ASSERT_TRUE(src);
  EXPECT_EQ((*src)->Poll().size(), 2u);
  std::ofstream(f.path(), std::ios::trunc) << "4,1,50,-;after reboot\n";
  auto again = (*src)->Poll();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].message, "after reboot");
  EXPECT_TRUE((*src)->TakeRestart());
  EXPECT_FALSE((*src)->TakeRestart());
}

TEST(Kmsg, ALineTooLongToKeepIsDroppedWhole) {
  TempFile f;
  std::string tail = "4,9,9,-;NVRM: Xid (PCI:0000:3b:00): 79, the end of a long line\n";
  f.Append("4,1,1,-;" + std::string(KmsgSource::kMaxLineBytes + 10, 'x') + tail + "4,2,2,-;next\n");
  auto src = KmsgSource::Open(f.path());
  ASSERT_TRUE(src);
  auto r = (*src)->Poll();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].message, "next");
  EXPECT_EQ((*src)->stats().malformed, 1u);
}

TEST(Kmsg, RefusesTimestampsNoBootReaches) {
  EXPECT_FALSE(ParseKmsgRecord("4,1,9999999999999999,-;m"));
  EXPECT_TRUE(ParseKmsgRecord("4,1,9007199254740992,-;m"));
}

TEST(Kmsg, RefusesWhatIsNeitherTheDeviceNorAFile) {
  auto missing = KmsgSource::Open("/nonexistent/kmsg");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("/nonexistent/kmsg"), std::string::npos);
  auto dir = KmsgSource::Open("/tmp");
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpulse::faults
