// The session's faults evaluated at time t: which devices are lost or forbidden, which calls are
// NOT_SUPPORTED, which throttle reasons are active (and for how long so far: the violation
// timers), which gpm fault applies, the health counters, and the XID events. The faults are the
// scenario's, then those injected at run time (gpulseSimInjectFault), in injection order. A
// fault takes effect at `at` (inclusive) and, where it has `until`, ends there (exclusive). Counter
// faults add to the device's starting counters from `at` on.
//
// Thread-safety: not synchronised. Inject() appends; the simulator calls every method with its
// mutex held (sim_state.h), so const methods never run concurrently with Inject().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "scenario.h"

namespace gpulse::sim {

struct CounterValues {
  uint64_t ecc_sbe_volatile = 0, ecc_dbe_volatile = 0;
  uint64_t ecc_sbe_aggregate = 0, ecc_dbe_aggregate = 0;
  uint64_t pcie_replay = 0;
  uint64_t retired_sbe = 0, retired_dbe = 0;
  bool retired_pending = false;
  uint64_t remapped_correctable = 0, remapped_uncorrectable = 0;
  bool remap_pending = false, remap_failure = false;
  uint64_t nvlink_crc_flit = 0, nvlink_crc_data = 0, nvlink_replay = 0, nvlink_recovery = 0;
};

struct XidEvent {
  double at;
  unsigned device;
  unsigned long long xid;
  // Injected at run time: delivered to the event sets that had the device registered at the
  // injection (sim_state.h, EventSet), whatever the clock said at registration.
  bool injected = false;
};

class FaultState {
 public:
  // `scenario` must outlive this object; its faults are copied.
  explicit FaultState(const Scenario& scenario);

  // Adds a fault injected at run time (already validated against the scenario's devices). An XID
  // fault appends one XidEvent (injected = true) at the end of Xids(): the indices of the earlier
  // events never change.
  void Inject(const Fault& fault);

  bool Lost(unsigned device, double t) const;
  bool NoPermission(unsigned device, double t) const;
  // An inforom_corrupt fault is active at t: nvmlDeviceValidateInforom fails.
  bool InforomCorrupt(unsigned device, double t) const;
  // Static (`unsupported`, memory_temp/ecc flags) or a not_supported fault active at t.
  bool NotSupported(unsigned device, Call call, double t) const;
  unsigned long long ThrottleReasons(unsigned device, double t) const;
  // Seconds in [0, t] during which a throttle fault with a reason in `reasons` was active on the
  // device; overlapping faults count once (the union of their intervals).
  double ThrottledSeconds(unsigned device, unsigned long long reasons, double t) const;
  // The gpm fault active at t on the device (the first listed when several are), if any.
  std::optional<GpmFaultMode> Gpm(unsigned device, double t) const;
  CounterValues Counters(unsigned device, double t) const;
  // Every XID fault: the scenario's ordered by time (file order among equal times), then the
  // injected ones in injection order, so the list is NOT ordered by time once a fault has been
  // injected (an injected event can be earlier than a scenario event still to come). The index is
  // the event's id and stays the same for the session's life.
  const std::vector<XidEvent>& Xids() const { return xids_; }

 private:
  static bool Active(const Fault& f, double t) { return f.at <= t && (!f.until || t < *f.until); }

  const Scenario& scenario_;  // the devices (static NOT_SUPPORTED set, starting counters)
  std::vector<Fault> faults_;  // the scenario's, then the injected ones
  std::vector<XidEvent> xids_;
};

}  // namespace gpulse::sim
