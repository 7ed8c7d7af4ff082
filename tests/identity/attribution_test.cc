// Joining GPU processes with procfs facts, and the per-container / per-pod aggregates: memory
// sums, SM utilization summed per GPU and capped at 100, missing values kept missing.
#include "identity/attribution.h"

#include <gtest/gtest.h>

namespace gpulse::identity {
namespace {

DeviceInfo Device(unsigned index) {
  DeviceInfo d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index);
  return d;
}

GpuProcess Proc(unsigned pid, std::optional<std::uint64_t> mem, std::optional<double> sm) {
  GpuProcess p;
  p.pid = pid;
  p.compute = true;
  p.used_memory_bytes = mem;
  p.sm_util = sm;
  return p;
}

ProcessInfo In(unsigned pid, const std::string& container, const std::string& pod) {
  ProcessInfo i;
  i.pid = pid;
  CgroupPlacement c;
  if (!container.empty()) c.container = ContainerRef{container, ContainerRuntime::kContainerd};
  if (!pod.empty()) c.pod = PodRef{pod, QosClass::kBestEffort};
  i.cgroup = c;
  return i;
}

ProcessList Listed(std::vector<GpuProcess> p) {
  ProcessList l;
  l.processes = std::move(p);
  return l;
}

class AttributionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info.devices = {Device(0), Device(1)};
    lists = {Listed({Proc(1, 10, 60), Proc(2, 20, 60), Proc(3, 5, std::nullopt)}),
             Listed({Proc(4, 7, 30)})};
    procs = {{1, In(1, "c1", "pod")},
             {2, In(2, "c2", "pod")},
             {3, In(3, "c2", "pod")},
             {4, In(4, "c1", "pod")}};
  }
  SystemInfo info;
  std::vector<ProcessList> lists;
  std::map<unsigned, ProcessInfo> procs;
};

TEST_F(AttributionTest, PodSumsMemoryAndCapsSmPerGpu) {
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.pods.size(), 1u);
  const Group& pod = r.pods[0];
  EXPECT_EQ(pod.containers, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(pod.pids, (std::vector<unsigned>{1, 2, 3, 4}));
  ASSERT_EQ(pod.gpus.size(), 2u);
  EXPECT_EQ(pod.gpus[0].used_memory_bytes, 35u);
  EXPECT_EQ(pod.gpus[0].sm_util, 100.0) << "60 + 60 is capped at one GPU";
  EXPECT_EQ(pod.gpus[0].sm_util_missing, 1u);
  EXPECT_EQ(pod.gpus[1].sm_util, 30.0);
  EXPECT_EQ(pod.used_memory_bytes, 42u);
  EXPECT_EQ(pod.sm_util, 130.0) << "per-GPU figures add up across GPUs";
}

TEST_F(AttributionTest, ContainersAggregateSeparately) {
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.containers.size(), 2u);
  EXPECT_EQ(r.containers[0].id, "c1");
  EXPECT_EQ(r.containers[0].gpus.size(), 2u);
  EXPECT_EQ(r.containers[0].sm_util, 90.0);
  ASSERT_TRUE(r.containers[0].pod.has_value());
  EXPECT_EQ(r.containers[1].id, "c2");
  EXPECT_EQ(r.containers[1].used_memory_bytes, 25u);
  EXPECT_EQ(r.containers[1].sm_util, 60.0);
}

TEST_F(AttributionTest, UnknownMemoryMakesTheSumUnknown) {
  (*lists[1].processes)[0].used_memory_bytes.reset();
  PsReport r = Attribute(info, lists, procs);
  EXPECT_FALSE(r.pods[0].gpus[1].used_memory_bytes.has_value());
  EXPECT_FALSE(r.pods[0].used_memory_bytes.has_value());
  EXPECT_EQ(r.pods[0].gpus[0].used_memory_bytes, 35u);
}

TEST_F(AttributionTest, NoSmReadingIsAbsentNotZero) {
  lists = {Listed({Proc(3, 5, std::nullopt)}), Listed({})};
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.pods.size(), 1u);
  EXPECT_FALSE(r.pods[0].gpus[0].sm_util.has_value());
  EXPECT_FALSE(r.pods[0].sm_util.has_value());
}

TEST_F(AttributionTest, RowsAreByGpuThenPidAndKeepProcessesWithoutProcfs) {
  procs.erase(2);
  lists[0].processes = std::vector<GpuProcess>{Proc(9, 1, 1), Proc(2, 1, 1)};
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].gpu.pid, 2u);
  EXPECT_EQ(r.rows[1].gpu.pid, 9u);
  EXPECT_EQ(r.rows[2].gpu_index, 1u);
  EXPECT_FALSE(r.rows[0].process.cgroup.has_value());
}

TEST_F(AttributionTest, UnlistedDeviceIsReportedWithItsError) {
  lists[1] = ProcessList{};
  lists[1].error = "nvmlDeviceGetComputeRunningProcesses_v2: NVML_ERROR_NO_PERMISSION";
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_TRUE(r.devices[0].listed);
  EXPECT_FALSE(r.devices[1].listed);
  EXPECT_NE(r.devices[1].error.find("NO_PERMISSION"), std::string::npos);
}

ProcessInfo InJob(unsigned pid, const std::string& job, std::optional<std::string> step) {
  ProcessInfo i;
  i.pid = pid;
  CgroupPlacement c;
  c.slurm = SlurmJobRef{job, std::move(step), std::nullopt};
  i.cgroup = c;
  return i;
}

TEST(AttributionSlurm, JobsSumTheirStepsAndSortByNumber) {
  SystemInfo info;
  info.devices = {Device(0), Device(1)};
  std::vector<ProcessList> lists = {Listed({Proc(1, 10, 60), Proc(2, 20, 60)}),
                                    Listed({Proc(3, 5, 30)})};
  std::map<unsigned, ProcessInfo> procs = {{1, InJob(1, "10000", "0")},
                                           {2, InJob(2, "4242", "0")},
                                           {3, InJob(3, "4242", "batch")}};
  PsReport r = Attribute(info, lists, procs);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].id, "4242");  // not after "10000", as text would sort it
  EXPECT_EQ(r.jobs[1].id, "10000");
  EXPECT_EQ(r.jobs[0].pids, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(r.jobs[0].used_memory_bytes, 25u);
  EXPECT_EQ(r.jobs[0].sm_util, 90.0);  // 60 on GPU 0 plus 30 on GPU 1
  EXPECT_EQ(r.jobs[0].gpus.size(), 2u);
}

TEST(AttributionMig, ProcessIsMatchedToItsInstance) {
  SystemInfo info;
  DeviceInfo d = Device(0);
  d.mig_enabled = true;
  d.mig_instances = {{2, 0, "MIG-a", "3g.20gb", {}}, {3, 0, "MIG-b", "2g.10gb", {}}};
  info.devices = {d};
  GpuProcess p = Proc(7, 1, std::nullopt);
  p.gpu_instance_id = 3;
  p.compute_instance_id = 0;
  std::vector<ProcessList> lists = {Listed({p})};
  PsReport r = Attribute(info, lists, {});
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_TRUE(r.rows[0].mig.has_value());
  EXPECT_EQ(r.rows[0].mig->uuid, "MIG-b");
}

}  // namespace
}  // namespace gpulse::identity
