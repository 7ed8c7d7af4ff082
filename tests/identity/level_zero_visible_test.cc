// ZE_AFFINITY_MASK (Level Zero) and ONEAPI_DEVICE_SELECTOR (DPC++/SYCL) → physical Intel GPU,
// table by table: plain index lists resolve, every other form is refused with its reason
// (identity/level_zero_visible.h has the rules and their sources).
#include "identity/level_zero_visible.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "identity/devices_fixture.h"
#include "identity/expect_mapping.h"

namespace gpulse::identity {
namespace {

using testing::Describe;

// Four single-tile Intel GPUs (Flex 170-like) as the Intel backend numbers them (DRM cards 1..4,
// card 0 being a BMC display), in Level Zero's order.
std::vector<DeviceInfo> Devices() {
  std::vector<DeviceInfo> d;
  for (unsigned i = 0; i < 4; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x29 + i);
    DeviceInfo g = testing::Gpu(i + 1, "Intel Data Center GPU Flex 170", "", bus);
    g.vendor = "Intel";
    g.backend = "i915";
    d.push_back(g);
  }
  return d;
}

struct Case {
  const char* name;
  std::map<std::string, std::string> env;
  LevelZeroApi api;
  std::vector<std::string> ordinals;  // Describe() of each ordinal
  std::string refusal;                // substring, "" for none
  std::string note;                   // substring of some note, "" to skip
};

const Case kCases[] = {
    // ZE_AFFINITY_MASK, a plain Level Zero program.
    {"unset_every_device",
     {},
     LevelZeroApi::kLevelZero,
     {"GPU 1", "GPU 2", "GPU 3", "GPU 4"},
     "",
     ""},
    {"plain_list",
     {{"ZE_AFFINITY_MASK", "0,1"}},
     LevelZeroApi::kLevelZero,
     {"GPU 1", "GPU 2"},
     "",
     ""},
    {"single_index", {{"ZE_AFFINITY_MASK", "1"}}, LevelZeroApi::kLevelZero, {"GPU 2"}, "", ""},
    {"sparse_ascending",
     {{"ZE_AFFINITY_MASK", "0,3"}},
     LevelZeroApi::kLevelZero,
     {"GPU 1", "GPU 4"},
     "",
     ""},
    {"out_of_range",
     {{"ZE_AFFINITY_MASK", "0,4"}},
     LevelZeroApi::kLevelZero,
     {},
     "out of range (4 devices)",
     ""},
    {"duplicate",
     {{"ZE_AFFINITY_MASK", "1,1"}},
     LevelZeroApi::kLevelZero,
     {},
     "repeats an earlier one",
     ""},
    {"descending_order_not_documented",
     {{"ZE_AFFINITY_MASK", "2,0"}},
     LevelZeroApi::kLevelZero,
     {},
     "order",
     ""},
    {"sub_device", {{"ZE_AFFINITY_MASK", "0.1"}}, LevelZeroApi::kLevelZero, {}, "sub-device", ""},
    {"sub_device_in_list",
     {{"ZE_AFFINITY_MASK", "0,1.0"}},
     LevelZeroApi::kLevelZero,
     {},
     "sub-device",
     ""},
    {"empty_not_documented", {{"ZE_AFFINITY_MASK", ""}}, LevelZeroApi::kLevelZero, {}, "empty", ""},
    {"whitespace",
     {{"ZE_AFFINITY_MASK", "0, 1"}},
     LevelZeroApi::kLevelZero,
     {},
     "not a plain decimal index",
     ""},
    {"hex_not_plain",
     {{"ZE_AFFINITY_MASK", "0x1"}},
     LevelZeroApi::kLevelZero,
     {},
     "not a plain decimal index",
     ""},
    {"selector_ignored_by_level_zero",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:1"}},
     LevelZeroApi::kLevelZero,
     {"GPU 1", "GPU 2", "GPU 3", "GPU 4"},
     "",
     "is ignored"},
    // ONEAPI_DEVICE_SELECTOR, a SYCL program.
    {"sycl_plain_list",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:0,1"}},
     LevelZeroApi::kSycl,
     {"GPU 1", "GPU 2"},
     "",
     ""},
    {"sycl_single",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:2"}},
     LevelZeroApi::kSycl,
     {"GPU 3"},
     "",
     ""},
    {"sycl_star",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:*"}},
     LevelZeroApi::kSycl,
     {"GPU 1", "GPU 2", "GPU 3", "GPU 4"},
     "",
     ""},
    {"sycl_gpu",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:gpu"}},
     LevelZeroApi::kSycl,
     {"GPU 1", "GPU 2", "GPU 3", "GPU 4"},
     "",
     ""},
    {"sycl_unset", {}, LevelZeroApi::kSycl, {}, "once per backend", ""},
    {"sycl_opencl",
     {{"ONEAPI_DEVICE_SELECTOR", "opencl:0"}},
     LevelZeroApi::kSycl,
     {},
     "backend 'opencl'",
     ""},
    {"sycl_any_backend_gpu",
     {{"ONEAPI_DEVICE_SELECTOR", "*:gpu"}},
     LevelZeroApi::kSycl,
     {},
     "backend '*'",
     ""},
    {"sycl_negation",
     {{"ONEAPI_DEVICE_SELECTOR", "!level_zero:0"}},
     LevelZeroApi::kSycl,
     {},
     "negative filter",
     ""},
    {"sycl_two_terms",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:*;!level_zero:0"}},
     LevelZeroApi::kSycl,
     {},
     "several terms",
     ""},
    {"sycl_sub_device",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:0.1"}},
     LevelZeroApi::kSycl,
     {},
     "sub-device",
     ""},
    {"sycl_out_of_range",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:7"}},
     LevelZeroApi::kSycl,
     {},
     "out of range",
     ""},
    {"sycl_duplicate",
     {{"ONEAPI_DEVICE_SELECTOR", "level_zero:0,0"}},
     LevelZeroApi::kSycl,
     {},
     "repeats",
     ""},
    {"sycl_no_backend",
     {{"ONEAPI_DEVICE_SELECTOR", "1"}},
     LevelZeroApi::kSycl,
     {},
     "no backend",
     ""},
    {"sycl_empty", {{"ONEAPI_DEVICE_SELECTOR", ""}}, LevelZeroApi::kSycl, {}, "empty", ""},
    // Both set: the affinity mask first, then the selector counts what it left.
    {"both_selector_counts_masked_devices",
     {{"ZE_AFFINITY_MASK", "1,2,3"}, {"ONEAPI_DEVICE_SELECTOR", "level_zero:0,2"}},
     LevelZeroApi::kSycl,
     {"GPU 2", "GPU 4"},
     "",
     "devices ZE_AFFINITY_MASK left"},
    {"both_selector_out_of_masked_range",
     {{"ZE_AFFINITY_MASK", "3"}, {"ONEAPI_DEVICE_SELECTOR", "level_zero:1"}},
     LevelZeroApi::kSycl,
     {},
     "out of range (1 devices)",
     ""},
    {"both_mask_refused_first",
     {{"ZE_AFFINITY_MASK", "0.0"}, {"ONEAPI_DEVICE_SELECTOR", "level_zero:0"}},
     LevelZeroApi::kSycl,
     {},
     "ZE_AFFINITY_MASK entry",
     ""},
};

class LevelZeroVisibleTest : public ::testing::TestWithParam<Case> {};

TEST_P(LevelZeroVisibleTest, ResolvesOrRefuses) {
  const Case& c = GetParam();
  Environment env;
  for (const auto& [k, v] : c.env) env.Set(k, v);
  const std::vector<DeviceInfo> devices = Devices();
  testing::ExpectMapping(ResolveLevelZero(env, devices, c.api), c.ordinals, c.refusal, c.note);
}

INSTANTIATE_TEST_SUITE_P(Table, LevelZeroVisibleTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(LevelZeroVisible, OrdinalCarriesThePhysicalIdentity) {
  Environment env;
  env.Set("ZE_AFFINITY_MASK", "2");
  const std::vector<DeviceInfo> devices = Devices();
  Mapping m = ResolveLevelZero(env, devices, LevelZeroApi::kLevelZero);
  ASSERT_EQ(m.ordinals.size(), 1u);
  EXPECT_EQ(m.ordinals[0].index, 3u);
  EXPECT_EQ(m.ordinals[0].pci_bus_id, "00000000:2B:00.0");
  auto t = Lookup(m, 1);
  EXPECT_TRUE(std::holds_alternative<Refusal>(t));
}

TEST(LevelZeroVisible, MultiTileDeviceNeedsCompositeHierarchy) {
  const std::vector<DeviceInfo> devices = Devices();
  const std::vector<unsigned> tiles = {1, 2, 1, 1};
  Environment env;
  env.Set("ZE_AFFINITY_MASK", "0");
  Mapping flat = ResolveLevelZero(env, devices, LevelZeroApi::kLevelZero, tiles);
  ASSERT_TRUE(flat.refusal.has_value());
  EXPECT_NE(flat.refusal->reason.find("numbers tiles"), std::string::npos);
  EXPECT_TRUE(flat.ordinals.empty());
  env.Set("ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE");
  Mapping composite = ResolveLevelZero(env, devices, LevelZeroApi::kLevelZero, tiles);
  EXPECT_FALSE(composite.refusal.has_value());
  ASSERT_EQ(composite.ordinals.size(), 1u);
  EXPECT_EQ(composite.ordinals[0].index, 1u);
}

}  // namespace
}  // namespace gpulse::identity
