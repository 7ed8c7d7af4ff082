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
                                             std::span<const FieldIndex> fields,
                                             bool processes) {
  auto s = std::make_shared<Snapshot>();
  s->start_mono_ns = MonotonicNowNs();
  s->fields.assign(fields.begin(), fields.end());
  s->entities.resize(entities.size());
  const std::int64_t start_unix_ns = UnixNowNs();
  for (std::size_t pos = 0; pos < entities.size(); ++pos) {
    DeviceReading& r = s->entities[pos];
    r.readable = entities[pos].readable();
    if (!r.readable && entities[pos].kind == EntityKind::kGpu) {
      // A skipped GPU: nothing to ask the driver, but the fault layer has its Xids.
      gpu::ReadEntity(backend, entities[pos], fields, r.sample);
      continue;
    }
    if (!r.readable) {
      // Nothing to ask the driver (a compute instance): no work on the scrape path.
      r.sample.t_mono_ns = s->start_mono_ns;
      r.sample.t_unix_ns = start_unix_ns;
      if (entities[pos].state == EntityState::kLost) r.sample.state = DeviceState::kLost;
      continue;
    }
    std::uint64_t before = backend.stats().failed_calls;
    gpu::ReadEntity(backend, entities[pos], fields, r.sample);
    r.failed_calls = backend.stats().failed_calls - before;
  }
  if (processes) ReadProcesses(backend, *s);
  s->failed_calls_total = backend.stats().failed_calls;
  s->profiling_failed_total = backend.stats().profiling_failed_calls;
  s->profiling_rejected_total = backend.stats().profiling_rejected_values;
  NoteFaults(backend, *s);
  s->duration_ns = MonotonicNowNs() - s->start_mono_ns;
  return s;
}

void NoteFaults(const gpu::Backend& backend, Snapshot& snap) {
  const faults::FaultBackend* f = faults::AsFaultBackend(backend);
  if (f == nullptr) return;
  snap.kernel_log = f->kernel_log();
  snap.sxids = f->sxids();
}

void ReadProcesses(gpu::Backend& backend, Snapshot& snap) {
  const std::size_t n = backend.info().devices.size();
  snap.processes.clear();
  snap.processes.reserve(n);
  for (std::size_t pos = 0; pos < n; ++pos) snap.processes.push_back(backend.Processes(pos));
}

}  // namespace gpulse::exporter
