// Unit tests of the collector's pieces: the scrape parser's reasons, the config rules, the
// samples.csv writer, the window writer and the threads that write a cycle's requests.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "power/collector/artifact_writer.h"
#include "power/collector/collect_config.h"
#include "power/collector/collect_session.h"
#include "power/collector/diagnostics.h"
#include "power/collector/parallel_for.h"
#include "power/collector/scrape_parse.h"
#include "power/collector/window_writer.h"
#include "power/readers/contract.h"
#include "power/rules/windows.h"

namespace gpulse::power {
namespace {

std::string Line(const std::string& labels, const std::string& value) {
  return "DCGM_FI_DEV_POWER_USAGE{" + labels + "} " + value + "\n";
}

bool Has(const ScrapeParse& p, std::string_view r) {
  return std::find(p.reasons.begin(), p.reasons.end(), r) != p.reasons.end();
}

TEST(ScrapeParse, DcgmExporterFormatIgnoresOtherMetricsAndOrdersByIndex) {
  std::string body =
      "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-a\"} 1980\n" +
      Line("gpu=\"1\",UUID=\"GPU-b\",Hostname=\"lies\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"",
           "300.500000") +
      Line("UUID=\"GPU-a\",gpu=\"0\",modelName=\"H100 \\\"SXM\\\"\"", "100.000000");
  ScrapeParse p = ParsePowerScrape(body);
  ASSERT_TRUE(p.reasons.empty());
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].gpu_index, 0);
  EXPECT_EQ(p.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(p.gpus[1].power_w, 300.5);
}

TEST(ScrapeParse, EveryReason) {
  EXPECT_TRUE(Has(ParsePowerScrape("up 1\n"), reason::kPowerMetricMissing));
  auto dup =
      ParsePowerScrape(Line("gpu=\"0\",UUID=\"a\"", "1") + Line("gpu=\"0\",UUID=\"a\"", "2") +
                       Line("gpu=\"1\",UUID=\"b\"", "3"));
  EXPECT_TRUE(Has(dup, reason::kDuplicatePowerMetric));
  ASSERT_EQ(dup.gpus.size(), 1u);
  EXPECT_EQ(dup.gpus[0].gpu_index, 1);
  auto mig = ParsePowerScrape(Line("gpu=\"0\",UUID=\"a\",GPU_I_ID=\"1\"", "1"));
  EXPECT_TRUE(Has(mig, reason::kMigInstanceUnsupported));
  EXPECT_FALSE(Has(mig, reason::kPowerMetricMissing));
  EXPECT_TRUE(
      Has(ParsePowerScrape(Line("gpu=\"0\",UUID=\"a\"", "NaN")), reason::kInvalidPowerValue));
  EXPECT_TRUE(
      Has(ParsePowerScrape(Line("gpu=\"0\",UUID=\"a\"", "-1.0")), reason::kInvalidPowerValue));
  EXPECT_TRUE(Has(ParsePowerScrape(Line("UUID=\"a\"", "1")), reason::kGpuIndexMissing));
  EXPECT_TRUE(Has(ParsePowerScrape(Line("gpu=\"x\",UUID=\"a\"", "1")), reason::kGpuIndexMissing));
  EXPECT_TRUE(Has(ParsePowerScrape(Line("gpu=\"-1\",UUID=\"a\"", "1")), reason::kGpuIndexMissing));
  EXPECT_TRUE(Has(ParsePowerScrape(Line("gpu=\"0\",UUID=\"\"", "1")), reason::kGpuUuidMissing));
  auto garbage = ParsePowerScrape("{{{ not prometheus\n");
  EXPECT_EQ(garbage.reasons, std::vector<std::string>{std::string(reason::kEndpointParseError)});
  EXPECT_TRUE(garbage.gpus.empty());
}

const char* kConfig = R"(telemetry:
  enabled: true
  collect_interval_ms: 1000
  request_timeout_seconds: 2
  dcgm_exporter: {container_image: dcgm-exporter, port: 9401}
endpoints:
  - {hostname: n0, address: 127.0.0.1}
workers:
  - {hostname: n0, gpus: [0, 1], worker_role: prefill, worker_index: 0, worker_process: 0, het_group: 0}
benchmark: {type: sa-bench, concurrencies: [4, 8]}
)";

