#include "agent/clock.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "gpu/backend.h"

namespace gpulse::agent {

AgentClock AgentClock::Real() { return AgentClock(); }

AgentClock AgentClock::Simulated(double start_seconds) {
  AgentClock c;
  c.simulated_ = true;
  c.sim_unix_ns_ = gpu::kSimulatedEpochUnixNs + std::llround(std::max(0.0, start_seconds) * 1e9);
  return c;
}

std::int64_t AgentClock::NowUnixNs() const { return simulated_ ? sim_unix_ns_ : UnixNowNs(); }

std::int64_t AgentClock::NowMonoNs() const {
  return simulated_ ? sim_unix_ns_ - gpu::kSimulatedEpochUnixNs : MonotonicNowNs();
}

void AgentClock::AdvanceTo(std::int64_t unix_ns) { sim_unix_ns_ = std::max(sim_unix_ns_, unix_ns); }

double AgentClock::SimulatedSeconds(std::int64_t unix_ns) const {
  return static_cast<double>(unix_ns - gpu::kSimulatedEpochUnixNs) / 1e9;
}

}  // namespace gpulse::agent
