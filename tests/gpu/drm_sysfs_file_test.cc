// The kept-open sysfs attribute (src/gpu/drm/sysfs_file.h) and the DRM card and PCI names
// (src/gpu/drm/device_names.h) the amdgpu and Intel backends share.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpu/drm/device_names.h"
#include "gpu/drm/sysfs_file.h"
#include "identity/temp_tree.h"

namespace gpulse::gpu::drm {
namespace {

namespace fs = std::filesystem;
using identity::testing::TempTree;

TEST(SysfsFile, AFileMissingAtFirstOpenIsMissingForGood) {
  TempTree t;
  SysfsFile f(t.root() + "/power1_average");
  std::int64_t v = 0;
  EXPECT_EQ(f.ReadInt(v), ReadOutcome::kMissing);
  EXPECT_TRUE(f.missing());
  t.Write("power1_average", "5\n");  // appearing later does not matter
  EXPECT_EQ(f.ReadInt(v), ReadOutcome::kMissing);
  EXPECT_FALSE(f.Exists());
  SysfsFile none;
  EXPECT_EQ(none.ReadInt(v), ReadOutcome::kMissing);
}

TEST(SysfsFile, RereadsTheOpenFileEachTime) {
  TempTree t;
  t.Write("energy1_input", "100\n");
  SysfsFile f(t.root() + "/energy1_input");
  std::uint64_t v = 0;
  ASSERT_EQ(f.ReadUint(v), ReadOutcome::kOk);
  EXPECT_EQ(v, 100u);
  std::fstream(t.root() + "/energy1_input", std::ios::in | std::ios::out | std::ios::trunc)
      << "250\n";  // same inode, as a sysfs attribute changes
  ASSERT_EQ(f.ReadUint(v), ReadOutcome::kOk);
  EXPECT_EQ(v, 250u);
}

TEST(SysfsFile, AReadErrorIsTransientAndTheFileIsReopened) {
  TempTree t;
  const std::string path = t.root() + "/gpu_busy_percent";
  fs::create_directories(path);  // open succeeds, pread fails (EISDIR), like EIO during a reset
  SysfsFile f(path);
  std::int64_t v = 0;
  EXPECT_EQ(f.ReadInt(v), ReadOutcome::kFailed);
  EXPECT_FALSE(f.missing());
  fs::remove(path);
  EXPECT_EQ(f.ReadInt(v), ReadOutcome::kFailed);  // gone after it was opened: still transient
  EXPECT_FALSE(f.missing());
  t.Write("gpu_busy_percent", "42\n");
  ASSERT_EQ(f.ReadInt(v), ReadOutcome::kOk);
  EXPECT_EQ(v, 42);
}

TEST(SysfsFile, TextThatIsNotOneIntegerIsAFailure) {
  TempTree t;
  t.Write("act_freq", "garbage\n");
  SysfsFile f(t.root() + "/act_freq");
  std::uint64_t v = 0;
  EXPECT_EQ(f.ReadUint(v), ReadOutcome::kFailed);
  EXPECT_FALSE(f.missing());
}

TEST(SysfsFile, ParsesOneDecimalOrHexInteger) {
  EXPECT_EQ(ParseInt("  42\n"), 42);
  EXPECT_EQ(ParseInt("-7\n"), -7);
  EXPECT_EQ(ParseInt("0x1002\n"), 0x1002);
  EXPECT_EQ(ParseUint("18446744073709551615\n"), 18446744073709551615u);
  EXPECT_FALSE(ParseUint("-1"));
  EXPECT_FALSE(ParseInt(""));
  EXPECT_FALSE(ParseInt("\n"));
  EXPECT_FALSE(ParseInt("12 34"));
  EXPECT_FALSE(ParseInt("12abc"));
  EXPECT_FALSE(ParseInt("0x"));
}

TEST(DeviceNames, CardNumbersAreCardEntriesOnly) {
  EXPECT_EQ(CardNumber("card0"), 0u);
  EXPECT_EQ(CardNumber("card12"), 12u);
  EXPECT_FALSE(CardNumber("card"));
  EXPECT_FALSE(CardNumber("card0-DP-1"));
  EXPECT_FALSE(CardNumber("renderD128"));
}

TEST(DeviceNames, PciAddressForms) {
  EXPECT_EQ(LowerPciAddress("0000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(NvmlPciBusId("0000:c1:00.0"), "00000000:C1:00.0");
  EXPECT_EQ(NvmlPciBusId("0000:03:00.0"), "00000000:03:00.0");
  EXPECT_EQ(NvmlPciBusId("0000:c1:00"), "");
  EXPECT_EQ(NvmlPciBusId("000g:c1:00.0"), "");
}

}  // namespace
}  // namespace gpulse::gpu::drm
