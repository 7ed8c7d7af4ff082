// Benchmarks of `gpulse record` (issue: record). Prints markdown tables for bench/RESULTS.md.
//
// 1. Sampler cost per tick: one tick = reading 8 simulated GPUs (8xH100, full timeline field set)
//    and the process tree of 50 processes (ProcessTreeSampler with descendants), as the recorder
//    does. CPU time per tick against the default 50 ms tick period; anchor run side by side: one
//    `ps` invocation listing the same 50 processes (what a shell-script monitor would do per tick).
// 2. Derivation + run.json writing for a 1,000,000-sample timeline, against `cp` of the resulting
//    file in the same run (MB/s).
// 3. Peak memory per sample: the growth of peak RSS while holding the 1,000,000-sample run and
//    deriving, writing run.json and rendering the HTML report.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/clock.h"
#include "gpu/registry.h"
#include "report/derive.h"
#include "report/render.h"
#include "report/run_json.h"
#include "sampling/process_tree.h"
#include "sampling/recorder.h"
#include "sys/child_process.h"

namespace {

using namespace gpulse;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double WallSeconds() { return MonotonicNowNs() / 1e9; }

long PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Runs a shell command, returns its wall time in seconds.
double TimeCommand(const std::string& cmd) {
  double t0 = WallSeconds();
  int rc = std::system(cmd.c_str());
  (void)rc;
  return WallSeconds() - t0;
}

void SamplerCost() {
  gpu::BackendOptions o;
  o.simulate = "8xH100";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(o);
  if (!backend) {
    fmt::print("sampler: cannot open the simulator: {}\n", backend.error().message);
    return;
  }
  // A tree of 50 processes: one shell and 49 sleeping children.
  auto tree_root = sys::ChildProcess::Spawn({"sh", "-c", "for i in $(seq 49); do sleep 60 & done; wait"});
  if (!tree_root) return;
  sampling::ProcessTreeSampler tree("/proc", tree_root->pid(), true);
  for (int i = 0; i < 500; ++i) {  // let the tree form
    auto t = tree.Read();
    if (t && t->processes == 50) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<FieldIndex> fields = sampling::RequiredTimelineFields();
  auto extra = sampling::OptionalTimelineFields();
  fields.insert(fields.end(), extra.begin(), extra.end());
  Sample s;
  std::uint32_t procs = 0;
  const int kTicks = 2000;
  double c0 = CpuSeconds(), w0 = WallSeconds();
  for (int k = 0; k < kTicks; ++k) {
    auto t = tree.Read();
    if (t) procs = t->processes;
    for (std::size_t pos = 0; pos < (*backend)->info().devices.size(); ++pos) {
      (*backend)->Read(pos, fields, s);
      auto g = sampling::ToGpuSample(s, static_cast<std::uint32_t>(pos), k);
      (void)g;
    }
  }
  double cpu_per_tick = (CpuSeconds() - c0) / kTicks, wall_per_tick = (WallSeconds() - w0) / kTicks;
  // Anchor: one ps listing the same tree per tick.
  std::string ps = fmt::format("ps -o pid=,rss=,time= --ppid {} -p {} > /dev/null", tree_root->pid(), tree_root->pid());
  const int kPs = 50;
  double ps_wall = 0;
  for (int i = 0; i < kPs; ++i) ps_wall += TimeCommand(ps);
  ps_wall /= kPs;
  std::system(fmt::format("pkill -P {} sleep", tree_root->pid()).c_str());  // only this tree's sleeps
  tree_root->Wait();

  fmt::print("### Sampler cost per tick (8 simulated H100s + a {}-process tree)\n\n", procs);
  fmt::print("| measure | per tick | share of a 50 ms tick |\n|---|---:|---:|\n");
  fmt::print("| gpulse sampler, CPU time (simulator included) | {:.1f} us | {:.3f}% of one core |\n",
             cpu_per_tick * 1e6, cpu_per_tick / 0.05 * 100);
  fmt::print("| gpulse sampler, wall time | {:.1f} us | |\n", wall_per_tick * 1e6);
  fmt::print("| anchor, same run: one `ps` listing the tree | {:.0f} us wall | {:.1f}x gpulse's CPU time |\n\n",
             ps_wall * 1e6, ps_wall / cpu_per_tick);
}

report::Run SyntheticRun(std::size_t samples, int devices) {
  report::Run run;
  run.info.command = {"bench"};
  run.info.sample_period_ns = 50'000'000;
  run.info.host = "bench";
  run.info.gpulse_version = "bench";
  for (int d = 0; d < devices; ++d) {
    DeviceInfo info;
    info.index = d;
    info.name = "NVIDIA H100 80GB HBM3";
    info.uuid = fmt::format("GPU-{:08x}-0000-0000-0000-000000000000", d);
    info.pci_bus_id = fmt::format("00000000:{:02X}:00.0", d + 0x18);
    run.devices.push_back(info);
  }
  std::uint64_t energy = 1'000'000'000;
  for (std::size_t i = 0; i < samples; ++i) {
    report::GpuSample g;
    g.elapsed_ns = static_cast<std::int64_t>(i / devices) * 50'000'000;
    g.device_index = static_cast<std::uint32_t>(i % devices);
    g.memory_used_bytes = 40'000'000'000ULL + (i % 977) * 4096;
    g.memory_total_bytes = 85'520'809'984ULL;
    g.utilization_percent = static_cast<std::uint32_t>(80 + i % 20);
    g.temperature_celsius = 60 + i % 7;
    g.power_draw_milliwatts = 600'000 + static_cast<std::uint32_t>(i % 50'000);
    g.memory_utilization_percent = 40 + i % 30;
    g.sm_clock_mhz = 1980;
    g.memory_clock_mhz = 2619;
    energy += 30'000;
    g.energy_millijoules = energy;
    g.present = report::GpuSample::kMemoryUsed | report::GpuSample::kMemoryTotal |
                report::GpuSample::kUtilization | report::GpuSample::kTemperature |
                report::GpuSample::kPower | report::GpuSample::kMemoryUtilization | report::GpuSample::kSmClock |
                report::GpuSample::kMemoryClock | report::GpuSample::kEnergy |
                report::GpuSample::kClocksEventReasons | report::GpuSample::kPcieReplay |
                report::GpuSample::kEccSbeVolatile | report::GpuSample::kEccDbeVolatile;
    run.gpu_samples.push_back(g);
    if (i % devices == 0) {
      run.resource_samples.push_back({g.elapsed_ns, 2'000'000'000ULL, i / 10, i / 40, 64, 12});
    }
  }
  return run;
}

void DeriveAndWrite() {
  const std::size_t kSamples = 1'000'000;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("gpulse-record-bench-{}", getpid());
  fs::create_directories(dir);
  long rss_before = PeakRssKiB();
  report::Run run = SyntheticRun(kSamples, 8);
  long rss_held = PeakRssKiB();

  // Best of 3 for both, interleaved, with the page cache in the same state for each: this machine's
  // buffered-write bandwidth varies several-fold from one moment to the next.
  double t_derive = 1e9, t_write = 1e9, ours = 1e9, cp = 1e9;
  std::string html;
  report::Report rep;
  Status st = Status::Ok();
  for (int round = 0; round < 3; ++round) {
    fs::remove(dir / "run.json");
    fs::remove(dir / "copy.json");
    double t0 = WallSeconds();
    rep = report::Derive(run);
    double t1 = WallSeconds();
    st = report::WriteRunJsonFile(run, rep, (dir / "run.json").string());
    double t2 = WallSeconds();
    if (t2 - t0 < ours) {
      ours = t2 - t0;
      t_derive = t1 - t0;
      t_write = t2 - t1;
    }
    cp = std::min(cp, TimeCommand(fmt::format("cp {} {}", (dir / "run.json").string(), (dir / "copy.json").string())));
  }
  html = report::RenderHtml(run, rep);
  long rss_peak = PeakRssKiB();
  if (!st.ok()) {
    fmt::print("write failed: {}\n", st.error().message);
    return;
  }
  double mb = fs::file_size(dir / "run.json") / 1e6;
  // A second anchor: the same bytes written through write(2) by dd in 1 MiB blocks (cp uses
  // copy_file_range, an in-kernel copy that never passes the data through a user buffer).
  double dd = 1e9;
  for (int round = 0; round < 3; ++round) {
    fs::remove(dir / "copy.json");
    dd = std::min(dd, TimeCommand(fmt::format("dd if={} of={} bs=1M status=none", (dir / "run.json").string(),
                                              (dir / "copy.json").string())));
  }
  fs::remove_all(dir);
  fmt::print("### Derivation and run.json writing, {} samples (8 devices)\n\n", kSamples);
  fmt::print("| measure | time | MB/s | ratio to cp |\n|---|---:|---:|---:|\n");
  fmt::print("| derive (aggregates, energy, job statistics) | {:.3f} s | | |\n", t_derive);
  fmt::print("| write run.json ({:.1f} MB) | {:.3f} s | | |\n", mb, t_write);
  fmt::print("| derive + write (best of 3) | {:.3f} s | {:.0f} | {:.2f}x (vs dd: {:.2f}x) |\n", ours, mb / ours, cp / ours, dd / ours);
  fmt::print("| anchor, same run: `cp` of run.json (best of 3) | {:.3f} s | {:.0f} | 1.00x |\n", cp, mb / cp);
  fmt::print("| second anchor, same run: `dd bs=1M` of run.json (best of 3) | {:.3f} s | {:.0f} | {:.2f}x |\n\n", dd,
             mb / dd, cp / dd);
  fmt::print("### Memory per sample\n\n| measure | bytes per sample |\n|---|---:|\n");
  fmt::print("| holding the timeline (peak RSS growth / samples) | {:.0f} |\n", (rss_held - rss_before) * 1024.0 / kSamples);
  fmt::print("| peak while deriving, writing run.json and rendering HTML | {:.0f} |\n", (rss_peak - rss_before) * 1024.0 / kSamples);
  fmt::print("| `sizeof(GpuSample)` | {} |\n\n", sizeof(report::GpuSample));
  (void)html;
}

}  // namespace

int main() {
  SamplerCost();
  DeriveAndWrite();
  return 0;
}
