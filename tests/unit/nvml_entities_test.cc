// MIG instances, lost GPUs and partial readings in the NVML backend, through an API of fakes whose
// MIG handles answer every call (so a backend that asked would copy the parent's readings).
#include <gtest/gtest.h>

#include "core/entity.h"
#include "core/fields.h"
#include "gpu/nvml/nvml_backend.h"
#include "unit/fake_nvml.h"

namespace gpulse::nvml {
namespace {

using testing::FakeDevice;
using testing::FakeNvml;

std::vector<FieldIndex> AllFieldIndices() {
  std::vector<FieldIndex> v;
  for (std::size_t i = 0; i < AllFields().size(); ++i) v.push_back(static_cast<FieldIndex>(i));
  return v;
}

FieldIndex F(FieldId id) { return *IndexOf(id); }

FakeDevice Mig(std::size_t parent, unsigned gi, unsigned ci, const char* uuid) {
  FakeDevice d;
  d.parent = parent;
  d.gpu_instance_id = gi;
  d.compute_instance_id = ci;
  d.uuid = uuid;
  d.name = "Fake GPU MIG 3g.20gb";
  return d;
}

class NvmlEntitiesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.devices.resize(2);
    fake_.devices[1].uuid = "GPU-11111111-0000-0000-0000-000000000000";
    fake_.mig = {Mig(0, 2, 0, "MIG-a"), Mig(0, 5, 0, "MIG-b")};
  }
  std::unique_ptr<NvmlBackend> Open() {
    auto b = NvmlBackend::Create(testing::MakeFakeApi(&fake_), nullptr, "fake");
    EXPECT_TRUE(b.ok());
    return std::move(b).value();
  }
  FakeNvml fake_;
  Sample s_;
};

TEST_F(NvmlEntitiesTest, AnInstanceIsReadThroughItsHandleForMemoryOnly) {
  auto b = Open();
  ASSERT_EQ(b->info().devices[0].mig_instances.size(), 2u);
  auto fields = AllFieldIndices();
  const int at_open = fake_.mig[0].calls["GetMemoryInfo_v2"];  // the instance's total, read at open
  const int parent_at_open = fake_.devices[0].calls["GetMemoryInfo_v2"];
  b->ReadInstance(0, 0, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kOk);
  EXPECT_DOUBLE_EQ(*s_.values[F(252)], 10 * 1024.0) << "FB_USED through the instance's handle";
  EXPECT_TRUE(s_.values[F(250)].has_value());
  for (FieldId id : {155, 150, 203, 100, 156, 230}) {
    EXPECT_FALSE(s_.values[F(id)].has_value()) << id << ": the parent's reading is not copied";
    EXPECT_TRUE(s_.unsupported[F(id)]) << id;
  }
  const FakeDevice& mig = fake_.mig[0];
  EXPECT_EQ(mig.calls.count("GetPowerUsage"), 0u) << "never asked";
  EXPECT_EQ(mig.calls.count("GetTemperature"), 0u);
  EXPECT_EQ(mig.calls.count("GetUtilizationRates"), 0u);
  EXPECT_EQ(mig.calls.at("GetMemoryInfo_v2"), at_open + 1) << "one memory call per instance read";
  EXPECT_EQ(fake_.devices[0].calls["GetMemoryInfo_v2"], parent_at_open) << "the parent is not asked";
}

