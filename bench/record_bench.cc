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
#include <malloc.h>
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

// RssAnon and RssFile of this process, KiB (/proc/self/status).
std::pair<long, long> StatusKiB() {
  std::pair<long, long> out{0, 0};
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return out;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::sscanf(line, "RssAnon: %ld", &out.first);
    std::sscanf(line, "RssFile: %ld", &out.second);
  }
  std::fclose(f);
  return out;
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

// One recording as `gpulse record` does it, over a fresh 51-process tree (a shell, 49 sleeping
// children and its own sleep) for `seconds`: the process's CPU time per tick. `journal_dir` empty:
// journal off. `b` null: no GPU.
struct RecorderFigure {
  double cpu_per_tick = 0;
  std::size_t ticks = 0;
  std::uint32_t processes = 0;
  double journal_bytes_per_tick = 0;
};

RecorderFigure RecordOnce(gpu::Backend* b, bool descendants, const std::filesystem::path& journal_dir, int seconds) {
  namespace fs = std::filesystem;
  RecorderFigure f;
  report::Run run;
  if (b != nullptr) {
    run.entities = BuildEntities(b->info());
    run.devices = b->info().devices;
  }
  std::unique_ptr<report::JournalWriter> journal;
  if (!journal_dir.empty()) {
    fs::remove(journal_dir / report::kJournalName);
    auto dir = sys::Dir::OpenRoot(journal_dir, true);
    auto j = report::JournalWriter::Create(*dir, report::kJournalName);
    if (!j) return f;
    journal = std::move(j).value();
  }
  auto child = sys::ChildProcess::Spawn(
      {"sh", "-c", fmt::format("for i in $(seq 49); do sleep {} & done; sleep {}", seconds + 1, seconds)});
  if (!child) return f;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the tree form
  sampling::RecordOptions ro;
  ro.include_descendants = descendants;
  sampling::Recorder recorder(ro, b, nullptr);
  double c0 = CpuSeconds();
  recorder.Record(*child, run, journal.get());
  if (journal) (void)journal->Finish(run);
  f.cpu_per_tick = (CpuSeconds() - c0) / static_cast<double>(run.resource_samples.size());
  f.ticks = run.resource_samples.size();
  for (const auto& r : run.resource_samples) f.processes = std::max(f.processes, r.process_count);
  if (journal) f.journal_bytes_per_tick = static_cast<double>(fs::file_size(journal_dir / report::kJournalName)) / f.ticks;
  return f;
}

