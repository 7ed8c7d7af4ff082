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
// naming the file, line, key and problem. gpulseSimInjectFault sets it too: why the last injection
// was refused ("" after a success; one refused with NVML_ERROR_UNINITIALIZED leaves it alone).
// Valid until the next nvmlInit_v2 or gpulseSimInjectFault.
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

// Injects a fault into the GPU at `index` now (at the simulator's current time, frozen or not), as
// if the scenario had listed it. `fault` is one YAML map in the grammar of a scenario's `faults:`
// entry (sim/README.md, "Faults") without `device` (the index gives it) and without `at` (it
// takes effect now); the kinds that allow `until` take an optional `duration_s` (> 0) instead,
// making the fault end at now + duration_s. Examples: "{kind: xid, xid: 79}",
// "{kind: ecc, sbe: 0, dbe: 1}", "{kind: throttle, reasons: [sw_thermal_slowdown], duration_s: 5}",
// "{kind: gpu_lost}". The same keys, values and consistency checks as a scenario's faults apply
// (ecc needs `ecc: true`, ...). An injected xid is delivered once to each event set that has the
// device registered at the injection (not to sets created or registered later); waiters in
// nvmlEventSetWait_v2 wake up. Injected faults last until nvmlShutdown ends the session.
// Returns an nvmlReturn_t value: NVML_SUCCESS; NVML_ERROR_UNINITIALIZED before nvmlInit_v2;
// NVML_ERROR_INVALID_ARGUMENT for an index past the device count, a null or bad fault;
// NVML_ERROR_GPU_IS_LOST when the GPU is already lost. On an error gpulseSimLastError() says why
// (UNINITIALIZED excepted). Thread-safe, like every simulator call.
GPULSE_SIM_API int gpulseSimInjectFault(unsigned index, const char* fault);

// The true energy of the GPU at `index` over [t0, t1] (seconds on the simulator's clock, as
// gpulseSimSetClock takes them), in joules: the exact integral of its power curve, which no reading
// rounds, averages or delays. Tests check reported energy and its bound against it. NaN before
// nvmlInit_v2, for an index past the device count, or when t1 < t0.
GPULSE_SIM_API double gpulseSimTrueEnergyJ(unsigned index, double t0, double t1);

// The built-in scenario names, comma separated ("1xH200,4xA40-tp2,..."). Static storage.
GPULSE_SIM_API const char* gpulseSimBuiltinScenarios(void);

}  // extern "C"
