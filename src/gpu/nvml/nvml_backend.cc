#include "gpu/nvml/nvml_backend.h"

#include <cmath>
#include <cstdlib>

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

void NvmlBackend::PrimeGpm(std::span<const FieldIndex> fields) {
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
  } else if (last) {
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
  PrimeGpm(fields);
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
  PrimeGpm(fields);
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
