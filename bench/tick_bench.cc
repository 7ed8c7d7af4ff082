// Cost of one sampling tick per device for the full field catalogue (issue: foundation).
//
//   BM_Tick/null      gpulse's own work: the backend reading every catalogue field from an NVML
//                     API whose entry points return a constant at once (no driver, no simulator).
//   BM_Tick/sim       the same read through the real loader against the NVML simulator.
//   BM_Tick/nvml      the same through the real driver, where there is one (device-check.sh).
//   BM_SimCallsOnly   the NVML calls that read makes, made straight to the simulator: subtracting
//                     it from BM_Tick/sim separates simulator time from gpulse's.
//   BM_TickEntities/sim-mig  every entity with readings of the mig-8xA100 scenario (8 MIG-enabled
//                     GPUs x 7 GPU instances = 64), full catalogue, through gpu::ReadEntity as dmon,
//                     record and the exporter read them: the per-entity cost on a MIG node, side by
//                     side with BM_Tick/sim's per-device cost (issue 11).
//   BM_TickProfiling/null/0|1  one device's tick through DeviceReader over the null API, with the
//                     simulated clock advancing 1 s per iteration so that every tick takes a GPM
//                     sample and computes the metrics (no 100 ms floor reuse): /0 the catalogue
//                     without the profiling fields, /1 with all 69 of them. The difference is what
//                     GPM adds of gpulse's own work per device per tick (issue 15).
// Each iteration reads every device of the 8xH100 scenario once; counters report per device (the
// ns_per_* counters are rates over CPU time: CPU seconds per device or entity).
// bench/run.sh tick runs it with 5 repetitions; bench/tick_report.py prints the RESULTS.md tables.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/entity.h"
#include "core/fields.h"
#include "gpu/nvml/nvml_backend.h"
#include "gpu/nvml/nvml_library.h"

