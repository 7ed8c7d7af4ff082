// The simulator-only functions libgpulse-nvml-sim.so exports next to the NVML API. gpulse and the
// tests reach them through dlsym; their presence is how a caller tells the simulator from a driver.
#pragma once

#define GPULSE_SIM_API __attribute__((visibility("default")))

extern "C" {

// The name of the scenario the last successful nvmlInit_v2 loaded ("" before any). The pointer is
// valid until the next nvmlInit_v2.
GPULSE_SIM_API const char* gpulseSimScenarioName(void);

// Why the last nvmlInit_v2 failed with NVML_ERROR_UNKNOWN ("" after a success): unset or unknown
// GPULSE_SIM_SCENARIO (listing the built-in names), a YAML error with its line, or an invalid value
// naming the file, line, key and problem. Valid until the next nvmlInit_v2.
GPULSE_SIM_API const char* gpulseSimLastError(void);

// Tests: freeze the simulator clock at `seconds` since the first nvmlInit_v2; a negative value
// resumes the real monotonic clock. Wakes nvmlEventSetWait_v2 callers so they re-check.
GPULSE_SIM_API void gpulseSimSetClock(double seconds);

// Simulates a GPU reset of the GPU at `index`, as a policy action or `nvidia-smi -r` would: compute
// mode, application clocks and power limit return to their defaults, the pending ECC mode becomes
// the current one, and the volatile ECC counters restart at 0 (aggregate counters keep their
// counts). Returns an nvmlReturn_t value: NVML_SUCCESS, NVML_ERROR_GPU_IS_LOST for a lost GPU,
// NVML_ERROR_INVALID_ARGUMENT for an index past the device count, NVML_ERROR_UNINITIALIZED before
// nvmlInit_v2.
GPULSE_SIM_API int gpulseSimResetDevice(unsigned index);

// The built-in scenario names, comma separated ("1xH200,4xA40-tp2,..."). Static storage.
GPULSE_SIM_API const char* gpulseSimBuiltinScenarios(void);

}  // extern "C"
