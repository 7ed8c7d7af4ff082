// Cost of device identity work (issue 3).
//
//   BM_ResolveCuda           one CUDA_VISIBLE_DEVICES resolution on an 8-GPU host (UUID prefixes
//   and
//                            integers under FASTEST_FIRST, the proof included).
//   BM_AttributeProcess      one PID → name, uid, cgroup, container, pod: three procfs reads and
//   the
//                            classification, over the k8s-8xH100 fixture tree (12 PIDs in turn).
//   BM_CatCgroupAnchor       anchor run side by side: spawning and reaping `cat <tree>/PID/cgroup`,
//                            the cheapest way a script reads one cgroup file per process.
//   BM_ProcessList/gpulse    one device's process list as `gpulse ps` reads it (detail list for
//                            compute and graphics, per-process utilization, merge) against the NVML
//                            simulator, cache defeated.
//   BM_ProcessList/calls     the same NVML calls straight to the simulator, without gpulse.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "gpu/nvml/nvml_library.h"
#include "gpu/nvml/nvml_processes.h"
#include "identity/cuda_visible.h"
#include "identity/process_info.h"

extern "C" char** environ;

namespace gpulse {
namespace {

const std::string kTree = std::string(GPULSE_SOURCE_DIR) + "/tests/testdata/procfs/k8s-8xH100";
constexpr unsigned kPids[] = {41001, 41002, 41003, 41004, 42001, 42002,
                              43001, 45001, 45002, 46001, 46501, 47001};

SystemInfo EightH100() {
  SystemInfo s;
  const unsigned buses[] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};
  for (unsigned i = 0; i < 8; ++i) {
    DeviceInfo d;
    d.index = i;
    d.name = "NVIDIA H100 80GB HBM3";
    char buf[64];
    std::snprintf(buf, sizeof buf, "GPU-%x%x%x%x%x%x%x%x-1111-2222-3333-444455556666", i, i, i, i,
                  i, i, i, i);
    d.uuid = buf;
    std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", buses[i]);
    d.pci_bus_id = buf;
    d.mig_enabled = false;
    s.devices.push_back(d);
  }
  return s;
}

void BM_ResolveCuda(benchmark::State& state) {
  SystemInfo info = EightH100();
  identity::Environment env;
  env.Set("CUDA_VISIBLE_DEVICES", "GPU-7777,2,GPU-444,0");
  identity::RuntimeScope scope = identity::HostScope(info);
  for (auto _ : state) {
    identity::Mapping m = identity::ResolveCuda(env, info, scope);
    benchmark::DoNotOptimize(m.ordinals.data());
    if (m.ordinals.size() != 4) return state.SkipWithError("unexpected mapping");
  }
}
BENCHMARK(BM_ResolveCuda);

void BM_AttributeProcess(benchmark::State& state) {
  sys::RootedFs proc(kTree);
  std::size_t i = 0;
  for (auto _ : state) {
    identity::ProcessInfo p = identity::ReadProcessInfo(proc, kPids[i++ % std::size(kPids)]);
    if (!p.cgroup) return state.SkipWithError(("no cgroup: " + p.error).c_str());
    benchmark::DoNotOptimize(p.cgroup->path.data());
  }
}
BENCHMARK(BM_AttributeProcess);

void BM_CatCgroupAnchor(benchmark::State& state) {
  std::string file = kTree + "/41001/cgroup";
  char arg0[] = "/bin/cat";
  char* argv[] = {arg0, file.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  for (auto _ : state) {
    pid_t pid = 0;
    if (posix_spawn(&pid, arg0, &actions, nullptr, argv, environ) != 0) {
      return state.SkipWithError("posix_spawn failed");
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
}
BENCHMARK(BM_CatCgroupAnchor)->Unit(benchmark::kMicrosecond);

std::string SimLibrary() { return std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so"; }

std::vector<nvmlDevice_t> Handles(const nvml::NvmlApi& a) {
  unsigned count = 0;
  a.DeviceGetCount(&count);
  std::vector<nvmlDevice_t> h(count);
  for (unsigned i = 0; i < count; ++i) a.DeviceGetHandleByIndex(i, &h[i]);
  return h;
}

void PerDevice(benchmark::State& state, std::size_t devices) {
  state.counters["ns_per_device"] =
      benchmark::Counter(static_cast<double>(state.iterations() * devices),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ProcessListGpulse(benchmark::State& state) {
  setenv("GPULSE_SIM_SCENARIO", "k8s-8xH100", 1);
  auto lib = nvml::NvmlLibrary::Load(SimLibrary());
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  const nvml::NvmlApi& a = (*lib)->api();
  std::vector<nvml::ProcessReader> readers;
  for (nvmlDevice_t h : Handles(a)) readers.emplace_back(&a, h);
  std::int64_t now_ns = 0;
  std::int64_t now_us = 1'700'000'000'000'000;
  for (auto _ : state) {
    now_ns += gpu::kProcessListMinIntervalNs;  // every read goes to the driver
    for (auto& r : readers) {
      ProcessList l = r.Read(now_ns, now_us);
      benchmark::DoNotOptimize(l.processes);
    }
  }
  PerDevice(state, readers.size());
}
BENCHMARK(BM_ProcessListGpulse)->Name("BM_ProcessList/gpulse");

void BM_ProcessListCalls(benchmark::State& state) {
  setenv("GPULSE_SIM_SCENARIO", "k8s-8xH100", 1);
  auto lib = nvml::NvmlLibrary::Load(SimLibrary());
  if (!lib) return state.SkipWithError(lib.error().message.c_str());
  const nvml::NvmlApi& a = (*lib)->api();
  std::vector<nvmlDevice_t> handles = Handles(a);
  // Like the reader: each device's utilization window starts after the newest sample seen.
  std::vector<unsigned long long> last_seen(handles.size(), 0);
  for (auto _ : state) {
    for (std::size_t k = 0; k < handles.size(); ++k) {
      nvmlDevice_t d = handles[k];
      for (unsigned mode : {NVML_PROCESS_MODE_COMPUTE, NVML_PROCESS_MODE_GRAPHICS}) {
        nvmlProcessDetailList_v1_t list{nvmlProcessDetailList_v1, mode, 0, nullptr};
        a.DeviceGetRunningProcessDetailList(d, &list);
        std::vector<nvmlProcessDetail_v1_t> e(list.numProcArrayEntries + 8);
        list.numProcArrayEntries = static_cast<unsigned>(e.size());
        list.procArray = e.data();
        a.DeviceGetRunningProcessDetailList(d, &list);
        benchmark::DoNotOptimize(e.data());
      }
      unsigned n = 0;
      if (a.DeviceGetProcessUtilization(d, nullptr, &n, last_seen[k]) !=
          NVML_ERROR_INSUFFICIENT_SIZE) {
        continue;
      }
      std::vector<nvmlProcessUtilizationSample_t> s(n + 16);
      n = static_cast<unsigned>(s.size());
      if (a.DeviceGetProcessUtilization(d, s.data(), &n, last_seen[k]) != NVML_SUCCESS) continue;
      for (unsigned i = 0; i < n; ++i) last_seen[k] = std::max(last_seen[k], s[i].timeStamp);
      benchmark::DoNotOptimize(s.data());
    }
  }
  PerDevice(state, handles.size());
}
BENCHMARK(BM_ProcessListCalls)->Name("BM_ProcessList/calls");

}  // namespace
}  // namespace gpulse

BENCHMARK_MAIN();