namespace gpulse {
namespace {

using nvml::NvmlApi;

std::vector<FieldIndex> AllFieldIndices() {
  std::vector<FieldIndex> v;
  for (std::size_t i = 0; i < AllFields().size(); ++i) v.push_back(static_cast<FieldIndex>(i));
  return v;
}

constexpr unsigned kNullDevices = 8;

NvmlApi NullApi() {
  NvmlApi a;
  a.Init = []() -> nvmlReturn_t { return 0; };
  a.Shutdown = []() -> nvmlReturn_t { return 0; };
  a.ErrorString = [](nvmlReturn_t) { return ""; };
  a.DeviceGetCount = [](unsigned* n) -> nvmlReturn_t { *n = kNullDevices; return 0; };
  a.DeviceGetHandleByIndex = [](unsigned i, nvmlDevice_t* h) -> nvmlReturn_t {
    *h = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(i + 1));
    return 0;
  };
  a.DeviceGetName = [](nvmlDevice_t, char* b, unsigned) -> nvmlReturn_t { b[0] = 'X'; b[1] = 0; return 0; };
  a.DeviceGetUUID = [](nvmlDevice_t h, char* b, unsigned) -> nvmlReturn_t {
    std::snprintf(b, 64, "GPU-%08lx-0000-0000-0000-000000000000", reinterpret_cast<unsigned long>(h));
    return 0;
  };
  a.DeviceGetPciInfo = [](nvmlDevice_t, nvmlPciInfo_t* p) -> nvmlReturn_t { *p = {}; return 0; };
  a.DeviceGetMemoryInfo_v2 = [](nvmlDevice_t, nvmlMemory_v2_t* m) -> nvmlReturn_t {
    m->total = 80ULL << 30; m->used = 1ULL << 30; m->free = 79ULL << 30; m->reserved = 0; return 0;
  };
  a.DeviceGetUtilizationRates = [](nvmlDevice_t, nvmlUtilization_t* u) -> nvmlReturn_t { *u = {90, 40}; return 0; };
  a.DeviceGetEncoderUtilization = [](nvmlDevice_t, unsigned* u, unsigned* p) -> nvmlReturn_t { *u = 0; *p = 0; return 0; };
  a.DeviceGetDecoderUtilization = a.DeviceGetEncoderUtilization;
  a.DeviceGetPowerUsage = [](nvmlDevice_t, unsigned* mw) -> nvmlReturn_t { *mw = 300000; return 0; };
  a.DeviceGetEnforcedPowerLimit = a.DeviceGetPowerUsage;
  a.DeviceGetTotalEnergyConsumption = [](nvmlDevice_t, unsigned long long* mj) -> nvmlReturn_t { *mj = 1; return 0; };
  a.DeviceGetTemperature = [](nvmlDevice_t, int, unsigned* c) -> nvmlReturn_t { *c = 60; return 0; };
  a.DeviceGetClockInfo = [](nvmlDevice_t, int, unsigned* m) -> nvmlReturn_t { *m = 1980; return 0; };
  a.DeviceGetPerformanceState = [](nvmlDevice_t, int* p) -> nvmlReturn_t { *p = 0; return 0; };
  a.DeviceGetCurrentClocksEventReasons = [](nvmlDevice_t, unsigned long long* m) -> nvmlReturn_t { *m = 0; return 0; };
  a.DeviceGetPcieReplayCounter = [](nvmlDevice_t, unsigned* n) -> nvmlReturn_t { *n = 0; return 0; };
  a.DeviceGetTotalEccErrors = [](nvmlDevice_t, int, int, unsigned long long* n) -> nvmlReturn_t { *n = 0; return 0; };
  a.DeviceGetRetiredPages = [](nvmlDevice_t, int, unsigned* n, unsigned long long*) -> nvmlReturn_t { *n = 0; return 0; };
  a.DeviceGetRetiredPagesPendingStatus = [](nvmlDevice_t, int* p) -> nvmlReturn_t { *p = 0; return 0; };
  a.DeviceGetRemappedRows = [](nvmlDevice_t, unsigned* a1, unsigned* a2, unsigned* a3, unsigned* a4) -> nvmlReturn_t {
    *a1 = *a2 = *a3 = *a4 = 0; return 0;
  };
  a.DeviceGetFieldValues = [](nvmlDevice_t, int n, nvmlFieldValue_t* v) -> nvmlReturn_t {
    for (int i = 0; i < n; ++i) { v[i].nvmlReturn = 0; v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT; v[i].value.uiVal = 1; }
    return 0;
  };
  a.EventSetCreate = [](nvmlEventSet_t* s) -> nvmlReturn_t { *s = reinterpret_cast<nvmlEventSet_t>(1); return 0; };
  a.DeviceRegisterEvents = [](nvmlDevice_t, unsigned long long, nvmlEventSet_t) -> nvmlReturn_t { return 0; };
  a.EventSetWait = [](nvmlEventSet_t, nvmlEventData_t*, unsigned) -> nvmlReturn_t { return NVML_ERROR_TIMEOUT; };
  a.EventSetFree = [](nvmlEventSet_t) -> nvmlReturn_t { return 0; };
  return a;
}

// The null API with GPM: every metric answers 50 at once.
NvmlApi NullGpmApi() {
  NvmlApi a = NullApi();
  a.GpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t* s) -> nvmlReturn_t {
    s->isSupportedDevice = 1;
    return 0;
  };
  a.GpmSampleAlloc = [](nvmlGpmSample_t* s) -> nvmlReturn_t {
    static std::uintptr_t next = 0x1000;
    *s = reinterpret_cast<nvmlGpmSample_t>(next += 16);
    return 0;
  };
  a.GpmSampleFree = [](nvmlGpmSample_t) -> nvmlReturn_t { return 0; };
  a.GpmSampleGet = [](nvmlDevice_t, nvmlGpmSample_t) -> nvmlReturn_t { return 0; };
  a.GpmMigSampleGet = [](nvmlDevice_t, unsigned, nvmlGpmSample_t) -> nvmlReturn_t { return 0; };
  a.GpmMetricsGet = [](nvmlGpmMetricsGet_t* g) -> nvmlReturn_t {
    for (unsigned i = 0; i < g->numMetrics; ++i) {
      g->metrics[i].nvmlReturn = 0;
      g->metrics[i].value = 50.0;
    }
    return 0;
  };
  return a;
}