TEST(CollectConfig, ValidConfigAndDefaults) {
  auto c = ParseCollectConfig(kConfig);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->join_timeout_s, 12.0);
  EXPECT_EQ(c->endpoints[0].port, 9401);
  EXPECT_EQ(c->topology.devices.size(), 2u);
  EXPECT_EQ(c->topology.windows.size(), 2u);
  EXPECT_EQ(c->exporter.command, kDefaultExporterCommand);
}

// Found by fuzz_collect_config (tests/fuzz/regressions/collect_config/
// disabled-telemetry-without-exporter-command): an accepted config whose telemetry is disabled and
// has no dcgm_exporter section had an empty exporter command, which does not split into words.
TEST(CollectConfig, DisabledTelemetryWithoutTheExporterSectionKeepsTheDefaultCommand) {
  auto c = ParseCollectConfig(R"(telemetry:
  enabled: false
endpoints:
  - {hostname: n0, address: 127.0.0.1, port: 9500}
workers:
  - {hostname: n0, gpus: [0], worker_role: agg, worker_index: 0, worker_process: 0, het_group: 0}
benchmark: {type: sa-bench, concurrencies: [1]}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->exporter.command, kDefaultExporterCommand);
}

TEST(CollectConfig, ADuplicatedKeyIsRefusedNamingBothLines) {
  std::string text = kConfig;
  // required: false then required: true used to run best-effort (the first value won).
  text.insert(text.find("  dcgm_exporter"), "  required: false\n  required: true\n");
  auto c = ParseCollectConfig(text);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find(
                "config: line 6: duplicate key \"required\" in telemetry (first at line 5)"),
            std::string::npos)
      << c.error().message;
}

TEST(CollectConfig, JoinTimeoutMustExceedTwoCyclesStrictly) {
  std::string text = kConfig;
  text.insert(text.find("  dcgm_exporter"), "  collector_join_timeout_seconds: 10\n");
  auto c = ParseCollectConfig(text);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("greater than two full collector cycles"), std::string::npos);
}

TEST(CollectConfig, ConflictingRolesAndUnknownHostsAreRejected) {
  std::string text = kConfig;
  text.insert(text.find("benchmark:"),
              "  - {hostname: n0, gpus: [1], worker_role: decode, worker_index: 0, worker_process: "
              "0, het_group: 0}\n");
  auto c = ParseCollectConfig(text);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("conflicting_worker_roles"), std::string::npos);
  std::string other = kConfig;
  other.replace(other.find("{hostname: n0, gpus"), 14, "{hostname: n9,");
  auto d = ParseCollectConfig(other);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("no entry in endpoints"), std::string::npos);
}

std::filesystem::path TempDir() {
  auto d = std::filesystem::temp_directory_path() /
           ("gpulse-collect-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SamplesWriter, HeaderIsPinnedAndAFailedBatchLeavesNoPartialRow) {
  auto dir = TempDir();
  auto w = SamplesWriter::Create(dir / "samples.csv");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->Append({{1000.5, 0, "n0", 0, "GPU-a", 100.25}}).ok());
  EXPECT_EQ(Read(dir / "samples.csv"),
            "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
            "1,1000.5,0,n0,0,GPU-a,100.25\n");
  std::string before = Read(dir / "samples.csv");
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small{before.size() + 40, old.rlim_max};
  setrlimit(RLIMIT_FSIZE, &small);
  std::vector<SampleRecord> batch(4, SampleRecord{1001.0, 1, "n0", 0, "GPU-a", 100.0});
  Status s = w->Append(batch);
  setrlimit(RLIMIT_FSIZE, &old);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind("EFBIG", 0), 0u) << s.error().message;
  EXPECT_EQ(Read(dir / "samples.csv"), before);
  std::filesystem::remove_all(dir);
}

