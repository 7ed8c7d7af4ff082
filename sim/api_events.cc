// Events: XID critical errors only. A set delivers each XID of a registered device once, when the
// simulator clock has reached the fault's time, provided the device was registered at or before it
// (real NVML reports only events that happen after registration). An XID injected at run time
// (gpulseSimInjectFault) goes to the sets that had its device registered at the injection
// (Session::InjectFault settles that in EventSet::delivered), whatever the clock read when they
// registered. Due events come out in time order (index order among equal times): the event list
// is not sorted by time once one was injected.
#include <algorithm>
#include <chrono>
#include <optional>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::DeviceCtx;
using gpulse::sim::EventSet;
using gpulse::sim::OnDevice;
using gpulse::sim::OnSession;
using gpulse::sim::Session;
using gpulse::sim::Simulator;
using gpulse::sim::XidEvent;

namespace {

constexpr unsigned long long kSupportedEvents = nvmlEventTypeXidCriticalError;

bool Registered(const EventSet& set, const XidEvent& e) {
  if (e.injected) return true;  // sets without the device had it marked delivered at the injection
  return std::any_of(set.registrations.begin(), set.registrations.end(),
                     [&](const auto& r) { return r.device == e.device && r.since <= e.at; });
}

// The earliest undelivered event of `set` due by t (the lowest index among equal times); else
// nullopt, with `next` set to the time of the earliest one still to come (if any).
std::optional<size_t> NextDue(const Session& s, const EventSet& set, double t,
                              std::optional<double>& next) {
  const auto& xids = s.faults().Xids();
  std::optional<size_t> due;
  for (size_t i = 0; i < xids.size(); ++i) {
    if (set.delivered[i] || !Registered(set, xids[i])) continue;
    const double at = xids[i].at;
    if (at <= t) {
      if (!due || at < xids[*due].at) due = i;
    } else if (!next || at < *next) {
      next = at;
    }
  }
  if (due) next.reset();
  return due;
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = s.CreateEventSet();
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                        unsigned long long event_types,
                                                        nvmlEventSet_t set) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    EventSet* es = c.session.FindEventSet(set);
    if (es == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if ((event_types & ~kSupportedEvents) != 0) return NVML_ERROR_NOT_SUPPORTED;
    if (nvmlReturn_t r = c.Gate(Call::kEvents); r != NVML_SUCCESS) return r;
    if ((event_types & nvmlEventTypeXidCriticalError) == 0) return NVML_SUCCESS;
    for (const auto& r : es->registrations) {
      if (r.device == c.index()) return NVML_SUCCESS;  // already registered, keep the earlier time
    }
    es->registrations.push_back({c.index(), c.t});
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                   unsigned timeout_ms) {
  try {
    Simulator& sim = Simulator::Instance();
    std::unique_lock lock(sim.mutex());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      // Re-checked after every wait: a shutdown or nvmlEventSetFree may have happened meanwhile.
      Session* s = sim.session();
      if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
      EventSet* es = s->FindEventSet(set);
      if (es == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
      std::optional<double> next;
      if (auto due = NextDue(*s, *es, sim.Now(), next)) {
        const XidEvent& e = s->faults().Xids()[*due];
        es->delivered[*due] = true;
        *data = nvmlEventData_t{s->GpuHandle(e.device), nvmlEventTypeXidCriticalError, e.xid,
                                0xFFFFFFFFu, 0xFFFFFFFFu};
        return NVML_SUCCESS;
      }
      if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
      auto wake = deadline;
      if (!sim.frozen() && next) {
        wake = std::min(wake, sim.SteadyAt(*next) + std::chrono::microseconds(100));
      }
      // Also woken by gpulseSimSetClock, gpulseSimInjectFault and shutdown.
      sim.cv().wait_until(lock, wake);
    }
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return OnSession([&](Simulator& sim, Session& s) -> nvmlReturn_t {
    if (!s.FreeEventSet(set)) return NVML_ERROR_INVALID_ARGUMENT;
    sim.cv().notify_all();
    return NVML_SUCCESS;
  });
}
