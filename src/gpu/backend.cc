#include "gpu/backend.h"

#include "core/clock.h"

namespace gpulse::gpu {
namespace {

// A reading of an entity that has none of `fields`: every value absent and unsupported, read now.
void UnsupportedSample(std::span<const FieldIndex> fields, Sample& out) {
  out.values.assign(AllFields().size(), std::nullopt);
  out.unsupported.assign(AllFields().size(), false);
  for (FieldIndex f : fields) out.unsupported[f] = true;
  out.xid_events.clear();
  out.xid_counts.clear();
  out.state = DeviceState::kOk;
  out.t_mono_ns = MonotonicNowNs();
  out.t_unix_ns = UnixNowNs();
}

}  // namespace

bool Backend::SetSimulatedClock(double /*seconds*/) { return false; }

void Backend::PrimeProfiling(std::span<const FieldIndex> /*fields*/) {}

void Backend::PrimeProcesses() {}

DeviceSettings Backend::ReadSettings(std::size_t /*pos*/) { return {}; }

namespace {
Error NoSettings() { return Unavailable("this backend cannot change GPU settings"); }
}  // namespace

Status Backend::SetComputeMode(std::size_t /*pos*/, int /*mode*/) { return NoSettings(); }
Status Backend::SetEccMode(std::size_t /*pos*/, bool /*enabled*/) { return NoSettings(); }
Status Backend::SetApplicationClocks(std::size_t /*pos*/, unsigned /*mem_mhz*/,
                                     unsigned /*sm_mhz*/) {
  return NoSettings();
}
Status Backend::SetPowerLimit(std::size_t /*pos*/, double /*watts*/) { return NoSettings(); }
Status Backend::ResetGpu(std::size_t /*pos*/) {
  return Unavailable("this backend cannot reset a GPU");
}
Status Backend::InjectFault(std::size_t /*pos*/, std::string_view /*fault*/) {
  return Unavailable("fault injection needs simulated GPUs (--simulate)");
}

ProcessList Backend::Processes(std::size_t /*pos*/) {
  ProcessList list;
  list.t_mono_ns = MonotonicNowNs();
  list.error = "this backend cannot list processes";
  return list;
}

void Backend::ReadInstance(std::size_t /*pos*/, std::size_t /*mig_pos*/,
                           std::span<const FieldIndex> fields, Sample& out) {
  UnsupportedSample(fields, out);
}

void Backend::ReadSkipped(std::size_t skipped_pos, std::span<const FieldIndex> fields,
                          Sample& out) {
  UnsupportedSample(fields, out);
  if (info().skipped[skipped_pos].lost) out.state = DeviceState::kLost;
}

void ReadEntity(Backend& backend, const Entity& e, std::span<const FieldIndex> fields,
                Sample& out) {
  if (e.readable() && e.kind == EntityKind::kGpu) {
    backend.Read(*e.device_pos, fields, out);
    return;
  }
  if (e.readable() && e.kind == EntityKind::kGpuInstance && e.mig_pos) {
    backend.ReadInstance(*e.device_pos, *e.mig_pos, fields, out);
    return;
  }
  if (e.kind == EntityKind::kGpu && e.state != EntityState::kPresent && !e.device_pos) {
    // A GPU the backend counted but could not open: found by its index among the skipped.
    const auto& skipped = backend.info().skipped;
    for (std::size_t i = 0; i < skipped.size(); ++i) {
      if (skipped[i].index == e.gpu) {
        backend.ReadSkipped(i, fields, out);
        if (e.state == EntityState::kLost) out.state = DeviceState::kLost;
        return;
      }
    }
  }
  UnsupportedSample(fields, out);
  if (e.state == EntityState::kLost) out.state = DeviceState::kLost;
}

}  // namespace gpulse::gpu
