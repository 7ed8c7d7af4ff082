// Benchmarks of `gpulse record` (issue: record). Prints markdown tables for bench/RESULTS.md.
//
// 1. Sampler cost per tick: one tick = reading 8 simulated GPUs (8xH100, full timeline field set)
//    and the process tree of 50 processes (ProcessTreeSampler with descendants), as the recorder
//    does. CPU time per tick against the default 50 ms tick period; anchor run side by side: one
//    `ps` invocation listing the same 50 processes (what a shell-script monitor would do per tick).
//    Then the same with the whole recorder: Recorder::Record over the 50-process tree at the real
//    50 ms cadence with the journal on (process lists once a second, the journal's writer thread
//    and its fdatasync included), CPU time of the process per tick.
// 2. Derivation + run.json writing for a 1,000,000-sample timeline, against `cp` of the resulting
//    file in the same run (MB/s), with the journal on: the end of a run also flushes and removes
//    it. And the journal itself: streaming the same 1,000,000 samples in one-second batches.
// 3. Peak memory per sample: the growth of peak RSS while holding the 1,000,000-sample run and
//    deriving, writing run.json and rendering the HTML report.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string_view>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/clock.h"
#include "gpu/registry.h"
#include "report/derive.h"
#include "report/journal.h"
#include "report/render.h"
#include "report/run_json.h"
#include "sampling/process_tree.h"
#include "sampling/recorder.h"
#include "sampling/ticker.h"
#include "sys/child_process.h"
#include "sys/safe_dir.h"

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

