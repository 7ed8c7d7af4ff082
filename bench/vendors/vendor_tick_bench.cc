// Cost of one sampling tick per device through the sysfs backends (issue 19), side by side with
// the same tick on the NVML simulator. Each reads every field its backend reads (the full
// catalogue is asked for; fields a vendor does not expose cost nothing).
//
//   BM_VendorTick/amdgpu-mi300x   one MI300X-class device from its fixture tree (gpulse's own work
//                                 and its syscalls: the files are real files on this machine's
//                                 file system, read with pread as on /sys)
//   BM_VendorTick/amdgpu-rx7900   the RX 7900-class fixture
//   BM_VendorTick/intel-i915      the i915 fixture
//   BM_VendorTick/intel-xe        the xe fixture
//   BM_VendorTick/nvml-sim        one device of the 1xH200 scenario through the real loader and
//                                 the NVML simulator
//
// The anchor (one rocm-smi call on the same fixture tree) runs in bench/vendors/run.sh.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "gpu/amdgpu/amdgpu_backend.h"
#include "gpu/intel/intel_backend.h"
#include "gpu/registry.h"

namespace gpulse {
namespace {

std::vector<FieldIndex> AllFieldIndices() {
  std::vector<FieldIndex> v;
  for (std::size_t i = 0; i < AllFields().size(); ++i) v.push_back(static_cast<FieldIndex>(i));
  return v;
}

std::string Fixture(const char* name) {
  return std::string(GPULSE_SOURCE_DIR) + "/tests/testdata/sysfs/" + name;
}

void ReadEveryDevice(benchmark::State& state, gpu::Backend& backend) {
  const auto fields = AllFieldIndices();
  const std::size_t n = backend.info().devices.size();
  Sample sample;
  for (auto _ : state) {
    for (std::size_t pos = 0; pos < n; ++pos) {
      backend.Read(pos, fields, sample);
      benchmark::DoNotOptimize(sample.values.data());
    }
  }
  state.counters["devices"] = static_cast<double>(n);
  state.counters["ns_per_device_tick"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate |
                                                       benchmark::Counter::kInvert);
}

template <typename Open>
void RunBackend(benchmark::State& state, Open open, gpu::BackendOptions options) {
  auto backend = open(options);
  if (!backend.ok()) {
    state.SkipWithError(backend.error().message.c_str());
    return;
  }
  ReadEveryDevice(state, **backend);
}

void BM_AmdMi300x(benchmark::State& state) {
  gpu::BackendOptions o;
  o.sysfs_root = Fixture("mi300x");
  RunBackend(state, &gpu::amdgpu::OpenAmdgpuBackend, o);
}
void BM_AmdRx7900(benchmark::State& state) {
  gpu::BackendOptions o;
  o.sysfs_root = Fixture("rx7900");
  RunBackend(state, &gpu::amdgpu::OpenAmdgpuBackend, o);
}
void BM_IntelI915(benchmark::State& state) {
  gpu::BackendOptions o;
  o.sysfs_root = Fixture(GPULSE_I915_FIXTURE);
  RunBackend(state, [](const gpu::BackendOptions& b) { return gpu::intel::OpenIntelBackend(b); }, o);
}
void BM_IntelXe(benchmark::State& state) {
  gpu::BackendOptions o;
  o.sysfs_root = Fixture(GPULSE_XE_FIXTURE);
  RunBackend(state, [](const gpu::BackendOptions& b) { return gpu::intel::OpenIntelBackend(b); }, o);
}
void BM_NvmlSim(benchmark::State& state) {
  gpu::BackendOptions o;
  o.simulate = "1xH200";
  o.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  RunBackend(state, &gpu::OpenBackend, o);
}

BENCHMARK(BM_AmdMi300x)->Name("BM_VendorTick/amdgpu-mi300x");
BENCHMARK(BM_AmdRx7900)->Name("BM_VendorTick/amdgpu-rx7900");
BENCHMARK(BM_IntelI915)->Name("BM_VendorTick/intel-i915");
BENCHMARK(BM_IntelXe)->Name("BM_VendorTick/intel-xe");
BENCHMARK(BM_NvmlSim)->Name("BM_VendorTick/nvml-sim");

}  // namespace
}  // namespace gpulse

BENCHMARK_MAIN();
