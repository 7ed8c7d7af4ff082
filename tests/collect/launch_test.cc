// Unit tests of exporter launching (command splitting, launch plans, config rules, the supervisor)
// and of the clock-sync check (each tool's parser, and probes through fake tools on PATH).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "power/clock_sync.h"
#include "power/collect_config.h"
#include "power/exporter_launch.h"

namespace gpulse::power {
namespace {
namespace fs = std::filesystem;
using Words = std::vector<std::string>;

fs::path TempDir() {
  auto d =
      fs::temp_directory_path() / ("gpulse-launch-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(SplitCommand, WordsQuotesAndEscapesWithoutAShell) {
  EXPECT_EQ(*SplitCommand("dcgm-exporter --collect-interval=100 --address :{port}"),
            (Words{"dcgm-exporter", "--collect-interval=100", "--address", ":{port}"}));
  EXPECT_EQ(*SplitCommand("  a\t'b c'  \"d \\\"e\\\" \\$f\" g\\ h"),
            (Words{"a", "b c", "d \"e\" $f", "g h"}));
  EXPECT_EQ(*SplitCommand("x'y'\"z\""), (Words{"xyz"}));
  EXPECT_EQ(*SplitCommand("''"), (Words{""}));
  EXPECT_EQ(*SplitCommand("echo $HOME *"), (Words{"echo", "$HOME", "*"}));
  EXPECT_NE(SplitCommand("a 'b").error().message.find("unterminated ' quote"), std::string::npos);
  EXPECT_NE(SplitCommand("a \"b").error().message.find("unterminated \" quote"), std::string::npos);
  EXPECT_NE(SplitCommand("a \\").error().message.find("lone backslash"), std::string::npos);
  EXPECT_FALSE(SplitCommand("   ").ok());
}

TEST(FileSafe, KeepsHostnamesAndNeutralisesPaths) {
  EXPECT_EQ(FileSafe("gpu-node-01.cluster"), "gpu-node-01.cluster");
  EXPECT_EQ(FileSafe("../etc/x"), ".._etc_x");
  EXPECT_EQ(FileSafe(".."), "_");
  EXPECT_EQ(FileSafe(""), "_");
}

const char* kTwoGroups = R"(telemetry:
  enabled: true
  dcgm_exporter: {container_image: dcgm-exporter, port: 9401, launch: LAUNCH, command: COMMAND}
endpoints:
  - {hostname: a, address: 127.0.0.1}
  - {hostname: b, address: 127.0.0.1}
  - {hostname: c, address: 127.0.0.1}
workers:
  - {hostname: a, gpus: [0], worker_role: prefill, worker_index: 0, het_group: 0}
  - {hostname: b, gpus: [0], worker_role: decode, worker_index: 0, het_group: 1}
  - {hostname: c, gpus: [0], worker_role: decode, worker_index: 1, het_group: 1}
benchmark: {type: sa-bench, concurrencies: [4]}
)";

Result<CollectConfig> Config(const std::string& launch, const std::string& command) {
  std::string text = kTwoGroups;
  text.replace(text.find("LAUNCH"), 6, launch);
  text.replace(text.find("COMMAND"), 7, command);
  return ParseCollectConfig(text);
}

TEST(LaunchConfig, ModesAndTheirRules) {
  auto none = ParseCollectConfig(
      R"(telemetry: {enabled: true, dcgm_exporter: {container_image: x, port: 9401}}
endpoints: [{hostname: a}]
workers: [{hostname: a, gpus: [0], worker_role: agg, worker_index: 0}]
benchmark: {type: sa-bench, concurrencies: [1]})");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none->exporter.launch, LaunchMode::kNone);
  EXPECT_TRUE(none->clock_sync_check) << "on by default";
  EXPECT_TRUE(PlanExporterLaunch(*none, "/logs").empty());

  auto bad = Config("docker", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("launch must be one of none, local, srun, got \"docker\""),
            std::string::npos);
  auto quote = Config("local", "'x \"y'");
  ASSERT_FALSE(quote.ok());
  EXPECT_NE(quote.error().message.find("dcgm_exporter.command: unterminated \" quote"),
            std::string::npos)
      << quote.error().message;
  auto args = Config("local", "x, srun_args: [--overlap]");
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.error().message.find("srun_args needs launch: srun"), std::string::npos)
      << args.error().message;
  auto per_host = Config("srun", "\"exp --name {hostname}\"");
  ASSERT_FALSE(per_host.ok());
  EXPECT_NE(per_host.error().message.find("{hostname} only with launch: local"), std::string::npos);
  std::string text = kTwoGroups;
  text.replace(text.find("LAUNCH"), 6, "srun");
  text.replace(text.find("COMMAND"), 7, "exp");
  const std::string b = "{hostname: b, address: 127.0.0.1}";
  text.replace(text.find(b), b.size(), "{hostname: b, address: 127.0.0.1, port: 9500}");
  auto port = ParseCollectConfig(text);
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.error().message.find("endpoints[1].port is 9500 but telemetry.dcgm_exporter.port "
                                      "is 9401"),
            std::string::npos)
      << port.error().message;
}

