// DRM fdinfo parsing (drm-usage-stats.rst keys and the pre-5.19 amdgpu format).
#include "gpu/amdgpu/fdinfo.h"

#include <gtest/gtest.h>

namespace gpulse::gpu {
namespace {

TEST(DrmFdinfo, MemorySizesTakeTheirUnit) {
  EXPECT_EQ(ParseDrmMemorySize("4096"), 4096u);
  EXPECT_EQ(ParseDrmMemorySize("12 KiB"), 12u * 1024);
  EXPECT_EQ(ParseDrmMemorySize("3 MiB"), 3u << 20);
  EXPECT_EQ(ParseDrmMemorySize("5 kB"), 5u * 1024);  // the old amdgpu spelling
  EXPECT_FALSE(ParseDrmMemorySize("5 parsecs"));
  EXPECT_FALSE(ParseDrmMemorySize("lots"));
}

TEST(DrmFdinfo, ParsesTheDocumentedKeys) {
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
  EXPECT_EQ(info->Engine("gfx"), 123456u);
  EXPECT_EQ(info->Engine("compute"), 7u);
  EXPECT_FALSE(info->Engine("capacity-gfx"));
  ASSERT_EQ(info->total_bytes.size(), 1u);
  EXPECT_EQ(info->total_bytes[0].second, 2u << 20);
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

TEST(DrmFdinfo, NotADrmClient) {
  EXPECT_FALSE(ParseDrmFdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t7\n"));
  EXPECT_FALSE(ParseDrmFdinfo(""));
}

}  // namespace
}  // namespace gpulse::gpu
