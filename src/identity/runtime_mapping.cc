#include "identity/runtime_mapping.h"

#include <array>
#include <vector>

#include "identity/cuda_visible.h"
#include "identity/level_zero_visible.h"
#include "identity/rocm_visible.h"

namespace gpulse::identity {
namespace {

constexpr std::array<const char*, 3> kCudaVars = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                                  "NVIDIA_VISIBLE_DEVICES"};
constexpr std::array<const char*, 3> kHipVars = {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                                 "CUDA_VISIBLE_DEVICES"};
constexpr std::array<const char*, 2> kOpenClVars = {"ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};
constexpr std::array<const char*, 3> kLevelZeroVars = {"ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR",
                                                       "ZE_ENABLE_PCI_ID_DEVICE_ORDER"};

// The scope's positions whose device is of `vendor`.
RuntimeScope OfVendor(const RuntimeScope& scope, const SystemInfo& info, std::string_view vendor) {
  RuntimeScope out;
  out.uncounted = scope.uncounted;
  for (std::size_t pos : scope.positions) {
    if (pos < info.devices.size() && VendorOf(info.devices[pos]) == vendor) {
      out.positions.push_back(pos);
    }
  }
  return out;
}

bool HasVendor(const SystemInfo& info, std::string_view vendor) {
  for (const DeviceInfo& d : info.devices) {
    if (VendorOf(d) == vendor) return true;
  }
  return false;
}

}  // namespace

std::string_view RuntimeName(Runtime runtime) {
  switch (runtime) {
    case Runtime::kCuda: return "cuda";
    case Runtime::kHip: return "hip";
    case Runtime::kOpenCl: return "opencl";
    case Runtime::kLevelZero: return "level_zero";
  }
  return "cuda";
}

std::optional<Runtime> ParseRuntime(std::string_view name) {
  for (Runtime r : {Runtime::kCuda, Runtime::kHip, Runtime::kOpenCl, Runtime::kLevelZero}) {
    if (RuntimeName(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view RuntimeVendor(Runtime runtime) {
  switch (runtime) {
    case Runtime::kCuda: return "nvidia";
    case Runtime::kHip:
    case Runtime::kOpenCl: return "amd";
    case Runtime::kLevelZero: return "intel";
  }
  return "nvidia";
}

std::span<const char* const> RuntimeVariables(Runtime runtime) {
  switch (runtime) {
    case Runtime::kCuda: return kCudaVars;
    case Runtime::kHip: return kHipVars;
    case Runtime::kOpenCl: return kOpenClVars;
    case Runtime::kLevelZero: return kLevelZeroVars;
  }
  return kCudaVars;
}

bool RuntimeMasked(Runtime runtime, const Environment& env) {
  for (const char* var : RuntimeVariables(runtime)) {
    // NVIDIA_VISIBLE_DEVICES is the container runtime's, not a mask the CUDA runtime reads.
    if (std::string_view(var) == "NVIDIA_VISIBLE_DEVICES") continue;
    if (env.Get(var)) return true;
  }
  return false;
}

Runtime DefaultRuntime(const SystemInfo& info) {
  if (HasVendor(info, "nvidia") || !info.skipped.empty()) return Runtime::kCuda;
  if (HasVendor(info, "amd")) return Runtime::kHip;
  if (HasVendor(info, "intel")) return Runtime::kLevelZero;
  return Runtime::kCuda;
}

Mapping ResolveRuntime(Runtime runtime, const Environment& env, const SystemInfo& info,
                       const RuntimeScope& scope) {
  const RuntimeScope mine = OfVendor(scope, info, RuntimeVendor(runtime));
  switch (runtime) {
    case Runtime::kCuda:
      return ResolveCuda(env, info, mine);
    case Runtime::kHip:
    case Runtime::kOpenCl: {
      std::vector<DeviceInfo> agents;
      for (std::size_t pos : mine.positions) agents.push_back(info.devices[pos]);
      Mapping m = ResolveRocm(env, agents, runtime == Runtime::kHip ? RocmApi::kHip : RocmApi::kOpenCl);
      m.notes.push_back("ROCm numbers AMD GPUs in KFD topology order; gpulse takes it as PCI bus "
                        "order (the order amdgpu probes them)");
      return m;
    }
    case Runtime::kLevelZero: {
      std::vector<DeviceInfo> devices;
      for (std::size_t pos : mine.positions) devices.push_back(info.devices[pos]);
      if (devices.size() > 1 && env.Get("ZE_ENABLE_PCI_ID_DEVICE_ORDER") != "1") {
        Mapping m;
        m.refusal = Refusal{
            "with several Intel GPUs, Level Zero numbers them in the driver's own order unless "
            "ZE_ENABLE_PCI_ID_DEVICE_ORDER=1 (then PCI bus order)"};
        return m;
      }
      // A SYCL program reads ONEAPI_DEVICE_SELECTOR on top of the Level Zero mask.
      const auto api = env.Get("ONEAPI_DEVICE_SELECTOR") ? LevelZeroApi::kSycl : LevelZeroApi::kLevelZero;
      return ResolveLevelZero(env, devices, api);
    }
  }
  return {};
}

}  // namespace gpulse::identity
