// `gpulse record [-i MS] [--include-descendants] [-o DIR] [--fields LIST] [--simulate S] -- CMD…`:
// runs CMD, samples the GPUs and CMD's process tree every tick, and writes DIR/run.json (canonical),
// DIR/report.txt and DIR/report.html, printing the text report. Exits with CMD's exit code.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <filesystem>
#include <atomic>
#include <memory>
#include <string_view>

#include "cli/gpu_options.h"
#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "cli/version.h"
#include "gpu/registry.h"
#include "identity/cuda_visible.h"
#include "identity/environment.h"
#include "identity/runtime_mapping.h"
#include "identity/runtime_scope.h"
#include "report/derive.h"
#include "report/journal.h"
#include "report/render.h"
#include "report/run_json.h"
#include "sampling/recorder.h"
#include "sys/child_process.h"
#include "sys/procfs.h"
#include "sys/safe_dir.h"

namespace gpulse::cli {
namespace {

// gpulse's own failures, as env(1) and timeout(1) report them, so they cannot be mistaken for CMD's.
constexpr int kExitRecordFailed = 125;
constexpr int kExitCannotExecute = 126;
constexpr int kExitNotFound = 127;

struct RecordOptions {
  gpu::BackendOptions gpu;
  int interval_ms = 50;
  bool include_descendants = false;
  std::string out_dir;
  std::string fields;
  bool force = false;
  std::vector<std::string> command;
};

std::atomic<bool> g_child_exited{false};
std::atomic<pid_t> g_child_pid{0};

extern "C" void OnChild(int) { g_child_exited.store(true); }

// Forwards a termination signal to CMD. A signal the terminal sent (Ctrl-C) already reached CMD,
// which shares our process group, so only signals sent to gpulse itself are passed on.
extern "C" void OnTerminate(int sig, siginfo_t* info, void*) {
  pid_t child = g_child_pid.load();
  if (child > 0 && (info == nullptr || info->si_code != SI_KERNEL)) kill(child, sig);
}

void InstallHandlers() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = OnChild;
  sa.sa_flags = SA_NOCLDSTOP;  // no SA_RESTART: the ticker's sleep must wake up
  sigaction(SIGCHLD, &sa, nullptr);
  struct sigaction term {};
  sigemptyset(&term.sa_mask);
  term.sa_sigaction = OnTerminate;
  term.sa_flags = SA_SIGINFO;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &term, nullptr);
}

std::string DefaultOutDir() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "gpulse-record-%Y%m%d-%H%M%S", &tm);
  return buf;
}

constexpr std::array<std::string_view, 3> kOutputFiles = {"run.json", "report.txt", "report.html"};

// The output directory, and whether this run created it (a run that never starts removes it).
struct OutDir {
  sys::Dir dir;
  bool created = false;
};

// Says so when DIR is a symbolic link: the run is written where it points, never silently.
void NoteSymlink(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p(dir);
  while (p.has_relative_path() && !p.has_filename()) p = p.parent_path();  // "out/" -> "out"
  if (!std::filesystem::is_symlink(p, ec)) return;
  auto target = std::filesystem::read_symlink(p, ec);
  fmt::print(stderr, "gpulse record: note: output directory {} is a symbolic link to {}; writing there\n", dir,
             ec ? std::string("?") : target.string());
}

// An earlier run's files in DIR: refused (exit 125) unless --force, which removes them first so
// nothing of the old run mixes with the new one.
Status ClaimOutDir(const sys::Dir& out, const std::string& dir, bool force) {
  std::vector<std::string_view> names(kOutputFiles.begin(), kOutputFiles.end());
  names.push_back(report::kJournalName);
  for (std::string_view name : names) {
    if (Status s = out.RefuseNonRegular(name); !s.ok()) return s.error();
    auto type = out.TypeOf(name);
    if (!type.ok() || *type == sys::EntryType::kMissing) continue;
    if (!force) {
      return Error{ErrorCode::kInvalidArgument,
                   "output directory " + dir + " holds an earlier run (" + std::string(name) +
                       "); choose another -o or pass --force to replace it"};
    }
    if (Status s = out.Remove(name); !s.ok()) return s.error();
  }
  return Status::Ok();
}