TEST_F(NvmlEntitiesTest, ALostParentMakesItsInstancesLostAndTheOtherWayRound) {
  auto b = Open();
  auto fields = AllFieldIndices();
  fake_.devices[0].rc["GetPowerUsage"] = NVML_ERROR_GPU_IS_LOST;
  b->Read(0, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  const int asked = fake_.mig[1].calls["GetMemoryInfo_v2"];
  b->ReadInstance(0, 1, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  EXPECT_EQ(fake_.mig[1].calls["GetMemoryInfo_v2"], asked) << "a lost instance is not asked";
  // An instance handle that answers GPU_IS_LOST marks its GPU lost.
  fake_.mig[0].rc["GetMemoryInfo_v2"] = NVML_ERROR_GPU_IS_LOST;
  auto b2 = Open();
  b2->ReadInstance(0, 0, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  b2->Read(0, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
}

TEST_F(NvmlEntitiesTest, ALostGpuKeepsTheXidsItRaisedUpToAndAtTheLoss) {
  auto b = Open();
  std::vector<FieldIndex> fields = {F(155), F(230)};
  fake_.devices[1].xid_pending = 79;
  fake_.devices[1].rc["GetPowerUsage"] = NVML_ERROR_GPU_IS_LOST;
  b->Read(1, fields, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  ASSERT_EQ(s_.xid_events, std::vector<std::uint64_t>{79}) << "the event raised with the loss";
  ASSERT_EQ(s_.xid_counts.size(), 1u);
  EXPECT_EQ(s_.xid_counts[0].xid, 79u);
  b->Read(1, fields, s_);
  ASSERT_EQ(s_.xid_counts.size(), 1u) << "the counter stays after the loss";
  EXPECT_EQ(s_.xid_counts[0].count, 1u);
  EXPECT_TRUE(s_.xid_events.empty());
}

TEST_F(NvmlEntitiesTest, UnsupportedIsToldApartFromFailedThisRead) {
  fake_.devices[1].rc["GetTemperature"] = NVML_ERROR_NOT_SUPPORTED;
  fake_.devices[1].rc["GetPowerUsage"] = NVML_ERROR_TIMEOUT;
  auto b = Open();
  b->Read(1, std::vector<FieldIndex>{F(150), F(155), F(252)}, s_);
  EXPECT_TRUE(s_.unsupported[F(150)]);
  EXPECT_FALSE(s_.values[F(155)].has_value());
  EXPECT_FALSE(s_.unsupported[F(155)]) << "a timeout failed this read; it is not unsupported";
  EXPECT_TRUE(s_.values[F(252)].has_value());
  EXPECT_FALSE(s_.unsupported[F(252)]);
}

TEST_F(NvmlEntitiesTest, AGpuLostAtOpenIsLostWithWhateverTheDriverStillAnswers) {
  fake_.devices[1].rc["GetName"] = NVML_ERROR_GPU_IS_LOST;
  auto b = Open();
  ASSERT_EQ(b->info().devices.size(), 1u);
  ASSERT_EQ(b->info().skipped.size(), 1u);
  const SkippedDevice& s = b->info().skipped[0];
  EXPECT_TRUE(s.lost);
  EXPECT_EQ(s.uuid, "GPU-11111111-0000-0000-0000-000000000000") << "the UUID is asked on its own";
  EXPECT_EQ(s.identity_source, "nvml");
  auto entities = BuildEntities(b->info());
  EXPECT_EQ(entities.back().state, EntityState::kLost);
  fake_.devices[1].rc.clear();
  fake_.devices[1].handle_rc = NVML_ERROR_NO_PERMISSION;
  auto b2 = Open();
  EXPECT_FALSE(b2->info().skipped[0].lost) << "no permission is skipped, not lost";
}

TEST_F(NvmlEntitiesTest, InstanceIdsThatCannotBeReadAreMarkedUnknown) {
  fake_.mig[1].rc["GetGpuInstanceId"] = NVML_ERROR_UNKNOWN;
  auto b = Open();
  const auto& mig = b->info().devices[0].mig_instances;
  EXPECT_TRUE(mig[0].ids_known);
  EXPECT_FALSE(mig[1].ids_known);
  auto entities = BuildEntities(b->info());
  std::size_t gis = 0;
  for (const Entity& e : entities) gis += e.kind == EntityKind::kGpuInstance ? 1 : 0;
  EXPECT_EQ(gis, 2u) << "not merged into one";
}

}  // namespace
}  // namespace gpulse::nvml
