#include "exporter/snapshot.h"

#include "core/clock.h"

namespace gpulse::exporter {

bool Snapshot::AnyDeviceRead() const {
  for (const DeviceReading& d : devices) {
    if (d.sample.state == DeviceState::kOk && d.failed_calls == 0) return true;
  }
  return false;
}

std::shared_ptr<const Snapshot> ReadSnapshot(gpu::Backend& backend,
                                             std::span<const FieldIndex> fields) {
  auto s = std::make_shared<Snapshot>();
  s->start_mono_ns = MonotonicNowNs();
  s->fields.assign(fields.begin(), fields.end());
  s->devices.resize(backend.info().devices.size());
  for (std::size_t pos = 0; pos < s->devices.size(); ++pos) {
    std::uint64_t before = backend.stats().failed_calls;
    backend.Read(pos, fields, s->devices[pos].sample);
    s->devices[pos].failed_calls = backend.stats().failed_calls - before;
  }
  s->failed_calls_total = backend.stats().failed_calls;
  s->duration_ns = MonotonicNowNs() - s->start_mono_ns;
  return s;
}

}  // namespace gpulse::exporter