// Creates DIR (as named; the components it makes are opened O_NOFOLLOW) and proves it writable
// before CMD starts. A symbolic link or non-regular file where a report goes is refused now, with
// its path, so CMD never runs for a report that could not be written; the writes refuse it again.
Result<OutDir> PrepareOutDir(const std::string& dir, bool force) {
  std::error_code ec;
  bool existed = std::filesystem::exists(dir, ec);
  NoteSymlink(dir);
  auto out = sys::Dir::OpenRoot(dir, /*create=*/true);
  if (!out.ok())
    return Error{out.error().code, "output directory " + dir + ": " + out.error().message};
  if (Status s = ClaimOutDir(*out, dir, force); !s.ok()) return s.error();
  constexpr std::string_view kProbe = ".gpulse-write-test";
  if (Status s = out->WriteAtomic(kProbe, "x"); !s.ok())
    return Error{ErrorCode::kIo,
                 "output directory " + dir + " is not writable: " + s.error().message};
  (void)out->Remove(kProbe);
  return OutDir{*out, !existed};
}

// A run that never started leaves nothing behind: its journal, and DIR when this run made it.
void Abandon(const OutDir& out, const std::string& dir) {
  (void)out.dir.Remove(report::kJournalName);
  if (out.created) ::rmdir(dir.c_str());
}

Result<std::vector<FieldIndex>> OptionalFields(const std::string& list) {
  if (list.empty()) return sampling::OptionalTimelineFields();
  auto parsed = ParseFieldList(list);
  if (!parsed) return parsed.error();
  auto allowed = sampling::OptionalTimelineFields();
  std::vector<FieldIndex> out;
  for (FieldIndex f : *parsed) {
    auto required = sampling::RequiredTimelineFields();
    if (std::find(required.begin(), required.end(), f) != required.end()) continue;  // always recorded
    if (std::find(allowed.begin(), allowed.end(), f) == allowed.end()) {
      std::string names;
      for (FieldIndex a : allowed) names += (names.empty() ? "" : ", ") + std::string(FieldAt(a).name);
      return InvalidArgument("field " + std::string(FieldAt(f).name) +
                             " cannot be recorded in the timeline (optional fields: " + names + ")");
    }
    out.push_back(f);
  }
  return out;
}

// Positions in `entities` of a GPU and, when `mig` is set, of that instance only (GI and CI);
// otherwise of every instance of the GPU.
void AddGpu(const std::vector<Entity>& entities, unsigned gpu, const std::optional<MigInstance>& mig,
            std::vector<std::size_t>& out) {
  for (std::size_t i = 0; i < entities.size(); ++i) {
    const Entity& e = entities[i];
    if (e.gpu != gpu || e.state == EntityState::kSkipped) continue;
    bool wanted = e.kind == EntityKind::kGpu || !mig || e.gpu_instance_id == mig->gpu_instance_id;
    if (wanted && e.kind == EntityKind::kComputeInstance && mig) {
      wanted = e.compute_instance_id == mig->compute_instance_id;
    }
    if (wanted) out.push_back(i);
  }
}

// What one runtime's masks select of its vendor's entities: positions in `all`, and the words for
// the run report. Every entity of the vendor when its masks are unset or cannot be resolved exactly
// (a refusal is never turned into a guess).
struct Selection {
  std::vector<std::size_t> keep;
  std::string words;  // "" when the masks are unset
};

Selection SelectFor(identity::Runtime runtime, const identity::Environment& env,
                    const SystemInfo& info, const std::vector<Entity>& all) {
  Selection out;
  const auto vendor = identity::RuntimeVendor(runtime);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].vendor == vendor) out.keep.push_back(i);
  }
  const bool cuda = runtime == identity::Runtime::kCuda;
  const bool masked = cuda ? env.Get("CUDA_VISIBLE_DEVICES") || env.Get("CUDA_DEVICE_ORDER")
                           : identity::RuntimeMasked(runtime, env);
  if (out.keep.empty() || !masked) return out;
  const std::string masks = cuda ? "CUDA_VISIBLE_DEVICES"
                                 : fmt::format("the {} masks", identity::RuntimeName(runtime));
  identity::Mapping m = identity::ResolveRuntime(runtime, env, info, identity::HostScope(info));
  if (m.refusal) {
    out.words = fmt::format("all: {} cannot be resolved exactly ({})", masks, m.refusal->reason);
    return out;
  }
  out.keep.clear();
  std::string listed;
  for (const identity::PhysicalDevice& d : m.ordinals) {
    AddGpu(all, d.index, d.mig, out.keep);
    std::string item = std::to_string(d.index);
    if (d.mig) item += fmt::format(" (MIG {} GI {} CI {})", d.mig->profile, d.mig->gpu_instance_id, d.mig->compute_instance_id);
    listed += (listed.empty() ? "" : ", ") + item;
  }
  out.words = out.keep.empty() ? fmt::format("visible: none ({} {} every GPU)", masks, cuda ? "hides" : "hide")
                               : "visible: physical GPU " + listed;
  return out;
}

