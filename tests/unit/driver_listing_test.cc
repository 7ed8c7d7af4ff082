// The driver's own GPU listing names GPUs NVML can no longer open, and only when that is certain.
#include <gtest/gtest.h>

#include "../identity/temp_tree.h"
#include "gpu/nvml/driver_listing.h"

namespace gpulse::nvml {
namespace {

using identity::testing::TempTree;

void Gpu(const TempTree& t, const std::string& bus, const std::string& uuid) {
  t.Write("driver/nvidia/gpus/" + bus + "/information",
          "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t " + uuid + "\nBus Location: \t " + bus + "\n");
}

SystemInfo WithSkipped(std::vector<unsigned> skipped) {
  SystemInfo info;
  DeviceInfo d;
  d.index = 0;
  d.pci_bus_id = "00000000:18:00.0";
  info.devices.push_back(d);
  for (unsigned i : skipped) info.skipped.push_back({i, "GPU is lost", true, "", "", "", ""});
  return info;
}

TEST(DriverListing, ReadsEveryGpuInBusOrder) {
  TempTree t;
  Gpu(t, "0000:5d:00.0", "GPU-5d");
  Gpu(t, "0000:18:00.0", "GPU-18");
  t.Write("driver/nvidia/gpus/not-a-bus/information", "Model: x\n");
  auto gpus = ReadDriverGpus(sys::RootedFs(t.root()));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(gpus[1].pci_bus_id, "00000000:5D:00.0");
  EXPECT_EQ(gpus[1].uuid, "GPU-5d");
  EXPECT_EQ(gpus[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(ReadDriverGpus(sys::RootedFs(t.root() + "/missing")).empty());
}

TEST(DriverListing, TheUnclaimedGpusNameTheSkippedOnesWhenTheNumbersMatch) {
  TempTree t;
  for (auto [bus, uuid] : {std::pair{"0000:18:00.0", "GPU-18"}, {"0000:2a:00.0", "GPU-2a"}, {"0000:5d:00.0", "GPU-5d"}}) {
    Gpu(t, bus, uuid);
  }
  auto listed = ReadDriverGpus(sys::RootedFs(t.root()));
  SystemInfo two = WithSkipped({3, 1});
  FillSkippedIdentity(two, listed);
  EXPECT_EQ(two.skipped[0].uuid, "GPU-5d") << "index 3 takes the higher bus";
  EXPECT_EQ(two.skipped[1].uuid, "GPU-2a");
  EXPECT_EQ(two.skipped[1].pci_bus_id, "00000000:2A:00.0");
  EXPECT_EQ(two.skipped[1].identity_source, "procfs");
  // One skipped GPU but two unclaimed listings: which is which would be a guess.
  SystemInfo one = WithSkipped({1});
  FillSkippedIdentity(one, listed);
  EXPECT_EQ(one.skipped[0].uuid, "");
  EXPECT_EQ(one.skipped[0].identity_source, "");
}

TEST(DriverListing, NormalizesBusIds) {
  EXPECT_EQ(NormalizeBusId("0000:5d:00.0"), "00000000:5D:00.0");
  EXPECT_EQ(NormalizeBusId("00000000:5D:00.0"), "00000000:5D:00.0");
  EXPECT_EQ(NormalizeBusId("0000:5d:00.0:1"), "");
  EXPECT_EQ(NormalizeBusId("0000:5d:00.9"), "") << "function 9 is no PCI function";
  EXPECT_EQ(NormalizeBusId("cards"), "");
}

}  // namespace
}  // namespace gpulse::nvml
