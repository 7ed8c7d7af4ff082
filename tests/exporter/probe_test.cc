// The coalesced probe: concurrent callers share one read, callers within min_refresh reuse it,
// later callers read again. Time is injected; no test waits on the wall clock.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sampling/coalesced_probe.h"

namespace gpulse::sampling {
namespace {

// A probe whose reads block until released, numbering each read.
class GatedRead {
 public:
  std::shared_ptr<const int> Read() {
    std::unique_lock lock(mu_);
    ++started_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_ >= started_; });
    return std::make_shared<const int>(started_);
  }
  void Release() {
    std::lock_guard lock(mu_);
    ++released_;
    cv_.notify_all();
  }
  void WaitStarted(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int released_ = 0;
};

// Collects callback results and lets the test wait for a count.
class Results {
 public:
  CoalescedProbe<int>::Done Callback() {
    return [this](std::shared_ptr<const int> v) {
      std::lock_guard lock(mu_);
      values_.push_back(v ? *v : -1);
      cv_.notify_all();
    };
  }
  std::vector<int> WaitFor(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return values_.size() >= n; });
    return values_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> values_;
};

TEST(CoalescedProbe, CallersArrivingDuringAReadShareIt) {
  GatedRead gate;
  std::atomic<std::int64_t> now{0};
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); });
  Results r;
  probe.Get(r.Callback());
  gate.WaitStarted(1);
  for (int i = 0; i < 9; ++i) probe.Get(r.Callback());  // all arrive while read 1 is in flight
  EXPECT_EQ(probe.waiting(), 10u);
  gate.Release();
  std::vector<int> got = r.WaitFor(10);
  EXPECT_EQ(got, std::vector<int>(10, 1)) << "ten callers, one read";
  EXPECT_EQ(probe.reads(), 1u);
}

TEST(CoalescedProbe, CallersWithinMinRefreshReuseTheLastRead) {
  GatedRead gate;
  std::atomic<std::int64_t> now{1000};
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); });
  Results r;
  gate.Release();
  gate.Release();
  probe.Get(r.Callback());
  r.WaitFor(1);
  now = 1099;  // 99 ns after the read started: still fresh
  probe.Get(r.Callback());
  EXPECT_EQ(r.WaitFor(2), (std::vector<int>{1, 1}));
  EXPECT_EQ(probe.reads(), 1u);
  now = 1100;  // min_refresh reached: a new read
  probe.Get(r.Callback());
  EXPECT_EQ(r.WaitFor(3), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(probe.reads(), 2u);
}

TEST(CoalescedProbe, ZeroMinRefreshReadsForEveryCallerThatIsNotConcurrent) {
  std::atomic<int> reads{0};
  CoalescedProbe<int> probe([&] { return std::make_shared<const int>(++reads); }, 0,
                            [] { return std::int64_t{5}; });
  Results r;
  for (int i = 0; i < 3; ++i) {
    probe.Get(r.Callback());
    r.WaitFor(static_cast<std::size_t>(i + 1));
  }
  EXPECT_EQ(r.WaitFor(3), (std::vector<int>{1, 2, 3}));
}

TEST(CoalescedProbe, InFlightSinceAndLatest) {
  GatedRead gate;
  std::atomic<std::int64_t> now{7};
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); });
  EXPECT_EQ(probe.Latest(), nullptr);
  EXPECT_FALSE(probe.InFlightSinceNs());
  Results r;
  probe.Get(r.Callback());
  gate.WaitStarted(1);
  EXPECT_EQ(probe.InFlightSinceNs(), 7);
  gate.Release();
  r.WaitFor(1);
  ASSERT_NE(probe.Latest(), nullptr);
  EXPECT_EQ(*probe.Latest(), 1);
}

