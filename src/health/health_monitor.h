// A health watch over one GPU (DCGM's background health checks, `dcgmi health --check`): it is fed
// every reading of the GPU's health fields and judges, when asked, each subsystem over a recent
// window. Pure: no clock, no I/O; times come with the readings.
//
// The rules (docs/health.md, "Health watches"):
//   PCIe     more than 8 replays in the last minute: warn (the seed's rule); XID 79: fail.
//   Memory   volatile double-bit ECC errors, a row-remap failure, 512 or more uncorrectable
//            remapped rows, 63 or more retired pages or more than 15 retired for DBEs: fail;
//            a page retirement pending: warn; memory XIDs per their documented action.
//   InfoROM  the InfoROM does not validate (field 84 = 0): warn, as `dcgmi health` reports it.
//   Thermal  the thermal violation time grew within the window: warn. Power: the same for power.
//   NVLink   CRC or replay errors grew within the window: warn; recovery errors grew, or XID 74:
//            fail.
//   Driver   XIDs the driver raises about the GPU (GSP, micro-controller, unclassified codes).
// A lost GPU fails every watched subsystem. "Grew within the window" compares the newest reading
// with the oldest one the window still holds: counters that only ever grew before the watch began
// are not held against the GPU.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "health/reading.h"
#include "health/systems.h"

namespace gpulse::health {

struct Incident {
  Subsystem system;
  Verdict verdict;
  std::string message;
};

struct GpuHealth {
  Verdict overall = Verdict::kPass;
  // One verdict per watched subsystem, in AllSubsystems() order.
  std::vector<std::pair<Subsystem, Verdict>> systems;
  std::vector<Incident> incidents;
};

inline constexpr std::int64_t kPcieReplayWindowMs = 60'000;
inline constexpr double kPcieReplaysPerMinute = 8;

class HealthMonitor {
 public:
  // `window_ms`: how far back counters and XIDs are judged (dcgmi's max keep age, 600 s).
  explicit HealthMonitor(std::int64_t window_ms = 600'000);

  // REQUIRES: readings come in time order. The XIDs of the first reading are not kept: they may be
  // the driver's backlog from before the watch. Readings closer together than the window's
  // resolution (a 3,600th of it, at least 1 s) merge into one point, so a monitor holds at most
  // about 3,600 points whatever the read cadence.
  void Observe(const GpuReading& r);
  // The verdict of the subsystems in `systems` at `now_ms`; `gpu` names the GPU in messages.
  GpuHealth Check(unsigned systems, unsigned gpu, std::int64_t now_ms) const;
  std::int64_t window_ms() const { return window_ms_; }
  // Changes the window, keeping what the new one still covers.
  void set_window(std::int64_t window_ms);

 private:
  struct Point {
    std::int64_t t_ms;
    GpuReading reading;  // only the counters judged over the window (xids moved out)
  };
  struct XidEvent {
    std::int64_t t_ms;
    std::uint64_t xid;
  };
  void Trim(std::int64_t now_ms);

  std::int64_t window_ms_;
  std::deque<Point> points_;  // readings within the window, oldest first
  std::deque<XidEvent> xids_;
  GpuReading latest_;  // the newest value of every field ever read
  bool lost_ = false;
  bool primed_ = false;  // a first reading was seen
};

// The worst verdict of several GPUs' health (a group's overall health).
Verdict Overall(const std::vector<GpuHealth>& gpus);

}  // namespace gpulse::health