// The entities CMD's runtimes will see (it inherits our environment): for each vendor, the GPUs
// (or MIG instances with their parent GPU) behind its runtime's ordinals when its masks resolve
// exactly (CUDA for NVIDIA, HIP for AMD, Level Zero for Intel); every entity of that vendor,
// skipped and lost GPUs included, with the reason, when they are unset or do not resolve. Fills
// run.info.
std::vector<Entity> WorkloadEntities(const SystemInfo& info, report::RunInfo& run) {
  std::vector<Entity> all = BuildEntities(info);
  auto env = identity::Environment::FromEntries(sys::CurrentEnvironment());
  if (auto mask = env.Get("CUDA_VISIBLE_DEVICES")) run.cuda_visible_devices = std::string(*mask);
  std::vector<std::size_t> keep;
  std::vector<std::string> words;
  for (auto runtime : {identity::Runtime::kCuda, identity::Runtime::kHip, identity::Runtime::kLevelZero}) {
    Selection s = SelectFor(runtime, env, info, all);
    keep.insert(keep.end(), s.keep.begin(), s.keep.end());
    if (!s.words.empty()) words.push_back(std::move(s.words));
  }
  if (words.empty()) return all;  // SubsetEntities keeps the first of a repeated position
  run.device_selection = fmt::format("{}", fmt::join(words, "; "));
  return SubsetEntities(all, keep);
}

// Why no GPU can be read although the driver counts some: every one was skipped.
std::string NoReadableGpu(const SystemInfo& info) {
  if (info.skipped.empty()) return "no readable GPU";
  std::string why;
  for (const SkippedDevice& s : info.skipped) {
    why += fmt::format("{}GPU {}: {}", why.empty() ? "" : "; ", s.index, s.reason);
  }
  return "no readable GPU (" + why + ")";
}

std::string Hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The three report files, each written whole under a temporary name and renamed. Every failure is
// reported with its file; true when all three were written.
bool WriteReports(const sys::Dir& out, const report::Run& run, const report::Report& rep, const std::string& text,
                  const report::FormattedTimelines* formatted) {
  bool ok = true;
  for (Status st : {report::WriteRunJsonFile(run, rep, out.PathOf(kOutputFiles[0]), formatted),
                    out.WriteAtomic(kOutputFiles[1], text),
                    out.WriteAtomic(kOutputFiles[2], report::RenderHtml(run, rep))}) {
    if (!st.ok()) {
      fmt::print(stderr, "gpulse record: {}\n", st.error().message);
      ok = false;
    }
  }
  return ok;
}

// Opens the GPUs and fills what the run knows before CMD starts. nullopt: gpulse cannot record
// (the message is printed), e.g. a --simulate scenario that cannot be loaded.
std::optional<std::unique_ptr<gpu::Backend>> OpenGpus(const RecordOptions& o, report::Run& run) {
  if (Status s = CheckProcfsOption(o.gpu.procfs_root); !s.ok()) {
    fmt::print(stderr, "gpulse record: {}\n", s.error().message);
    return std::nullopt;
  }
  auto backend = gpu::OpenBackend(o.gpu);
  if (!backend && backend.error().code != ErrorCode::kUnavailable) {  // e.g. a bad --simulate
    fmt::print(stderr, "gpulse record: {}\n", backend.error().message);
    return std::nullopt;
  }
  if (!backend) {
    run.info.gpu_unavailable_reason = backend.error().message;
    return std::unique_ptr<gpu::Backend>();
  }
  gpu::Backend* b = backend->get();
  run.entities = WorkloadEntities(b->info(), run.info);
  for (const Entity& e : run.entities) {
    if (e.kind == EntityKind::kGpu && e.device_pos) run.devices.push_back(b->info().devices[*e.device_pos]);
  }
  run.info.simulated = b->info().simulated;
  run.info.scenario = b->info().scenario;
  run.info.driver_version = b->info().driver_version;
  if (run.devices.empty()) {
    run.info.gpu_unavailable_reason = b->info().devices.empty() ? NoReadableGpu(b->info())
                                                                : "the workload sees no GPU";
  }
  return std::move(backend).value();
}

