// Where `--simulate NAME|PATH` finds gpulse's NVML simulator (sim/), and how the scenario reaches it:
// the simulator is an ordinary NVML library loaded through the normal loader, told its scenario by
// the GPULSE_SIM_SCENARIO environment variable.
#pragma once

#include <string>

#include "core/result.h"
#include "gpu/backend.h"

namespace gpulse::gpu {

inline constexpr const char* kSimulatorLibraryName = "libgpulse-nvml-sim.so";

// Resolves the simulator library (options.simulator_library, else $GPULSE_SIM_LIBRARY, else next to
// the running binary, else ../lib/gpulse/ beside it), sets GPULSE_SIM_SCENARIO to the scenario (a
// built-in name as given, a file path made absolute) and returns the library path to load.
Result<std::string> PrepareSimulator(const BackendOptions& options);

}  // namespace gpulse::gpu