// The recorder as `gpulse record` runs it, journal on, over a 50-process tree for ~10 s.
void RecorderCost() {
  gpu::BackendOptions o;
  o.simulate = "8xH100";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(o);
  if (!backend) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("gpulse-recorder-bench-{}", getpid());
  fs::create_directories(dir);
  auto out = sys::Dir::OpenRoot(dir, false);
  auto journal = report::JournalWriter::Create(*out, report::kJournalName);
  if (!journal) return;
  report::Run run;
  run.entities = BuildEntities((*backend)->info());
  run.devices = (*backend)->info().devices;
  auto child = sys::ChildProcess::Spawn({"sh", "-c", "for i in $(seq 49); do sleep 11 & done; sleep 10"});
  if (!child) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the tree form
  sampling::RecordOptions ro;
  ro.include_descendants = true;
  sampling::Recorder recorder(ro, backend->get(), nullptr);
  double c0 = CpuSeconds();
  recorder.Record(*child, run, journal->get());
  Status st = (*journal)->Finish(run);
  double cpu = CpuSeconds() - c0;
  // The same without the journal, and an empty loop on the same 50 ms clock: what waking up costs
  // on this machine (a VM: each wake-up is a paravirtual interrupt), the floor under any sampler.
  report::Run bare;
  bare.entities = run.entities;
  bare.devices = run.devices;
  auto child2 = sys::ChildProcess::Spawn({"sh", "-c", "for i in $(seq 49); do sleep 11 & done; sleep 10"});
  if (!child2) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  sampling::Recorder recorder2(ro, backend->get(), nullptr);
  double c1 = CpuSeconds();
  recorder2.Record(*child2, bare, nullptr);
  double cpu_bare = (CpuSeconds() - c1) / static_cast<double>(bare.resource_samples.size());
  double c2 = CpuSeconds();
  sampling::Ticker ticker(ro.period_ns, nullptr);
  for (int i = 0; i < 200; ++i) ticker.Next();
  double cpu_idle = (CpuSeconds() - c2) / 200;
  std::uintmax_t bytes = fs::file_size(dir / report::kJournalName);
  fs::remove_all(dir);
  std::size_t ticks = run.resource_samples.size();
  std::uint32_t procs = 0;
  for (const auto& r : run.resource_samples) procs = std::max(procs, r.process_count);
  double per_tick = cpu / static_cast<double>(ticks);
  fmt::print("### The whole recorder, journal on (8 simulated H100s + a {}-process tree, {} ticks at 50 ms)\n\n", procs, ticks);
  fmt::print("| measure | per tick | share of a 50 ms tick |\n|---|---:|---:|\n");
  fmt::print("| Recorder::Record + journal (CPU time of the process: sampling, process lists, journal thread) | {:.1f} us | {:.3f}% of one core |\n",
             per_tick * 1e6, per_tick / 0.05 * 100);
  fmt::print("| the same, journal off | {:.1f} us | {:.3f}% |\n", cpu_bare * 1e6, cpu_bare / 0.05 * 100);
  fmt::print("| anchor, same run: an empty loop on the same 50 ms ticker (the wake-up alone) | {:.1f} us | {:.3f}% |\n",
             cpu_idle * 1e6, cpu_idle / 0.05 * 100);
  fmt::print("| journal written | {:.0f} bytes per tick | {} |\n\n", static_cast<double>(bytes) / ticks, st.ok() ? "no write error" : st.error().message);
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
  auto out = sys::Dir::OpenRoot(dir, false);
  for (int round = 0; round < 3; ++round) {
    fs::remove(dir / "run.json");
    fs::remove(dir / "copy.json");
    fs::remove(dir / report::kJournalName);
    // The journal as a run leaves it: its header and the last second not yet flushed.
    auto journal = report::JournalWriter::Create(*out, report::kJournalName);
    report::Run tail;
    tail.info = run.info;
    (*journal)->Begin(tail);
    for (std::size_t i = 0; i < 160; ++i) tail.gpu_samples.push_back(run.gpu_samples[i]);
    (*journal)->Update(tail);
    double t0 = WallSeconds();
    Status js = (*journal)->Finish(tail);  // what `record` does when CMD exits
    rep = report::Derive(run);
    double t1 = WallSeconds();
    st = report::WriteRunJsonFile(run, rep, (dir / "run.json").string());
    (void)out->Remove(report::kJournalName);
    double t2 = WallSeconds();
    if (!js.ok()) st = js;
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
  // The journal of the same samples, streamed as the recorder does: one-second batches (160 samples
  // of 8 devices at 50 ms), each handed to the writer thread, written and fdatasynced.
  double journal_s = 0, journal_cp = 0, journal_mb = 0;
  {
    fs::remove(dir / report::kJournalName);
    auto journal = report::JournalWriter::Create(*out, report::kJournalName, 0);
    report::Run live;
    live.info = run.info;
    double t0 = WallSeconds();
    (*journal)->Begin(live);
    for (std::size_t i = 0; i < run.gpu_samples.size(); ++i) {
      live.gpu_samples.push_back(run.gpu_samples[i]);
      if (i % 8 == 0) live.resource_samples.push_back(run.resource_samples[i / 8]);
      if (live.gpu_samples.size() % 160 == 0) (*journal)->Update(live);
    }
    Status js = (*journal)->Finish(live);
    journal_s = WallSeconds() - t0;
    if (!js.ok()) fmt::print("journal failed: {}\n", js.error().message);
    journal_mb = fs::file_size(dir / report::kJournalName) / 1e6;
    journal_cp = 1e9;
    for (int round = 0; round < 3; ++round) {
      fs::remove(dir / "copy.json");
      journal_cp = std::min(journal_cp, TimeCommand(fmt::format("cp {} {}", (dir / report::kJournalName).string(),
                                                                (dir / "copy.json").string())));
    }
  }
  fs::remove_all(dir);
  fmt::print("### Derivation and run.json writing, {} samples (8 devices), journal on\n\n", kSamples);
  fmt::print("| measure | time | MB/s | ratio to cp |\n|---|---:|---:|---:|\n");
  fmt::print("| derive (aggregates, energy, job statistics) | {:.3f} s | | |\n", t_derive);
  fmt::print("| write run.json ({:.1f} MB) | {:.3f} s | | |\n", mb, t_write);
  fmt::print("| end of run: journal flush + derive + write run.json + journal removed (best of 3) | {:.3f} s | {:.0f} | {:.2f}x (vs dd: {:.2f}x) |\n", ours, mb / ours, cp / ours, dd / ours);
  fmt::print("| anchor, same run: `cp` of run.json (best of 3) | {:.3f} s | {:.0f} | 1.00x |\n", cp, mb / cp);
  fmt::print("| second anchor, same run: `dd bs=1M` of run.json (best of 3) | {:.3f} s | {:.0f} | {:.2f}x |\n\n", dd,
             mb / dd, cp / dd);
  fmt::print("| the journal of the same run, streamed in 1 s batches with fdatasync each ({:.1f} MB) | {:.3f} s | {:.0f} | {:.2f}x of `cp` of the journal ({:.3f} s) |\n\n",
             journal_mb, journal_s, journal_mb / journal_s, journal_cp / journal_s, journal_cp);
  fmt::print("### Memory per sample\n\n| measure | bytes per sample |\n|---|---:|\n");
  fmt::print("| holding the timeline (peak RSS growth / samples) | {:.0f} |\n", (rss_held - rss_before) * 1024.0 / kSamples);
  fmt::print("| peak while deriving, writing run.json and rendering HTML | {:.0f} |\n", (rss_peak - rss_before) * 1024.0 / kSamples);
  fmt::print("| `sizeof(GpuSample)` | {} |\n\n", sizeof(report::GpuSample));
  (void)html;
}

}  // namespace

// `record_bench recorder` runs the whole-recorder figure alone (for a profiler).
int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "recorder") {
    RecorderCost();
    return 0;
  }
  SamplerCost();
  RecorderCost();
  DeriveAndWrite();
  return 0;
}
