// The entity model: order, identity, selection, loss and subsets (docs/adr/0010-entities.md).
#include <gtest/gtest.h>

#include "core/entity.h"

namespace gpulse {
namespace {

MigInstance Mig(unsigned gi, unsigned ci, const char* uuid, const char* profile) {
  MigInstance m;
  m.gpu_instance_id = gi;
  m.compute_instance_id = ci;
  m.uuid = uuid;
  m.profile = profile;
  return m;
}

// GPU 0 with MIG: GI 3 (two CIs, listed CI 1 first) and GI 1 (one CI); GPU 1 skipped; GPU 2 plain;
// GPU 4 lost before start (known by its bus only).
SystemInfo Node() {
  SystemInfo info;
  DeviceInfo g0;
  g0.index = 0;
  g0.name = "A100";
  g0.uuid = "GPU-0000";
  g0.pci_bus_id = "00000000:07:00.0";
  g0.mig_instances = {Mig(3, 1, "MIG-3b", "3g.20gb"), Mig(3, 0, "MIG-3a", "3g.20gb"), Mig(1, 0, "MIG-1a", "1g.5gb")};
  DeviceInfo g2;
  g2.index = 2;
  g2.uuid = "GPU-2222";
  info.devices = {g0, g2};
  info.skipped = {{4, "GPU is lost", true, "", "", "00000000:5D:00.0", "procfs"}, {1, "no permission", false, "", "", "", ""}};
  return info;
}

std::vector<std::string> Labels(const std::vector<Entity>& es) {
  std::vector<std::string> out;
  for (const Entity& e : es) out.push_back(EntityLabel(e) + ":" + std::string(EntityStateName(e.state)));
  return out;
}

TEST(Entities, GpusInIndexOrderEachFollowedByItsInstances) {
  auto es = BuildEntities(Node());
  EXPECT_EQ(Labels(es), (std::vector<std::string>{
                            "GPU 0:present", "GPU 0/GI 1:present", "GPU 0/GI 1/CI 0:present",
                            "GPU 0/GI 3:present", "GPU 0/GI 3/CI 0:present", "GPU 0/GI 3/CI 1:present",
                            "GPU 1:skipped", "GPU 2:present", "GPU 4:lost"}));
  const Entity& gi3 = es[3];
  EXPECT_EQ(gi3.kind, EntityKind::kGpuInstance);
  EXPECT_EQ(gi3.parent, 0u);
  EXPECT_EQ(gi3.uuid, "") << "a GI with two CIs has no UUID of its own";
  EXPECT_EQ(gi3.mig_pos, 0u) << "read through a handle of that GI";
  EXPECT_EQ(es[2].uuid, "MIG-1a") << "the CI's handle UUID";
  EXPECT_EQ(es[1].uuid, "MIG-1a") << "a GI with one CI is named by it";
  EXPECT_EQ(es[4].parent, 3u);
  EXPECT_TRUE(es[0].readable());
  EXPECT_TRUE(es[3].readable());
  EXPECT_FALSE(es[4].readable()) << "compute instances have no readings of their own yet";
  EXPECT_FALSE(es[6].readable());
  EXPECT_EQ(es[8].pci_bus_id, "00000000:5D:00.0");
  EXPECT_EQ(es[8].reason, "GPU is lost");
}

TEST(Entities, GpuInstancesTakeTheGiProfileAndUnknownIdsAreNeverMerged) {
  SystemInfo info;
  DeviceInfo g;
  g.index = 0;
  g.name = "A100";
  MigInstance small = Mig(2, 0, "MIG-a", "1c.3g.20gb"), other = Mig(2, 1, "MIG-b", "2c.3g.20gb");
  MigInstance unknown1 = Mig(0, 0, "MIG-c", "1g.5gb"), unknown2 = Mig(0, 0, "MIG-d", "1g.5gb");
  unknown1.ids_known = unknown2.ids_known = false;
  g.mig_instances = {small, other, unknown1, unknown2};
  info.devices = {g};
  auto es = BuildEntities(info);
  EXPECT_EQ(Labels(es), (std::vector<std::string>{"GPU 0:present", "GPU 0/GI 2:present", "GPU 0/GI 2/CI 0:present",
                                                  "GPU 0/GI 2/CI 1:present", "GPU 0/GI ?:present",
                                                  "GPU 0/GI ?/CI ?:present", "GPU 0/GI ?:present",
                                                  "GPU 0/GI ?/CI ?:present"}));
  EXPECT_EQ(es[1].profile, "3g.20gb") << "dcgm-exporter's GPU_I_PROFILE is the GI's";
  EXPECT_EQ(es[2].profile, "1c.3g.20gb");
  EXPECT_FALSE(es[4].gpu_instance_id.has_value());
  EXPECT_EQ(es[4].uuid, "MIG-c");
  EXPECT_EQ(es[6].uuid, "MIG-d");
  EXPECT_EQ(*SelectEntities(es, "0"), std::vector<std::size_t>{0}) << "an unknown id is not id 0";
}

TEST(Entities, SelectionByIndexUuidAndGpuGiCi) {
  auto es = BuildEntities(Node());
  auto sel = SelectEntities(es, "2,MIG-1a,0:3,0:3:1,GPU-0000");
  ASSERT_TRUE(sel) << sel.error().message;
  EXPECT_EQ(*sel, (std::vector<std::size_t>{7, 1, 3, 5, 0}));
  EXPECT_EQ(SelectEntities(es, "")->size(), es.size());
  auto bad = SelectEntities(es, "0,7");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"7\""), std::string::npos);
  EXPECT_FALSE(SelectEntities(es, "0,,1"));
}

