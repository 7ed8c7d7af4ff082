// The simulator's process-wide state behind the exported C API: the reference-counted session (the
// loaded scenario, its device models, fault state, handles, event sets and GPM samples) and the
// clock.
//
// Ownership: one Simulator per process (never destroyed, so calls racing process exit stay safe). A
// Session lives from the nvmlInit_v2 that takes the count from 0 to 1 until the nvmlShutdown that
// takes it back to 0; device handles, event sets and GPM samples are pointers into it and die with
// it.
//
// Thread-safety: every member is guarded by mutex(); callers hold it (the C API takes it for the
// whole call). EventSetWait waits on cv() with the mutex released.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fault_state.h"
#include "gpu/nvml/nvml_abi.h"
#include "scenario.h"
#include "time_model.h"

namespace gpulse::sim {

// What an nvmlDevice_t points at.
struct DeviceHandle {
  unsigned index = 0;  // the GPU's index in the scenario
  int mig_slot = -1;   // >= 0: the MIG instance in that slot of the GPU
};

// What an nvmlEventSet_t points at.
struct EventSet {
  struct Registration {
    unsigned device;
    double since;  // t of registration; XIDs from then on are delivered
  };
  std::vector<Registration> registrations;
  // By XidEvent index (FaultState::Xids()); true once delivered, or when it will never be: an
  // injected event whose device this set did not have registered at the injection, or one
  // injected before the set was created. Session::InjectFault extends it for a new event.
  std::vector<bool> delivered;
};

// What an nvmlGpmSample_t points at: which scope nvmlGpmSampleGet / nvmlGpmMigSampleGet recorded
// and when. nvmlGpmMetricsGet computes from the load at the later sample's t.
struct GpmSample {
  bool filled = false;  // false until a SampleGet records into it
  unsigned device = 0;  // the GPU's index
  int mig_slot = -1;    // >= 0: the MIG instance in that slot (nvmlGpmMigSampleGet)
  double t = 0;
};

// The settings a caller can change (api_settings.cc) of one GPU. They start at the scenario's
// values (DefaultSettings); gpulseSimResetDevice puts them back and applies the pending ECC mode.
struct DeviceSettingsState {
  int compute_mode = 0;  // NVML_COMPUTEMODE_*
  bool ecc_current = true;
  bool ecc_pending = true;
  unsigned app_mem_clock_mhz = 0;
  unsigned app_sm_clock_mhz = 0;
  unsigned power_limit_mw = 0;  // the management limit, which is also the enforced limit
  // The volatile ECC counts at the last reset; volatile counts are reported relative to them.
  std::uint64_t ecc_sbe_volatile_cleared = 0;
  std::uint64_t ecc_dbe_volatile_cleared = 0;
};

// The settings of a GPU described by `spec` right after a driver load.
DeviceSettingsState DefaultSettings(const DeviceSpec& spec);

class Session {
 public:
  explicit Session(Scenario scenario);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Scenario& scenario() const { return scenario_; }
  const DeviceModel& model(unsigned index) const { return models_[index]; }
  const FaultState& faults() const { return faults_; }
  unsigned device_count() const { return static_cast<unsigned>(scenario_.devices.size()); }
  // REQUIRES: index < device_count()
  DeviceSettingsState& settings(unsigned index) { return settings_[index]; }
  const DeviceSettingsState& settings(unsigned index) const { return settings_[index]; }

  nvmlDevice_t GpuHandle(unsigned index) const;
  nvmlDevice_t MigHandle(unsigned index, unsigned slot) const;  // REQUIRES: slot < instance count
  // The handle `device` points at, or null when it is not one of this session's handles.
  const DeviceHandle* Find(nvmlDevice_t device) const;

  // Adds a fault injected at run time (gpulseSimInjectFault), validated against the scenario. An
  // XID fault is delivered to each event set that has its device registered now, once its time
  // (the injection's) is reached; a set created or registered later never sees it.
  void InjectFault(const Fault& fault);

  nvmlEventSet_t CreateEventSet();
  EventSet* FindEventSet(nvmlEventSet_t set);
  bool FreeEventSet(nvmlEventSet_t set);

  size_t gpm_sample_count() const { return gpm_samples_.size(); }
  nvmlGpmSample_t AllocGpmSample();
  GpmSample* FindGpmSample(nvmlGpmSample_t sample);  // null when not one of this session's
  bool FreeGpmSample(nvmlGpmSample_t sample);

 private:
  Scenario scenario_;
  std::vector<DeviceModel> models_;
  FaultState faults_;
  std::vector<DeviceSettingsState> settings_;           // by GPU index
  std::vector<std::unique_ptr<DeviceHandle>> handles_;  // GPUs first (by index), then MIG instances
  std::vector<std::vector<DeviceHandle*>> mig_handles_;  // [gpu][slot]
  std::vector<std::unique_ptr<EventSet>> event_sets_;
  std::vector<std::unique_ptr<GpmSample>> gpm_samples_;
};

class Simulator {
 public:
  static Simulator& Instance();

  std::mutex& mutex() { return mu_; }
  std::condition_variable& cv() { return cv_; }

  // REQUIRES for everything below: mutex() held.
  nvmlReturn_t Init();
  nvmlReturn_t Shutdown();
  Session* session() { return session_.get(); }

  // Seconds since the first successful nvmlInit_v2 (or the frozen value).
  double Now() const;
  bool frozen() const { return frozen_.has_value(); }
  void SetClock(double seconds);
  // The steady-clock instant at which simulator time is `t` (real clock only).
  std::chrono::steady_clock::time_point SteadyAt(double t) const;
  // Microseconds since 1970 at simulator time `t`, for nvmlFieldValue_t timestamps.
  long long UnixMicros(double t) const;

  const std::string& scenario_name() const { return scenario_name_; }
  // Why the last nvmlInit_v2 failed ("" after a success), or the last gpulseSimInjectFault (""
  // after a success): whichever came last.
  const std::string& last_error() const { return last_error_; }
  void set_last_error(std::string why) { last_error_ = std::move(why); }

  // Call counting (GPULSE_SIM_CALL_COUNTS=FILE, sim/README.md): the counters live in FILE, mapped
  // shared, so another process reads them while this one runs.
  enum Counter : int { kSessionCalls = 0, kDeviceCalls = 1, kUtilizationCalls = 2, kCounters };
  void Count(Counter c) {
    if (counts_ != nullptr) ++counts_[c];
  }

 private:
  Simulator() = default;

  std::mutex mu_;
  std::condition_variable cv_;
  int refcount_ = 0;
  std::unique_ptr<Session> session_;
  std::optional<std::chrono::steady_clock::time_point> epoch_;
  long long epoch_unix_us_ = 0;
  std::optional<double> frozen_;
  std::string scenario_name_;
  std::string last_error_;
  std::uint64_t* counts_ = nullptr;  // mapped from GPULSE_SIM_CALL_COUNTS, once
  bool counts_tried_ = false;
};

}  // namespace gpulse::sim
