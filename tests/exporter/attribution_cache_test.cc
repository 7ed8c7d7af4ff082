// The exporter's attribution kept between reads (src/exporter/attribution_cache.h): holders are
// worked out again only when the PIDs listed where change, the kubelet answers, a PID's missing
// procfs facts are 5 s old or the holders 30 s old; every new list apportions its own numbers.
#include "exporter/attribution_cache.h"

#include <gtest/gtest.h>

#include "core/fields.h"
#include "exporter/gpus.h"
#include "identity/temp_tree.h"

namespace gpulse::exporter {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

SystemInfo TwoGpus() { return testing::Gpus(2); }

struct Listed {
  unsigned gpu, pid;
  double sm;
};

// One read at `t`: both GPUs at 100 W, each process listed on its GPU with `sm` % and 1 GiB.
Snapshot Read(std::int64_t t, const std::vector<Listed>& listed) {
  Snapshot snap;
  const FieldIndex power = *FindField("DCGM_FI_DEV_POWER_USAGE");
  snap.entities.resize(2);
  for (DeviceReading& r : snap.entities) {
    r.sample.values.resize(power + 1);
    r.sample.values[power] = 100.0;
  }
  snap.processes.resize(2);
  for (ProcessList& l : snap.processes) {
    l.t_mono_ns = t;
    l.processes.emplace();
  }
  for (const Listed& x : listed) {
    GpuProcess p;
    p.pid = x.pid;
    p.compute = true;
    p.used_memory_bytes = 1ull << 30;
    p.sm_util = x.sm;
    snap.processes[x.gpu].processes->push_back(p);
  }
  return snap;
}

void InJob(const identity::testing::TempTree& t, unsigned pid, const std::string& job) {
  t.Process(pid, "x", 0, "0::/system.slice/slurmstepd.scope/job_" + job + "/step_0\n");
}

class AttributionCacheTest : public ::testing::Test {
 protected:
  const Attribution& At(std::int64_t t, const std::vector<Listed>& listed,
                        std::shared_ptr<const k8s::PodState> state = nullptr) {
    snap_ = Read(t, listed);
    return cache_->Update(info_, entities_, snap_, std::move(state), t);
  }

