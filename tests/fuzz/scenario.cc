// The simulator's scenario YAML (sim/scenario_parser.h) through ParseScenario, and what the
// simulator computes from an accepted scenario: every device's time model (power, energy,
// averages, utilization, memory, temperature, clocks) at a few times, loops and steps included.
// A scenario file is user input to the simulator (`--simulate PATH`), so a value the parser
// accepts must not make a reading overflow or divide by zero (UBSan: float-cast-overflow, ...);
// power is never negative and the energy counter never decreases.
#include <string>

#include "fuzz/fuzz_util.h"
#include "scenario_parser.h"
#include "time_model.h"

using namespace gpulse;
using namespace gpulse::sim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto s = ParseScenario(fuzz::Text(data, size), "fuzz.yaml", "fuzz");
  if (!s.ok()) {
    FUZZ_CHECK(s.error().message.find("fuzz.yaml") != std::string::npos);
    return 0;
  }
  for (unsigned i = 0; i < s->devices.size(); ++i) {
    DeviceModel m(s->devices[i], s->name, i);
    unsigned long long energy = 0;
    for (double t : {0.0, 0.25, 1.0, 7.5, 3600.0, 1e7}) {
      FUZZ_CHECK(m.PowerW(t) >= 0);
      (void)m.PowerInstantMw(t);
      const unsigned long long e = m.EnergyCounterMj(t);
      FUZZ_CHECK(e >= energy);  // an energy counter never runs backwards
      energy = e;
      (void)m.PowerUsageMw(t);
      (void)m.PowerAverageMw(t);
      (void)m.GpuUtil(t);
      (void)m.MemUtil(t);
      (void)m.EncUtil(t);
      (void)m.DecUtil(t);
      (void)m.UsedBytes(t);
      (void)m.TempC(t);
      (void)m.MemTempC(t);
      for (int type = 0; type < 4; ++type) (void)m.ClockMhz(type, t, t > 1);
      (void)m.Pstate(t);
    }
    (void)m.TotalBytes();
    (void)m.ReservedBytes();
  }
  return 0;
}