TEST(WindowWriter, WrittenWindowsParseAndRunningBecomesInterrupted) {
  auto dir = TempDir();
  WindowStamp w{"sa-bench",   4,         "results/c4.json", 1000.0, std::nullopt,
                std::nullopt, "running", std::nullopt};
  ASSERT_TRUE(WriteWindow(dir, w).ok());
  w.result_path = "results/c8.json";
  w.concurrency = 8;
  w.end_unix = 1010.0;
  w.duration_s = 10.0;
  w.status = "completed";
  ASSERT_TRUE(WriteWindow(dir, w).ok());
  auto converted = ConvertRunningWindows(dir);
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(*converted, std::vector<std::string>{"c4.json"});
  for (const char* name : {"c4.json", "c8.json"}) {
    auto doc = ReadJsonFile(dir / name);
    ASSERT_TRUE(doc.ok());
    auto parsed = ParseWindowFile(*doc, std::string("windows/") + name);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  }
  EXPECT_EQ(ReadJsonFile(dir / "c4.json")->at("status"), "interrupted");
  EXPECT_FALSE(RelativeResultPath(dir, "/etc/passwd").ok());
  std::filesystem::remove_all(dir);
}

// The writer thread blocks writing into a full pipe nobody reads yet, so it cannot drain the queue:
// pushes beyond the bound are dropped and counted, never block the caller, and the count lands in
// the closing diagnostic_summary once a reader appears. (How many records the writer took before it
// blocked depends on scheduling; at most the 4 queued plus the 4 in its blocked write are kept.)
TEST(DiagnosticsWriter, OverflowDropsRecordsAndCountsThem) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::fcntl(fds[1], F_SETPIPE_SZ, 4096);
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  size_t filler = 0;
  for (ssize_t n; (n = ::write(fds[1], "xxxxxxxxxxxxxxxx", 16)) > 0;)
    filler += static_cast<size_t>(n);
  ::fcntl(fds[1], F_SETFL, 0);
  DiagnosticsWriter writer(std::make_unique<sys::Fd>(fds[1]), /*max_pending=*/4);
  for (int i = 0; i < 10; ++i) writer.Push(Json{{"event", "scrape"}, {"scrape_seq", i}});
  uint64_t dropped = writer.dropped();
  EXPECT_GE(dropped, 2u);
  std::thread closer(
      [&] { writer.Close(std::chrono::steady_clock::now() + std::chrono::seconds(30)); });
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  closer.join();
  ::close(fds[0]);
  ASSERT_GE(text.size(), filler);
  EXPECT_EQ(text.substr(0, filler), std::string(filler, 'x'));
  std::vector<Json> records;
  std::istringstream lines(text.substr(filler));
  for (std::string line; std::getline(lines, line);) records.push_back(Json::parse(line));
  ASSERT_EQ(records.size(), 10 - dropped + 1) << text;
  for (size_t i = 0; i + 1 < records.size(); ++i) EXPECT_EQ(records[i].at("scrape_seq"), i);
  EXPECT_EQ(records.back(), (Json{{"event", "diagnostic_summary"}, {"dropped_records", dropped}}));
}

TEST(ParallelFor, EveryIndexOnceInOneContiguousPartPerThreadSmallRangesOnTheCaller) {
  ParallelFor pf(3);
  ASSERT_EQ(pf.threads(), 3u);
  const auto caller = std::this_thread::get_id();
  for (int round = 0; round < 3; ++round) {  // the helpers are reused
    for (size_t n : {0u, 1u, 63u, 64u, 95u, 96u, 1000u, 4096u}) {
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::thread::id> by(n);
      pf.RunParts(n, 32, [&](size_t, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          ++hits[i];
          by[i] = std::this_thread::get_id();
        }
      });
      std::set<std::thread::id> threads(by.begin(), by.end());
      size_t changes = 0;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << n;
        if (i > 0 && by[i] != by[i - 1]) ++changes;
      }
      size_t parts = std::min<size_t>(3, n / 32);
      EXPECT_EQ(threads.size(), std::max<size_t>(parts, n > 0 ? 1 : 0)) << n;
      EXPECT_EQ(changes + (n > 0 ? 1 : 0), threads.size()) << "one contiguous part per thread";
      if (n > 0) {
        EXPECT_EQ(by[0], caller) << "the first part is the caller's";
      }
      if (n < 64) {
        EXPECT_EQ(threads.count(caller), threads.size()) << "a small range stays home";
      }
    }
  }
  ParallelFor one(1);
  EXPECT_EQ(one.threads(), 1u);
  std::set<std::thread::id> used;
  one.RunParts(4096, 1, [&](size_t, size_t, size_t) { used.insert(std::this_thread::get_id()); });
  EXPECT_EQ(used, std::set<std::thread::id>{caller});
}

