// The agent's clock: the real clocks, or a simulated one that stands still until a client advances
// it (`POST /api/v1/clock`, simulated devices only), so a test can watch fields for a simulated
// hour without waiting one. Watches tick on this clock; history, jobs and queries use its unix
// time.
//
// Simulated time s (seconds) is unix time kSimulatedEpochUnixNs + s, and the simulator is told s
// before every read (Backend::SetSimulatedClock), so the readings follow it. It starts at
// $GPULSE_SIM_CLOCK (the simulator's own variable) and, after a restart, never before the time the
// state database last saw: simulated time does not go backwards across restarts.
//
// Thread-compatible: used on the agent's worker thread only.
#pragma once

#include <cstdint>
#include <optional>

namespace gpulse::agent {

class AgentClock {
 public:
  static AgentClock Real();
  static AgentClock Simulated(double start_seconds);

  bool simulated() const { return simulated_; }
  std::int64_t NowUnixNs() const;
  std::int64_t NowMonoNs() const;
  // Simulated clocks: moves to `unix_ns` (never backwards). REQUIRES: simulated().
  void AdvanceTo(std::int64_t unix_ns);
  // Simulated seconds of a unix time, for Backend::SetSimulatedClock.
  double SimulatedSeconds(std::int64_t unix_ns) const;

 private:
  bool simulated_ = false;
  std::int64_t sim_unix_ns_ = 0;
};

}  // namespace gpulse::agent
