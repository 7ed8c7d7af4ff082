// Unit tests of exporter launching (command splitting, launch plans, config rules, the supervisor)
// and of the clock-sync check (each tool's parser, and probes through fake tools on PATH).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "power/collector/child_process.h"
#include "power/collector/clock_sync.h"
#include "power/collector/collect_config.h"
#include "power/collector/exporter_launch.h"

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
  EXPECT_EQ(*SplitCommand("exp \\\n  --port 1 \"a\\\nb\" 'c\\\nd'"),
            (Words{"exp", "--port", "1", "ab", "c\\\nd"}))
      << "backslash-newline joins lines, except inside single quotes";
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
  - {hostname: a, gpus: [0], worker_role: prefill, worker_index: 0, worker_process: 0, het_group: 0}
  - {hostname: b, gpus: [0], worker_role: decode, worker_index: 0, worker_process: 0, het_group: 1}
  - {hostname: c, gpus: [0], worker_role: decode, worker_index: 1, worker_process: 0, het_group: 1}
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
workers: [{hostname: a, gpus: [0], worker_role: agg, worker_index: 0, worker_process: 0}]
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
  EXPECT_EQ(plan[0].argv, (Words{"srun", "--overlap", "--nodes=1", "--ntasks=1",
                                 "--ntasks-per-node=1", "--nodelist=a", "--het-group=0",
                                 "--kill-on-bad-exit=1", "dcgm-exporter", "--address", ":9401"}));
  EXPECT_EQ(plan[0].output, "/logs/telemetry_dcgm_exporter.g0.out");
  EXPECT_EQ(plan[1].hostnames, (Words{"b", "c"}));
  EXPECT_EQ(plan[1].argv[2], "--nodes=2");
  EXPECT_EQ(plan[1].argv[5], "--nodelist=b,c");
  EXPECT_EQ(plan[1].argv[6], "--het-group=1");
  c->exporter.srun_args = {"--container-image=/images/dcgm.sqsh", "--gpus-per-node=0"};
  auto with_args = PlanExporterLaunch(*c, "/logs")[0].argv;
  EXPECT_EQ(Words(with_args.begin() + 8, with_args.end()),
            (Words{"--container-image=/images/dcgm.sqsh", "--gpus-per-node=0", "dcgm-exporter",
                   "--address", ":9401"}));
  ::setenv("GPULSE_SRUN", "/opt/slurm/bin/srun", 1);
  EXPECT_EQ(PlanExporterLaunch(*c, "/logs")[0].argv[0], "/opt/slurm/bin/srun");
  ::unsetenv("GPULSE_SRUN");
}

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {  // a bound so a broken build cannot hang the suite
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(ExporterProcesses, LaunchFailureExitWhileWatchedAndStop) {
  auto dir = TempDir();
  ExporterProcesses procs;
  auto failures = procs.Launch({{"missing", {"m"}, {"/nonexistent/exporter"}, dir / "m.out"},
                                {"quits", {"q"}, {"sh", "-c", "echo bye; exit 3"}, dir / "q.out"},
                                {"stays", {"s"}, {"sleep", "60"}, dir / "s.out"},
                                {"nolog", {"n"}, {"true"}, dir / "no" / "such" / "dir.out"}});
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_NE(failures[0].find("exporter missing: cannot run \"/nonexistent/exporter\""),
            std::string::npos);
  EXPECT_NE(failures[1].find("exporter nolog: cannot open " + (dir / "no/such/dir.out").string()),
            std::string::npos)
      << "an unopenable log names the file, not the command: " << failures[1];
  EXPECT_NE(procs.Describe().find("launched exporter stays (pid "), std::string::npos);
  procs.Watch(std::chrono::milliseconds(10));
  ASSERT_TRUE(WaitFor([&] { return procs.AnyEnded(); }));
  auto exited = procs.StopWatching();
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_NE(exited[0].find("exporter quits"), std::string::npos);
  EXPECT_NE(exited[0].find("exit code 3 at unix "), std::string::npos);
  std::ifstream q(dir / "q.out");
  std::string line;
  std::getline(q, line);
  EXPECT_EQ(line, "bye") << "output goes to the log file";
  procs.StopAll(std::chrono::milliseconds(2000));
  EXPECT_TRUE(procs.StopWatching().empty())
      << "a stopped exporter is not an exit; each is reported once";
  fs::remove_all(dir);
}

// Running, not a zombie: a killed grandchild waits for whoever reaps orphans here, which may be
// slow or never (a container's PID 1).
bool Alive(const fs::path& pid_file) {
  std::ifstream in(pid_file);
  int pid = 0;
  if (!(in >> pid) || pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z' &&
         text[paren + 2] != 'X';
}

TEST(ExporterProcesses, StopAllReachesTheGroupAndEscalatesToSigkill) {
  auto dir = TempDir();
  auto pid = [&](const char* name) { return (dir / name).string(); };
  ExporterProcesses procs;
  // A child that forks a grandchild (the group must be signalled, not just the child), and one
  // that ignores SIGTERM (SIGKILL after the shared grace period).
  ASSERT_TRUE(procs
                  .Launch({{"tree",
                            {"t"},
                            {"sh", "-c", "sleep 60 & echo $! > " + pid("grandchild") + "; wait"},
                            dir / "t.out"},
                           {"stubborn",
                            {"s"},
                            {"sh", "-c",
                             "trap '' TERM; echo $$ > " + pid("stubborn") +
                                 "; while :; do sleep 0.05; done"},
                            dir / "s.out"}})
                  .empty());
  ASSERT_TRUE(WaitFor([&] { return Alive(pid("grandchild")) && Alive(pid("stubborn")); }));
  procs.StopAll(std::chrono::milliseconds(300));
  EXPECT_FALSE(Alive(pid("stubborn"))) << "SIGKILL after the grace period";
  EXPECT_TRUE(WaitFor([&] { return !Alive(pid("grandchild")); })) << "the whole group is stopped";
  EXPECT_TRUE(procs.StopWatching().empty());
  fs::remove_all(dir);
}

TEST(ClockSyncParsers, Timedatectl) {
  EXPECT_EQ(ParseTimedatectl(0, "yes\n").verdict, SyncVerdict::kSynced);
  EXPECT_EQ(ParseTimedatectl(0, "no\n").verdict, SyncVerdict::kNotSynced);
  auto down = ParseTimedatectl(1, "System has not been booted with systemd as init system\n");
  EXPECT_EQ(down.verdict, SyncVerdict::kNoAnswer);
  EXPECT_NE(down.detail.find("exit code 1: System has not been booted"), std::string::npos);
  EXPECT_EQ(ParseTimedatectl(0, "maybe").verdict, SyncVerdict::kNoAnswer);
  EXPECT_EQ(ParseTimedatectl(0, "srun: warning: can't honor --ntasks-per-node\nyes\n").verdict,
            SyncVerdict::kSynced)
      << "a launcher's own lines do not hide the answer";
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
  EXPECT_EQ(
      ParseNtpqPeers(0, "localhost: timed out, nothing received\n***Request timed out\n").verdict,
      SyncVerdict::kNoAnswer)
      << "an error line starting with '*' is not a system peer";
  auto pps = ParseNtpqPeers(
      0, "o127.127.22.0    .PPS.            0 l    3   16  377    0.000   0.001   0.002\n");
  EXPECT_EQ(pps.verdict, SyncVerdict::kSynced) << "'o': the PPS-disciplined system peer";
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
  Script(dir / "bin" / "ntpq", "echo '*10.1.1.1  .GPS.  1 u  1 64 377 0.1 0.0 0.0'; echo oops >&2");
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

TEST(ClockSyncProbe, SrunProbesEveryNodeOnceAndTheHeadWithoutSrun) {
  auto dir = TempDir();
  fs::create_directories(dir / "bin");
  Script(dir / "bin" / "timedatectl", "echo yes");
  // A stand-in srun: logs its arguments, drops its options, runs the command here.
  Script(dir / "bin" / "srun",
         "echo \"$*\" >> " + (dir / "srun.log").string() +
             "\nwhile [ $# -gt 0 ]; do case \"$1\" in --*) shift ;; *) break ;; "
             "esac; done\nexec \"$@\"");
  std::string old_path = std::getenv("PATH");
  ::setenv("PATH", ((dir / "bin").string() + ":" + old_path).c_str(), 1);
  ::setenv("GPULSE_SRUN", (dir / "bin" / "srun").c_str(), 1);
  std::string head = LocalHostname();
  std::string text = kTwoGroups;
  text.replace(text.find("LAUNCH"), 6, "srun");
  text.replace(text.find("COMMAND"), 7, "exp");
  text.replace(text.find("hostname: a,"), 12, "hostname: " + head + ",");
  text.replace(text.find("hostname: a,"), 12, "hostname: " + head + ",");
  auto c = ParseCollectConfig(text);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto results = CheckClockSync(*c, dir);
  ASSERT_EQ(results.size(), 3u) << "the head once (it is also an endpoint), then b and c";
  EXPECT_EQ(results[0].hostname, head);
  EXPECT_EQ(results[1].hostname, "b");
  EXPECT_EQ(results[2].hostname, "c");
  for (const auto& r : results) EXPECT_TRUE(r.verified) << r.hostname << ": " << r.detail;
  std::ifstream log(dir / "srun.log");
  std::string all((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(all.find("--nodelist=b --het-group=1 timedatectl"), std::string::npos) << all;
  EXPECT_NE(all.find("--nodelist=c --het-group=1 timedatectl"), std::string::npos) << all;
  EXPECT_EQ(all.find("--nodelist=" + head), std::string::npos) << "the head is probed directly";
  ::unsetenv("GPULSE_SRUN");
  ::setenv("PATH", old_path.c_str(), 1);
  fs::remove_all(dir);
}

TEST(RunChild, TimeoutAndAPendingStopSignalStopTheChild) {
  ChildOptions o;
  o.argv = {"sleep", "30"};
  o.stop_grace = std::chrono::milliseconds(500);
  auto slow = RunChild(o, std::chrono::milliseconds(200));
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->timed_out);
  EXPECT_TRUE(slow->reaped);
  EXPECT_EQ(slow->term_signal, SIGTERM);

  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  ::kill(::getpid(), SIGTERM);  // pending, blocked
  auto interrupted = RunChild(o, std::chrono::milliseconds(30'000));
  ASSERT_TRUE(interrupted.ok());
  EXPECT_EQ(interrupted->stop_signal, SIGTERM);
  EXPECT_FALSE(interrupted->timed_out);
  EXPECT_TRUE(interrupted->reaped);
  int sig = 0;
  EXPECT_EQ(sigwait(&term, &sig), 0) << "the signal is left pending for the caller";
  EXPECT_EQ(sig, SIGTERM);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace gpulse::power
