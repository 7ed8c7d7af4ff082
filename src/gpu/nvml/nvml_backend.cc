#include "gpu/nvml/nvml_backend.h"

#include "core/clock.h"
#include "gpu/nvml/nvml_errors.h"
#include "gpu/nvml/nvml_library.h"
#include "gpu/nvml/nvml_structure.h"
#include "gpu/simulator.h"

namespace gpulse::nvml {

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::Create(const NvmlApi& api,
                                                         std::shared_ptr<void> keepalive,
                                                         std::string library_path) {
  auto enumeration = EnumerateDevices(api);
  if (!enumeration) return enumeration.error();
  std::unique_ptr<NvmlBackend> b(new NvmlBackend(api, std::move(keepalive)));
  b->info_ = std::move(enumeration->info);
  b->info_.library = std::move(library_path);
  if (api.GpulseSimScenario != nullptr) {
    b->info_.simulated = true;
    b->info_.scenario = api.GpulseSimScenario();
  }
  for (nvmlDevice_t h : enumeration->handles) {
    b->readers_.emplace_back(&b->api_, h);
    b->process_readers_.emplace_back(&b->api_, h);
  }
  b->RegisterXidEvents();
  return b;
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
  for (FieldIndex f : fields) {
    if (FieldAt(f).nvml == NvmlSource::kLastXid) {
      DrainEvents();
      break;
    }
  }
  out.t_mono_ns = MonotonicNowNs();
  out.t_unix_ns = UnixNowNs();
  readers_.at(pos).Read(fields, out, stats_);
}

ProcessList NvmlBackend::Processes(std::size_t pos) {
  return process_readers_.at(pos).Read(MonotonicNowNs(), UnixNowNs() / 1000);
}

Result<std::unique_ptr<gpu::Backend>> OpenNvmlBackend(const gpu::BackendOptions& options) {
  std::string path = ChooseLibraryPath(options.nvml_library);
  if (!options.simulate.empty()) {
    auto sim = gpu::PrepareSimulator(options);
    if (!sim) return sim.error();
    path = *sim;
  }
  auto lib = NvmlLibrary::Load(path);
  if (!lib) return lib.error();
  const NvmlApi& api = (*lib)->api();
  auto backend = NvmlBackend::Create(api, *lib, path);
  if (!backend) return backend.error();
  return std::unique_ptr<gpu::Backend>(std::move(backend).value());
}

}  // namespace gpulse::nvml