TEST(CoalescedProbe, AfterInvalidateTheNextCallerReadsAgainWithinMinRefresh) {
  GatedRead gate;
  std::atomic<std::int64_t> now{0};
  Results results;
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); });
  probe.Get(results.Callback());
  gate.Release();
  results.WaitFor(1);
  probe.Get(results.Callback());  // within min_refresh: the same snapshot
  EXPECT_EQ(results.WaitFor(2), (std::vector<int>{1, 1}));
  probe.Invalidate();
  probe.Get(results.Callback());  // still within min_refresh, but out of date: a new read
  gate.WaitStarted(2);
  gate.Release();
  EXPECT_EQ(results.WaitFor(3), (std::vector<int>{1, 1, 2}));
  probe.Get(results.Callback());  // that read is fresh again
  EXPECT_EQ(results.WaitFor(4), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(probe.reads(), 2u);
}

// Records each call of the work between reads, answering with the times the test gives.
class BetweenCalls {
 public:
  explicit BetweenCalls(std::vector<std::optional<std::int64_t>> answers)
      : answers_(std::move(answers)) {}
  std::optional<std::int64_t> operator()(std::int64_t now) {
    std::lock_guard lock(mu_);
    calls_.push_back(now);
    cv_.notify_all();
    return calls_.size() <= answers_.size() ? answers_[calls_.size() - 1] : std::nullopt;
  }
  std::vector<std::int64_t> WaitFor(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return calls_.size() >= n; });
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<std::int64_t>> answers_;
  std::vector<std::int64_t> calls_;
};

TEST(CoalescedProbe, WorkBetweenReadsRunsAfterEachReadAndAtTheTimeItAsksFor) {
  GatedRead gate;
  std::atomic<std::int64_t> now{0};
  BetweenCalls between({2'000'000, std::nullopt, std::nullopt});
  Results results;
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); },
                            [&](std::int64_t t) { return between(t); });
  probe.Get(results.Callback());
  gate.Release();
  EXPECT_EQ(results.WaitFor(1), (std::vector<int>{1}));
  EXPECT_EQ(between.WaitFor(1), (std::vector<std::int64_t>{0})) << "after the read's callers";
  now = 2'500'000;  // past the 2 ms it asked for
  EXPECT_EQ(between.WaitFor(2), (std::vector<std::int64_t>{0, 2'500'000}));
  now = 3'000'000;  // it asked for nothing more: it runs again only after the next read
  probe.Get(results.Callback());
  gate.Release();
  EXPECT_EQ(results.WaitFor(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(between.WaitFor(3), (std::vector<std::int64_t>{0, 2'500'000, 3'000'000}));
  EXPECT_EQ(probe.reads(), 2u);
}

TEST(CoalescedProbe, AReadRequestedWhileTheWorkBetweenReadsWaitsIsMadeAtOnce) {
  GatedRead gate;
  std::atomic<std::int64_t> now{0};
  // Asks to run again in an hour of the injected clock, which never comes.
  BetweenCalls between({3'600'000'000'000, 3'600'000'000'000});
  Results results;
  CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [&] { return now.load(); },
                            [&](std::int64_t t) { return between(t); });
  probe.Get(results.Callback());
  gate.Release();
  results.WaitFor(1);
  between.WaitFor(1);
  now = 1'000;  // past min_refresh: the next caller needs a read
  probe.Get(results.Callback());
  gate.WaitStarted(2);
  gate.Release();
  EXPECT_EQ(results.WaitFor(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(between.WaitFor(2).size(), 2u) << "and after it, again";
}

TEST(CoalescedProbe, DestructionFinishesTheReadInFlightAndAnswersItsCallers) {
  GatedRead gate;
  Results r;
  {
    CoalescedProbe<int> probe([&] { return gate.Read(); }, 100, [] { return std::int64_t{0}; });
    probe.Get(r.Callback());
    gate.WaitStarted(1);
    std::thread releaser([&] { gate.Release(); });
    releaser.join();
  }
  EXPECT_EQ(r.WaitFor(1), std::vector<int>{1});
}

}  // namespace
}  // namespace gpulse::sampling