  identity::testing::TempTree tree_;
  SystemInfo info_ = TwoGpus();
  std::vector<Entity> entities_ = BuildEntities(info_);
  std::unique_ptr<AttributionCache> cache_ =
      std::make_unique<AttributionCache>(sys::RootedFs(tree_.root()), /*jobs=*/true);
  Snapshot snap_;
};

TEST_F(AttributionCacheTest, KeepsTheHoldersWhileTheSamePidsAreListedAndApportionsEachNewList) {
  InJob(tree_, 1, "10");
  InJob(tree_, 2, "20");
  const Attribution& first = At(0, {{0, 1, 60}, {0, 2, 20}});
  ASSERT_EQ(first.jobs.size(), 2u);
  EXPECT_EQ(first.jobs[0].labels, R"(hpc_job="10")");
  EXPECT_DOUBLE_EQ(*first.jobs[0].power_watts, 75.0);
  EXPECT_EQ(cache_->holder_passes(), 1u);
  EXPECT_EQ(cache_->procfs_reads(), 2u);

  InJob(tree_, 1, "11");  // procfs changes; the kept holder stands until it is 30 s old
  const Attribution& second = At(1 * kSecond, {{0, 1, 20}, {0, 2, 60}});
  EXPECT_EQ(cache_->holder_passes(), 1u) << "the same PIDs on the same GPUs";
  EXPECT_EQ(cache_->procfs_reads(), 2u) << "no procfs read for a list of known PIDs";
  ASSERT_EQ(second.jobs.size(), 2u);
  EXPECT_EQ(second.jobs[0].labels, R"(hpc_job="10")");
  EXPECT_DOUBLE_EQ(*second.jobs[0].sm_util, 20.0) << "this list's numbers";
  EXPECT_DOUBLE_EQ(*second.jobs[0].power_watts, 25.0);
  EXPECT_EQ(second.job_labels[0], (std::vector<std::string>{R"(hpc_job="10")", R"(hpc_job="20")"}));

  const Attribution& late = At(30 * kSecond, {{0, 1, 20}, {0, 2, 60}});
  EXPECT_EQ(cache_->holder_passes(), 2u);
  ASSERT_EQ(late.jobs.size(), 2u);
  EXPECT_EQ(late.jobs[0].labels, R"(hpc_job="11")");
}

TEST_F(AttributionCacheTest, WorksTheHoldersOutAgainWhenAPidAppearsLeavesOrMoves) {
  InJob(tree_, 1, "10");
  InJob(tree_, 2, "20");
  InJob(tree_, 3, "30");
  At(0, {{0, 1, 50}, {0, 2, 50}});
  const Attribution& added = At(kSecond, {{0, 1, 50}, {0, 2, 50}, {1, 3, 40}});
  EXPECT_EQ(cache_->holder_passes(), 2u);
  EXPECT_EQ(cache_->procfs_reads(), 3u) << "only the new PID";
  ASSERT_EQ(added.jobs.size(), 3u);
  EXPECT_EQ(added.jobs[2].entity, 1u);
  EXPECT_EQ(added.jobs[2].labels, R"(hpc_job="30")");
  const Attribution& moved = At(2 * kSecond, {{0, 1, 50}, {1, 2, 50}, {1, 3, 40}});
  EXPECT_EQ(cache_->holder_passes(), 3u);
  ASSERT_EQ(moved.jobs.size(), 3u);
  EXPECT_EQ(moved.jobs[1].entity, 1u);
  EXPECT_EQ(moved.jobs[1].labels, R"(hpc_job="20")");
  EXPECT_EQ(moved.job_labels[0], (std::vector<std::string>{R"(hpc_job="10")"}));
  const Attribution& left = At(3 * kSecond, {{0, 1, 50}});
  EXPECT_EQ(cache_->holder_passes(), 4u);
  EXPECT_EQ(left.jobs.size(), 1u);
  EXPECT_TRUE(left.job_labels[1].empty());
}

TEST_F(AttributionCacheTest, APidWithoutProcfsFactsIsReadAgainAfterFiveSecondsNotEveryList) {
  InJob(tree_, 1, "10");
  At(0, {{0, 1, 50}, {0, 4, 50}});  // no /proc/4: another PID namespace, or not there yet
  EXPECT_EQ(cache_->procfs_reads(), 2u);
  InJob(tree_, 4, "40");
  const Attribution& soon = At(4 * kSecond, {{0, 1, 50}, {0, 4, 50}});
  EXPECT_EQ(cache_->procfs_reads(), 2u) << "not at every list";
  EXPECT_EQ(soon.jobs.size(), 1u);
  const Attribution& retried = At(5 * kSecond, {{0, 1, 50}, {0, 4, 50}});
  EXPECT_EQ(cache_->procfs_reads(), 3u) << "PID 4 only: PID 1's facts are kept";
  ASSERT_EQ(retried.jobs.size(), 2u);
  EXPECT_EQ(retried.jobs[1].labels, R"(hpc_job="40")");
}

TEST_F(AttributionCacheTest, ANewKubeletAnswerRenamesThePodsWithoutReadingProcfsAgain) {
  const std::string uid = "5c1f0e9a-2b7d-4c3e-9a81-7d2e4f6b0c13";
  const std::string cgroup_uid = "5c1f0e9a_2b7d_4c3e_9a81_7d2e4f6b0c13";
  tree_.Process(7, "x", 0,
                "0::/kubepods.slice/kubepods-pod" + cgroup_uid + ".slice/cri-containerd-" +
                    std::string(64, 'a') + ".scope\n");
  cache_ = std::make_unique<AttributionCache>(sys::RootedFs(tree_.root()), /*jobs=*/false);
  auto answer = [](const std::string& pod) {
    auto s = std::make_shared<k8s::PodState>();
    s->ok = true;
    s->assignments.by_entity = {{{pod, "ml", "trainer", ""}}, {}};
    return s;
  };
  const Attribution& first = At(0, {{0, 7, 90}}, answer("train-0"));
  ASSERT_EQ(first.pods.size(), 1u);
  EXPECT_EQ(first.pods[0].labels, R"(pod="train-0",namespace="ml",container="trainer")");
  EXPECT_TRUE(first.jobs.empty());
  At(kSecond, {{0, 7, 90}}, answer("train-0"));
  EXPECT_EQ(cache_->holder_passes(), 1u) << "a new answer assigning the same pods changes no holder";
  At(2 * kSecond, {{0, 7, 90}}, answer("train-0"));
  EXPECT_EQ(cache_->holder_passes(), 1u);
  const Attribution& renamed = At(3 * kSecond, {{0, 7, 90}}, answer("train-1"));
  EXPECT_EQ(cache_->holder_passes(), 2u);
  EXPECT_EQ(cache_->procfs_reads(), 1u);
  ASSERT_EQ(renamed.pods.size(), 1u);
  EXPECT_EQ(renamed.pods[0].labels, R"(pod="train-1",namespace="ml",container="trainer")");
  auto failed = std::make_shared<k8s::PodState>();
  EXPECT_TRUE(At(4 * kSecond, {{0, 7, 90}}, failed).pods.empty()) << "no answer, no pods";
}

TEST_F(AttributionCacheTest, HoldersDueWithinEarlyAreWorkedOutAheadOfTime) {
  InJob(tree_, 1, "10");
  At(0, {{0, 1, 50}});
  ASSERT_EQ(cache_->holder_passes(), 1u);
  const std::int64_t recheck = AttributionCache::kRecheckNs;
  snap_ = Read(recheck - kSecond / 2, {{0, 1, 50}});
  cache_->Update(info_, entities_, snap_, nullptr, recheck - kSecond / 2, /*early_ns=*/0);
  EXPECT_EQ(cache_->holder_passes(), 1u) << "not due yet";
  snap_ = Read(recheck - kSecond / 4, {{0, 1, 50}});
  cache_->Update(info_, entities_, snap_, nullptr, recheck - kSecond / 4, /*early_ns=*/kSecond);
  EXPECT_EQ(cache_->holder_passes(), 2u) << "due within the second ahead: worked out now";
  At(recheck, {{0, 1, 50}});
  EXPECT_EQ(cache_->holder_passes(), 2u) << "the read at the old due time finds them done";
}

TEST(NextListingBetweenReads, ListsAreDueASecondAfterTheyWereTakenWhileReadsComeEverySecond) {
  EXPECT_EQ(NextListingBetweenReads(5 * kSecond, 5 * kSecond, 0), std::nullopt) << "no list yet";
  EXPECT_EQ(NextListingBetweenReads(5 * kSecond, 5 * kSecond, 4'500'000'000), 5'500'000'000)
      << "after a read: the time the lists fall due";
  EXPECT_EQ(NextListingBetweenReads(5'600'000'000, 5 * kSecond, 4'500'000'000), 5'500'000'000)
      << "past due, a read within the second: list now";
  EXPECT_EQ(NextListingBetweenReads(6'000'000'001, 5 * kSecond, 4'500'000'000), std::nullopt)
      << "no read for over a second: nothing between reads, the next read lists";
  EXPECT_EQ(NextListingBetweenReads(6 * kSecond, 5 * kSecond, 4'500'000'000), 5'500'000'000)
      << "a read exactly a second ago still counts";
}

}  // namespace
}  // namespace gpulse::exporter
