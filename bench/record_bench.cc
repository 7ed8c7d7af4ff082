// Benchmarks of `gpulse record` (issues 12 and 40). Prints one JSON object: every round's figures;
// bench/record_report.py (bench/run.sh record) prints the table of bench/RESULTS.md from it.
//
// 1. sampler: one tick = reading 8 simulated GPUs (8xH100, full timeline field set) and the process
//    tree of 50 processes (ProcessTreeSampler with descendants), as the recorder does: CPU time per
//    tick; anchor in the same round: one `ps` invocation listing the same 50 processes (what a
//    shell-script monitor would do per tick), wall time.
// 2. recorder: the whole recorder, Recorder::Record over a 51-process tree at the real 50 ms cadence
//    with the journal on (process lists once a second, the journal's writer thread and its fdatasync
//    included) and off, CPU time of the process per tick, and an empty loop on the same ticker (the
//    wake-up alone); the journal's bytes per tick.
// 3. write: derivation + run.json writing for a 1,000,000-sample timeline with the journal on (the
//    end of a run), against `cp` and `dd` of the resulting file in the same round; the durable write
//    against `cp` + `sync`; the journal itself streamed in one-second batches; peak memory per
//    sample: the growth of peak RSS while holding the run and deriving, writing run.json and
//    rendering the HTML report (one figure: peak RSS only grows within a process).
// Each part runs --rounds rounds (default 3); the report gives medians and the min–max.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "record_bench: %s\n", why.c_str());
  std::exit(1);
}

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

