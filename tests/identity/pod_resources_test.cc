// The kubelet's pod-resources answer joined with the entities: both GPU id types, MIG UUIDs and
// GKE's nvidiaN/giM, time-slicing replicas, resources that do not count, unmatched IDs; and naming
// cgroup pod UIDs by elimination, refusing where two pods fit.
#include "identity/pod_resources.h"

#include <gtest/gtest.h>

namespace gpulse::identity {
namespace {

// Two GPUs; GPU 1 in MIG mode with GI 1 (one CI) and GI 2 (one CI).
SystemInfo Node() {
  SystemInfo s;
  for (unsigned i = 0; i < 2; ++i) {
    DeviceInfo d;
    d.index = i;
    d.name = "NVIDIA A100";
    d.uuid = "GPU-" + std::to_string(i);
    d.mig_enabled = i == 1;
    s.devices.push_back(d);
  }
  s.devices[1].mig_instances = {{1, 0, "MIG-a", "3g.40gb", std::nullopt, true},
                                {2, 0, "MIG-b", "1g.10gb", std::nullopt, true}};
  return s;
}

std::optional<std::size_t> Find(const std::vector<Entity>& es, EntityKind kind, unsigned gpu,
                                std::optional<unsigned> gi = std::nullopt) {
  for (std::size_t i = 0; i < es.size(); ++i) {
    if (es[i].kind == kind && es[i].gpu == gpu && es[i].gpu_instance_id == gi) return i;
  }
  return std::nullopt;
}

PodResources Pod(std::string ns, std::string name, std::string container, std::string resource,
                 std::vector<std::string> ids) {
  return {std::move(name),
          std::move(ns),
          {{std::move(container), {{std::move(resource), std::move(ids)}}}}};
}

class PodResourcesTest : public ::testing::Test {
 protected:
  SystemInfo info = Node();
  std::vector<Entity> entities = BuildEntities(info);
  std::size_t gpu0 = *Find(entities, EntityKind::kGpu, 0);
  std::size_t gi1 = *Find(entities, EntityKind::kGpuInstance, 1, 1u);
  std::size_t gi2 = *Find(entities, EntityKind::kGpuInstance, 1, 2u);
};

TEST_F(PodResourcesTest, UuidsNameGpusAndMigInstances) {
  std::vector<PodResources> pods = {Pod("ml", "train", "main", "nvidia.com/gpu", {"GPU-0"}),
                                    Pod("ml", "infer", "srv", "nvidia.com/mig-3g.40gb", {"MIG-a"})};
  PodAssignments a = AssignPods(entities, pods, GpuIdType::kUid);
  EXPECT_EQ(a.pods, 2u);
  ASSERT_EQ(a.by_entity[gpu0].size(), 1u);
  EXPECT_EQ(a.by_entity[gpu0][0], (PodOwner{"train", "ml", "main", ""}));
  ASSERT_EQ(a.by_entity[gi1].size(), 1u);
  EXPECT_EQ(a.by_entity[gi1][0].pod, "infer");
  EXPECT_TRUE(a.by_entity[gi2].empty());
  EXPECT_TRUE(a.unmatched.empty());
}

TEST_F(PodResourcesTest, DeviceNamesNameGpusAndGkeInstances) {
  std::vector<PodResources> pods = {Pod("a", "p", "c", "nvidia.com/gpu", {"nvidia0"}),
                                    Pod("a", "q", "c", "nvidia.com/gpu", {"nvidia1/gi2"})};
  PodAssignments a = AssignPods(entities, pods, GpuIdType::kDeviceName);
  ASSERT_EQ(a.by_entity[gpu0].size(), 1u);
  ASSERT_EQ(a.by_entity[gi2].size(), 1u);
  EXPECT_EQ(a.by_entity[gi2][0].pod, "q");
  // The other id type's IDs match nothing and are reported.
  PodAssignments wrong = AssignPods(entities, pods, GpuIdType::kUid);
  EXPECT_TRUE(wrong.by_entity[gpu0].empty());
  EXPECT_EQ(wrong.unmatched, (std::vector<std::string>{"nvidia0", "nvidia1/gi2"}));
}

TEST_F(PodResourcesTest, TimeSlicedReplicasHoldOneGpuEachWithTheirReplicaId) {
  std::vector<PodResources> pods = {Pod("a", "vllm", "srv", "nvidia.com/gpu", {"GPU-0::1"}),
                                    Pod("b", "embed", "e", "nvidia.com/gpu", {"GPU-0::3"}),
                                    Pod("c", "gke", "g", "nvidia.com/gpu", {"nvidia0/vgpu2"})};
  PodAssignments a = AssignPods(entities, pods, GpuIdType::kUid);
  ASSERT_EQ(a.by_entity[gpu0].size(), 2u);
  EXPECT_EQ(a.by_entity[gpu0][0], (PodOwner{"embed", "b", "e", "3"}));  // sorted by pod
  EXPECT_EQ(a.by_entity[gpu0][1], (PodOwner{"vllm", "a", "srv", "1"}));
  PodAssignments named = AssignPods(entities, pods, GpuIdType::kDeviceName);
  ASSERT_EQ(named.by_entity[gpu0].size(), 1u);
  EXPECT_EQ(named.by_entity[gpu0][0].vgpu, "2");
}

TEST_F(PodResourcesTest, OnlyGpuResourcesCountUnlessNamed) {
  std::vector<PodResources> pods = {Pod("a", "nic", "c", "example.com/nic", {"GPU-0"}),
                                    Pod("a", "a100", "c", "nvidia.com/a100", {"GPU-0"})};
  PodAssignments a = AssignPods(entities, pods, GpuIdType::kUid);
  EXPECT_TRUE(a.by_entity[gpu0].empty());
  std::vector<std::string> extra = {"nvidia.com/a100"};
  PodAssignments b = AssignPods(entities, pods, GpuIdType::kUid, extra);
  ASSERT_EQ(b.by_entity[gpu0].size(), 1u);
  EXPECT_EQ(b.by_entity[gpu0][0].pod, "a100");
}

TEST_F(PodResourcesTest, UnknownUuidsAreUnmatchedNotGuessed) {
  std::vector<PodResources> pods = {Pod("a", "p", "c", "nvidia.com/gpu", {"GPU-9", "MIG-z"})};
  PodAssignments a = AssignPods(entities, pods, GpuIdType::kUid);
  for (const auto& owners : a.by_entity) EXPECT_TRUE(owners.empty());
  EXPECT_EQ(a.unmatched, (std::vector<std::string>{"GPU-9", "MIG-z"}));
}

TEST(GpuIdType, ParsesDcgmExportersTwoChoices) {
  EXPECT_EQ(*ParseGpuIdType("uid"), GpuIdType::kUid);
  EXPECT_EQ(*ParseGpuIdType("device-name"), GpuIdType::kDeviceName);
  auto bad = ParseGpuIdType("uuid");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("device-name"), std::string::npos);
}

// Entities 0..2 held as: 0 by train; 1 by vllm and embed (time slicing); 2 by vllm.
PodAssignments Shared() {
  PodAssignments a;
  a.by_entity = {{{"train", "ml", "t", ""}},
                 {{"vllm", "ml", "v", "0"}, {"embed", "ml", "e", "1"}},
                 {{"vllm", "ml", "v", "2"}}};
  return a;
}

TEST(NamePods, EliminationNamesEveryPodOfTheSharedGpu) {
  PodNaming n = NamePods(Shared(), {{"uid-t", {0}}, {"uid-v", {1, 2}}, {"uid-e", {1}}});
  EXPECT_EQ(n.named.at("uid-t").pod, "train");
  EXPECT_EQ(n.named.at("uid-v").pod, "vllm");
  EXPECT_EQ(n.named.at("uid-e").pod, "embed");
  EXPECT_EQ(n.named.at("uid-e").ns, "ml");
  EXPECT_TRUE(n.reason.empty());
}

TEST(NamePods, TwoCandidatesLeftStayUnnamedWithTheReason) {
  PodNaming n = NamePods(Shared(), {{"uid-x", {1}}, {"uid-y", {1}}});
  EXPECT_TRUE(n.named.empty());
  EXPECT_NE(n.reason.at("uid-x").find("2 pods"), std::string::npos);
}

TEST(NamePods, TwoUidsFittingOnePodAreBothRefused) {
  PodNaming n = NamePods(Shared(), {{"uid-a", {0}}, {"uid-b", {0}}});
  EXPECT_TRUE(n.named.empty());
  EXPECT_EQ(n.reason.size(), 2u);
}

TEST(NamePods, AProcessOnAGpuNoPodHoldsIsNotNamed) {
  PodNaming n = NamePods(Shared(), {{"uid-z", {0, 1}}});  // train holds 0, not 1
  EXPECT_TRUE(n.named.empty());
  EXPECT_NE(n.reason.at("uid-z").find("no pod"), std::string::npos);
}

}  // namespace
}  // namespace gpulse::identity
