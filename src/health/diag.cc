#include "health/diag.h"

#include <fmt/format.h>
#include <unistd.h>

#include <sstream>

#include "sys/rooted_fs.h"

namespace gpulse::health {
namespace {

// Kernel modules that keep NVIDIA's driver from owning the GPU.
const char* const kDenylistedModules[] = {"nouveau", "nvidiafb", "rivafb", "rivatv"};

DiagTest Denylist(const DiagInputs& in) {
  DiagTest t{"Denylist", DiagResult::kPass, ""};
  sys::RootedFs proc(in.procfs_root);
  auto modules = proc.ReadFile("modules");
  if (!modules) {
    return {t.name, DiagResult::kSkip,
            "cannot read the loaded modules: " + modules.error().message};
  }
  std::istringstream lines(*modules);
  std::string line, found;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));
    for (const char* bad : kDenylistedModules) {
      if (name == bad) found += (found.empty() ? "" : ", ") + name;
    }
  }
  if (!found.empty()) {
    return {t.name, DiagResult::kFail,
            "denylisted driver module(s) loaded: " + found + " (unload, and blacklist them)"};
  }
  return t;
}

DiagTest NvmlLibrary(const DiagInputs& in) {
  const SystemInfo& s = *in.system;
  return {"NVML Library", DiagResult::kPass,
          fmt::format("{} (NVML {}, driver {}){}", s.library, s.library_version.value_or("?"),
                      s.driver_version.value_or("?"), s.simulated ? ", simulated" : "")};
}

DiagTest CudaLibrary(const DiagInputs& in) {
  DiagTest t{"CUDA Main Library", DiagResult::kPass, "libcuda.so.1 loads"};
  if (in.system->simulated) {
    return {t.name, DiagResult::kSkip, "simulated GPUs: there is no CUDA driver to load"};
  }
  std::string error;
  if (!in.load_library || !in.load_library("libcuda.so.1", &error)) {
    return {t.name, DiagResult::kFail, "libcuda.so.1 does not load: " + error};
  }
  return t;
}

DiagTest Permissions(const DiagInputs& in) {
  DiagTest t{"Permissions and OS Blocks", DiagResult::kPass, ""};
  if (in.system->simulated && in.dev_root == kDefaultDevRoot) {
    // Simulated GPUs have no device nodes; a fixture directory (--dev-root) still gets the check.
    return {t.name, DiagResult::kSkip, "simulated GPUs: there are no /dev/nvidia* nodes to check"};
  }
  std::vector<std::string> nodes = {"nvidiactl"};
  for (const DiagGpu& g : in.gpus) {
    if (g.minor_number) nodes.push_back("nvidia" + std::to_string(*g.minor_number));
  }
  std::string problems;
  for (const std::string& n : nodes) {
    std::string path = in.dev_root + "/" + n;
    if (access(path.c_str(), F_OK) != 0) {
      problems += (problems.empty() ? "" : "; ") + path + " does not exist";
    } else if (access(path.c_str(), R_OK | W_OK) != 0) {
      problems += (problems.empty() ? "" : "; ") + path + " is not readable and writable by uid " +
                  std::to_string(geteuid());
    }
  }
  if (!problems.empty()) return {t.name, DiagResult::kFail, problems};
  t.reason =
      fmt::format("{} device node(s) under {} readable and writable", nodes.size(), in.dev_root);
  return t;
}

DiagTest Persistence(const DiagInputs& in) {
  DiagTest t{"Persistence Mode", DiagResult::kPass, ""};
  std::string off, unknown;
  for (const DiagGpu& g : in.gpus) {
    if (!g.settings.persistence_mode)
      unknown += (unknown.empty() ? "" : ", ") + std::to_string(g.index);
    else if (!*g.settings.persistence_mode)
      off += (off.empty() ? "" : ", ") + std::to_string(g.index);
  }
  if (!off.empty()) {
    return {t.name, DiagResult::kWarn,
            "persistence mode is disabled on GPU " + off +
                ": the driver unloads between jobs (enable nvidia-persistenced)"};
  }
  if (!unknown.empty()) {
    return {t.name, DiagResult::kSkip,
            "the driver does not report persistence mode for GPU " + unknown};
  }
  return t;
}

const std::vector<std::string> kCudaVariables = {"CUDA_LAUNCH_BLOCKING",
                                                 "CUDA_INJECTION32_PATH",
                                                 "CUDA_INJECTION64_PATH",
                                                 "CUDA_AUTO_BOOST",
                                                 "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                                                 "CUDA_COREDUMP_FILE",
                                                 "CUDA_DEVICE_WAITS_ON_EXCEPTION",
                                                 "CUDA_PROFILE",
                                                 "CUDA_COMPUTE_PROFILE",
                                                 "NSIGHT_CUDA_DEBUGGER",
                                                 "OPENCL_PROFILE",
                                                 "OPENCL_COMPUTE_PROFILE"};