TEST(Entities, LossMarksTheGpuAndItsInstancesOnceWithTheFirstTime) {
  auto es = BuildEntities(Node());
  EXPECT_TRUE(MarkLost(es, 0, 100, "lost"));
  EXPECT_FALSE(MarkLost(es, 0, 200, "again"));
  for (std::size_t i = 0; i <= 5; ++i) {
    EXPECT_EQ(es[i].state, EntityState::kLost) << i;
    EXPECT_EQ(es[i].lost_unix_ns, 100) << i;
  }
  EXPECT_EQ(es[6].state, EntityState::kSkipped);
  EXPECT_EQ(es[7].state, EntityState::kPresent);
}

TEST(Entities, LossReachesInstancesThatDoNotFollowTheirGpu) {
  // CUDA_VISIBLE_DEVICES=MIG-1a,2,MIG-3a: GPU 0, its GI 1 and CI, GPU 2, then GI 3 and its CI.
  auto es = BuildEntities(Node());
  auto sub = SubsetEntities(es, {0, 1, 2, 7, 3, 4});
  ASSERT_EQ(sub[4].parent, 0u);
  EXPECT_TRUE(MarkLost(sub, 0, 5, "lost"));
  for (std::size_t i : {0, 1, 2, 4, 5}) EXPECT_EQ(sub[i].state, EntityState::kLost) << i;
  EXPECT_EQ(sub[3].state, EntityState::kPresent) << "GPU 2 is not GPU 0's";
}

TEST(Entities, SubsetsKeepTheGivenOrderAndRenumberParents) {
  auto es = BuildEntities(Node());
  auto sub = SubsetEntities(es, {7, 0, 3, 5, 3});
  EXPECT_EQ(Labels(sub), (std::vector<std::string>{"GPU 2:present", "GPU 0:present", "GPU 0/GI 3:present",
                                                   "GPU 0/GI 3/CI 1:present"}));
  EXPECT_EQ(sub[2].parent, 1u);
  EXPECT_EQ(sub[3].parent, 2u);
  auto orphan = SubsetEntities(es, {3});
  EXPECT_FALSE(orphan[0].parent.has_value());
}

}  // namespace
}  // namespace gpulse