TEST(LaunchPlan, LocalStartsOnePerEndpointWithItsPortAndHostname) {
  auto c = Config("local", "\"exp --address 127.0.0.1:{port} --scenario '{hostname}.yaml'\"");
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto plan = PlanExporterLaunch(*c, "/logs");
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[1].label, "b");
  EXPECT_EQ(plan[1].argv, (Words{"exp", "--address", "127.0.0.1:9401", "--scenario", "b.yaml"}));
  EXPECT_EQ(plan[1].output, "/logs/telemetry_dcgm_exporter.b.out");
}

TEST(LaunchPlan, SrunStartsOnePerHetGroupOneTaskPerNode) {
  ::unsetenv("GPULSE_SRUN");
  auto c = Config("srun", "\"dcgm-exporter --address :{port}\"");
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto plan = PlanExporterLaunch(*c, "/logs");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].argv,
            (Words{"srun", "--overlap", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1",
                   "--nodelist=a", "--het-group=0", "dcgm-exporter", "--address", ":9401"}));
  EXPECT_EQ(plan[0].output, "/logs/telemetry_dcgm_exporter.g0.out");
  EXPECT_EQ(plan[1].hostnames, (Words{"b", "c"}));
  EXPECT_EQ(plan[1].argv[2], "--nodes=2");
  EXPECT_EQ(plan[1].argv[5], "--nodelist=b,c");
  EXPECT_EQ(plan[1].argv[6], "--het-group=1");
  c->exporter.srun_args = {"--container-image=/images/dcgm.sqsh", "--gpus-per-node=0"};
  auto with_args = PlanExporterLaunch(*c, "/logs")[0].argv;
  EXPECT_EQ(Words(with_args.begin() + 7, with_args.end()),
            (Words{"--container-image=/images/dcgm.sqsh", "--gpus-per-node=0", "dcgm-exporter",
                   "--address", ":9401"}));
  ::setenv("GPULSE_SRUN", "/opt/slurm/bin/srun", 1);
  EXPECT_EQ(PlanExporterLaunch(*c, "/logs")[0].argv[0], "/opt/slurm/bin/srun");
  ::unsetenv("GPULSE_SRUN");
}

TEST(ExporterProcesses, LaunchFailureExitWhileWatchedAndStop) {
  auto dir = TempDir();
  ExporterProcesses procs;
  auto failures = procs.Launch({{"missing", {"m"}, {"/nonexistent/exporter"}, dir / "m.out"},
                                {"quits", {"q"}, {"sh", "-c", "echo bye; exit 3"}, dir / "q.out"},
                                {"stays", {"s"}, {"sleep", "60"}, dir / "s.out"}});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("exporter missing: cannot run \"/nonexistent/exporter\""),
            std::string::npos);
  procs.Watch(std::chrono::milliseconds(10));
  for (int i = 0; i < 500 && std::ifstream(dir / "q.out").peek() == EOF; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto exited = procs.StopWatching();
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_NE(exited[0].find("exporter quits"), std::string::npos);
  EXPECT_NE(exited[0].find("exit code 3"), std::string::npos);
  std::ifstream q(dir / "q.out");
  std::string line;
  std::getline(q, line);
  EXPECT_EQ(line, "bye") << "output goes to the log file";
  procs.StopAll(std::chrono::milliseconds(2000));
  EXPECT_TRUE(procs.StopWatching().empty())
      << "a stopped exporter is not an exit; each is reported once";
  fs::remove_all(dir);
}

TEST(ClockSyncParsers, Timedatectl) {
  EXPECT_EQ(ParseTimedatectl(0, "yes\n").verdict, SyncVerdict::kSynced);
  EXPECT_EQ(ParseTimedatectl(0, "no\n").verdict, SyncVerdict::kNotSynced);
  auto down = ParseTimedatectl(1, "System has not been booted with systemd as init system\n");
  EXPECT_EQ(down.verdict, SyncVerdict::kNoAnswer);
  EXPECT_NE(down.detail.find("exit code 1: System has not been booted"), std::string::npos);
  EXPECT_EQ(ParseTimedatectl(0, "maybe").verdict, SyncVerdict::kNoAnswer);
}