// The end of a run: the journal's last records, the three reports (the journal's sample text
// copied into run.json), the text report printed, the journal removed once everything is written.
// False, having said which file, when anything could not be written.
bool Conclude(const sys::Dir& out, report::JournalWriter& journal, const report::Run& run, const std::string& dir) {
  bool ok = true;
  if (Status st = journal.Finish(run); !st.ok()) {
    fmt::print(stderr, "gpulse record: journal: {}\n", st.error().message);
    ok = false;
  }
  auto mapped = ok ? journal.Map() : nullptr;
  report::Report rep = report::Derive(run);
  std::string text = report::RenderText(run, rep);
  ok = WriteReports(out, run, rep, text, mapped ? &mapped->timelines : nullptr) && ok;
  mapped.reset();
  fmt::print("{}", text);
  if (!ok) {
    fmt::print(stderr, "gpulse record: not every file was written (see above); exit 125\n");
    return false;
  }
  (void)out.Remove(report::kJournalName);  // run.json now holds everything the journal did
  fmt::print("Wrote {}/run.json, report.txt and report.html\n", dir);
  return true;
}

int Run(RecordOptions& o) {
  auto fields = OptionalFields(o.fields);
  if (!fields) {
    fmt::print(stderr, "gpulse record: --fields: {}\n", fields.error().message);
    return kExitRecordFailed;
  }
  if (o.out_dir.empty()) o.out_dir = DefaultOutDir();
  report::Run run;
  run.info.command = o.command;
  run.info.host = Hostname();
  run.info.gpulse_version = VersionString();
  run.clock_ticks_per_second = sysconf(_SC_CLK_TCK);
  auto backend = OpenGpus(o, run);
  if (!backend) return kExitRecordFailed;
  auto out = PrepareOutDir(o.out_dir, o.force);
  if (!out) {
    fmt::print(stderr, "gpulse record: {}\n", out.error().message);
    return kExitRecordFailed;
  }
  auto journal = report::JournalWriter::Create(out->dir, report::kJournalName);
  if (!journal) {
    fmt::print(stderr, "gpulse record: {}\n", journal.error().message);
    Abandon(*out, o.out_dir);
    return kExitRecordFailed;
  }

  InstallHandlers();
  auto child = sys::ChildProcess::Spawn(o.command);
  if (!child) {
    fmt::print(stderr, "gpulse record: {}\n", child.error().message);
    journal->reset();
    Abandon(*out, o.out_dir);
    return child.error().code == ErrorCode::kNoPermission ? kExitCannotExecute : kExitNotFound;
  }
  g_child_pid.store(child->pid());
  sampling::RecordOptions ro;
  ro.period_ns = static_cast<std::int64_t>(o.interval_ms) * 1'000'000;
  ro.include_descendants = o.include_descendants;
  ro.optional_fields = *fields;
  sampling::Recorder recorder(ro, backend->get(), &g_child_exited);
  sys::ExitStatus status = recorder.Record(*child, run, journal->get());
  g_child_pid.store(0);
  run.info.exit_code = status.code;
  run.info.exit_signal = status.signal;
  run.info.gpulse_exit_code = status.ShellCode();

  return Conclude(out->dir, **journal, run, o.out_dir) ? status.ShellCode() : kExitRecordFailed;
}

}  // namespace

Subcommand SetupRecord(CLI::App& parent) {
  auto o = std::make_shared<RecordOptions>();
  CLI::App* app = parent.add_subcommand(
      "record", "Run a command, sample its GPUs and process tree, and write run.json and reports");
  AddGpuOptions(*app, o->gpu);
  AddProcfsOption(*app, o->gpu.procfs_root);  // the backends' per-process readings (not CMD's tree)
  app->add_option("-i,--interval", o->interval_ms, "Sampling period in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
  app->add_flag("--include-descendants", o->include_descendants,
                "Sum RSS, CPU and threads over CMD's whole descendant tree");
  app->add_option("-o,--output", o->out_dir, "Output directory (default: ./gpulse-record-DATE-TIME)");
  app->add_flag("--force", o->force, "Replace an earlier run in the output directory");
  app->add_option("--fields", o->fields,
                  "Optional timeline fields to record (default: all of them; see docs/record.md)");
  app->add_option("command", o->command, "The command to run, after --")->required();
  app->footer("Exit status: CMD's, 128+N when CMD died of signal N, 126/127 when CMD cannot be "
              "executed/found, 125 when gpulse itself fails.");
  return {app, [o] { return Run(*o); }, kExitRecordFailed};
}

}  // namespace gpulse::cli