TEST(ParallelFor, RunPartsHandsEachThreadOneWholePartWithItsIndex) {
  ParallelFor pf(3);
  const auto caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<std::tuple<size_t, size_t, size_t, std::thread::id>> got;
  pf.RunParts(300, 32, [&](size_t part, size_t begin, size_t end) {
    std::lock_guard lock(mu);
    got.emplace_back(part, begin, end, std::this_thread::get_id());
  });
  ASSERT_EQ(got.size(), 3u);
  std::sort(got.begin(), got.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::set<std::thread::id> threads;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(std::get<0>(got[k]), k);
    EXPECT_EQ(std::get<1>(got[k]), k == 0 ? 0 : std::get<2>(got[k - 1])) << "contiguous";
    threads.insert(std::get<3>(got[k]));
  }
  EXPECT_EQ(std::get<2>(got[2]), 300u);
  EXPECT_EQ(threads.size(), 3u) << "one thread per part";
  EXPECT_EQ(std::get<3>(got[0]), caller) << "part 0 is the caller's";
  size_t calls = 0;
  pf.RunParts(0, 32, [&](size_t, size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 0u) << "nothing to do: no part";
  pf.RunParts(40, 32, [&](size_t part, size_t begin, size_t end) {
    ++calls;
    EXPECT_EQ(part, 0u);
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 40u);
  });
  EXPECT_EQ(calls, 1u) << "a small range is one part, on the caller";
}

TEST(ParallelFor, RunChunksCoversEveryIndexOnceInChunksTakenByFreeThreads) {
  ParallelFor pf(3);
  const auto caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<std::tuple<size_t, size_t, size_t, std::thread::id>> got;
  std::vector<int> hits(1000, 0);
  // The helpers hold their first chunk until the caller has taken one, so that the caller takes
  // one however the threads are scheduled (on a loaded machine the helpers could take every chunk
  // before the caller reached the loop); each helper holds at most one, so chunks are left.
  std::condition_variable caller_took;
  bool caller_started = false;
  pf.RunChunks(1000, 16, 32, [&](size_t worker, size_t begin, size_t end) {
    std::unique_lock lock(mu);
    if (worker == 0) {
      caller_started = true;
      caller_took.notify_all();
    } else {
      caller_took.wait(lock, [&] { return caller_started; });
    }
    got.emplace_back(worker, begin, end, std::this_thread::get_id());
    for (size_t i = begin; i < end; ++i) ++hits[i];
  });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "index " << i;
  std::map<size_t, std::thread::id> worker_thread;
  for (const auto& [worker, begin, end, thread] : got) {
    EXPECT_EQ(begin % 16, 0u) << "chunks start on the grid";
    EXPECT_EQ(end - begin, begin + 16 <= 1000 ? 16u : 1000 - begin);
    EXPECT_LT(worker, 3u);
    auto [it, fresh] = worker_thread.emplace(worker, thread);
    EXPECT_EQ(it->second, thread) << "a worker index is one thread";
  }
  ASSERT_TRUE(worker_thread.count(0));
  EXPECT_EQ(worker_thread[0], caller) << "worker 0 is the caller";
  std::set<size_t> small_workers;
  pf.RunChunks(40, 16, 32, [&](size_t worker, size_t, size_t) { small_workers.insert(worker); });
  EXPECT_EQ(small_workers, std::set<size_t>{0}) << "a small range stays on the caller";
  size_t calls = 0;
  pf.RunChunks(0, 16, 32, [&](size_t, size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 0u);
}

TEST(CollectFaults, ParsesKnownFaultsAndRejectsOthers) {
  auto f = ParseCollectFaults("stall_loop_at_stop=2.5,unreapable_child");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->stall_loop_at_stop_s, 2.5);
  EXPECT_TRUE(f->unreapable_child);
  EXPECT_FALSE(ParseCollectFaults("stall_loop_at_stop=-1").ok());
  EXPECT_FALSE(ParseCollectFaults("stall_loop_at_stop=").ok());
  auto bad = ParseCollectFaults("disk_full");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown fault \"disk_full\""), std::string::npos);
}

}  // namespace
}  // namespace gpulse::power
