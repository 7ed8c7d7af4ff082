#include "gpu/nvml/nvml_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/clock.h"
#include "gpu/nvml/driver_listing.h"
#include "gpu/nvml/nvml_errors.h"
#include "gpu/nvml/nvml_library.h"
#include "gpu/nvml/nvml_structure.h"
#include "gpu/simulator.h"
#include "sys/dynamic_library.h"

namespace gpulse::nvml {

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::Create(const NvmlApi& api,
                                                         std::shared_ptr<void> keepalive,
                                                         std::string library_path,
                                                         const std::string& procfs_root) {
  auto enumeration = EnumerateDevices(api);
  if (!enumeration) return enumeration.error();
  std::unique_ptr<NvmlBackend> b(new NvmlBackend(api, std::move(keepalive)));
  b->info_ = std::move(enumeration->info);
  b->info_.library = std::move(library_path);
  if (api.GpulseSimScenario != nullptr) {
    b->info_.simulated = true;
    b->info_.scenario = api.GpulseSimScenario();
  }
  if (!b->info_.skipped.empty() && !procfs_root.empty()) {
    FillSkippedIdentity(b->info_, ReadDriverGpus(sys::RootedFs(procfs_root)));
  }
  for (nvmlDevice_t h : enumeration->handles) {
    b->readers_.emplace_back(&b->api_, h);
    b->process_readers_.emplace_back(&b->api_, h);
  }
  for (const auto& handles : enumeration->mig_handles) {
    std::vector<DeviceReader> readers;
    for (nvmlDevice_t h : handles) readers.push_back(DeviceReader::ForInstance(&b->api_, h));
    b->instance_readers_.push_back(std::move(readers));
  }
  b->RegisterXidEvents();
  b->AttachGpm(enumeration->mig_handles);
  return b;
}

void NvmlBackend::AttachGpm(const std::vector<std::vector<nvmlDevice_t>>& mig_handles) {
  for (std::size_t pos = 0; pos < readers_.size(); ++pos) {
    DeviceReader& gpu = readers_[pos];
    gpu.AttachGpm(gpu.handle(), std::nullopt);
    DeviceInfo& info = info_.devices[pos];
    info.profiling = gpu.gpm()->Supported();
    info.profiling_unsupported_reason = gpu.gpm()->unsupported_reason();
    if (!info.profiling || pos >= mig_handles.size()) continue;
    for (std::size_t m = 0; m < instance_readers_[pos].size() && m < info.mig_instances.size();
         ++m) {
      const MigInstance& mig = info.mig_instances[m];
      // Without the GPU-instance id there is nothing to name in nvmlGpmMigSampleGet.
      if (mig.ids_known) instance_readers_[pos][m].AttachGpm(gpu.handle(), mig.gpu_instance_id);
    }
  }
}

void NvmlBackend::PrimeProfiling(std::span<const FieldIndex> fields) { PrimeGpm(fields, true); }

void NvmlBackend::PrimeGpm(std::span<const FieldIndex> fields, bool wait) {
  if (gpm_primed_) return;
  bool wanted = false;
  for (FieldIndex f : fields) wanted = wanted || FieldAt(f).nvml == NvmlSource::kGpm;
  if (!wanted) return;
  gpm_primed_ = true;
  // On a simulated clock the first samples are taken one floor earlier in simulated time, then the
  // clock is put back: the first read has values, and no real time is spent waiting.
  const std::optional<std::int64_t> simulated = simulated_ns_;
  if (simulated) SetSimulatedClock(static_cast<double>(*simulated - kGpmMinIntervalNs) / 1e9);
  std::optional<std::int64_t> last;  // when the last first sample was taken
  auto prime = [&](DeviceReader& r) {
    if (r.gpm() == nullptr || r.lost() || !r.gpm()->Supported()) return;
    const std::int64_t now = NowMonoNs();  // each entity's own time: the floor is per sample
    r.gpm()->Prime(now, stats_);
    if (r.gpm()->primed()) last = now;
  };
  for (DeviceReader& r : readers_) prime(r);
  for (auto& instances : instance_readers_) {
    for (DeviceReader& r : instances) prime(r);
  }
  if (simulated) {
    SetSimulatedClock(static_cast<double>(*simulated) / 1e9);
  } else if (last && wait) {
    SleepUntilMonotonicNs(*last + kGpmMinIntervalNs);
  }
}

NvmlBackend::~NvmlBackend() {
  if (events_ != nullptr && api_.EventSetFree != nullptr) api_.EventSetFree(events_);
}

void NvmlBackend::RegisterXidEvents() {
  bool have = api_.EventSetCreate && api_.DeviceRegisterEvents && api_.EventSetWait;
  if (have && api_.EventSetCreate(&events_) != NVML_SUCCESS) {
    events_ = nullptr;
    have = false;
  }
  for (DeviceReader& r : readers_) {
    if (!have || api_.DeviceRegisterEvents(r.handle(), nvmlEventTypeXidCriticalError, events_) !=
                     NVML_SUCCESS) {
      r.MarkUnsupported(Call::kXidEvents);
    }
  }
}

void NvmlBackend::DrainEvents() {
  if (events_ == nullptr) return;
  for (int guard = 0; guard < 1024; ++guard) {  // bounded: a storm cannot stall a tick
    nvmlEventData_t data{};
    if (api_.EventSetWait(events_, &data, 0) != NVML_SUCCESS) return;
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    for (DeviceReader& r : readers_) {
      if (r.handle() == data.device) r.RecordXid(data.eventData);
    }
  }
}

void NvmlBackend::Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) {
  PrimeGpm(fields, /*wait=*/false);
  for (FieldIndex f : fields) {
    if (FieldAt(f).nvml == NvmlSource::kLastXid) {
      DrainEvents();
      break;
    }
  }
  out.t_mono_ns = NowMonoNs();
  out.t_unix_ns = NowUnixNs();
  readers_.at(pos).Read(fields, out, stats_);
}

