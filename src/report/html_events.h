// The events of one GPU that the HTML report marks on its time axis: XID errors, throttling
// intervals (clock-event reasons other than gpu_idle) and the loss of the device. Pure functions of
// the Run, in seconds since the run started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/run.h"

namespace gpulse::report::html {

enum class EventKind { kXid, kThrottle, kLost };

struct Event {
  EventKind kind = EventKind::kXid;
  double start_s = 0;  // when it happened (throttle: when the interval began)
  double end_s = 0;    // throttle: the first sample without throttling (or the last sample)
  std::uint64_t xid = 0;
  std::string detail;  // throttle: the reason names; lost: the reason
};

// "xid", "throttle", "lost": the marker's class after "event".
const char* EventKindName(EventKind kind);

// Throttling intervals of device `device`: maximal runs of consecutive samples whose clock-event
// reasons have a bit other than bit 0 (gpu_idle) set. A sample without the reading ends a run.
std::vector<Event> ThrottleIntervals(const Run& run, std::uint32_t device);

// Every event of device `device`: its XIDs (run order), throttling intervals, and its loss when
// the entities record a loss time. Times are clamped at 0.
std::vector<Event> DeviceEvents(const Run& run, std::uint32_t device);

// Devices with events (XIDs or a timed loss) in index order.
std::vector<std::uint32_t> DevicesWithEvents(const Run& run);

// The hover text: "XID 79 at 1.5 s", "throttled 1 s – 2 s: hw_slowdown",
// "GPU lost at 1.5 s: REASON".
std::string EventText(const Event& e);

// Seconds without noise: 3 decimals at most, trailing zeros dropped ("0", "1.5", "1.252").
std::string FormatSeconds(double s);

}  // namespace gpulse::report::html
