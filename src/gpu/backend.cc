#include "gpu/backend.h"

#include "core/clock.h"

namespace gpulse::gpu {

ProcessList Backend::Processes(std::size_t /*pos*/) {
  ProcessList list;
  list.t_mono_ns = MonotonicNowNs();
  list.error = "this backend cannot list processes";
  return list;
}

}  // namespace gpulse::gpu
