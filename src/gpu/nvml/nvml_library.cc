#include "gpu/nvml/nvml_library.h"

#include <cstdlib>

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

Error InitError(const NvmlApi& api, nvmlReturn_t code, const std::string& path) {
  if (api.GpulseSimScenario != nullptr) {
    const char* why = api.GpulseSimLastError ? api.GpulseSimLastError() : nullptr;
    return InvalidArgument(std::string("NVML simulator: ") +
                           (why && *why ? why : ReturnName(code).c_str()));
  }
  std::string name = ReturnName(code);
  switch (code) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return Unavailable("NVIDIA driver not loaded (nvmlInit: " + name + ")");
    case NVML_ERROR_NO_PERMISSION:
      return Unavailable("no permission to access the NVIDIA driver (nvmlInit: " + name + ")");
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return Unavailable("NVML library " + path +
                         " does not match the loaded kernel driver (nvmlInit: " + name + ")");
    default:
      return Unavailable("nvmlInit failed: " + name);
  }
}

}  // namespace

std::string ChooseLibraryPath(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("GPULSE_NVML_LIBRARY"); env != nullptr && *env != '\0') {
    return env;
  }
  return kDefaultNvmlLibrary;
}

Result<std::shared_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  auto lib = sys::DynamicLibrary::Open(path);
  if (!lib) {
    return Unavailable("NVML library not found (is the NVIDIA driver installed?): " +
                       lib.error().message);
  }
  NvmlApi api;
  auto resolution = ResolveSymbols(api, [&](const char* name) { return lib->Lookup(name); });
  if (!resolution) return Unavailable(path + ": " + resolution.error().message);
  if (nvmlReturn_t rc = api.Init(); rc != NVML_SUCCESS) return InitError(api, rc, path);
  return std::shared_ptr<NvmlLibrary>(
      new NvmlLibrary(std::move(lib).value(), api, std::move(resolution).value()));
}

NvmlLibrary::~NvmlLibrary() {
  if (api_.Shutdown != nullptr) api_.Shutdown();
}

}  // namespace gpulse::nvml
