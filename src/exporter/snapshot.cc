#include "exporter/snapshot.h"

#include "core/clock.h"

namespace gpulse::exporter {

bool Snapshot::AnyDeviceRead() const {
  for (const DeviceReading& d : entities) {
    if (d.readable && d.sample.state == DeviceState::kOk && d.failed_calls == 0) return true;
  }
  return false;
}

std::shared_ptr<const Snapshot> ReadSnapshot(gpu::Backend& backend, const std::vector<Entity>& entities,
                                             std::span<const FieldIndex> fields) {
  auto s = std::make_shared<Snapshot>();
  s->start_mono_ns = MonotonicNowNs();
  s->fields.assign(fields.begin(), fields.end());
  s->entities.resize(entities.size());
  for (std::size_t pos = 0; pos < entities.size(); ++pos) {
    std::uint64_t before = backend.stats().failed_calls;
    gpu::ReadEntity(backend, entities[pos], fields, s->entities[pos].sample);
    s->entities[pos].failed_calls = backend.stats().failed_calls - before;
    s->entities[pos].readable = entities[pos].readable();
  }
  s->failed_calls_total = backend.stats().failed_calls;
  s->duration_ns = MonotonicNowNs() - s->start_mono_ns;
  return s;
}

}  // namespace gpulse::exporter
