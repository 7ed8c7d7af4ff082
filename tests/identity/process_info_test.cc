// The procfs seam (sys::RootedFs, sys/procfs.h) and identity::ReadProcessInfo over fixture trees
// built in temporary directories: cgroup v1 and v2, systemd and cgroupfs paths, missing and
// malformed files.
#include "identity/process_info.h"

#include <gtest/gtest.h>

#include <string>

#include "identity/attribution.h"
#include "identity/environment.h"
#include "identity/temp_tree.h"
#include "sys/procfs.h"

namespace gpulse::identity {
namespace {

using testing::TempTree;

const std::string kId(64, 'c');

TEST(RootedFs, ReadsRelativeToItsRootAndNamesMissingFiles) {
  TempTree t;
  t.Write("a/b", "hello");
  sys::RootedFs fs(t.root());
  auto text = fs.ReadFile("a/b");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello");
  auto missing = fs.ReadFile("a/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find(t.root() + "/a/nope"), std::string::npos);
  auto names = fs.ListDir("a");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"b"});
}

TEST(RootedFs, ReadsAtMostTheLimit) {
  TempTree t;
  t.Write("big", std::string(10000, 'x'));
  auto text = sys::RootedFs(t.root()).ReadFile("big", 100);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 100u);
}

TEST(Procfs, EnvironSplitsAtNulBytes) {
  TempTree t;
  t.Write("7/environ", std::string("A=1\0CUDA_VISIBLE_DEVICES=\0B=x=y\0", 32));
  auto env = sys::ReadEnviron(sys::RootedFs(t.root()), 7);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env, (std::vector<std::string>{"A=1", "CUDA_VISIBLE_DEVICES=", "B=x=y"}));
  Environment e = Environment::FromEntries(*env);
  ASSERT_TRUE(e.Get("CUDA_VISIBLE_DEVICES").has_value());
  EXPECT_EQ(*e.Get("CUDA_VISIBLE_DEVICES"), "") << "set and empty is not unset";
  EXPECT_EQ(*e.Get("B"), "x=y");
  EXPECT_FALSE(e.Get("C").has_value());
}

TEST(Procfs, RealUidIsTheFirstUidField) {
  TempTree t;
  t.Write("9/status", "Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t5\t5\t5\t5\n");
  auto uid = sys::ReadRealUid(sys::RootedFs(t.root()), 9);
  ASSERT_TRUE(uid.ok());
  EXPECT_EQ(*uid, 1000u);
}

TEST(Procfs, StatusWithoutUidIsAnError) {
  TempTree t;
  t.Write("9/status", "Name:\tx\n");
  auto uid = sys::ReadRealUid(sys::RootedFs(t.root()), 9);
  ASSERT_FALSE(uid.ok());
  EXPECT_NE(uid.error().message.find("Uid:"), std::string::npos);
}

TEST(Procfs, RootChoiceIsOptionThenEnvironment) {
  setenv("GPULSE_PROCFS_ROOT", "/from/env", 1);
  EXPECT_EQ(sys::ChooseProcfsRoot("/from/option"), "/from/option");
  EXPECT_EQ(sys::ChooseProcfsRoot(""), "/from/env");
  unsetenv("GPULSE_PROCFS_ROOT");
  EXPECT_EQ(sys::ChooseProcfsRoot(""), "");
}

TEST(ProcessInfo, V2SystemdPodProcess) {
  TempTree t;
  t.Process(41001, "python3", 0,
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod11111111_2222_3333_"
            "4444_555555555555.slice/cri-containerd-" +
                kId + ".scope\n");
  ProcessInfo p = ReadProcessInfo(sys::RootedFs(t.root()), 41001);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.name, "python3");
  EXPECT_EQ(p.uid, 0u);
  EXPECT_EQ(p.user, "root");
  ASSERT_TRUE(p.cgroup.has_value());
  EXPECT_EQ(p.cgroup->version, 2);
  ASSERT_TRUE(p.cgroup->container.has_value());
  EXPECT_EQ(p.cgroup->container->id, kId);
  ASSERT_TRUE(p.cgroup->pod.has_value());
  EXPECT_EQ(p.cgroup->pod->uid, "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(p.cgroup->pod->qos, QosClass::kBurstable);
}

TEST(ProcessInfo, V1CgroupfsDockerProcess) {
  TempTree t;
  t.Process(500, "train", 1234,
            "12:pids:/docker/" + kId + "\n5:memory:/docker/" + kId + "\n1:name=systemd:/docker/" +
                kId + "\n");
  ProcessInfo p = ReadProcessInfo(sys::RootedFs(t.root()), 500);
  EXPECT_EQ(p.uid, 1234u);
  ASSERT_TRUE(p.cgroup.has_value());
  EXPECT_EQ(p.cgroup->version, 1);
  EXPECT_EQ(p.cgroup->path, "/docker/" + kId);
  ASSERT_TRUE(p.cgroup->container.has_value());
  EXPECT_EQ(p.cgroup->container->runtime, ContainerRuntime::kDocker);
  EXPECT_FALSE(p.cgroup->pod.has_value());
}

