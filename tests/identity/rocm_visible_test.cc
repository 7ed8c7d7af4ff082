// ROCR_VISIBLE_DEVICES then HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (HIP) or GPU_DEVICE_ORDINAL
// (OpenCL) → physical device, table by table (docs/identity.md). Cases marked "lilbee" mirror the
// upstream tests in shared/research/seed-upstreams.md (c).
#include "identity/rocm_visible.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "identity/devices_fixture.h"
#include "identity/expect_mapping.h"

namespace gpulse::identity {
namespace {

using testing::Describe;

// Twelve MI300X-like agents in KFD order, with ROCr's UUIDs ("GPU-" + 16 upper-case hex).
std::vector<DeviceInfo> Agents() {
  std::vector<DeviceInfo> a;
  const char* ids[] = {"0A1B2C3D4E5F0001", "0A1B2C3D4E5F0002", "1111AAAA2222BBB3",
                       "1111AAAA2222BBB4", "40000000000000A4", "50000000000000A5",
                       "60000000000000A6", "70000000000000A7", "80000000000000A8",
                       "90000000000000A9", "A0000000000000AA", "B0000000000000AB"};
  for (unsigned i = 0; i < 12; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x10 + i);
    a.push_back(testing::Gpu(i, "AMD Instinct MI300X", std::string("GPU-") + ids[i], bus));
  }
  return a;
}

struct Case {
  const char* name;
  std::map<std::string, std::string> env;
  RocmApi api;
  std::vector<std::string> ordinals;
  std::string refusal;  // substring, "" for none
  std::string note;     // substring of some note, "" to skip
};

const Case kCases[] = {
    {"NothingSetShowsEveryGpuInKfdOrder",
     {},
     RocmApi::kHip,
     {"GPU 0", "GPU 1", "GPU 2", "GPU 3", "GPU 4", "GPU 5", "GPU 6", "GPU 7", "GPU 8", "GPU 9",
      "GPU 10", "GPU 11"},
     "",
     ""},
    // ROCr.
    {"RocrReordersToListOrder",
     {{"ROCR_VISIBLE_DEVICES", "3,1"}},
     RocmApi::kHip,
     {"GPU 3", "GPU 1"},
     "",
     ""},
    {"RocrEmptyHidesEveryGpu",
     {{"ROCR_VISIBLE_DEVICES", ""}},
     RocmApi::kHip,
     {},
     "",
     "set and empty"},
    {"RocrAcceptsHexAndOctalLikeStrtol",
     {{"ROCR_VISIBLE_DEVICES", "0x2,010"}},
     RocmApi::kHip,
     {"GPU 2", "GPU 8"},
     "",
     ""},
    {"RocrTrimsSpaces",
     {{"ROCR_VISIBLE_DEVICES", " 4 , 5"}},
     RocmApi::kHip,
     {"GPU 4", "GPU 5"},
     "",
     ""},
    {"RocrUuidPrefixIsCaseInsensitive",
     {{"ROCR_VISIBLE_DEVICES", "gpu-40000"}},
     RocmApi::kHip,
     {"GPU 4"},
     "",
     ""},
    {"RocrAmbiguousUuidEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "7,GPU-1111AAAA"}},
     RocmApi::kHip,
     {"GPU 7"},
     "",
     "matches several GPUs"},
    {"RocrShortUuidEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "2,GPU"}},
     RocmApi::kHip,
     {"GPU 2"},
     "",
     "5 to 20"},
    {"RocrOutOfRangeEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "1,12,2"}},
     RocmApi::kHip,
     {"GPU 1"},
     "",
     "out of range"},
    {"RocrNegativeEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "1,-1,2"}},
     RocmApi::kHip,
     {"GPU 1"},
     "",
     "out of range"},
    {"RocrDuplicateEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "1,2,1,3"}},
     RocmApi::kHip,
     {"GPU 1", "GPU 2"},
     "",
     "repeats"},
    {"RocrTrailingGarbageIsRefused",
     {{"ROCR_VISIBLE_DEVICES", "1,2abc"}},
     RocmApi::kHip,
     {},
     "characters after its number",
     ""},
    // HIP over the survivors.
    {"HipIndicesCountRocrSurvivors",
     {{"ROCR_VISIBLE_DEVICES", "4,5,6,7,8,9,10,11"}, {"HIP_VISIBLE_DEVICES", "6,7"}},
     RocmApi::kHip,
     {"GPU 10", "GPU 11"},
     "",
     ""},
    {"HipUuidIsASubstringMatch",
     {{"HIP_VISIBLE_DEVICES", "GPU-0A1B2C3D4E5F0002"}},
     RocmApi::kHip,
     {"GPU 1"},
     "",
     ""},
    {"HipUuidMatchIsCaseSensitive",
     {{"HIP_VISIBLE_DEVICES", "3,GPU-0a1b2c3d4e5f0002"}},
     RocmApi::kHip,
     {"GPU 3"},
     "",
     "matches no visible GPU"},
    {"HipAmbiguousUuidIsRefused",
     {{"HIP_VISIBLE_DEVICES", "GPU-1111AAAA"}},
     RocmApi::kHip,
     {},
     "matches several GPUs",
     ""},
    {"HipUuidMustSurviveRocr",
     {{"ROCR_VISIBLE_DEVICES", "0,1"}, {"HIP_VISIBLE_DEVICES", "1,GPU-40000000000000A4"}},
     RocmApi::kHip,
     {"GPU 1"},
     "",
     "matches no visible GPU"},
    {"HipInvalidEntryEndsTheList",
     {{"HIP_VISIBLE_DEVICES", "2,x,3"}},
     RocmApi::kHip,
     {"GPU 2"},
     "",
     "ends before entry 1"},
    {"HipOutOfRangeEndsTheList",
     {{"ROCR_VISIBLE_DEVICES", "0,1"}, {"HIP_VISIBLE_DEVICES", "1,2,0"}},
     RocmApi::kHip,
     {"GPU 1"},
     "",
     "out of range (2 GPUs after ROCR_VISIBLE_DEVICES)"},
    {"HipDuplicatesAreSkipped",
     {{"HIP_VISIBLE_DEVICES", "3,3,1"}},
     RocmApi::kHip,
     {"GPU 3", "GPU 1"},
     "",
     "skipped"},
    {"HipHexIsRefused",
     {{"HIP_VISIBLE_DEVICES", "0x1"}},
     RocmApi::kHip,
     {},
     "not a plain decimal index",
     ""},
    {"HipReadsCudaVisibleDevicesWhenHipIsUnset",
     {{"CUDA_VISIBLE_DEVICES", "5"}},
     RocmApi::kHip,
     {"GPU 5"},
     "",
     ""},
    {"HipVisibleDevicesBeatsCuda",
     {{"CUDA_VISIBLE_DEVICES", "5"}, {"HIP_VISIBLE_DEVICES", "6"}},
     RocmApi::kHip,
     {"GPU 6"},
     "",
     ""},
    {"EmptyHipMeansCudaThenNoFilter",
     {{"HIP_VISIBLE_DEVICES", ""}, {"CUDA_VISIBLE_DEVICES", "9"}},
     RocmApi::kHip,
     {"GPU 9"},
     "",
     ""},
    {"EmptyHipAndCudaAreNoFilter",
     {{"ROCR_VISIBLE_DEVICES", "2,3"}, {"HIP_VISIBLE_DEVICES", ""}, {"CUDA_VISIBLE_DEVICES", ""}},
     RocmApi::kHip,
     {"GPU 2", "GPU 3"},
     "",
     ""},
    // GPU_DEVICE_ORDINAL: OpenCL's mask; HIP ignores it.
    {"GpuDeviceOrdinalIsIgnoredByHip",
     {{"GPU_DEVICE_ORDINAL", "4,5"}, {"ROCR_VISIBLE_DEVICES", "0,1"}},
     RocmApi::kHip,
     {"GPU 0", "GPU 1"},
     "",
     "ignored"},
    {"GpuDeviceOrdinalFiltersOpenCl",
     {{"GPU_DEVICE_ORDINAL", "4,5"}},
     RocmApi::kOpenCl,
     {"GPU 4", "GPU 5"},
     "",
     ""},
    {"OpenClIgnoresHipVisibleDevices",
     {{"HIP_VISIBLE_DEVICES", "1"}},
     RocmApi::kOpenCl,
     {"GPU 0", "GPU 1", "GPU 2", "GPU 3", "GPU 4", "GPU 5", "GPU 6", "GPU 7", "GPU 8", "GPU 9",
      "GPU 10", "GPU 11"},
     "",
     ""},
    {"CudaDeviceOrderDoesNotAffectRocm",
     {{"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}, {"HIP_VISIBLE_DEVICES", "1,0"}},
     RocmApi::kHip,
     {"GPU 1", "GPU 0"},
     "",
     ""},
    // lilbee (shared/research/seed-upstreams.md (c)).
    {"LilbeeRocrOnlyParent",
     {{"ROCR_VISIBLE_DEVICES", "4,5"}},
     RocmApi::kHip,
     {"GPU 4", "GPU 5"},
     "",
     ""},
    {"LilbeeHipOnlyParent",
     {{"HIP_VISIBLE_DEVICES", "1,3"}},
     RocmApi::kHip,
     {"GPU 1", "GPU 3"},
     "",
     ""},
    // lilbee walks HIP then ROCr for ROCm and treats GPU_DEVICE_ORDINAL as a HIP mask ("4,5", 1 →
    // 5); ROCclr reads it for OpenCL only, so for HIP ordinal 1 stays GPU 1.
    {"LilbeeGpuDeviceOrdinalUnderOpenCl",
     {{"GPU_DEVICE_ORDINAL", "4,5"}},
     RocmApi::kOpenCl,
     {"GPU 4", "GPU 5"},
     "",
     ""},
};

// gtest prints a parameter by name instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class RocmVisible : public ::testing::TestWithParam<Case> {};

TEST_P(RocmVisible, Resolves) {
  const Case& c = GetParam();
  Environment env;
  for (const auto& [k, v] : c.env) env.Set(k, v);
  std::vector<DeviceInfo> agents = Agents();
  testing::ExpectMapping(ResolveRocm(env, agents, c.api), c.ordinals, c.refusal, c.note);
}

INSTANTIATE_TEST_SUITE_P(Rules, RocmVisible, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RocmVisibleLookup, LilbeeGpuDeviceOrdinalOrdinalOneUnderHipIsGpuOne) {
  Environment env;
  env.Set("GPU_DEVICE_ORDINAL", "4,5");
  std::vector<DeviceInfo> agents = Agents();
  Mapping m = ResolveRocm(env, agents, RocmApi::kHip);
  EXPECT_EQ(std::get<PhysicalDevice>(Lookup(m, 1)).index, 1u);
  Mapping ocl = ResolveRocm(env, agents, RocmApi::kOpenCl);
  EXPECT_EQ(std::get<PhysicalDevice>(Lookup(ocl, 1)).index, 5u);
}

TEST(RocmVisibleLookup, GpuWithoutUniqueIdNeverMatchesAUuid) {
  std::vector<DeviceInfo> agents = Agents();
  agents[4].uuid.clear();  // ROCr prints "Invalid-UUID" for a zero unique id
  Environment env;
  env.Set("ROCR_VISIBLE_DEVICES", "GPU-40000000000000A4");
  Mapping m = ResolveRocm(env, agents, RocmApi::kHip);
  EXPECT_TRUE(m.ordinals.empty());
  EXPECT_FALSE(m.refusal.has_value());
}

}  // namespace
}  // namespace gpulse::identity
