// CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER → physical device, table by table. Each case is named
// after the rule it checks (docs/identity.md). Cases marked "lilbee" mirror the upstream mask tests
// listed in shared/research/seed-upstreams.md (c); where gpulse answers differently (it resolves
// UUIDs exactly where lilbee refused), the case says so.
#include "identity/cuda_visible.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "identity/devices_fixture.h"
#include "identity/expect_mapping.h"

namespace gpulse::identity {
namespace {

using testing::Describe;
using testing::FourA40;
using testing::LilbeeHost;
using testing::MigHost;
using testing::Mixed;

struct Case {
  const char* name;
  std::function<SystemInfo()> host;
  std::optional<std::string> mask;    // CUDA_VISIBLE_DEVICES (nullopt: unset)
  std::optional<std::string> order;   // CUDA_DEVICE_ORDER (nullopt: unset)
  std::vector<std::string> ordinals;  // expected, as Describe() writes them
  std::string refusal;                // substring of the refusal, "" for none
  std::string note;                   // substring of some note, "" to skip
};

Mapping ResolveCase(const Case& c) {
  Environment env;
  if (c.mask) env.Set("CUDA_VISIBLE_DEVICES", *c.mask);
  if (c.order) env.Set("CUDA_DEVICE_ORDER", *c.order);
  SystemInfo info = c.host();
  return ResolveCuda(env, info, HostScope(info));
}

const std::string kPci = "PCI_BUS_ID";
const std::string kFast = "FASTEST_FIRST";

const Case kCases[] = {
    // Unset, empty, integers.
    {"UnsetShowsEveryGpuInBusOrder",
     FourA40,
     std::nullopt,
     kPci,
     {"GPU 0", "GPU 1", "GPU 2", "GPU 3"},
     "",
     "unset"},
    {"EmptyHidesEveryGpu", FourA40, "", kPci, {}, "", "set and empty"},
    {"IntegersInListOrder", FourA40, "2,1", kPci, {"GPU 2", "GPU 1"}, "", ""},
    {"IntegersCountBusOrderNotNvmlOrder", testing::BusOrderDiffers, "0", kPci, {"GPU 1"}, "", ""},
    {"LeadingZerosAreIntegers", FourA40, "01", kPci, {"GPU 1"}, "", ""},
    // Truncation: CUDA's own example, 0,2,-1,1 leaves 0 and 2.
    {"InvalidEntryEndsTheList",
     FourA40,
     "0,2,-1,1",
     kPci,
     {"GPU 0", "GPU 2"},
     "",
     "list ends before entry 2"},
    {"OutOfRangeIndexEndsTheList", FourA40, "1,7,2", kPci, {"GPU 1"}, "", "out of range"},
    {"EmptyEntryEndsTheList", FourA40, "1,,2", kPci, {"GPU 1"}, "", "not a GPU index"},
    {"DuplicateEndsTheList", FourA40, "1,3,1,2", kPci, {"GPU 1", "GPU 3"}, "", "repeats entry 0"},
    {"DuplicateByUuidAndIndexEndsTheList",
     FourA40,
     "3," + testing::Uuid("a3333333") + ",0",
     kPci,
     {"GPU 3"},
     "",
     "repeats"},
    // UUIDs.
    {"FullUuid", FourA40, testing::Uuid("a2222222"), kPci, {"GPU 2"}, "", ""},
    {"UniqueUuidPrefix", FourA40, "GPU-a3,1", kPci, {"GPU 3", "GPU 1"}, "", ""},
    {"AmbiguousUuidPrefixEndsTheList",
     FourA40,
     "2,GPU-a",
     kPci,
     {"GPU 2"},
     "",
     "ambiguous UUID prefix (GPU 0, GPU 1, GPU 2 and GPU 3)"},
    {"UnknownUuidEndsTheList", FourA40, "0,GPU-ffff", kPci, {"GPU 0"}, "", "matches no GPU"},
    {"UuidMatchingOnlyIgnoringCaseIsRefused",
     FourA40,
     "1,GPU-A3333333",
     kPci,
     {"GPU 1"},
     "only when case is ignored",
     ""},
    {"PrefixWithoutGpuDashIsNotAUuid", FourA40, "a3333333", kPci, {}, "", "not a GPU index"},
    {"WhitespaceIsRefused", FourA40, "0, 1", kPci, {"GPU 0"}, "whitespace", ""},
    // MIG, both forms.
    {"MigUuid", MigHost, testing::Uuid("m3000000", "MIG-"), kPci, {"GPU 0 MIG 3/0"}, "", ""},
    {"MigUuidPrefix", MigHost, "MIG-m2", kPci, {"GPU 0 MIG 2/0"}, "", ""},
    {"LegacyMigForm",
     MigHost,
     "MIG-" + testing::Uuid("e0000000") + "/2/0",
     kPci,
     {"GPU 0 MIG 2/0"},
     "",
     ""},
    {"LegacyMigFormWithUnknownInstanceEndsTheList",
     MigHost,
     "MIG-" + testing::Uuid("e0000000") + "/9/0",
     kPci,
     {},
     "",
     "no MIG instance with GPU instance 9"},
    {"LegacyMigFormOnGpuWithoutMigEndsTheList",
     MigHost,
     "MIG-" + testing::Uuid("e1111111") + "/2/0",
     kPci,
     {},
     "",
     "does not have MIG enabled"},
    {"MigAndWholeGpu", MigHost, "MIG-m2,1", kPci, {"GPU 0 MIG 2/0", "GPU 1"}, "", ""},
    {"SecondMigInstanceIsRefused",
     MigHost,
     "MIG-m2,MIG-m3",
     kPci,
     {"GPU 0 MIG 2/0"},
     "second MIG instance",
     ""},
    {"MigEnabledGpuByIndexIsRefused", MigHost, "1,0", kPci, {"GPU 1"}, "GPU 0 has MIG enabled", ""},
    {"MigEnabledGpuByUuidIsRefused",
     MigHost,
     testing::Uuid("e0000000"),
     kPci,
     {},
     "GPU 0 has MIG enabled",
     ""},
    {"UnsetMaskStopsAtMigEnabledGpu", MigHost, std::nullopt, kPci, {}, "GPU 0 has MIG enabled", ""},
    // CUDA_DEVICE_ORDER.
    {"FastestFirstOnIdenticalModelsIsBusOrder",
     FourA40,
     "3,0",
     kFast,
     {"GPU 3", "GPU 0"},
     "",
     "FASTEST_FIRST resolved"},
    {"UnsetOrderIsFastestFirst",
     FourA40,
     std::nullopt,
     std::nullopt,
     {"GPU 0", "GPU 1", "GPU 2", "GPU 3"},
     "",
     "CUDA's default"},
    {"FastestFirstOnMixedModelsIsRefused",
     Mixed,
     "0,1",
     kFast,
     {},
     "differ (NVIDIA A40 and NVIDIA H100 80GB HBM3)",
     ""},
    {"FastestFirstUnsetOrderOnMixedModelsIsRefused",
     Mixed,
     std::nullopt,
     std::nullopt,
     {},
     "FASTEST_FIRST",
     ""},
    {"FastestFirstIntegerCountsEveryGpuSoMixedHostRefuses", Mixed, "1", kFast, {}, "differ", ""},
    {"FastestFirstSingleGpuByUuidOnMixedHostResolves",
     Mixed,
     testing::Uuid("c1111111"),
     kFast,
     {"GPU 1"},
     "",
     ""},
    {"FastestFirstMixedMigProfilesAreRefused", MigHost, "MIG-m2,1", kFast, {}, "differ", ""},
    {"PciBusIdOnMixedModelsResolves", Mixed, "1,0", kPci, {"GPU 1", "GPU 0"}, "", "PCI_BUS_ID"},
    {"UnknownOrderIsRefused",
     FourA40,
     "0",
     "pci_bus_id",
     {},
     "neither PCI_BUS_ID nor FASTEST_FIRST",
     ""},
    // lilbee's mask tests (shared/research/seed-upstreams.md (c)). lilbee refuses every UUID or MIG
    // mask; gpulse knows the UUIDs and resolves them exactly.
    {"LilbeeUuidMaskResolvesExactly", LilbeeHost, "GPU-abcdef12", std::nullopt, {"GPU 3"}, "", ""},
    {"LilbeeMixedMaskResolvesExactly",
     LilbeeHost,
     "0,GPU-abcdef12",
     std::nullopt,
     {"GPU 0", "GPU 3"},
     "",
     ""},
    {"LilbeeNumericMaskPicksListEntry",
     LilbeeHost,
     "2,3",
     std::nullopt,
     {"GPU 2", "GPU 3"},
     "",
     ""},
    {"LilbeeNoMaskKeepsEveryIndex",
     LilbeeHost,
     std::nullopt,
     kPci,
     {"GPU 0", "GPU 1", "GPU 2", "GPU 3"},
     "",
     ""},
    {"LilbeeUuidParentComposes",
     LilbeeHost,
     "GPU-aaa,GPU-bbb",
     std::nullopt,
     {"GPU 1", "GPU 2"},
     "",
     ""},
    // lilbee strips spaces ("GPU-aaa, GPU-bbb"); what CUDA does with them is not documented.
    {"LilbeeUuidParentWithSpaceIsRefusedFromTheSpace",
     LilbeeHost,
     "GPU-aaa, GPU-bbb",
     std::nullopt,
     {"GPU 1"},
     "whitespace",
     ""},
    {"LilbeePresetOrderIsRespected",
     testing::BusOrderDiffers,
     "0,1",
     kPci,
     {"GPU 1", "GPU 0"},
     "",
     ""},
};

// gtest prints a parameter by name instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CudaVisible : public ::testing::TestWithParam<Case> {};

TEST_P(CudaVisible, Resolves) {
  const Case& c = GetParam();
  testing::ExpectMapping(ResolveCase(c), c.ordinals, c.refusal, c.note);
}

INSTANTIATE_TEST_SUITE_P(Rules, CudaVisible, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CudaVisibleLookup, OrdinalPastTheMaskIsNotVisible) {  // lilbee: "3" with index 1 → None
  Environment env;
  env.Set("CUDA_VISIBLE_DEVICES", "3");
  env.Set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  SystemInfo info = LilbeeHost();
  Mapping m = ResolveCuda(env, info, HostScope(info));
  ASSERT_TRUE(std::holds_alternative<PhysicalDevice>(Lookup(m, 0)));
  EXPECT_EQ(std::get<PhysicalDevice>(Lookup(m, 0)).index, 3u);
  auto past = Lookup(m, 1);
  ASSERT_TRUE(std::holds_alternative<Refusal>(past));
  EXPECT_NE(std::get<Refusal>(past).reason.find("not visible"), std::string::npos);
  EXPECT_TRUE(
      std::holds_alternative<Refusal>(Lookup(m, 99)));  // lilbee: a foreign index is ignored
}

TEST(CudaVisibleLookup, OrdinalsAfterARefusalAreRefusedWithTheReason) {
  Environment env;
  env.Set("CUDA_VISIBLE_DEVICES", "1,0");
  env.Set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  SystemInfo info = MigHost();
  Mapping m = ResolveCuda(env, info, HostScope(info));
  EXPECT_EQ(std::get<PhysicalDevice>(Lookup(m, 0)).index, 1u);
  auto second = Lookup(m, 1);
  ASSERT_TRUE(std::holds_alternative<Refusal>(second));
  EXPECT_NE(std::get<Refusal>(second).reason.find("MIG enabled"), std::string::npos);
}

TEST(CudaVisibleLookup, PhysicalDeviceCarriesIdentity) {
  Environment env;
  env.Set("CUDA_VISIBLE_DEVICES", "MIG-m3");
  SystemInfo info = MigHost();
  Mapping m = ResolveCuda(env, info, HostScope(info));
  ASSERT_EQ(m.ordinals.size(), 1u);
  const PhysicalDevice& p = m.ordinals[0];
  EXPECT_EQ(p.uuid, testing::Uuid("e0000000"));
  EXPECT_EQ(p.pci_bus_id, "00000000:07:00.0");
  ASSERT_TRUE(p.mig.has_value());
  EXPECT_EQ(p.mig->uuid, testing::Uuid("m3000000", "MIG-"));
  EXPECT_EQ(p.mig->profile, "2g.10gb");
}

// A GPU NVML could not read may be anywhere in CUDA's numbering: integers and the unset mask
// refuse, a full UUID still resolves, a prefix might also match the unreadable GPU.
TEST(CudaVisibleScope, SkippedGpuRefusesCountingButNotFullUuids) {
  SystemInfo info = testing::WithSkipped();
  RuntimeScope scope = HostScope(info);
  EXPECT_NE(scope.uncounted.find("GPU 1"), std::string::npos);
  auto run = [&](const std::optional<std::string>& mask) {
    Environment env;
    env.Set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    if (mask) env.Set("CUDA_VISIBLE_DEVICES", *mask);
    return ResolveCuda(env, info, scope);
  };
  Mapping unset = run(std::nullopt);
  EXPECT_TRUE(unset.ordinals.empty());
  ASSERT_TRUE(unset.refusal.has_value());
  EXPECT_NE(unset.refusal->reason.find("could not read GPU 1"), std::string::npos);

  Mapping integer = run("0");
  ASSERT_TRUE(integer.refusal.has_value());
  EXPECT_NE(integer.refusal->reason.find("integer entries"), std::string::npos);

  Mapping full = run(testing::Uuid("f3333333"));
  ASSERT_EQ(full.ordinals.size(), 1u);
  EXPECT_EQ(full.ordinals[0].index, 3u);
  EXPECT_FALSE(full.refusal.has_value());

  Mapping prefix = run("GPU-f3");
  EXPECT_TRUE(prefix.ordinals.empty());
  ASSERT_TRUE(prefix.refusal.has_value());
  EXPECT_NE(prefix.refusal->reason.find("full UUID"), std::string::npos);
}

}  // namespace
}  // namespace gpulse::identity