TEST(ProcessInfo, CgroupOnlyReadsNeitherNameNorUser) {
  TempTree t;
  t.Process(41001, "python3", 0, "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n");
  ProcessInfo p = ReadProcessInfo(sys::RootedFs(t.root()), 41001, ProcFacts::kCgroupOnly);
  EXPECT_EQ(p.error, "");
  EXPECT_FALSE(p.name.has_value());
  EXPECT_FALSE(p.uid.has_value());
  EXPECT_FALSE(p.user.has_value());
  ASSERT_TRUE(p.cgroup.has_value());
  ASSERT_TRUE(p.cgroup->slurm.has_value());
  EXPECT_EQ(p.cgroup->slurm->job_id, "7");
  ProcessInfo gone = ReadProcessInfo(sys::RootedFs(t.root()), 47002, ProcFacts::kCgroupOnly);
  EXPECT_FALSE(gone.cgroup.has_value());
  EXPECT_NE(gone.error.find("no process 47002"), std::string::npos);
}

TEST(ProcessInfo, MissingProcessHasNoFactsAndSaysWhy) {
  TempTree t;
  ProcessInfo p = ReadProcessInfo(sys::RootedFs(t.root()), 47002);
  EXPECT_FALSE(p.name.has_value());
  EXPECT_FALSE(p.uid.has_value());
  EXPECT_FALSE(p.cgroup.has_value());
  EXPECT_NE(p.error.find("no process 47002"), std::string::npos);
}

TEST(ProcessInfo, MalformedCgroupLeavesPlacementAbsent) {
  TempTree t;
  t.Process(8, "x", 0, "garbage\n");
  ProcessInfo p = ReadProcessInfo(sys::RootedFs(t.root()), 8);
  EXPECT_EQ(p.name, "x");
  EXPECT_FALSE(p.cgroup.has_value());
  EXPECT_NE(p.error.find("8/cgroup"), std::string::npos);
}

}  // namespace
}  // namespace gpulse::identity

namespace gpulse::identity {
namespace {

std::vector<ProcessList> Listing(std::vector<unsigned> pids) {
  ProcessList l;
  l.processes.emplace();
  for (unsigned pid : pids) {
    GpuProcess p;
    p.pid = pid;
    l.processes->push_back(p);
  }
  return {l};
}

std::string JobOf(const std::map<unsigned, ProcessInfo>& procs, unsigned pid) {
  const ProcessInfo& p = procs.at(pid);
  return p.cgroup && p.cgroup->slurm ? p.cgroup->slurm->job_id : "";
}

TEST(ListedProcessCache, ReadsNewPidsOnlyAgainAfterMaxAgeAndForgetsUnlisted) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  testing::TempTree t;
  auto job = [&](unsigned pid, const char* n) {
    t.Process(pid, "x", 0, std::string("0::/system.slice/slurmstepd.scope/job_") + n + "/step_0\n");
  };
  job(1, "10");
  job(2, "20");
  ListedProcessCache cache(sys::RootedFs(t.root()), ProcFacts::kCgroupOnly, 30 * kSecond);
  EXPECT_EQ(JobOf(cache.Update(Listing({1, 2}), 0), 1), "10");
  EXPECT_EQ(cache.last_reads(), 2u);
  job(1, "11");  // what procfs says changes: the kept entry is used until it is 30 s old
  const auto& second = cache.Update(Listing({1, 2, 3}), kSecond);
  EXPECT_EQ(cache.last_reads(), 1u) << "only the new PID 3";
  EXPECT_EQ(JobOf(second, 1), "10");
  EXPECT_NE(second.at(3).error.find("no process 3"), std::string::npos);
  job(3, "30");  // PID 3 had not appeared yet: a failed read is not kept
  EXPECT_EQ(JobOf(cache.Update(Listing({1, 3}), 2 * kSecond), 3), "30");
  EXPECT_EQ(cache.last_reads(), 1u);
  EXPECT_EQ(JobOf(cache.Update(Listing({1, 3}), 31 * kSecond), 1), "11");
  EXPECT_EQ(cache.last_reads(), 1u) << "PID 1 again at 30 s, PID 3 not yet";
  EXPECT_EQ(cache.Update(Listing({1, 2}), 32 * kSecond).size(), 2u);
  EXPECT_EQ(cache.last_reads(), 1u) << "PID 2 was unlisted, so it is read as new";
}

}  // namespace
}  // namespace gpulse::identity
