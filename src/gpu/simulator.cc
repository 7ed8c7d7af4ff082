#include "gpu/simulator.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gpulse::gpu {
namespace fs = std::filesystem;

namespace {

bool LooksLikePath(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

Result<std::string> FindLibrary(const BackendOptions& options) {
  if (!options.simulator_library.empty()) return options.simulator_library;
  if (const char* env = std::getenv("GPULSE_SIM_LIBRARY"); env != nullptr && *env != '\0') return std::string(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {exe.parent_path() / kSimulatorLibraryName,
                                      exe.parent_path() / ".." / "lib" / "gpulse" / kSimulatorLibraryName}) {
      if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
    }
  }
  return NotFound(std::string("the NVML simulator (") + kSimulatorLibraryName +
                  ") is not next to the gpulse binary; set GPULSE_SIM_LIBRARY");
}

}  // namespace

Result<std::string> PrepareSimulator(const BackendOptions& options) {
  std::string scenario = options.simulate;
  if (LooksLikePath(scenario)) {
    std::error_code ec;
    const fs::file_status st = fs::status(scenario, ec);
    if (!fs::exists(st)) {
      return InvalidArgument("--simulate: scenario file " + scenario + " does not exist");
    }
    if (!fs::is_regular_file(st)) {  // a FIFO would block the simulator, /dev/zero never end
      return InvalidArgument("--simulate: scenario file " + scenario +
                             " is not a regular file (a FIFO, a device or a directory)");
    }
    scenario = fs::absolute(scenario, ec).string();
  }
  auto library = FindLibrary(options);
  if (!library) return library.error();
  setenv("GPULSE_SIM_SCENARIO", scenario.c_str(), 1);
  return library;
}

}  // namespace gpulse::gpu