void NvmlBackend::ReadInstance(std::size_t pos, std::size_t mig_pos,
                               std::span<const FieldIndex> fields, Sample& out) {
  DeviceReader& r = instance_readers_.at(pos).at(mig_pos);
  if (readers_.at(pos).lost()) r.MarkLost();  // an instance goes with its GPU
  PrimeGpm(fields, /*wait=*/false);
  out.t_mono_ns = NowMonoNs();
  out.t_unix_ns = NowUnixNs();
  r.Read(fields, out, stats_);
  if (r.lost()) readers_[pos].MarkLost();
}

ProcessList NvmlBackend::Processes(std::size_t pos) {
  return process_readers_.at(pos).Read(NowMonoNs(), NowUnixNs() / 1000);
}

bool NvmlBackend::SetSimulatedClock(double seconds) {
  if (!info_.simulated || api_.GpulseSimSetClock == nullptr || !(seconds >= 0)) return false;
  api_.GpulseSimSetClock(seconds);
  simulated_ns_ = std::llround(seconds * 1e9);
  return true;
}

namespace {

// The NVML result of a settings call as a Status, with the error mapping Backend documents.
Status SettingStatus(nvmlReturn_t rc, const std::string& what) {
  if (rc == NVML_SUCCESS) return Status::Ok();
  const std::string message = what + ": " + ReturnName(rc);
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      return Error{ErrorCode::kNoPermission, message + " (changing GPU settings needs root)"};
    case NVML_ERROR_NOT_SUPPORTED:
      return Unavailable(message + " (the GPU does not support it)");
    case NVML_ERROR_INVALID_ARGUMENT:
      return InvalidArgument(message + " (the driver rejected the value)");
    case NVML_ERROR_GPU_IS_LOST:
      return NotFound(message + " (the GPU is lost)");
    default:
      return Unavailable(message);
  }
}

Error MissingSymbol(const char* name) {
  return Unavailable(std::string("the NVML library lacks ") + name);
}

std::optional<bool> Enabled(nvmlReturn_t rc, int state) {
  if (rc != NVML_SUCCESS) return std::nullopt;
  return state == NVML_FEATURE_ENABLED;
}

// One of NVML's clock lists: asks for the count, then fills; empty when anything fails. `list` is
// the call with every argument bound but the count and the buffer.
template <typename List>
std::vector<unsigned> ReadClockList(List&& list) {
  constexpr unsigned kMaxClocks = 4096;  // far above any GPU: a bad count cannot allocate much
  unsigned count = 0;
  nvmlReturn_t rc = list(&count, nullptr);
  if (rc == NVML_SUCCESS) return {};
  if (rc != NVML_ERROR_INSUFFICIENT_SIZE || count == 0 || count > kMaxClocks) return {};
  std::vector<unsigned> clocks(count);
  if (list(&count, clocks.data()) != NVML_SUCCESS) return {};
  clocks.resize(std::min<std::size_t>(count, clocks.size()));
  return clocks;
}

void ReadPowerSettings(const NvmlApi& a, nvmlDevice_t h, DeviceSettings& s) {
  unsigned mw = 0, max_mw = 0;
  if (a.DeviceGetPowerManagementLimit && a.DeviceGetPowerManagementLimit(h, &mw) == NVML_SUCCESS) {
    s.power_limit_w = mw / 1000.0;
  }
  if (a.DeviceGetPowerManagementDefaultLimit &&
      a.DeviceGetPowerManagementDefaultLimit(h, &mw) == NVML_SUCCESS) {
    s.default_power_limit_w = mw / 1000.0;
  }
  if (a.DeviceGetPowerManagementLimitConstraints &&
      a.DeviceGetPowerManagementLimitConstraints(h, &mw, &max_mw) == NVML_SUCCESS) {
    s.min_power_limit_w = mw / 1000.0;
    s.max_power_limit_w = max_mw / 1000.0;
  }
}

