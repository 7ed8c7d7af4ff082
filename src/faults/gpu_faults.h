// One GPU's Xids from every source, counted once, and the action they call for (docs/faults.md).
//
// Counting: NVML delivers an Xid only to a process subscribed when it happened; the kernel log has
// every Xid of the boot. Records older than the tracker (`before_start`) are counted as they are;
// after that, each source sees the same events, so an Xid code's count is the before-start count
// plus the larger of the two sources' counts. The n-th report of a code is the same event whichever
// source gave it first: the second source's report only adds what it knows (the driver's message,
// the process), never a second count.
//
// Actions: each new Xid resolves to an action (CatalogueAction, then the conditional buckets:
// Xid 154's recovery action from its message, Xid 45 ignored when another Xid caused it, Xid 48 a
// drain and reset with Xid 63 or 64); IGNORE adds nothing. A pending action clears when it is seen
// done: RESTART_APP when the process the Xid named has exited (else with a reset), the reset class
// with a GPU reset or the driver's recovery action going back to none, everything with a reboot.
//
// Pure: no clock and no I/O; times and process liveness come from the caller. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/xid_catalogue.h"

namespace gpulse::faults {

struct XidReport {
  std::uint64_t xid = 0;
  std::int64_t t_unix_ns = 0;
  std::optional<std::uint32_t> pid;  // the process the driver named
  bool pid_alive = false;            // it was running (visible) when the Xid came
  std::optional<std::string> text;   // the driver's message (kernel log only)
};

class GpuFaults {
 public:
  // A kernel-log report; `before_start`: older than the tracker, so NVML cannot have it.
  void FromKernelLog(const XidReport& r, bool before_start);
  // An NVML event (no message, no process).
  void FromNvml(std::uint64_t xid, std::int64_t t_unix_ns);

  // A GPU reset was seen (or the driver's recovery action went back to none): the reset class and
  // the process class clear. A reboot: everything clears, and the counts so far are kept while the
  // matching of the two sources starts over (no event of the new boot is one of the old).
  void NoteReset();
  void NoteReboot();
  // The driver's recovery action as NVML's field reports it (0 none).
  void NoteDriverAction(std::uint64_t value, std::int64_t t_unix_ns);
  // RESTART_APP actions whose process `alive` says has exited clear.
  void ClearExited(const std::function<bool(std::uint32_t)>& alive);

  // The Xid codes counted since the last call (each event once), oldest first.
  std::vector<std::uint64_t> TakeNewEvents();
  // Every code's count, ascending code order.
  std::vector<XidCount> Counts() const;
  std::optional<std::uint64_t> last_xid() const { return last_xid_; }
  // The most severe pending action (the newest among equals), or NONE.
  XidAction Recommended() const;
  std::size_t pending() const { return pending_.size(); }
  // Reports of codes beyond kMaxCodes distinct ones, not counted (a hostile or corrupt log).
  std::uint64_t dropped() const { return dropped_; }

 private:
  struct Count {
    std::uint64_t before = 0, nvml = 0, log = 0;
  };
  struct Pending {
    const ActionInfo* action;
    std::uint64_t xid;
    std::int64_t t_unix_ns;
    std::optional<std::uint32_t> pid;  // set only when it was alive: exiting clears RESTART_APP
    bool from_driver;
    bool has_text;
  };
  // The count of `xid`, or null when it would be a code past kMaxCodes.
  Count* CountOf(std::uint64_t xid);
  void NewEvent(const XidReport& r);
  // Adds the report's details to the pending action its first source raised without them.
  void Refine(const XidReport& r);
  void Raise(const XidReport& r);
  void Add(Pending p);
  void Clear(bool reset, bool reboot);

  std::map<std::uint64_t, Count> counts_;
  std::vector<std::uint64_t> new_events_;  // at most kMaxNewEvents, the oldest dropped
  std::vector<Pending> pending_;           // at most kMaxPending
  // When the last Xid other than 45, and the last 63 or 64, came (the incident window).
  std::optional<std::int64_t> last_other_ns_, last_retirement_ns_;
  std::optional<std::uint64_t> last_xid_;
  std::uint64_t driver_action_ = 0;
  std::uint64_t dropped_ = 0;
};

// Bounds on what a log can make one GPU hold: distinct codes counted (the catalogue has 176),
// actions pending (one per action and process, the least severe dropped first), and events kept
// for a reader that does not come.
inline constexpr std::size_t kMaxCodes = 512;
inline constexpr std::size_t kMaxPending = 64;
inline constexpr std::size_t kMaxNewEvents = 4096;

// How far apart two Xids may be and still count as one incident (Xid 45 after another Xid, Xid 48
// with 63 or 64).
inline constexpr std::int64_t kIncidentWindowNs = 10'000'000'000;

}  // namespace gpulse::faults