// The whole recorder at the real 50 ms cadence, journal on and off (interleaved, best of 2, after a
// warm-up run), its two halves, and an empty loop on the same ticker: what waking up costs on this
// machine (a VM: each wake-up is a paravirtual interrupt), the floor under any sampler.
void RecorderCost() {
  gpu::BackendOptions o;
  o.simulate = "8xH100";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(o);
  if (!backend) return;
  gpu::Backend* b = backend->get();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("gpulse-recorder-bench-{}", getpid());
  (void)RecordOnce(b, true, dir, 3);  // warm-up: first-touch costs, not the steady state
  RecorderFigure on, off;
  on.cpu_per_tick = off.cpu_per_tick = 1e9;
  for (int round = 0; round < 2; ++round) {
    RecorderFigure x = RecordOnce(b, true, dir, 10);
    if (x.cpu_per_tick < on.cpu_per_tick) on = x;
    RecorderFigure y = RecordOnce(b, true, {}, 10);
    if (y.cpu_per_tick < off.cpu_per_tick) off = y;
  }
  RecorderFigure gpus = RecordOnce(b, false, {}, 10);
  RecorderFigure tree = RecordOnce(nullptr, true, {}, 10);
  double c2 = CpuSeconds();
  sampling::Ticker ticker(50'000'000, nullptr);
  for (int i = 0; i < 200; ++i) ticker.Next();
  double idle = (CpuSeconds() - c2) / 200;
  fs::remove_all(dir);
  auto row = [](const char* what, double per_tick) {
    fmt::print("| {} | {:.1f} us | {:.3f}% of one core |\n", what, per_tick * 1e6, per_tick / 0.05 * 100);
  };
  fmt::print("### The whole recorder at 50 ms (8 simulated H100s + a {}-process tree, {} ticks per run)\n\n",
             on.processes, on.ticks);
  fmt::print("| measure (CPU time of the process per tick, best of 2 interleaved) | per tick | share of a 50 ms tick |\n|---|---:|---:|\n");
  row("Recorder::Record, journal on (sampling, process lists, journal formatting and writer thread)", on.cpu_per_tick);
  row("the same, journal off", off.cpu_per_tick);
  row("of which the 8 GPUs (CMD alone, no descendants)", gpus.cpu_per_tick);
  row("of which the 51-process tree (no GPU)", tree.cpu_per_tick);
  row("anchor, same run: an empty loop on the same 50 ms ticker (the wake-up alone)", idle);
  fmt::print("| journal written | {:.0f} bytes per tick | |\n\n", on.journal_bytes_per_tick);
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
  long anon_before = StatusKiB().first;
  report::Run run = SyntheticRun(kSamples, 8);
  long rss_held = PeakRssKiB();
  // Peak memory of the end of a run before any journal is mapped: derive, write run.json (formatted),
  // render the HTML. The mapping below adds the journal's file pages to RSS (page cache, clean and
  // reclaimable), reported on their own.
  {
    report::Report r0 = report::Derive(run);
    std::FILE* null = std::fopen("/dev/null", "w");
    if (null != nullptr) {
      (void)report::WriteRunJson(run, r0, null);
      std::fclose(null);
    }
    (void)report::RenderHtml(run, r0);
  }
  long rss_peak = PeakRssKiB();

  // The journal of the run, streamed as the recorder does: one-second batches (160 samples of 8
  // devices at 50 ms), each handed to the writer thread, written and fdatasynced.
  auto out = sys::Dir::OpenRoot(dir, false);
  double journal_s = 0, journal_mb = 0;
  auto journal = report::JournalWriter::Create(*out, report::kJournalName, 0);
  {
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
  }
  malloc_trim(0);  // the streamed copy of the run is gone: give its pages back before measuring

  // Best of 3 for each, interleaved, with no dirty pages before each (else writeback throttles
  // whichever comes second). Two comparisons: the end of a run (map the journal, derive, write
  // run.json copying the journal's sample text) into the page cache against `cp`, which also ends
  // in the page cache; and the durable write `record` does (temp file, fsync, rename, directory
  // fsync: ADR 0011) against a durable copy (`cp`, then `sync` of the copy, which fsyncs it).
  double t_derive = 1e9, t_write = 1e9, ours = 1e9, cp = 1e9, durable = 1e9, cp_sync = 1e9, format_only = 1e9;
  std::string html;
  report::Report rep;
  Status st = Status::Ok();
  for (int round = 0; round < 3; ++round) {
    for (const char* f : {"run.json", "cached.json", "copy.json", "copy2.json"}) fs::remove(dir / f);
    ::sync();
    double t0 = WallSeconds();
    auto mapped = (*journal)->Map();
    if (!mapped) st = Error{ErrorCode::kIo, "the journal could not be mapped"};
    rep = report::Derive(run);
    double t1 = WallSeconds();
    std::FILE* f = std::fopen((dir / "cached.json").c_str(), "w");
    if (f == nullptr || !report::WriteRunJson(run, rep, f, mapped ? &mapped->timelines : nullptr).ok()) {
      st = Error{ErrorCode::kIo, "cached.json"};
    }
    if (f != nullptr) std::fclose(f);
    double t2 = WallSeconds();
    if (t2 - t0 < ours) {
      ours = t2 - t0;
      t_derive = t1 - t0;
      t_write = t2 - t1;
    }
    double tn = WallSeconds();
    if (std::FILE* null = std::fopen("/dev/null", "w")) {
      (void)report::WriteRunJson(run, rep, null);
      std::fclose(null);
    }
    format_only = std::min(format_only, WallSeconds() - tn);
    ::sync();
    double t3 = WallSeconds();
    auto mapped2 = (*journal)->Map();
    Status ws = report::WriteRunJsonFile(run, report::Derive(run), (dir / "run.json").string(),
                                         mapped2 ? &mapped2->timelines : nullptr);
    durable = std::min(durable, WallSeconds() - t3);
    if (!ws.ok()) st = ws;
    ::sync();
    cp = std::min(cp, TimeCommand(fmt::format("cp {} {}", (dir / "run.json").string(), (dir / "copy.json").string())));
    ::sync();
    cp_sync = std::min(cp_sync, TimeCommand(fmt::format("cp {0} {1} && sync {1}", (dir / "run.json").string(),
                                                        (dir / "copy2.json").string())));
  }
  if (st.ok() && fs::file_size(dir / "cached.json") != fs::file_size(dir / "run.json")) {
    st = Error{ErrorCode::kIo, "the copied and the formatted run.json differ"};
  }
  std::pair<long, long> mapped_kib{0, 0};  // RssAnon, RssFile while the journal is mapped
  if (auto m = (*journal)->Map()) {
    for (const auto& v : m->timelines.gpu) (void)*(volatile const char*)v.data();  // touch, as a write does
    mapped_kib = StatusKiB();
  }
  html = report::RenderHtml(run, rep);
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
    ::sync();
    dd = std::min(dd, TimeCommand(fmt::format("dd if={} of={} bs=1M status=none", (dir / "run.json").string(),
                                              (dir / "copy.json").string())));
  }
  fs::remove_all(dir);
  fmt::print("### Derivation and run.json writing, {} samples (8 devices), journal on\n\n", kSamples);
  fmt::print("| measure | time | MB/s | ratio to cp |\n|---|---:|---:|---:|\n");
  fmt::print("| map the journal + derive (aggregates, energy, job statistics) | {:.3f} s | | |\n", t_derive);
  fmt::print("| write run.json into the page cache, samples copied from the journal ({:.1f} MB) | {:.3f} s | | |\n", mb, t_write);
  fmt::print("| end of run: map + derive + write (best of 3) | {:.3f} s | {:.0f} | {:.2f}x (vs dd: {:.2f}x) |\n", ours, mb / ours, cp / ours, dd / ours);
  fmt::print("| anchor, same run: `cp` of run.json (best of 3) | {:.3f} s | {:.0f} | 1.00x |\n", cp, mb / cp);
  fmt::print("| durable, as `record` does it: map + derive + temp file, fsync, rename, dir fsync (best of 3) | {:.3f} s | {:.0f} | {:.2f}x of the durable anchor |\n",
             durable, mb / durable, cp_sync / durable);
  fmt::print("| durable anchor, same run: `cp` then `sync` of the copy (best of 3) | {:.3f} s | {:.0f} | |\n", cp_sync, mb / cp_sync);
  fmt::print("| second anchor, same run: `dd bs=1M` of run.json (best of 3) | {:.3f} s | {:.0f} | {:.2f}x |\n\n", dd,
             mb / dd, cp / dd);
  fmt::print("| for comparison: formatting the same run.json from the samples, to /dev/null | {:.3f} s | {:.0f} | |\n",
             format_only, mb / format_only);
  fmt::print("| the journal itself, streamed during the run in 1 s batches, fdatasync each ({:.1f} MB; a real run spreads it over {:.1f} h) | {:.3f} s | {:.0f} | |\n\n",
             journal_mb, kSamples / 8 * 0.05 / 3600, journal_s, journal_mb / journal_s);
  fmt::print("### Memory per sample\n\n| measure | bytes per sample |\n|---|---:|\n");
  fmt::print("| holding the timeline (peak RSS growth / samples) | {:.0f} |\n", (rss_held - rss_before) * 1024.0 / kSamples);
  fmt::print("| peak while deriving, writing run.json and rendering HTML | {:.0f} |\n", (rss_peak - rss_before) * 1024.0 / kSamples);
  fmt::print("| with the journal mapped at the end of the run: anonymous memory (RssAnon growth) | {:.0f} |\n",
             (mapped_kib.first - anon_before) * 1024.0 / kSamples);
  fmt::print("| with the journal mapped: its file pages (RssFile: page cache, clean, reclaimable) | {:.0f} |\n",
             mapped_kib.second * 1024.0 / kSamples);
  fmt::print("| `sizeof(GpuSample)` | {} |\n\n", sizeof(report::GpuSample));
  (void)html;
}

}  // namespace

// `record_bench recorder` and `record_bench write` run one part alone (for a profiler).
int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "recorder") {
    RecorderCost();
    return 0;
  }
  if (argc > 1 && std::string_view(argv[1]) == "write") {  // the run.json figures alone
    DeriveAndWrite();
    return 0;
  }
  SamplerCost();
  RecorderCost();
  DeriveAndWrite();
  return 0;
}
