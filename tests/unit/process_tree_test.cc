// procfs parsing, and descendant aggregation on a real process tree the test spawns.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <csignal>
#include <cstdio>
#include <thread>

#include "sampling/process_tree.h"
#include "sys/child_process.h"

namespace gpulse::sampling {
namespace {

// Every descendant of `pid`, from the kernel's children lists (to clean up after a test).
std::vector<pid_t> Descendants(pid_t pid) {
  std::vector<pid_t> out, queue{pid};
  while (!queue.empty()) {
    pid_t p = queue.back();
    queue.pop_back();
    FILE* f = std::fopen(("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children").c_str(), "r");
    if (f == nullptr) continue;
    char buf[4096] = {};
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    if (auto kids = ParseChildren(std::string_view(buf, n))) {
      for (pid_t k : *kids) {
        out.push_back(k);
        queue.push_back(k);
      }
    }
  }
  return out;
}

TEST(ProcStat, ParsesFieldsAfterTheLastParenthesis) {
  // A command name with spaces and parentheses, as proc(5) warns.
  auto p = ParseStat("1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 "
                     "250 75 40 9 20 0 7 0 12345 1000000 321 18446744073709551615");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name, "my (odd) name");
  EXPECT_EQ(p->ppid, 1);
  EXPECT_EQ(p->utime_jiffies, 250u);
  EXPECT_EQ(p->stime_jiffies, 75u);
  EXPECT_EQ(p->cutime_jiffies, 40u);
  EXPECT_EQ(p->cstime_jiffies, 9u);
  EXPECT_EQ(p->threads, 7u);
  EXPECT_EQ(p->rss_pages, 321u);
  EXPECT_FALSE(p->zombie);
}

TEST(ProcStat, ZombieIsRecognised) {
  auto p = ParseStat("9 (sleep) Z 1 9 9 0 -1 0 0 0 0 0 3 1 0 0 20 0 1 0 1 0 0 0");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->zombie);
}

TEST(ProcStat, MalformedIsAnErrorNamingTheProblem) {
  EXPECT_NE(ParseStat("1234 no parenthesis").error().message.find("')'"), std::string::npos);
  EXPECT_NE(ParseStat("1 (x) S 1 2").error().message.find("too few"), std::string::npos);
  EXPECT_NE(ParseStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 1 0 0 20 0 1 0 1 0 5").error().message.find("utime"),
            std::string::npos);
}

TEST(ProcChildren, ParsesListsAndRejectsGarbage) {
  EXPECT_EQ(*ParseChildren("12 34 "), (std::vector<pid_t>{12, 34}));
  EXPECT_TRUE(ParseChildren("")->empty());
  EXPECT_FALSE(ParseChildren("12 x3").ok());
}

TEST(ProcessTree, SelfIsReadable) {
  ProcessTreeSampler s("/proc", getpid(), false);
  auto t = s.Read();
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_GT(t->rss_bytes, 0u);
  EXPECT_GE(t->threads, 1u);
  EXPECT_EQ(t->processes, 1u);
}

