// The DRM fdinfo parser over the drm-usage-stats.rst keys (as amdgpu, i915 and xe print them) and
// amdgpu's format before 5.19, and the procfs scan of DRM clients (src/gpu/drm/fdinfo.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gpu/drm/fdinfo.h"
#include "identity/temp_tree.h"

namespace gpulse::gpu::drm {
namespace {

namespace fs = std::filesystem;
using identity::testing::TempTree;

// --- Parsing ---------------------------------------------------------------------------------

TEST(DrmFdinfo, MemorySizesTakeTheirUnit) {
  EXPECT_EQ(ParseDrmMemorySize("4096"), 4096u);
  EXPECT_EQ(ParseDrmMemorySize("12 KiB"), 12u * 1024);
  EXPECT_EQ(ParseDrmMemorySize("3 MiB"), 3u << 20);
  EXPECT_EQ(ParseDrmMemorySize("5 kB"), 5u * 1024);  // the old amdgpu spelling
  EXPECT_FALSE(ParseDrmMemorySize("3 GiB"));         // not a unit the kernel prints: not guessed
  EXPECT_FALSE(ParseDrmMemorySize("5 parsecs"));
  EXPECT_FALSE(ParseDrmMemorySize("lots"));
}

TEST(DrmFdinfo, ParsesAmdgpuDocumentedKeys) {
  auto info = ParseDrmFdinfo(
      "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t42\n"
      "drm-pdev:\t0000:c1:00.0\ndrm-total-vram:\t2 MiB\ndrm-resident-vram:\t1024 KiB\n"
      "drm-memory-vram:\t999 KiB\ndrm-memory-gtt:\t8 KiB\ndrm-engine-gfx:\t123456 ns\n"
      "drm-engine-compute:\t7 ns\ndrm-engine-capacity-gfx:\t2\ndrm-cycles-gfx:\t99\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->driver, "amdgpu");
  EXPECT_EQ(info->pdev, "0000:c1:00.0");
  EXPECT_EQ(info->client_id, 42u);
  EXPECT_EQ(info->Resident("vram"), 1024u * 1024);  // resident beats the deprecated alias
  EXPECT_EQ(info->Resident("gtt"), 8u * 1024);      // the alias when alone
  EXPECT_EQ(info->BusyNs("gfx"), 123456u);
  EXPECT_EQ(info->BusyNs("compute"), 7u);
  EXPECT_EQ(info->Engine("gfx")->capacity, 2u);
  EXPECT_EQ(info->Engine("gfx")->cycles, 99u);
  EXPECT_EQ(info->Engine("capacity-gfx"), nullptr);
  int totals = 0;
  for (const DrmRegionMemory& r : info->memory) totals += r.total_bytes.has_value();
  EXPECT_EQ(totals, 1);
  EXPECT_EQ(info->Region("vram")->total_bytes, 2u << 20);
  EXPECT_TRUE(info->legacy_engine_percent.empty());
}

TEST(DrmFdinfo, ParsesXeEnginesCyclesAndMemoryUnits) {
  auto info = ParseDrmFdinfo(
      "pos:\t0\ndrm-driver:\txe\ndrm-pdev:\t0000:04:00.0\ndrm-client-id:\t42\n"
      "drm-total-cycles-rcs:\t900\ndrm-cycles-rcs:\t100\ndrm-engine-capacity-ccs:\t4\n"
      "drm-total-vram0:\t2 MiB\ndrm-resident-vram0:\t512 KiB\ndrm-memory-gtt:\t4096\n"
      "drm-engine-render:\t77 ns\ndrm-total-system:\t3 GiB\n");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->driver, "xe");
  EXPECT_EQ(info->pdev, "0000:04:00.0");
  EXPECT_EQ(info->client_id, 42u);
  const DrmEngineUsage* rcs = info->Engine("rcs");
  ASSERT_NE(rcs, nullptr);
  EXPECT_EQ(rcs->cycles, 100u);
  EXPECT_EQ(rcs->total_cycles, 900u);
  EXPECT_EQ(info->Engine("ccs")->capacity, 4u);
  EXPECT_EQ(info->Engine("render")->busy_ns, 77u);
  EXPECT_EQ(info->Region("cycles-rcs"), nullptr);  // drm-total-cycles-* is not a region
  EXPECT_EQ(info->Region("vram0")->total_bytes, 2u << 20);
  EXPECT_EQ(info->Region("vram0")->resident_bytes, 512u << 10);
  EXPECT_EQ(info->Region("gtt")->resident_bytes, 4096u);          // the deprecated alias
  EXPECT_FALSE(info->Region("system")->total_bytes.has_value());  // unknown unit: not guessed
}

TEST(DrmFdinfo, PdevIsLowerCased) {
  auto info = ParseDrmFdinfo("drm-driver:\ti915\ndrm-pdev:\t0000:C1:00.0\ndrm-client-id:\t1\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pdev, "0000:c1:00.0");
}

TEST(DrmFdinfo, OldAmdgpuFormat) {
  auto info = ParseDrmFdinfo(
      "pos:\t0\npdev:\t0000:03:00.0\npasid:\t32770\nvram mem:\t2048 kB\ngtt mem:\t4 kB\n"
      "gfx0:\t12.50%\ncomp_1.0.0:\t 3.00%\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->driver, "amdgpu");
  EXPECT_EQ(info->pdev, "0000:03:00.0");
  EXPECT_FALSE(info->client_id);
  EXPECT_EQ(info->Resident("vram"), 2048u * 1024);
  ASSERT_EQ(info->legacy_engine_percent.size(), 2u);
  EXPECT_EQ(info->legacy_engine_percent[0].second, 12.5);
}

TEST(DrmFdinfo, OldAmdgpuKeysAreIgnoredInAnotherDriversFdinfo) {
  auto info = ParseDrmFdinfo(
      "drm-driver:\ti915\ndrm-client-id:\t3\npdev:\t0000:03:00.0\nvram mem:\t2048 kB\n"
      "gfx0:\t12.50%\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pdev, "");
  EXPECT_EQ(info->Region("vram"), nullptr);
  EXPECT_TRUE(info->legacy_engine_percent.empty());
}

TEST(DrmFdinfo, NotADrmClient) {
  EXPECT_FALSE(ParseDrmFdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t7\n"));
  EXPECT_FALSE(ParseDrmFdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\n").has_value());
  EXPECT_FALSE(ParseDrmFdinfo(""));
}

// --- The procfs scan -------------------------------------------------------------------------

class Proc {
 public:
  void Fd(unsigned pid, unsigned fd, const std::string& fdinfo,
          const std::string& target = "/dev/dri/renderD128") const {
    const std::string dir = tree_.root() + "/" + std::to_string(pid);
    fs::create_directories(dir + "/fd");
    fs::create_symlink(target, dir + "/fd/" + std::to_string(fd));
    tree_.Write(std::to_string(pid) + "/fdinfo/" + std::to_string(fd), fdinfo);
  }
  sys::RootedFs fs() const { return sys::RootedFs(tree_.root()); }
  const std::string& root() const { return tree_.root(); }

 private:
  TempTree tree_;
};

std::string Client(const std::string& driver, unsigned id, const std::string& pdev) {
  return "drm-driver:\t" + driver + "\ndrm-client-id:\t" + std::to_string(id) + "\ndrm-pdev:\t" +
         pdev + "\n";
}

TEST(ScanDrmClients, EachClientOnceWithEveryProcessHoldingIt) {
  Proc proc;
  proc.Fd(100, 6, Client("i915", 7, "0000:03:00.0"));
  proc.Fd(100, 5, Client("i915", 7, "0000:03:00.0"));  // dup() of client 7
  proc.Fd(99, 4, Client("i915", 7, "0000:03:00.0"));   // shared with PID 99 (SCM_RIGHTS)
  proc.Fd(100, 8, Client("i915", 7, "0000:00:02.0"));  // client id 7 of another GPU
  proc.Fd(101, 3, Client("amdgpu", 2, "0000:c1:00.0"));
  proc.Fd(102, 3, Client("i915", 9, "0000:03:00.0"), "/dev/null");       // not a DRM file
  proc.Fd(103, 3, Client("i915", 10, "0000:03:00.0"), "socket:[1234]");  // nor this
  proc.Fd(104, 3, "pos:\t0\npdev:\t0000:c1:00.0\nvram mem:\t4 kB\n");    // old amdgpu, no id
  proc.Fd(104, 4, "pos:\t0\npdev:\t0000:c1:00.0\nvram mem:\t4 kB\n");
  fs::create_directories(proc.root() + "/self");  // not a PID
  fs::create_directories(proc.root() + "/600");   // a process without fd/ (exited)

  auto all = ScanDrmClients(proc.fs(), "");
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].pids, (std::vector<unsigned>{99, 100}));
  EXPECT_EQ((*all)[0].info.client_id, 7u);
  EXPECT_EQ((*all)[1].pids, (std::vector<unsigned>{100}));
  EXPECT_EQ((*all)[1].info.pdev, "0000:00:02.0");
  EXPECT_EQ((*all)[2].info.driver, "amdgpu");
  EXPECT_EQ((*all)[3].pids, (std::vector<unsigned>{104}));  // without a client id: per descriptor
  EXPECT_EQ((*all)[4].pids, (std::vector<unsigned>{104}));

  auto amd = ScanDrmClients(proc.fs(), "amdgpu");
  ASSERT_TRUE(amd.ok());
  ASSERT_EQ(amd->size(), 3u);
  EXPECT_EQ((*amd)[0].pids.front(), 101u);
}

TEST(ScanDrmClients, AnUnreadableRootIsAnError) {
  Proc proc;
  EXPECT_FALSE(ScanDrmClients(sys::RootedFs(proc.root() + "/no-such-proc"), "").ok());
  auto empty = ScanDrmClients(proc.fs(), "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace gpulse::gpu::drm
