// Per-holder usage (src/exporter/pod_usage.h): containers of one pod told apart by elimination on
// the entities their cgroup container IDs use, a pod-level row where they cannot be, and Slurm jobs
// sharing one GPU, with power apportioned by SM share.
#include "exporter/pod_usage.h"

#include <gtest/gtest.h>

#include "core/fields.h"
#include "exporter/gpus.h"

namespace gpulse::exporter {
namespace {

SystemInfo TwoGpus() { return testing::Gpus(2); }

GpuProcess Proc(unsigned pid, std::uint64_t mib, double sm) {
  GpuProcess p;
  p.pid = pid;
  p.compute = true;
  p.used_memory_bytes = mib << 20;
  p.sm_util = sm;
  return p;
}

// Every GPU at `watts`; processes[d] on GPU d.
Snapshot Read(std::size_t entities, double watts, std::vector<std::vector<GpuProcess>> processes) {
  Snapshot snap;
  const FieldIndex power = *FindField("DCGM_FI_DEV_POWER_USAGE");
  snap.entities.resize(entities);
  for (DeviceReading& r : snap.entities) {
    r.sample.values.resize(power + 1);
    r.sample.values[power] = watts;
  }
  for (auto& list : processes) {
    ProcessList l;
    l.processes = std::move(list);
    snap.processes.push_back(std::move(l));
  }
  return snap;
}

identity::ProcessInfo InPod(unsigned pid, const std::string& uid, const std::string& container) {
  identity::ProcessInfo p;
  p.pid = pid;
  identity::CgroupPlacement c;
  c.pod = identity::PodRef{uid, identity::QosClass::kGuaranteed};
  c.container = identity::ContainerRef{container, identity::ContainerRuntime::kContainerd};
  p.cgroup = c;
  return p;
}

identity::ProcessInfo InJob(unsigned pid, const std::string& job) {
  identity::ProcessInfo p;
  p.pid = pid;
  identity::CgroupPlacement c;
  c.slurm = identity::SlurmJobRef{job, "0", std::nullopt};
  p.cgroup = c;
  return p;
}

const std::string kUid = "11111111-2222-3333-4444-555555555555";
const std::string kIdA = std::string(64, 'a');
const std::string kIdB = std::string(64, 'b');

TEST(PodUsage, ContainersOfOnePodOnOneGpuAreToldApartByTheOtherGpusTheyUse) {
  SystemInfo info = TwoGpus();
  std::vector<Entity> entities = BuildEntities(info);
  identity::PodAssignments pods;
  pods.by_entity = {{{"multi", "ml", "a", "1"}, {"multi", "ml", "b", "2"}},
                    {{"multi", "ml", "a", ""}}};
  // a runs on both GPUs, b on GPU 0 only: a's ID is the only one on GPU 1, so b's is the other.
  Snapshot snap = Read(entities.size(), 300, {{Proc(10, 1000, 60), Proc(12, 500, 20)},
                                              {Proc(11, 2000, 50)}});
  std::map<unsigned, identity::ProcessInfo> procs = {
      {10, InPod(10, kUid, kIdA)}, {11, InPod(11, kUid, kIdA)}, {12, InPod(12, kUid, kIdB)}};
  std::vector<HolderUsage> rows = ComputePodUsage(info, entities, snap, pods, procs);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].entity, 0u);
  EXPECT_EQ(rows[0].labels, R"(pod="multi",namespace="ml",container="a")");
  EXPECT_EQ(rows[0].memory_bytes, 1000ull << 20);
  EXPECT_DOUBLE_EQ(*rows[0].power_watts, 300 * 60.0 / 80);
  EXPECT_EQ(rows[1].labels, R"(pod="multi",namespace="ml",container="b")");
  EXPECT_EQ(rows[1].memory_bytes, 500ull << 20);
  EXPECT_DOUBLE_EQ(*rows[1].power_watts, 300 * 20.0 / 80);
  EXPECT_EQ(rows[2].entity, 1u);
  EXPECT_EQ(rows[2].labels, R"(pod="multi",namespace="ml",container="a")");
  EXPECT_DOUBLE_EQ(*rows[2].power_watts, 300.0);
}

TEST(PodUsage, ContainersThatCannotBeToldApartShareOnePodRowWithoutAContainerLabel) {
  SystemInfo info = TwoGpus();
  std::vector<Entity> entities = BuildEntities(info);
  identity::PodAssignments pods;
  pods.by_entity = {{{"multi", "ml", "a", "1"}, {"multi", "ml", "b", "2"}}, {}};
  Snapshot snap = Read(entities.size(), 200, {{Proc(10, 1000, 30), Proc(12, 500, 20)}, {}});
  std::map<unsigned, identity::ProcessInfo> procs = {{10, InPod(10, kUid, kIdA)},
                                                     {12, InPod(12, kUid, kIdB)}};
  std::vector<HolderUsage> rows = ComputePodUsage(info, entities, snap, pods, procs);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].labels, R"(pod="multi",namespace="ml")");  // never a guessed container
  EXPECT_EQ(rows[0].memory_bytes, 1500ull << 20);
  EXPECT_DOUBLE_EQ(*rows[0].sm_util, 50.0);
  EXPECT_DOUBLE_EQ(*rows[0].power_watts, 200.0);
}

TEST(JobUsage, JobsSharingAGpuSplitItsPowerBySmShareAndUnjobbedProcessesStillCount) {
  SystemInfo info = TwoGpus();
  std::vector<Entity> entities = BuildEntities(info);
  Snapshot snap = Read(entities.size(), 400,
                       {{Proc(20, 4000, 45), Proc(21, 1000, 30), Proc(22, 100, 25)}, {}});
  std::map<unsigned, identity::ProcessInfo> procs = {{20, InJob(20, "4242")},
                                                     {21, InJob(21, "4243")}};
  procs[22].pid = 22;  // in no job's cgroup
  std::vector<HolderUsage> rows = ComputeJobUsage(info, entities, snap, procs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].labels, R"(hpc_job="4242")");
  EXPECT_EQ(rows[0].memory_bytes, 4000ull << 20);
  EXPECT_DOUBLE_EQ(*rows[0].power_watts, 400 * 45.0 / 100);
  EXPECT_EQ(rows[1].labels, R"(hpc_job="4243")");
  EXPECT_DOUBLE_EQ(*rows[1].power_watts, 400 * 30.0 / 100);
  UsageEnergyIntegrator energy;
  energy.Integrate(rows, 0);
  energy.Integrate(rows, 2'000'000'000);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 180.0 * 2);
}

}  // namespace
}  // namespace gpulse::exporter
