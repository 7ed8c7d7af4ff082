#include "gpu/registry.h"

#include <array>

#include "gpu/nvml/nvml_backend.h"

namespace gpulse::gpu {
namespace {
constexpr std::array kBackends = {
    BackendEntry{"nvml", &nvml::OpenNvmlBackend},
};
}  // namespace

std::span<const BackendEntry> Backends() { return kBackends; }

Result<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options) {
  std::string why;
  for (const BackendEntry& entry : kBackends) {
    auto backend = entry.open(options);
    if (backend.ok()) return std::move(backend).value();
    if (backend.error().code != ErrorCode::kUnavailable) return backend.error();
    if (!why.empty()) why += "; ";
    why += backend.error().message;
  }
  return Unavailable(why);
}

}  // namespace gpulse::gpu