void ReadClockSettings(const NvmlApi& a, nvmlDevice_t h, DeviceSettings& s) {
  auto clock = [&](auto fn, int type) -> std::optional<unsigned> {
    unsigned mhz = 0;
    if (fn == nullptr || fn(h, type, &mhz) != NVML_SUCCESS) return std::nullopt;
    return mhz;
  };
  s.app_sm_clock_mhz = clock(a.DeviceGetApplicationsClock, NVML_CLOCK_GRAPHICS);
  s.app_mem_clock_mhz = clock(a.DeviceGetApplicationsClock, NVML_CLOCK_MEM);
  s.default_app_sm_clock_mhz = clock(a.DeviceGetDefaultApplicationsClock, NVML_CLOCK_GRAPHICS);
  s.default_app_mem_clock_mhz = clock(a.DeviceGetDefaultApplicationsClock, NVML_CLOCK_MEM);
  if (a.DeviceGetSupportedMemoryClocks == nullptr ||
      a.DeviceGetSupportedGraphicsClocks == nullptr) {
    return;
  }
  std::vector<unsigned> mem = ReadClockList(
      [&](unsigned* n, unsigned* out) { return a.DeviceGetSupportedMemoryClocks(h, n, out); });
  for (unsigned mem_mhz : mem) {
    std::vector<unsigned> sm = ReadClockList([&](unsigned* n, unsigned* out) {
      return a.DeviceGetSupportedGraphicsClocks(h, mem_mhz, n, out);
    });
    if (sm.empty()) continue;  // the lists stay parallel
    s.supported_mem_clocks_mhz.push_back(mem_mhz);
    s.supported_sm_clocks_mhz.push_back(std::move(sm));
  }
}

}  // namespace

DeviceSettings NvmlBackend::ReadSettings(std::size_t pos) {
  const NvmlApi& a = api_;
  const nvmlDevice_t h = readers_.at(pos).handle();
  DeviceSettings s;
  int mode = 0, pending = 0;
  if (a.DeviceGetComputeMode && a.DeviceGetComputeMode(h, &mode) == NVML_SUCCESS) {
    s.compute_mode = mode;
  }
  if (a.DeviceGetEccMode) {
    const nvmlReturn_t rc = a.DeviceGetEccMode(h, &mode, &pending);
    s.ecc_current = Enabled(rc, mode);
    s.ecc_pending = Enabled(rc, pending);
  }
  if (a.DeviceGetPersistenceMode) {
    const nvmlReturn_t rc = a.DeviceGetPersistenceMode(h, &mode);
    s.persistence_mode = Enabled(rc, mode);
  }
  ReadPowerSettings(a, h, s);
  ReadClockSettings(a, h, s);
  if (a.DeviceValidateInforom) {
    const nvmlReturn_t rc = a.DeviceValidateInforom(h);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_CORRUPTED_INFOROM) {
      s.inforom_valid = rc == NVML_SUCCESS;
    }
  }
  return s;
}

Status NvmlBackend::SetComputeMode(std::size_t pos, int mode) {
  if (api_.DeviceSetComputeMode == nullptr) return MissingSymbol("nvmlDeviceSetComputeMode");
  return SettingStatus(api_.DeviceSetComputeMode(readers_.at(pos).handle(), mode),
                       "setting compute mode " + std::to_string(mode));
}

Status NvmlBackend::SetEccMode(std::size_t pos, bool enabled) {
  if (api_.DeviceSetEccMode == nullptr) return MissingSymbol("nvmlDeviceSetEccMode");
  const int state = enabled ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return SettingStatus(api_.DeviceSetEccMode(readers_.at(pos).handle(), state),
                       std::string("setting ECC mode ") + (enabled ? "enabled" : "disabled"));
}

Status NvmlBackend::SetApplicationClocks(std::size_t pos, unsigned mem_mhz, unsigned sm_mhz) {
  if (api_.DeviceSetApplicationsClocks == nullptr) {
    return MissingSymbol("nvmlDeviceSetApplicationsClocks");
  }
  return SettingStatus(api_.DeviceSetApplicationsClocks(readers_.at(pos).handle(), mem_mhz, sm_mhz),
                       "setting application clocks " + std::to_string(mem_mhz) + "," +
                           std::to_string(sm_mhz) + " MHz");
}