TEST(ProcessTree, DescendantsOfARealTreeAreSummed) {
  // sh -> (sleep, sh -> sleep): four processes, two levels deep.
  auto child = sys::ChildProcess::Spawn({"sh", "-c", "sleep 30 & sh -c 'sleep 30 & wait' & wait"});
  ASSERT_TRUE(child.ok());
  ProcessTreeSampler alone("/proc", child->pid(), false);
  ProcessTreeSampler tree("/proc", child->pid(), true);
  TreeTotals t;
  for (int attempt = 0; attempt < 500; ++attempt) {  // wait (bounded) until the tree has formed
    auto r = tree.Read();
    ASSERT_TRUE(r.ok()) << r.error().message;
    t = *r;
    if (t.processes == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(t.processes, 4u);
  EXPECT_GE(t.threads, 4u);
  auto a = alone.Read();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->processes, 1u);
  EXPECT_LT(a->rss_bytes, t.rss_bytes);
  for (pid_t pid : Descendants(child->pid())) kill(pid, SIGKILL);
  kill(child->pid(), SIGKILL);
  child->Wait();
}

TEST(ProcessTree, ReapedProcessIsAnError) {
  auto child = sys::ChildProcess::Spawn({"true"});
  ASSERT_TRUE(child.ok());
  ProcessTreeSampler s("/proc", child->pid(), true);
  child->Wait();
  EXPECT_FALSE(s.Read().ok());
}

// Burns CPU in the calling process for `seconds` of its own CPU time.
const char* kBusyChild = "t=$(date +%s%N); while [ $(( $(date +%s%N) - t )) -lt 400000000 ]; do :; done";

// The case in small: a child burns CPU and exits, then the root sleeps. Sampled every 20 ms
// and once more when the root has exited (a zombie, not yet reaped), the tree's CPU time must equal
// what wait4 reports for the root, which includes every reaped descendant: nothing is lost when a
// child exits, and nothing is counted twice when its time moves into the parent's cutime.
// Reads the tree every 20 ms until `child` has exited (the last read listing the tree, as the
// recorder's final sample does), then reaps it: each read's CPU total (jiffies), and what wait4
// reports for the child and the descendants it reaped, in seconds.
struct Sampled {
  std::vector<std::uint64_t> totals;
  double rusage_s = 0;
};

Sampled SampleUntilExit(sys::ChildProcess& child, ProcessTreeSampler& tree) {
  Sampled out;
  for (;;) {
    bool exited = child.HasExited();
    auto t = exited ? tree.ReadAndDiscover() : tree.Read();
    EXPECT_TRUE(t.ok()) << t.error().message;
    if (!t.ok()) break;
    out.totals.push_back(t->utime_jiffies + t->stime_jiffies);
    if (exited) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  struct rusage ru {};
  int status = 0;
  EXPECT_EQ(wait4(child.pid(), &status, 0, &ru), child.pid());
  out.rusage_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  return out;
}

// Listing the tree every read, and every 4th (the recorder at 50 ms, idle processes carried).
class ConservedCpu : public ::testing::TestWithParam<unsigned> {};
INSTANTIATE_TEST_SUITE_P(ProcessTree, ConservedCpu, ::testing::Values(1u, 4u));

TEST_P(ConservedCpu, CpuTimeOfExitedChildrenIsConserved) {
  auto child = sys::ChildProcess::Spawn({"sh", "-c", std::string("sh -c '") + kBusyChild + "'; sleep 0.3"});
  ASSERT_TRUE(child.ok());
  ProcessTreeSampler tree("/proc", child->pid(), true, GetParam());
  Sampled s = SampleUntilExit(*child, tree);
  ASSERT_FALSE(s.totals.empty());
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_GT(s.rusage_s, 0.05) << "the busy child ran";
  // /proc counts each of the 3 processes (sh, sh, sleep) in whole ticks rounded down, wait4 in
  // microseconds: up to one tick apart per process (a loaded machine showed 2.54).
  EXPECT_NEAR(s.totals.back() / hz, s.rusage_s, 3.5 / hz);
  EXPECT_TRUE(std::is_sorted(s.totals.begin(), s.totals.end())) << "the totals never decrease";
}

// The case: an idle parent (timeout, asleep while its child spins) reaps the child. Listed
// every 4th read with idle processes carried, the parent must still be read when the child leaves,
// or the child's time would be credited once and found again in the parent's cutime.
TEST_P(ConservedCpu, AnIdleParentThatReapsIsNotCountedTwice) {
  auto child = sys::ChildProcess::Spawn({"sh", "-c", "timeout 0.6 sh -c 'while :; do :; done'; sleep 0.3"});
  ASSERT_TRUE(child.ok());
  ProcessTreeSampler tree("/proc", child->pid(), true, GetParam());
  Sampled s = SampleUntilExit(*child, tree);
  ASSERT_FALSE(s.totals.empty());
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_GT(s.rusage_s, 0.1) << "the loop ran";
  // /proc counts each of the 4 processes (sh, timeout, sh, sleep) in whole clock ticks, rounded
  // down, where wait4 counts microseconds: up to one tick apart per process (a loaded CI machine
  // showed 2.6), never the 60 ticks of a child counted twice.
  EXPECT_NEAR(s.totals.back() / hz, s.rusage_s, 4.5 / hz);
}

// A fixture procfs whose files are rewritten in place between reads (the sampler keeps them open).
class FixtureProc {
 public:
  FixtureProc() : dir_(std::filesystem::temp_directory_path() / ("gpulse-proc-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(dir_);
  }
  ~FixtureProc() { std::filesystem::remove_all(dir_); }
  std::string root() const { return dir_.string(); }
  // A sleeping process with the given CPU times (jiffies) and children.
  // 100 (the root) -> 200 -> 300, a leaf that has used 60 jiffies.
  void ThreeLevels() {
    Set(100, 1, 0, 0, "200 ");
    Set(200, 100, 0, 0, "300 ");
    Set(300, 200, 60, 0, "");
  }
  void Set(pid_t pid, pid_t ppid, unsigned utime, unsigned cutime, const std::string& children) {
    auto task = dir_ / std::to_string(pid) / "task" / std::to_string(pid);
    std::filesystem::create_directories(task);
    Write(dir_ / std::to_string(pid) / "stat",
          std::to_string(pid) + " (p) S " + std::to_string(ppid) + " 1 1 0 -1 0 0 0 0 0 " + std::to_string(utime) +
              " 0 " + std::to_string(cutime) + " 0 20 0 1 0 1 0 10\n");
    Write(task / "children", children);
  }
  void Reaped(pid_t pid) { Write(dir_ / std::to_string(pid) / "stat", ""); }  // its open file reads nothing

 private:
  static void Write(const std::filesystem::path& p, const std::string& text) {
    FILE* f = std::fopen(p.c_str(), "w");  // truncates in place: open descriptors see the new text
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  std::filesystem::path dir_;
};

// Reads within a tick are not one snapshot: the parent (200) is read, then reaps its child (300),
// whose read then fails. The child's 60 jiffies are in the parent's cutime only at the next
// reading; they must not be credited as well.
TEST(ProcessTree, AChildReapedJustAfterItsParentWasReadIsCountedOnce) {
  for (unsigned every : {1u, 4u}) {
    FixtureProc proc;
    proc.ThreeLevels();
    ProcessTreeSampler tree(proc.root(), 100, true, every);
    EXPECT_EQ(tree.ReadAndDiscover()->utime_jiffies, 60u);
    proc.Set(200, 100, 0, 0, "");
    proc.Reaped(300);
    EXPECT_EQ(tree.Read()->utime_jiffies, 60u) << "every " << every;
    proc.Set(200, 100, 0, 60, "");
    EXPECT_EQ(tree.Read()->utime_jiffies, 60u) << "every " << every << ": found in the parent's cutime, not credited";
    EXPECT_EQ(tree.Read()->utime_jiffies, 60u) << "every " << every;
  }
}

// An idle leaf is carried between listings without reading it, but not when its parent has left:
// the parent may have reaped it first (a spinning child that got no CPU for two ticks on a loaded
// machine, then was killed and reaped with its parent), and its time is then in the grandparent's.
TEST(ProcessTree, AnIdleLeafWhoseParentLeftIsReadNotCarried) {
  FixtureProc proc;
  proc.ThreeLevels();
  ProcessTreeSampler tree(proc.root(), 100, true, 8);
  EXPECT_EQ(tree.ReadAndDiscover()->utime_jiffies, 60u);
  EXPECT_EQ(tree.Read()->utime_jiffies, 60u);  // 300 idle from here
  proc.Reaped(300);
  proc.Reaped(200);
  proc.Set(100, 1, 0, 60, "");
  EXPECT_EQ(tree.Read()->utime_jiffies, 60u) << "in the root's cutime, not also carried";
}

// Time that never reaches a parent's cutime (it ignores SIGCHLD) is credited at its next reading.
TEST(ProcessTree, AChildNoParentReapsIsCreditedAtTheParentsNextReading) {
  FixtureProc proc;
  proc.ThreeLevels();
  ProcessTreeSampler tree(proc.root(), 100, true, 4);
  EXPECT_EQ(tree.ReadAndDiscover()->utime_jiffies, 60u);
  proc.Set(200, 100, 5, 0, "");
  proc.Reaped(300);
  EXPECT_EQ(tree.Read()->utime_jiffies, 60u) << "held, the total does not go down";
  proc.Set(200, 100, 10, 0, "");
  EXPECT_EQ(tree.Read()->utime_jiffies, 70u) << "the parent's 10 and the child's 60, credited";
  EXPECT_EQ(tree.Read()->utime_jiffies, 70u);
}

// A process that leaves the tree without a tree member reaping it (orphaned: its parent exits
// while it runs, so init reaps it) keeps the CPU time it was last seen with: the tree's total ends
// above what wait4 reports for the root, which cannot include it.
TEST(ProcessTree, AnOrphanKeepsItsLastReading) {
  auto child = sys::ChildProcess::Spawn(
      {"sh", "-c", std::string("(sh -c '") + kBusyChild + "' & sleep 0.25); sleep 0.6"});
  ASSERT_TRUE(child.ok());
  ProcessTreeSampler tree("/proc", child->pid(), true);
  Sampled s = SampleUntilExit(*child, tree);
  ASSERT_FALSE(s.totals.empty());
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_GE(s.totals.back() / hz, s.rusage_s + 2 / hz) << "the orphan's time, seen while it was in the tree, is kept";
}

TEST(ChildProcess, HasExitedDoesNotReap) {
  auto child = sys::ChildProcess::Spawn({"true"});
  ASSERT_TRUE(child.ok());
  EXPECT_TRUE(child->HasExited(/*block=*/true));
  EXPECT_TRUE(std::filesystem::exists("/proc/" + std::to_string(child->pid()))) << "still a zombie";
  ProcessTreeSampler s("/proc", child->pid(), false);
  EXPECT_TRUE(s.Read().ok()) << "a zombie root is read (the final sample)";
  EXPECT_EQ(child->Wait().ShellCode(), 0);
  EXPECT_FALSE(s.Read().ok()) << "reaped: gone";
}

TEST(ChildProcess, ExitCodesFollowTheShellConvention) {
  auto ok = sys::ChildProcess::Spawn({"sh", "-c", "exit 7"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->Wait().ShellCode(), 7);
  auto killed = sys::ChildProcess::Spawn({"sh", "-c", "kill -KILL $$"});
  ASSERT_TRUE(killed.ok());
  sys::ExitStatus st = killed->Wait();
  EXPECT_EQ(*st.signal, SIGKILL);
  EXPECT_EQ(st.ShellCode(), 128 + SIGKILL);
  auto missing = sys::ChildProcess::Spawn({"/nonexistent/program"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpulse::sampling
