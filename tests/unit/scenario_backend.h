// For tests: the NVML backend over the simulator loaded as `--simulate FILE` loads it (the real
// dlopen path), on a scenario written into a directory of the test's own, removed afterwards.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "gpu/backend.h"
#include "gpu/nvml/nvml_backend.h"

namespace gpulse::testing {

class ScenarioDir {
 public:
  // A directory named after `prefix`, the process and `name` (the test's), holding `scenario`.
  ScenarioDir(std::string_view prefix, std::string_view name, std::string_view scenario)
      : dir_(std::filesystem::temp_directory_path() /
             (std::string(prefix) + "-" + std::to_string(getpid()) + "-" + std::string(name))) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "scenario.yaml") << scenario;
  }
  ~ScenarioDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScenarioDir(const ScenarioDir&) = delete;
  ScenarioDir& operator=(const ScenarioDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // The NVML backend over the simulator on this scenario.
  Result<std::unique_ptr<gpu::Backend>> Open() const {
    gpu::BackendOptions options;
    options.simulate = (dir_ / "scenario.yaml").string();
    options.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
    return nvml::OpenNvmlBackend(options);
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace gpulse::testing