DiagTest Environment(const DiagInputs& in) {
  DiagTest t{"Environment Variables", DiagResult::kPass, ""};
  std::string set;
  for (const std::string& v : kCudaVariables) {
    const char* value = in.getenv ? in.getenv(v.c_str()) : nullptr;
    if (value != nullptr) set += (set.empty() ? "" : ", ") + v;
  }
  if (!set.empty()) {
    return {t.name, DiagResult::kWarn, "set, and they change CUDA's behaviour: " + set};
  }
  return t;
}

DiagTest PageRetirement(const DiagInputs& in) {
  DiagTest t{"Page Retirement/Row Remap", DiagResult::kPass, ""};
  std::string fail, warn;
  for (const DiagGpu& g : in.gpus) {
    const GpuReading& r = g.reading;
    if (r.row_remap_failure.value_or(0) > 0) {
      fail += fmt::format("{}GPU {}: a row-remap failure", fail.empty() ? "" : "; ", g.index);
    }
    if (r.retired_pending.value_or(0) > 0) {
      warn += fmt::format("{}GPU {}: a page retirement is pending (reset the GPU)",
                          warn.empty() ? "" : "; ", g.index);
    }
  }
  if (!fail.empty()) return {t.name, DiagResult::kFail, fail + (warn.empty() ? "" : "; " + warn)};
  if (!warn.empty()) return {t.name, DiagResult::kWarn, warn};
  return t;
}

DiagTest Graphics(const DiagInputs& in) {
  DiagTest t{"Graphics Processes", DiagResult::kPass, ""};
  std::string found;
  for (const DiagGpu& g : in.gpus) {
    if (!g.processes.processes) continue;
    for (const GpuProcess& p : *g.processes.processes) {
      if (p.graphics)
        found += fmt::format("{}PID {} on GPU {}", found.empty() ? "" : ", ", p.pid, g.index);
    }
  }
  if (!found.empty()) {
    return {t.name, DiagResult::kWarn, "graphics processes can disturb the results: " + found};
  }
  return t;
}

DiagTest Inforom(const DiagInputs& in) {
  DiagTest t{"Inforom", DiagResult::kPass, ""};
  std::string bad, unknown;
  for (const DiagGpu& g : in.gpus) {
    auto valid = g.settings.inforom_valid;
    if (!valid && g.reading.inforom_valid) valid = *g.reading.inforom_valid != 0;
    if (!valid)
      unknown += (unknown.empty() ? "" : ", ") + std::to_string(g.index);
    else if (!*valid)
      bad += (bad.empty() ? "" : ", ") + std::to_string(g.index);
  }
  if (!bad.empty()) return {t.name, DiagResult::kFail, "the InfoROM is corrupt on GPU " + bad};
  if (!unknown.empty()) {
    return {t.name, DiagResult::kSkip, "the driver cannot validate the InfoROM of GPU " + unknown};
  }
  return t;
}

}  // namespace

std::string_view DiagResultKey(DiagResult r) {
  switch (r) {
    case DiagResult::kPass:
      return "pass";
    case DiagResult::kWarn:
      return "warn";
    case DiagResult::kFail:
      return "fail";
    case DiagResult::kSkip:
      return "skip";
  }
  return "fail";
}

std::string_view DiagResultText(DiagResult r) {
  switch (r) {
    case DiagResult::kPass:
      return "Pass";
    case DiagResult::kWarn:
      return "Warn";
    case DiagResult::kFail:
      return "Fail";
    case DiagResult::kSkip:
      return "Skip";
  }
  return "Fail";
}

std::vector<DiagTest> RunLevel1(const DiagInputs& in) {
  return {Denylist(in),    NvmlLibrary(in),    CudaLibrary(in), Permissions(in), Persistence(in),
          Environment(in), PageRetirement(in), Graphics(in),    Inforom(in)};
}

DiagResult OverallResult(const std::vector<DiagTest>& tests) {
  DiagResult worst = DiagResult::kPass;
  for (const DiagTest& t : tests) {
    if (t.result == DiagResult::kFail) return DiagResult::kFail;
    if (t.result == DiagResult::kWarn) worst = DiagResult::kWarn;
  }
  return worst;
}

const std::vector<std::string>& CudaBehaviourVariables() { return kCudaVariables; }

}  // namespace gpulse::health