Status NvmlBackend::SetPowerLimit(std::size_t pos, double watts) {
  if (api_.DeviceSetPowerManagementLimit == nullptr) {
    return MissingSymbol("nvmlDeviceSetPowerManagementLimit");
  }
  // NVML takes milliwatts in an unsigned int: refuse what cannot be one rather than wrap it.
  if (!(watts > 0) || watts > 4.0e6) {
    return InvalidArgument("a power limit must be a positive number of watts up to 4000000");
  }
  const auto mw = static_cast<unsigned>(std::llround(watts * 1000.0));
  return SettingStatus(api_.DeviceSetPowerManagementLimit(readers_.at(pos).handle(), mw),
                       "setting the power limit to " + std::to_string(mw) + " mW");
}

Status NvmlBackend::ResetGpu(std::size_t pos) {
  const DeviceInfo& device = info_.devices.at(pos);
  if (!info_.simulated || api_.GpulseSimResetDevice == nullptr) {
    return Unavailable(
        "a real GPU is not reset through NVML; the agent resets it only with --allow-reset");
  }
  return SettingStatus(api_.GpulseSimResetDevice(device.index),
                       "resetting simulated GPU " + std::to_string(device.index));
}

Status NvmlBackend::InjectFault(std::size_t pos, std::string_view fault) {
  const DeviceInfo& device = info_.devices.at(pos);
  if (!info_.simulated || api_.GpulseSimInjectFault == nullptr) {
    return Unavailable("fault injection needs simulated GPUs (--simulate)");
  }
  const std::string what = "injecting a fault into simulated GPU " + std::to_string(device.index);
  if (fault.find('\0') != std::string_view::npos) {
    return InvalidArgument(what + ": the fault text contains a NUL byte");
  }
  const std::string text(fault);
  const int rc = api_.GpulseSimInjectFault(device.index, text.c_str());
  if (rc == NVML_SUCCESS) return Status::Ok();
  std::string why = api_.GpulseSimLastError != nullptr ? api_.GpulseSimLastError() : "";
  if (why.empty()) why = ReturnName(static_cast<nvmlReturn_t>(rc));
  switch (rc) {
    case NVML_ERROR_INVALID_ARGUMENT:
      return InvalidArgument(what + ": " + why);
    case NVML_ERROR_GPU_IS_LOST:
      return NotFound(what + ": " + why);
    default:
      return Unavailable(what + ": " + why);
  }
}

std::int64_t NvmlBackend::NowMonoNs() const {
  return simulated_ns_ ? *simulated_ns_ : MonotonicNowNs();
}

std::int64_t NvmlBackend::NowUnixNs() const {
  return simulated_ns_ ? gpu::kSimulatedEpochUnixNs + *simulated_ns_ : UnixNowNs();
}

Result<std::unique_ptr<gpu::Backend>> OpenNvmlBackend(const gpu::BackendOptions& options) {
  std::string path = ChooseLibraryPath(options.nvml_library);
  if (!options.simulate.empty()) {
    auto sim = gpu::PrepareSimulator(options);
    if (!sim) return sim.error();
    path = *sim;
  }
  auto lib = NvmlLibrary::Load(path);
  if (!lib && !options.simulate.empty()) {
    // Asked for the simulator: its library missing is the user's setup, not "no NVIDIA driver".
    if (auto loaded = sys::DynamicLibrary::Open(path); !loaded) {
      return Error{
          ErrorCode::kNotFound,
          "--simulate: the NVML simulator library cannot be loaded: " + loaded.error().message};
    }
  }
  if (!lib && options.simulate.empty()) {
    // A library the user named (--nvml-lib, $GPULSE_NVML_LIBRARY) that does not load is a setup
    // mistake to fix, not "no NVIDIA GPU": never read past it (issue 40).
    const char* env = std::getenv("GPULSE_NVML_LIBRARY");
    const std::string named = !options.nvml_library.empty()  ? "--nvml-lib"
                              : env != nullptr && *env != '\0' ? "$GPULSE_NVML_LIBRARY"
                                                               : "";
    if (auto loaded = sys::DynamicLibrary::Open(path); !named.empty() && !loaded) {
      return Error{ErrorCode::kNotFound, named + ": the NVML library cannot be loaded: " +
                                             loaded.error().message};
    }
  }
  if (!lib) return lib.error();
  const NvmlApi& api = (*lib)->api();
  std::string procfs = options.procfs_root;
  if (procfs.empty()) {
    const char* env = std::getenv("GPULSE_PROCFS_ROOT");
    procfs = env != nullptr && *env != '\0' ? env : (options.simulate.empty() ? "/proc" : "");
  }
  auto backend = NvmlBackend::Create(api, *lib, path, procfs);
  if (!backend) return backend.error();
  return std::unique_ptr<gpu::Backend>(std::move(backend).value());
}

}  // namespace gpulse::nvml
