#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "k8s/pod_resources_watcher.h"

namespace gpulse::k8s {
namespace {

std::vector<Entity> OneGpu() {
  SystemInfo info;
  DeviceInfo d;
  d.uuid = "GPU-0";
  info.devices = {d};
  return BuildEntities(info);
}

// What the watcher handed over, waited for without a clock: each test waits for a count of updates.
struct Updates {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<const PodState>> seen;

  void Add(std::shared_ptr<const PodState> s) {
    std::lock_guard lock(mu);
    seen.push_back(std::move(s));
    cv.notify_all();
  }
  std::shared_ptr<const PodState> WaitFor(std::size_t n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return seen.size() >= n; });
    return seen[n - 1];
  }
};

struct Kubelet {
  std::mutex mu;
  bool fail = false;
  std::string owner = "train";
  int calls = 0;
  Result<std::vector<identity::PodResources>> List() {
    std::lock_guard lock(mu);
    ++calls;
    if (fail) return Unavailable("kubelet down");
    return std::vector<identity::PodResources>{
        {owner, "ml", {{"main", {{"nvidia.com/gpu", {"GPU-0", "GPU-7"}}}}}}};
  }
};

class WatcherTest : public ::testing::Test {
 protected:
  WatcherOptions Options() {
    WatcherOptions o;
    o.interval = std::chrono::hours(1);  // only Start and RefreshNow list
    o.min_interval = std::chrono::milliseconds(0);
    return o;
  }
  std::unique_ptr<PodResourcesWatcher> Make() {
    return std::make_unique<PodResourcesWatcher>(
        Options(), OneGpu(), [this](auto s) { updates.Add(std::move(s)); },
        [this](const std::string& line) { logs.push_back(line); },
        [this] { return kubelet.List(); });
  }
  Kubelet kubelet;
  Updates updates;
  std::vector<std::string> logs;  // written on the watcher's thread, read after it is joined
};

TEST_F(WatcherTest, StartListsOnceBeforeReturning) {
  auto w = Make();
  w->Start();
  auto now = w->Current();
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->ok);
  EXPECT_EQ(now->lists_total, 1u);
  ASSERT_EQ(now->assignments.by_entity.size(), 1u);
  EXPECT_EQ(now->assignments.by_entity[0][0].pod, "train");
  EXPECT_EQ(now->assignments.unmatched, (std::vector<std::string>{"GPU-7"}));
}

TEST_F(WatcherTest, AFailureEmptiesTheLabelsAndIsCountedAndLoggedOnce) {
  auto w = Make();
  w->Start();
  {
    std::lock_guard lock(kubelet.mu);
    kubelet.fail = true;
  }
  w->RefreshNow();
  auto failed = updates.WaitFor(2);
  EXPECT_FALSE(failed->ok);
  EXPECT_EQ(failed->error, "kubelet down");
  EXPECT_EQ(failed->failures_total, 1u);
  EXPECT_TRUE(failed->assignments.by_entity.at(0).empty());
  w->RefreshNow();
  EXPECT_EQ(updates.WaitFor(3)->failures_total, 2u);
  {
    std::lock_guard lock(kubelet.mu);
    kubelet.fail = false;
    kubelet.owner = "infer";
  }
  w->RefreshNow();
  auto back = updates.WaitFor(4);
  EXPECT_TRUE(back->ok);
  EXPECT_EQ(back->assignments.by_entity[0][0].pod, "infer");
  EXPECT_EQ(back->lists_total, 4u);
  w.reset();
  int down = 0, again = 0, unmatched = 0;
  for (const std::string& l : logs) {
    down += l.find("kubelet down") != std::string::npos;
    again += l.find("answers again") != std::string::npos;
    unmatched += l.find("GPU-7") != std::string::npos;
  }
  EXPECT_EQ(down, 1);
  EXPECT_EQ(again, 1);
  EXPECT_EQ(unmatched, 1);  // once, although every answer has it
}

}  // namespace
}  // namespace gpulse::k8s

namespace gpulse::k8s {
namespace {

// The heap is handed back only after the answers shrink to under half their largest (1,000 pods or
// more): not after every large answer, whose buffers the next List reuses.
TEST(HeapTrimPolicyTest, TrimsOnlyWhenALargeAnswerShrinks) {
  HeapTrimPolicy policy;
  EXPECT_FALSE(policy.After(40));
  EXPECT_FALSE(policy.After(10));  // a small node shrinking: not worth a trim
  EXPECT_FALSE(policy.After(5000));
  EXPECT_FALSE(policy.After(5000));  // steady: the buffers are reused
  EXPECT_FALSE(policy.After(2600));
  EXPECT_TRUE(policy.After(2400));   // under half of 5,000
  EXPECT_FALSE(policy.After(2400));  // once
  EXPECT_FALSE(policy.After(1300));  // not under half of 2,400, the largest since the trim
  EXPECT_TRUE(policy.After(0));      // a failed List after a large answer
  EXPECT_FALSE(policy.After(0));
}

}  // namespace
}  // namespace gpulse::k8s
