#include "sim_state.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "scenario_parser.h"

namespace gpulse::sim {

DeviceSettingsState DefaultSettings(const DeviceSpec& spec) {
  DeviceSettingsState s;
  s.compute_mode = spec.compute_mode;
  s.ecc_current = s.ecc_pending = spec.ecc;
  s.app_mem_clock_mhz = spec.max_mem_clock_mhz;
  s.app_sm_clock_mhz = spec.max_sm_clock_mhz;
  s.power_limit_mw = static_cast<unsigned>(std::lround(spec.power_limit_w * 1000.0));
  return s;
}

Session::Session(Scenario scenario) : scenario_(std::move(scenario)), faults_(scenario_) {
  const unsigned n = device_count();
  for (unsigned i = 0; i < n; ++i) settings_.push_back(DefaultSettings(scenario_.devices[i]));
  models_.reserve(n);
  for (unsigned i = 0; i < n; ++i) models_.emplace_back(scenario_.devices[i], scenario_.name, i);
  for (unsigned i = 0; i < n; ++i) {
    handles_.push_back(std::make_unique<DeviceHandle>(DeviceHandle{i, -1}));
  }
  mig_handles_.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    const auto& instances = scenario_.devices[i].mig.instances;
    for (size_t slot = 0; slot < instances.size(); ++slot) {
      handles_.push_back(std::make_unique<DeviceHandle>(DeviceHandle{i, static_cast<int>(slot)}));
      mig_handles_[i].push_back(handles_.back().get());
    }
  }
}

nvmlDevice_t Session::GpuHandle(unsigned index) const {
  return reinterpret_cast<nvmlDevice_t>(handles_[index].get());
}

nvmlDevice_t Session::MigHandle(unsigned index, unsigned slot) const {
  return reinterpret_cast<nvmlDevice_t>(mig_handles_[index][slot]);
}

const DeviceHandle* Session::Find(nvmlDevice_t device) const {
  if (device == nullptr) return nullptr;
  for (const auto& h : handles_) {
    if (reinterpret_cast<nvmlDevice_t>(h.get()) == device) return h.get();
  }
  return nullptr;
}

void Session::InjectFault(const Fault& fault) {
  faults_.Inject(fault);
  if (fault.kind != FaultKind::kXid) return;
  for (const auto& set : event_sets_) {
    const bool registered =
        std::any_of(set->registrations.begin(), set->registrations.end(),
                    [&](const EventSet::Registration& r) { return r.device == fault.device; });
    set->delivered.push_back(!registered);  // true: never delivered to this set
  }
}

nvmlEventSet_t Session::CreateEventSet() {
  auto set = std::make_unique<EventSet>();
  const auto& xids = faults_.Xids();
  set->delivered.resize(xids.size());
  // A set created after an injection never sees the injected events (they happened before it).
  for (size_t i = 0; i < xids.size(); ++i) set->delivered[i] = xids[i].injected;
  event_sets_.push_back(std::move(set));
  return reinterpret_cast<nvmlEventSet_t>(event_sets_.back().get());
}

EventSet* Session::FindEventSet(nvmlEventSet_t set) {
  for (const auto& s : event_sets_) {
    if (reinterpret_cast<nvmlEventSet_t>(s.get()) == set) return s.get();
  }
  return nullptr;
}

bool Session::FreeEventSet(nvmlEventSet_t set) {
  auto it = std::find_if(event_sets_.begin(), event_sets_.end(), [&](const auto& s) {
    return reinterpret_cast<nvmlEventSet_t>(s.get()) == set;
  });
  if (it == event_sets_.end()) return false;
  event_sets_.erase(it);
  return true;
}

nvmlGpmSample_t Session::AllocGpmSample() {
  gpm_samples_.push_back(std::make_unique<GpmSample>());
  return reinterpret_cast<nvmlGpmSample_t>(gpm_samples_.back().get());
}

GpmSample* Session::FindGpmSample(nvmlGpmSample_t sample) {
  if (sample == nullptr) return nullptr;
  for (const auto& s : gpm_samples_) {
    if (reinterpret_cast<nvmlGpmSample_t>(s.get()) == sample) return s.get();
  }
  return nullptr;
}

bool Session::FreeGpmSample(nvmlGpmSample_t sample) {
  auto it = std::find_if(gpm_samples_.begin(), gpm_samples_.end(), [&](const auto& s) {
    return reinterpret_cast<nvmlGpmSample_t>(s.get()) == sample;
  });
  if (it == gpm_samples_.end()) return false;
  gpm_samples_.erase(it);
  return true;
}

Simulator& Simulator::Instance() {
  static Simulator* instance = [] {
    auto* s = new Simulator();  // never destroyed: see the header
#ifdef __SANITIZE_ADDRESS__
    // gpulse dlcloses the simulator, which unmaps the only pointer to it: not a leak.
    __lsan_ignore_object(s);
#endif
    return s;
  }();
  return *instance;
}

namespace {

// Maps FILE (created or truncated to one page, counters zeroed) shared; nullptr when it cannot.
std::uint64_t* MapCounters(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (ftruncate(fd, 4096) == 0) p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<std::uint64_t*>(p);
}

}  // namespace

nvmlReturn_t Simulator::Init() {
  if (!counts_tried_) {
    counts_tried_ = true;
    if (const char* path = std::getenv("GPULSE_SIM_CALL_COUNTS"); path != nullptr && *path != '\0')
      counts_ = MapCounters(path);
  }
  if (refcount_ > 0) {
    ++refcount_;
    return NVML_SUCCESS;
  }
  Result<Scenario> loaded = LoadScenario(std::getenv("GPULSE_SIM_SCENARIO"));
  if (!loaded.ok()) {
    last_error_ = loaded.error().message;
    return NVML_ERROR_UNKNOWN;
  }
  // GPULSE_SIM_CLOCK=SECONDS freezes the clock, as gpulseSimSetClock does, for programs that cannot
  // call it (gpulse's golden exposition files come from `gpulse exporter --once` under it).
  if (const char* clock = std::getenv("GPULSE_SIM_CLOCK"); clock != nullptr && *clock != '\0') {
    char* end = nullptr;
    double t = std::strtod(clock, &end);
    if (end == clock || *end != '\0' || !(t >= 0) || t > 1e9) {
      last_error_ =
          std::string("GPULSE_SIM_CLOCK: \"") + clock + "\" is not a number of seconds >= 0";
      return NVML_ERROR_UNKNOWN;
    }
    frozen_ = t;
  }
  session_ = std::make_unique<Session>(std::move(loaded).value());
  scenario_name_ = session_->scenario().name;
  last_error_.clear();
  if (!epoch_) {
    epoch_ = std::chrono::steady_clock::now();
    epoch_unix_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  }
  refcount_ = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::Shutdown() {
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--refcount_ == 0) {
    session_.reset();
    cv_.notify_all();  // event waiters see the session gone
  }
  return NVML_SUCCESS;
}

double Simulator::Now() const {
  if (frozen_) return *frozen_;
  if (!epoch_) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *epoch_).count();
}

void Simulator::SetClock(double seconds) {
  if (seconds >= 0) {
    frozen_ = seconds;
  } else {
    frozen_.reset();
  }
  cv_.notify_all();
}

std::chrono::steady_clock::time_point Simulator::SteadyAt(double t) const {
  auto base = epoch_.value_or(std::chrono::steady_clock::now());
  return base + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(t));
}

long long Simulator::UnixMicros(double t) const {
  return epoch_unix_us_ + static_cast<long long>(t * 1e6);
}

}  // namespace gpulse::sim
