#include "exporter/health.h"

#include <fmt/format.h>

namespace gpulse::exporter {

HealthVerdict EvaluateHealth(const SystemInfo& info, const Snapshot* snap, std::int64_t now,
                             std::int64_t staleness_ns,
                             std::optional<std::int64_t> in_flight_since) {
  if (in_flight_since && now - *in_flight_since > staleness_ns) {
    return {false, fmt::format("a device read has been running for {:.3f} s (limit {:.3f} s)",
                               (now - *in_flight_since) / 1e9, staleness_ns / 1e9)};
  }
  if (info.devices.empty()) return {false, "no GPU to read"};
  if (snap == nullptr) return {false, "no device read has completed yet"};
  if (now - snap->start_mono_ns > staleness_ns) {
    return {false, fmt::format("the last device read is {:.3f} s old (limit {:.3f} s)",
                               (now - snap->start_mono_ns) / 1e9, staleness_ns / 1e9)};
  }
  std::size_t readable = 0;
  for (std::size_t i = 0; i < snap->devices.size() && i < info.devices.size(); ++i) {
    const DeviceReading& d = snap->devices[i];
    if (d.sample.state == DeviceState::kLost) continue;
    ++readable;
    if (d.failed_calls > 0) {
      return {false, fmt::format("GPU {} ({}): {} call(s) failed in the last read",
                                 info.devices[i].index, info.devices[i].uuid, d.failed_calls)};
    }
  }
  if (readable == 0) return {false, "every GPU is lost"};
  return {true, "ok"};
}

}  // namespace gpulse::exporter
