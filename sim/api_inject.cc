// gpulseSimInjectFault: a fault added to the running session at the simulator's current time, in
// the scenario's fault grammar (sim/README.md, "Injecting faults at run time").
#include <string>

#include "api_common.h"
#include "gpulse_sim.h"
#include "scenario_parser.h"

using gpulse::sim::Fault;
using gpulse::sim::OnSession;
using gpulse::sim::Session;
using gpulse::sim::Simulator;

GPULSE_SIM_EXPORT int gpulseSimInjectFault(unsigned index, const char* fault) {
  return OnSession([&](Simulator& sim, Session& session) -> nvmlReturn_t {
    const unsigned n = session.device_count();
    if (index >= n) {
      sim.set_last_error("injected fault: device index " + std::to_string(index) +
                         " is out of range (the scenario has " + std::to_string(n) + " device" +
                         (n == 1 ? "" : "s") + ")");
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (fault == nullptr) {
      sim.set_last_error("injected fault: the fault text is null");
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const double now = sim.Now();
    if (session.faults().Lost(index, now)) {
      sim.set_last_error("injected fault: GPU " + std::to_string(index) +
                         " is lost; nothing more can happen to it");
      return NVML_ERROR_GPU_IS_LOST;
    }
    gpulse::Result<Fault> parsed =
        gpulse::sim::ParseInjectedFaultText(fault, session.scenario().devices, index, now);
    if (!parsed.ok()) {
      sim.set_last_error(parsed.error().message);
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    session.InjectFault(parsed.value());
    sim.set_last_error("");
    sim.cv().notify_all();  // event waiters re-check: an XID may be due now
    return NVML_SUCCESS;
  });
}