void BM_TickProfilingNull(benchmark::State& state) {
  static const NvmlApi api = NullGpmApi();
  const bool with_profiling = state.range(0) == 1;
  std::vector<FieldIndex> fields;
  for (FieldIndex f : AllFieldIndices()) {
    if (with_profiling || FieldAt(f).nvml != NvmlSource::kGpm) fields.push_back(f);
  }
  auto handle = reinterpret_cast<nvmlDevice_t>(std::uintptr_t{1});
  nvml::DeviceReader reader(&api, handle);
  reader.AttachGpm(handle, std::nullopt);
  gpu::ReadStats stats;
  Sample s;
  s.t_mono_ns = 1'000'000'000;
  for (auto _ : state) {
    s.t_mono_ns += 1'000'000'000;  // a 1 s tick: past the GPM floor every time
    reader.Read(fields, s, stats);
    benchmark::DoNotOptimize(s.values.data());
  }
  state.counters["fields"] = static_cast<double>(fields.size());
  state.counters["ns_per_device_tick"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TickProfilingNull)->Name("BM_TickProfiling/null")->Arg(0)->Arg(1);

void ReadAll(benchmark::State& state, gpu::Backend& b) {
  auto fields = AllFieldIndices();
  Sample s;
  std::size_t n = b.info().devices.size();
  for (auto _ : state) {
    for (std::size_t pos = 0; pos < n; ++pos) {
      b.Read(pos, fields, s);
      benchmark::DoNotOptimize(s.values.data());
    }
  }
  state.counters["devices"] = static_cast<double>(n);
  state.counters["fields"] = static_cast<double>(fields.size());
  state.counters["ns_per_device_tick"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate |
                                                                       benchmark::Counter::kInvert);
}

void BM_TickNull(benchmark::State& state) {
  auto b = nvml::NvmlBackend::Create(NullApi(), nullptr, "null");
  if (!b) return state.SkipWithError(b.error().message.c_str());
  ReadAll(state, **b);
}
BENCHMARK(BM_TickNull)->Name("BM_Tick/null");

std::string SimLibrary() { return std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so"; }

void BM_TickSim(benchmark::State& state) {
  setenv("GPULSE_SIM_SCENARIO", "8xH100", 1);
  auto lib = nvml::NvmlLibrary::Load(SimLibrary());
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  auto b = nvml::NvmlBackend::Create((*lib)->api(), *lib, SimLibrary());
  if (!b) return state.SkipWithError(b.error().message.c_str());
  ReadAll(state, **b);
}
BENCHMARK(BM_TickSim)->Name("BM_Tick/sim");

void BM_TickEntitiesSim(benchmark::State& state) {
  setenv("GPULSE_SIM_SCENARIO", "mig-8xA100", 1);
  auto lib = nvml::NvmlLibrary::Load(SimLibrary());
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  auto b = nvml::NvmlBackend::Create((*lib)->api(), *lib, SimLibrary());
  if (!b) return state.SkipWithError(b.error().message.c_str());
  // Argument: 0 every entity with readings, 1 the MIG-enabled GPUs only, 2 the GPU instances only.
  const auto which = state.range(0);
  std::vector<Entity> readable;
  for (const Entity& e : BuildEntities((*b)->info())) {
    bool gpu = e.kind == EntityKind::kGpu;
    if (e.readable() && (which == 0 || (which == 1) == gpu)) readable.push_back(e);
  }
  auto fields = AllFieldIndices();
  Sample s;
  for (auto _ : state) {
    for (const Entity& e : readable) {
      gpu::ReadEntity(**b, e, fields, s);
      benchmark::DoNotOptimize(s.values.data());
    }
  }
  state.counters["entities"] = static_cast<double>(readable.size());
  state.counters["fields"] = static_cast<double>(fields.size());
  state.counters["ns_per_entity_tick"] = benchmark::Counter(
      static_cast<double>(state.iterations() * readable.size()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TickEntitiesSim)->Name("BM_TickEntities/sim-mig")->Arg(0)->Arg(1)->Arg(2);

// The same read through the real driver (libnvidia-ml.so.1); skipped where there is none. Used by
// tests/gpu/device-check.sh on a GPU machine.
void BM_TickNvml(benchmark::State& state) {
  auto lib = nvml::NvmlLibrary::Load(nvml::ChooseLibraryPath(""));
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  auto b = nvml::NvmlBackend::Create((*lib)->api(), *lib, "nvml");
  if (!b) return state.SkipWithError(b.error().message.c_str());
  ReadAll(state, **b);
}
BENCHMARK(BM_TickNvml)->Name("BM_Tick/nvml");

// The calls DeviceReader makes for the full catalogue, straight to the simulator.
void BM_SimCallsOnly(benchmark::State& state) {
  setenv("GPULSE_SIM_SCENARIO", "8xH100", 1);
  auto lib = nvml::NvmlLibrary::Load(SimLibrary());
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  const NvmlApi& a = (*lib)->api();
  unsigned count = 0;
  a.DeviceGetCount(&count);
  std::vector<nvmlDevice_t> h(count);
  for (unsigned i = 0; i < count; ++i) a.DeviceGetHandleByIndex(i, &h[i]);
  nvmlEventSet_t set = nullptr;
  a.EventSetCreate(&set);
  for (nvmlDevice_t d : h) a.DeviceRegisterEvents(d, nvmlEventTypeXidCriticalError, set);
  unsigned u = 0, p = 0, mw = 0, n = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0;
  unsigned long long ull = 0;
  int ps = 0;
  for (auto _ : state) {
    for (nvmlDevice_t d : h) {
      nvmlEventData_t ev{};
      a.EventSetWait(set, &ev, 0);
      nvmlFieldValue_t fv[2]{};
      fv[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
      fv[1].fieldId = NVML_FI_DEV_MEMORY_TEMP;
      a.DeviceGetFieldValues(d, 2, fv);
      nvmlUtilization_t ut{};
      a.DeviceGetUtilizationRates(d, &ut);
      a.DeviceGetEncoderUtilization(d, &u, &p);
      a.DeviceGetDecoderUtilization(d, &u, &p);
      nvmlMemory_v2_t m{};
      m.version = nvmlMemory_v2;
      a.DeviceGetMemoryInfo_v2(d, &m);
      a.DeviceGetPowerUsage(d, &mw);
      a.DeviceGetTotalEnergyConsumption(d, &ull);
      a.DeviceGetEnforcedPowerLimit(d, &mw);
      a.DeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u);
      a.DeviceGetClockInfo(d, NVML_CLOCK_SM, &u);
      a.DeviceGetClockInfo(d, NVML_CLOCK_MEM, &u);
      a.DeviceGetPerformanceState(d, &ps);
      a.DeviceGetCurrentClocksEventReasons(d, &ull);
      a.DeviceGetPcieReplayCounter(d, &n);
      for (int t = 0; t < 2; ++t) {
        for (int k = 0; k < 2; ++k) a.DeviceGetTotalEccErrors(d, t, k, &ull);
      }
      n = 0;
      a.DeviceGetRetiredPages(d, 0, &n, nullptr);
      n = 0;
      a.DeviceGetRetiredPages(d, 1, &n, nullptr);
      a.DeviceGetRetiredPagesPendingStatus(d, &ps);
      a.DeviceGetRemappedRows(d, &c1, &c2, &c3, &c4);
      benchmark::DoNotOptimize(m);
    }
  }
  if (set != nullptr) a.EventSetFree(set);
  state.counters["devices"] = count;
  state.counters["ns_per_device_tick"] = benchmark::Counter(
      static_cast<double>(state.iterations() * count), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SimCallsOnly);

// Anchor run side by side: spawning and reaping /bin/true, the floor under any tool that runs a
// process per reading (nvidia-smi --query-gpu costs this plus its own NVML init and work).
extern "C" char** environ;
void BM_ProcessSpawnAnchor(benchmark::State& state) {
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  for (auto _ : state) {
    pid_t pid = 0;
    if (posix_spawn(&pid, arg0, nullptr, nullptr, argv, environ) != 0) {
      return state.SkipWithError("posix_spawn failed");
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
}
BENCHMARK(BM_ProcessSpawnAnchor)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpulse

BENCHMARK_MAIN();
