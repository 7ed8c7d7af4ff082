// Measurement windows (upstream test_sa_bench_measurement_window.py "Coverage"/"Artifact errors"
// and test_power_artifacts.py "Windows"): parse and status invariants, clock tolerance, result-file
// checks, directory safety, matching.
#include <gtest/gtest.h>
#include <unistd.h>

#include "power/fixture.h"
#include "power/readers/contract.h"
#include "power/rules/windows.h"

namespace gpulse::power {
namespace {

using testing::Package;
using testing::ResultDoc;
using testing::WindowDoc;
namespace fs = std::filesystem;

Json Valid() { return WindowDoc(1000.0, 1020.0, 20.0, "sa-bench/r.json"); }

TEST(WindowParse, CompletedShapeParses) {
  auto w = ParseWindowFile(Valid(), "windows/r.json");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->stem, "r");
  EXPECT_EQ(WindowLabel(w->key), "sa-bench/4");
}

struct Mutation {
  const char* name;
  const char* key;
  Json value;
};

class WindowMalformed : public ::testing::TestWithParam<Mutation> {};

TEST_P(WindowMalformed, MutatedFieldIsMalformed) {
  Json doc = Valid();
  doc[GetParam().key] = GetParam().value;
  EXPECT_FALSE(ParseWindowFile(doc, "windows/r.json").ok());
}

INSTANTIATE_TEST_SUITE_P(
    Rules, WindowMalformed,
    ::testing::Values(Mutation{"clock_source", "clock_source", "worker_clock"},
                      Mutation{"concurrency_true", "concurrency", true},
                      Mutation{"concurrency_string", "concurrency", "4"},
                      Mutation{"schema_version_true", "schema_version", true},
                      Mutation{"schema_version_2", "schema_version", 2},
                      Mutation{"benchmark_type_number", "benchmark_type", 7},
                      Mutation{"start_null", "benchmark_start_time_unix", nullptr},
                      Mutation{"start_nan_text", "benchmark_start_time_unix", "NaN"},
                      Mutation{"status_bogus", "status", "done"},
                      Mutation{"reason_set_while_completed", "reason", "oops"},
                      Mutation{"duration_zero", "duration", 0},
                      Mutation{"end_bool", "benchmark_end_time_unix", true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(WindowParse, InterruptedWithoutReasonIsMalformed) {
  Json doc = Valid();
  doc["status"] = "interrupted";
  doc["benchmark_end_time_unix"] = nullptr;
  doc["duration"] = nullptr;
  EXPECT_FALSE(ParseWindowFile(doc, "windows/r.json").ok());
  doc["reason"] = "benchmark did not reach a formal end boundary";
  EXPECT_TRUE(ParseWindowFile(doc, "windows/r.json").ok());
}

TEST(WindowParse, ReasonSetWhileRunningIsMalformed) {
  Json doc = Valid();
  doc["status"] = "running";
  doc["benchmark_end_time_unix"] = nullptr;
  doc["duration"] = nullptr;
  EXPECT_TRUE(ParseWindowFile(doc, "windows/r.json").ok());
  doc["reason"] = "x";
  EXPECT_FALSE(ParseWindowFile(doc, "windows/r.json").ok());
}

TEST(WindowParse, FailedKeepsBoundaryAndReason) {
  Json doc = Valid();
  doc["status"] = "failed";
  EXPECT_FALSE(ParseWindowFile(doc, "windows/r.json").ok());
  doc["reason"] = "benchmark exited 1";
  EXPECT_TRUE(ParseWindowFile(doc, "windows/r.json").ok());
}

TEST(WindowParse, NotAnObjectIsMalformed) {
  EXPECT_FALSE(ParseWindowFile(Json::array(), "windows/r.json").ok());
}

// Clock tolerance: max(0.5 s, 1% of duration).
TEST(ClockTolerance, UpstreamTable) {
  EXPECT_TRUE(ClockMatches(1000, 1020, 19.5));
  EXPECT_FALSE(ClockMatches(1000, 1020, 19.49));
  EXPECT_FALSE(ClockMatches(1000, 1200, 20));
  EXPECT_TRUE(ClockMatches(1000, 1202, 200));  // 1% of 200 s = 2 s
  EXPECT_FALSE(ClockMatches(1000, 1202.1, 200));
}

TEST(ClockTolerance, NonPositiveWallIntervalFails) {
  EXPECT_FALSE(ClockMatches(1000.1, 1000.0, 0.1));
  EXPECT_FALSE(ClockMatches(1000, 1000, 0.1));
}

// Result checks through files.
class ResultFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = *ParseWindowFile(Valid(), "windows/r.json");
    root_ = pkg_.result_root;
    testing::WriteText(root_ / "sa-bench/r.json", ResultDoc(1000.0, 1020.0, 20.0).dump());
  }
  std::vector<std::string> Check() { return CheckResult(w_, root_); }
  Package pkg_;
  WindowFile w_;
  fs::path root_;
};

TEST_F(ResultFiles, BoundaryIdenticalResultPasses) { EXPECT_TRUE(Check().empty()); }

TEST_F(ResultFiles, MissingResultFile) {
  fs::remove(root_ / "sa-bench/r.json");
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_missing"});
}

TEST_F(ResultFiles, UnreadableResultJsonIsMissing) {
  testing::WriteText(root_ / "sa-bench/r.json", "{not json");
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_missing"});
}

TEST_F(ResultFiles, NonObjectResultIsMismatch) {
  testing::WriteText(root_ / "sa-bench/r.json", "[1, 2]");
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_mismatch"});
}

TEST_F(ResultFiles, TimingMismatchIsReported) {
  testing::WriteText(root_ / "sa-bench/r.json", ResultDoc(1000.0, 1020.5, 20.0).dump());
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_mismatch"});
}

TEST_F(ResultFiles, BoolResultTimingsAreMismatch) {
  Json r = ResultDoc(1000.0, 1020.0, 20.0);
  r["duration"] = true;
  testing::WriteText(root_ / "sa-bench/r.json", r.dump());
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_mismatch"});
}

// The upstream checks the result first and stops at its first failure: a window whose end differs
// from its result's is result_mismatch only, even when its own wall time disagrees with its
// duration too.
TEST_F(ResultFiles, ResultMismatchIsNotAlsoAClockMismatch) {
  w_.end = 1030.0;  // wall 30 s against a duration of 20 s: a clock mismatch on its own
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_result_mismatch"});
}

TEST_F(ResultFiles, ClockMismatchIsReportedWhenTheResultMatches) {
  testing::WriteText(root_ / "sa-bench/r.json", ResultDoc(1000.0, 1030.0, 20.0).dump());
  w_.end = 1030.0;
  EXPECT_EQ(Check(), std::vector<std::string>{"measurement_window_clock_mismatch"});
}

TEST_F(ResultFiles, UnsafeResultPathsAreInvalid) {
  for (const char* p : {"/etc/passwd", "../escape.json", "a/../../b.json", "", "~/r.json"}) {
    w_.result_path = p;
    EXPECT_FALSE(ResultPathValid(w_, root_)) << p;
    EXPECT_FALSE(ResultPathValid(w_, std::nullopt)) << p;
  }
  w_.result_path = 42;
  EXPECT_FALSE(ResultPathValid(w_, root_));
  w_.result_path = "sa-bench/r.json";
  EXPECT_TRUE(ResultPathValid(w_, root_));
}

TEST_F(ResultFiles, ResultPathSymlinkedOutsideTheRootIsInvalid) {
  testing::WriteText(pkg_.tmp.path() / "outside/r.json", ResultDoc(1000.0, 1020.0, 20.0).dump());
  fs::create_directories(root_ / "linked");
  fs::create_symlink(pkg_.tmp.path() / "outside/r.json", root_ / "linked/r.json");
  w_.result_path = "linked/r.json";
  EXPECT_FALSE(ResultPathValid(w_, root_));
}

TEST_F(ResultFiles, ResultStemMustEqualWindowStem) {
  testing::WriteText(root_ / "sa-bench/other.json", ResultDoc(1000.0, 1020.0, 20.0).dump());
  w_.result_path = "sa-bench/other.json";
  EXPECT_FALSE(ResultPathValid(w_, root_));
  EXPECT_FALSE(ResultPathValid(w_, std::nullopt));
}

// Directory scanning.
class WindowsDir : public ::testing::Test {
 protected:
  fs::path Dir() { return pkg_.power_dir / "windows"; }
  WindowsScan Scan() { return ScanWindowsDir(pkg_.power_dir, pkg_.result_root); }
  Package pkg_;
};

bool HasError(const WindowsScan& s, const std::string& path, std::string_view reason) {
  for (const auto& e : s.errors)
    if (e.path == path && std::find(e.reasons.begin(), e.reasons.end(), reason) != e.reasons.end())
      return true;
  return false;
}

TEST_F(WindowsDir, NonJsonFileIsRejected) {
  testing::WriteText(Dir() / "notes.txt", "hi");
  EXPECT_TRUE(HasError(Scan(), "windows/notes.txt", reason::kWindowArtifactPathInvalid));
}

TEST_F(WindowsDir, MalformedWindowIsAnArtifactError) {
  testing::WriteText(Dir() / "bad.json", "{\"schema_version\": 1");
  EXPECT_TRUE(HasError(Scan(), "windows/bad.json", reason::kWindowMalformed));
}

// As the upstream does: a window whose result path is invalid is not a window. It is an artifact
// error, and the expected window it would have filled is then missing too.
TEST_F(WindowsDir, InvalidResultPathIsAnArtifactErrorAndItsWindowIsMissing) {
  for (const char* p : {"sa-bench/other.json", "../escape/r.json", "/etc/r.json"}) {
    Json doc = Valid();
    doc["result_path"] = p;
    testing::WriteText(Dir() / "r.json", doc.dump());
    WindowsScan s = Scan();
    EXPECT_TRUE(HasError(s, "windows/r.json", reason::kWindowResultPathInvalid)) << p;
    EXPECT_TRUE(s.files.empty()) << p;
    Topology t;
    t.windows.push_back({"sa-bench", 4});
    std::vector<ArtifactError> errors = s.errors;
    auto evals = EvaluateWindows(t, s, pkg_.result_root, errors);
    ASSERT_EQ(evals.size(), 1u);
    EXPECT_EQ(evals[0].reasons, std::vector<std::string>{"measurement_window_missing"}) << p;
  }
}

// The result path is judged before the status invariants, as the upstream orders its checks.
TEST_F(WindowsDir, InvalidResultPathIsReportedBeforeBrokenInvariants) {
  Json doc = Valid();
  doc["result_path"] = "/etc/r.json";
  doc["reason"] = "a completed window has no reason";
  testing::WriteText(Dir() / "r.json", doc.dump());
  EXPECT_TRUE(HasError(Scan(), "windows/r.json", reason::kWindowResultPathInvalid));
}

TEST_F(WindowsDir, SymlinkedWindowIsRejected) {
  testing::WriteText(pkg_.tmp.path() / "w.json", Valid().dump());
  fs::create_symlink(pkg_.tmp.path() / "w.json", Dir() / "w.json");
  WindowsScan s = Scan();
  EXPECT_TRUE(HasError(s, "windows/w.json", reason::kWindowArtifactPathInvalid));
  EXPECT_TRUE(s.files.empty());
}

TEST_F(WindowsDir, SubdirectoryIsRejected) {
  fs::create_directories(Dir() / "sub.json");
  EXPECT_TRUE(HasError(Scan(), "windows/sub.json", reason::kWindowArtifactPathInvalid));
}

TEST_F(WindowsDir, SymlinkedWindowsDirIsRejected) {
  fs::remove_all(Dir());
  fs::create_directories(pkg_.tmp.path() / "elsewhere");
  testing::WriteText(pkg_.tmp.path() / "elsewhere/r.json", Valid().dump());
  fs::create_directory_symlink(pkg_.tmp.path() / "elsewhere", Dir());
  WindowsScan s = Scan();
  EXPECT_TRUE(HasError(s, "windows", reason::kWindowArtifactPathInvalid));
  EXPECT_TRUE(s.files.empty());
}

TEST_F(WindowsDir, UnreadableWindowsDirIsReported) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any directory";
  testing::WriteText(Dir() / "r.json", Valid().dump());
  fs::permissions(Dir(), fs::perms::none);
  WindowsScan s = Scan();
  fs::permissions(Dir(), fs::perms::owner_all);
  EXPECT_TRUE(HasError(s, "windows", reason::kWindowArtifactPathInvalid));
}

// Matching expected windows.
Topology Expect(std::vector<int64_t> conc) {
  Topology t;
  for (auto c : conc) t.windows.push_back({"sa-bench", c});
  return t;
}

WindowFile File(const std::string& name, int64_t conc, std::string status = "completed") {
  WindowFile f;
  f.rel_path = "windows/" + name + ".json";
  f.stem = name;
  f.key = {"sa-bench", conc};
  f.status = status;
  f.start = 1000;
  f.end = 1020;
  f.duration = 20;
  f.result_path = "sa-bench/" + name + ".json";
  return f;
}

TEST(WindowMatching, MissingUnexpectedDuplicate) {
  WindowsScan scan;
  scan.files = {File("a", 4), File("b", 8), File("c", 8), File("d", 8), File("e", 99)};
  std::vector<ArtifactError> errors;
  auto evals = EvaluateWindows(Expect({2, 4, 8}), scan, std::nullopt, errors);
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[0].reasons, std::vector<std::string>{"measurement_window_missing"});
  EXPECT_TRUE(evals[1].valid());
  EXPECT_TRUE(evals[1].coverage_span.has_value());
  EXPECT_EQ(evals[2].reasons, std::vector<std::string>{"measurement_window_duplicate"});
  int dup = 0, unexpected = 0;
  for (const auto& e : errors) {
    dup += e.reasons[0] == "measurement_window_duplicate";
    unexpected += e.reasons[0] == "measurement_window_unexpected";
  }
  EXPECT_EQ(dup, 3) << "three duplicates are each recorded once";
  EXPECT_EQ(unexpected, 1);
}

TEST(WindowMatching, RunningMeansIncomplete) {
  WindowsScan scan;
  scan.files = {File("a", 4, "running")};
  std::vector<ArtifactError> errors;
  auto evals = EvaluateWindows(Expect({4}), scan, std::nullopt, errors);
  EXPECT_EQ(evals[0].reasons, std::vector<std::string>{"measurement_window_incomplete"});
  EXPECT_FALSE(evals[0].coverage_span);
}

TEST(WindowMatching, ReversedWindowIsClockMismatch) {
  WindowsScan scan;
  scan.files = {File("a", 4)};
  scan.files[0].end = 999;
  std::vector<ArtifactError> errors;
  auto evals = EvaluateWindows(Expect({4}), scan, std::nullopt, errors);
  EXPECT_EQ(evals[0].reasons, std::vector<std::string>{"measurement_window_clock_mismatch"});
  EXPECT_FALSE(evals[0].coverage_span) << "coverage runs only after the window checks pass";
}

}  // namespace
}  // namespace gpulse::power
