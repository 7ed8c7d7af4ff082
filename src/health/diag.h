// Level-1 diagnostics (DCGM's `dcgmi diag -r 1`, the "Deployment" checks): software and
// configuration checks that need no GPU kernel, each Pass, Warn, Fail or Skip with its reason.
// Levels 2 and 3 run GPU kernels (memory, PCIe bandwidth, stress) and are refused until gpulse has
// them.
//
// Every input comes through DiagInputs, so tests give fixture trees and fakes; the agent fills it
// from the backend, /proc, /dev and its own environment.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "health/reading.h"

namespace gpulse::health {

enum class DiagResult { kPass, kWarn, kFail, kSkip };
std::string_view DiagResultKey(DiagResult r);   // "pass", "warn", "fail", "skip"
std::string_view DiagResultText(DiagResult r);  // "Pass", "Warn", "Fail", "Skip" (dcgmi's table)

struct DiagTest {
  std::string name;  // dcgmi's row names: "Denylist", "NVML Library", ...
  DiagResult result = DiagResult::kPass;
  std::string reason;  // why, when not Pass (and what was found when Pass, if useful)
};

struct DiagGpu {
  unsigned index = 0;
  std::optional<unsigned> minor_number;  // /dev/nvidiaN
  DeviceSettings settings;
  GpuReading reading;  // the health fields, read now
  ProcessList processes;
};

inline constexpr const char* kDefaultDevRoot = "/dev";

struct DiagInputs {
  const SystemInfo* system = nullptr;
  std::vector<DiagGpu> gpus;          // the group's GPUs
  std::string procfs_root = "/proc";  // /proc/modules
  std::string dev_root = "/dev";      // /dev/nvidia* (simulated GPUs: skipped unless moved)
  // dlopen of the CUDA driver library; true when it loads. Not called for simulated GPUs.
  std::function<bool(const std::string& library, std::string* error)> load_library;
  std::function<const char*(const char*)> getenv;  // the agent's environment
};

// The level-1 checks, in dcgmi's order.
std::vector<DiagTest> RunLevel1(const DiagInputs& in);

// The worst result (Skip counts as Pass).
DiagResult OverallResult(const std::vector<DiagTest>& tests);

// The names of the level-1 checks and the environment variables they flag, for docs and tests.
const std::vector<std::string>& CudaBehaviourVariables();

}  // namespace gpulse::health
