// dcgm-exporter's -d/--devices flag (src/exporter/device_selection.cc ParseDeviceSelection), as
// `gpulse exporter -d` and $DCGM_EXPORTER_DEVICES_STR give it. An accepted GPU list holds each
// index once, each within 0..1023; a long list of ranges stays linear (the timeout would say).
#include <set>

#include "exporter/device_selection.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto sel = exporter::ParseDeviceSelection(fuzz::Text(data, size));
  if (!sel) return 0;
  std::set<unsigned> seen;
  for (unsigned g : sel->gpus) {
    FUZZ_CHECK(g <= 1023);
    FUZZ_CHECK(seen.insert(g).second);
  }
  if (sel->kind != exporter::DeviceSelection::Kind::kGpus) FUZZ_CHECK(sel->gpus.empty());
  return 0;
}