TEST(ClockSyncParsers, ChronycTracking) {
  const char* normal =
      "Reference ID    : C0A80101 (192.168.1.1)\nStratum         : 3\n"
      "System time     : 0.000012 seconds fast of NTP time\nLeap status     : Normal\n";
  EXPECT_EQ(ParseChronycTracking(0, normal).verdict, SyncVerdict::kSynced);
  EXPECT_EQ(ParseChronycTracking(0, normal).detail, "Leap status: Normal");
  EXPECT_EQ(ParseChronycTracking(0,
                                 "Reference ID    : 00000000 ()\nLeap status     : Not "
                                 "synchronised\n")
                .verdict,
            SyncVerdict::kNotSynced);
  EXPECT_EQ(ParseChronycTracking(1, "506 Cannot talk to daemon\n").verdict, SyncVerdict::kNoAnswer);
  EXPECT_EQ(ParseChronycTracking(0, "Stratum : 3\n").verdict, SyncVerdict::kNoAnswer);
}

TEST(ClockSyncParsers, NtpqPeers) {
  const char* header =
      "     remote           refid      st t when poll reach   delay   offset  jitter\n"
      "==============================================================================\n";
  auto synced = ParseNtpqPeers(
      0, std::string(header) +
             "*10.0.0.1        .GPS.            1 u   33   64  377    0.2  0.01  0.02\n"
             "+10.0.0.2        10.0.0.1         2 u   12   64  377    0.3  0.02  0.01\n");
  EXPECT_EQ(synced.verdict, SyncVerdict::kSynced);
  EXPECT_EQ(synced.detail, "system peer 10.0.0.1");
  EXPECT_EQ(ParseNtpqPeers(
                0, std::string(header) +
                       " 10.0.0.1        .INIT.          16 u    -   64    0    0.0  0.0  0.0\n")
                .verdict,
            SyncVerdict::kNotSynced);
  EXPECT_EQ(ParseNtpqPeers(0, header).verdict, SyncVerdict::kNoAnswer);
  EXPECT_EQ(ParseNtpqPeers(1, "ntpq: read: Connection refused\n").verdict, SyncVerdict::kNoAnswer);
}

void Script(const fs::path& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(path, fs::perms::owner_all);
}

// Probes with fake tools first on PATH: the first tool that proves sync settles it; every tool's
// output lands in clock_sync_<node>.out.
TEST(ClockSyncProbe, FallsThroughToTheFirstToolThatProvesSync) {
  auto dir = TempDir();
  fs::create_directories(dir / "bin");
  Script(dir / "bin" / "timedatectl", "echo no");
  Script(dir / "bin" / "chronyc", "echo '506 Cannot talk to daemon'; exit 1");
  Script(dir / "bin" / "ntpq", "echo '*10.1.1.1  .GPS.  1 u  1 64 377 0.1 0.0 0.0'");
  std::string old_path = std::getenv("PATH");
  ::setenv("PATH", ((dir / "bin").string() + ":" + old_path).c_str(), 1);
  auto ok = ProbeClockSync("node/1", {}, dir, std::chrono::milliseconds(5000));
  EXPECT_TRUE(ok.verified) << ok.detail;
  EXPECT_EQ(ok.detail, "ntpq: system peer 10.1.1.1");
  EXPECT_EQ(ok.output, dir / "clock_sync_node_1.out");
  std::ifstream in(ok.output);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("$ timedatectl show --property=NTPSynchronized --value\nno\n(exit code 0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("506 Cannot talk to daemon\n(exit code 1)"), std::string::npos) << text;

  Script(dir / "bin" / "ntpq", "exec sleep 30");
  auto slow = ProbeClockSync("n", {}, dir, std::chrono::milliseconds(300));
  EXPECT_FALSE(slow.verified);
  EXPECT_EQ(slow.detail,
            "timedatectl: NTPSynchronized=no; chronyc: exit code 1: 506 Cannot talk to daemon; "
            "ntpq: no answer within 300 ms");
  fs::remove(dir / "bin" / "ntpq");
  fs::remove(dir / "bin" / "chronyc");
  Script(dir / "bin" / "timedatectl", "echo yes");
  auto prefixed =
      ProbeClockSync("n", {"env", "GPULSE_PROBE=1"}, dir, std::chrono::milliseconds(5000));
  EXPECT_TRUE(prefixed.verified) << "the prefix (srun for a node) runs each tool";
  EXPECT_EQ(prefixed.detail, "timedatectl: NTPSynchronized=yes");
  ::setenv("PATH", old_path.c_str(), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpulse::power