// One round: kTicks ticks of the sampler, then kPs `ps` calls on the same tree. JSON of the rounds.
std::string SamplerCost(int rounds) {
  gpu::BackendOptions o;
  o.simulate = "8xH100";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(o);
  if (!backend) Fail("sampler: cannot open the simulator: " + backend.error().message);
  // A tree of 50 processes: one shell and 49 sleeping children.
  auto tree_root = sys::ChildProcess::Spawn({"sh", "-c", "for i in $(seq 49); do sleep 600 & done; wait"});
  if (!tree_root) Fail("sampler: cannot start the process tree");
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
  const int kTicks = 1000, kPs = 30;
  // Anchor: one ps listing the same tree per tick.
  std::string ps = fmt::format("ps -o pid=,rss=,time= --ppid {} -p {} > /dev/null", tree_root->pid(), tree_root->pid());
  std::vector<std::string> out;
  for (int round = 0; round < rounds; ++round) {
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
    double ps_wall = 0;
    for (int i = 0; i < kPs; ++i) ps_wall += TimeCommand(ps);
    out.push_back(fmt::format(R"({{"cpu_per_tick_s": {:.9g}, "wall_per_tick_s": {:.9g}, "ps_wall_s": {:.9g}}})",
                              cpu_per_tick, wall_per_tick, ps_wall / kPs));
  }
  std::system(fmt::format("pkill -P {} sleep", tree_root->pid()).c_str());  // only this tree's sleeps
  tree_root->Wait();
  return fmt::format(R"({{"processes": {}, "devices": {}, "ticks_per_round": {}, "ps_per_round": {}, "rounds": [{}]}})",
                     procs, (*backend)->info().devices.size(), kTicks, kPs, fmt::join(out, ", "));
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

// The whole recorder at the real 50 ms cadence, journal on and off, and an empty loop on the same
// ticker: what waking up costs on this machine (a VM: each wake-up is a paravirtual interrupt), the
// floor under any sampler. After a warm-up run (first-touch costs, not the steady state), `rounds`
// rounds of the three in turn, each run `seconds` long (the empty loop: 100 ticks). JSON of the rounds.
std::string RecorderCost(int rounds, int seconds) {
  gpu::BackendOptions o;
  o.simulate = "8xH100";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(o);
  if (!backend) Fail("recorder: cannot open the simulator: " + backend.error().message);
  gpu::Backend* b = backend->get();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("gpulse-recorder-bench-{}", getpid());
  (void)RecordOnce(b, true, dir, 3);
  auto figure = [](const RecorderFigure& f) {
    return fmt::format(R"({{"cpu_per_tick_s": {:.9g}, "ticks": {}, "processes": {}, "journal_bytes_per_tick": {:.9g}}})",
                       f.cpu_per_tick, f.ticks, f.processes, f.journal_bytes_per_tick);
  };
  std::vector<std::string> out;
  for (int round = 0; round < rounds; ++round) {
    RecorderFigure on = RecordOnce(b, true, dir, seconds);
    RecorderFigure off = RecordOnce(b, true, {}, seconds);
    if (on.ticks == 0 || off.ticks == 0) Fail("recorder: a recording took no tick");
    const int kIdle = 100;
    double c2 = CpuSeconds();
    sampling::Ticker ticker(50'000'000, nullptr);
    for (int i = 0; i < kIdle; ++i) ticker.Next();
    double idle = (CpuSeconds() - c2) / kIdle;
    out.push_back(fmt::format(R"({{"journal_on": {}, "journal_off": {}, "idle_cpu_per_tick_s": {:.9g}}})", figure(on),
                              figure(off), idle));
  }
  fs::remove_all(dir);
  return fmt::format(R"({{"period_s": 0.05, "seconds": {}, "devices": {}, "rounds": [{}]}})", seconds,
                     b->info().devices.size(), fmt::join(out, ", "));
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

std::string DeriveAndWrite(int rounds) {
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
  if (!out) Fail("write: cannot open " + dir.string());
  double journal_s = 0, journal_mb = 0;
  auto journal = report::JournalWriter::Create(*out, report::kJournalName, 0);
  if (!journal) Fail("write: cannot create the journal");
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
    if (!js.ok()) Fail("journal failed: " + js.error().message);
    journal_mb = fs::file_size(dir / report::kJournalName) / 1e6;
  }
  malloc_trim(0);  // the streamed copy of the run is gone: give its pages back before measuring

  // `rounds` rounds, each command once per round, in turn, with no dirty pages before each (else
  // writeback throttles whichever comes second). Two comparisons: the end of a run (map the journal,
  // derive, write run.json copying the journal's sample text) into the page cache against `cp`,
  // which also ends in the page cache (and `dd bs=1M`: cp uses copy_file_range, an in-kernel copy
  // that never passes the data through a user buffer; dd writes through write(2)); and the durable
  // write `record` does (temp file, fsync, rename, directory fsync: ADR 0011) against a durable copy
  // (`cp`, then `sync` of the copy, which fsyncs it).
  std::string html;
  report::Report rep;
  Status st = Status::Ok();
  std::vector<std::string> rows;
  for (int round = 0; round < rounds; ++round) {
    for (const char* f : {"run.json", "cached.json", "copy.json", "copy2.json", "copy3.json"}) fs::remove(dir / f);
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
    double tn = WallSeconds();
    if (std::FILE* null = std::fopen("/dev/null", "w")) {
      (void)report::WriteRunJson(run, rep, null);
      std::fclose(null);
    }
    double format_only = WallSeconds() - tn;
    ::sync();
    double t3 = WallSeconds();
    auto mapped2 = (*journal)->Map();
    Status ws = report::WriteRunJsonFile(run, report::Derive(run), (dir / "run.json").string(),
                                         mapped2 ? &mapped2->timelines : nullptr);
    double durable = WallSeconds() - t3;
    if (!ws.ok()) st = ws;
    ::sync();
    double cp = TimeCommand(fmt::format("cp {} {}", (dir / "run.json").string(), (dir / "copy.json").string()));
    ::sync();
    double cp_sync = TimeCommand(fmt::format("cp {0} {1} && sync {1}", (dir / "run.json").string(),
                                             (dir / "copy2.json").string()));
    ::sync();
    double dd = TimeCommand(fmt::format("dd if={} of={} bs=1M status=none", (dir / "run.json").string(),
                                        (dir / "copy3.json").string()));
    rows.push_back(fmt::format(
        R"({{"derive_s": {:.9g}, "write_s": {:.9g}, "end_s": {:.9g}, "format_only_s": {:.9g}, "durable_s": {:.9g}, )"
        R"("cp_s": {:.9g}, "cp_sync_s": {:.9g}, "dd_s": {:.9g}}})",
        t1 - t0, t2 - t1, t2 - t0, format_only, durable, cp, cp_sync, dd));
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
  if (!st.ok()) Fail("write failed: " + st.error().message);
  auto run_json_bytes = fs::file_size(dir / "run.json");
  fs::remove_all(dir);
  const double n = static_cast<double>(kSamples);
  std::string memory = fmt::format(
      R"({{"held_bytes_per_sample": {:.6g}, "peak_bytes_per_sample": {:.6g}, "anon_mapped_bytes_per_sample": {:.6g}, )"
      R"("file_mapped_bytes_per_sample": {:.6g}, "sizeof_gpu_sample": {}}})",
      (rss_held - rss_before) * 1024.0 / n, (rss_peak - rss_before) * 1024.0 / n,
      (mapped_kib.first - anon_before) * 1024.0 / n, mapped_kib.second * 1024.0 / n, sizeof(report::GpuSample));
  (void)html;
  return fmt::format(
      R"({{"samples": {}, "devices": 8, "run_json_bytes": {}, "journal_bytes": {:.0f}, "journal_s": {:.9g}, )"
      R"("journal_batch_samples": 160, "rounds": [{}], "memory": {}}})",
      kSamples, run_json_bytes, journal_mb * 1e6, journal_s, fmt::join(rows, ", "), memory);
}

}  // namespace

// Prints one JSON object (bench/record_report.py turns it into the table of bench/RESULTS.md).
// Usage: record_bench [sampler|recorder|write]... [--rounds N] [--seconds S]: the parts named (all
// three when none is), N rounds of each (default 3), recordings S seconds long (default 10).
int main(int argc, char** argv) {
  int rounds = 3, seconds = 10;
  std::vector<std::string_view> parts;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--rounds" || a == "--seconds") && i + 1 < argc) {
      (a == "--rounds" ? rounds : seconds) = std::max(1, std::atoi(argv[++i]));
    } else if (a == "sampler" || a == "recorder" || a == "write") {
      parts.push_back(a);
    } else {
      std::fprintf(stderr, "usage: record_bench [sampler|recorder|write]... [--rounds N] [--seconds S]\n");
      return 2;
    }
  }
  if (parts.empty()) parts = {"sampler", "recorder", "write"};
  std::vector<std::string> out{fmt::format(R"("rounds": {})", rounds)};
  for (std::string_view p : parts) {
    if (p == "sampler") out.push_back(R"("sampler": )" + SamplerCost(rounds));
    if (p == "recorder") out.push_back(R"("recorder": )" + RecorderCost(rounds, seconds));
    if (p == "write") out.push_back(R"("write": )" + DeriveAndWrite(rounds));
  }
  fmt::print("{{{}}}\n", fmt::join(out, ", "));
  return 0;
}
