// The AMD and Intel readers' parsers (src/gpu/drm, src/gpu/amdgpu): a DRM client's fdinfo, memory
// sizes as fdinfo prints them, sysfs integers and hex ids, amdgpu's DPM level tables and its binary
// gpu_metrics table. None may crash or read past its input (ASan); a decoded gpu_metrics table had
// at least its 4-byte header.
//
// Input: byte 0 picks the parser (mod 5); the rest is the file's content.
#include <cstddef>
#include <span>
#include <string>

#include "fuzz/fuzz_util.h"
#include "gpu/amdgpu/gpu_metrics.h"
#include "gpu/amdgpu/sysfs_text.h"
#include "gpu/drm/fdinfo.h"
#include "gpu/drm/sysfs_file.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::Text(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      if (auto f = gpu::drm::ParseDrmFdinfo(text)) {
        for (const auto& e : f->engines) (void)f->BusyNs(e.name);
        for (const auto& m : f->memory) (void)f->Resident(m.region);
      }
      break;
    case 1:
      (void)gpu::drm::ParseDrmMemorySize(text);
      break;
    case 2:
      (void)gpu::drm::ParseInt(text);
      (void)gpu::drm::ParseUint(text);
      break;
    case 3:
      (void)gpu::amdgpu::ParseHex(text);
      (void)gpu::amdgpu::TopDpmLevelMhz(text);
      break;
    default: {
      auto bytes = std::as_bytes(std::span(data + 1, size - 1));
      if (auto m = gpu::amdgpu::DecodeGpuMetrics(bytes); m.ok()) FUZZ_CHECK(size - 1 >= 4);
      break;
    }
  }
  return 0;
}
