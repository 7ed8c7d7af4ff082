// Owns the loaded NVML library and one successful nvmlInit: NVML is shut down and the library
// unloaded when the last owner goes away. One instance per process is the intended use (NVML's
// init is ref-counted but expensive and serialising).
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "gpu/nvml/nvml_api.h"
#include "sys/dynamic_library.h"

namespace gpulse::nvml {

inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

// The library to load: `option` (--nvml-lib) if set, else $GPULSE_NVML_LIBRARY, else the driver's
// runtime soname.
std::string ChooseLibraryPath(const std::string& option);

class NvmlLibrary {
 public:
  // Loads `path`, resolves the symbol table and calls nvmlInit. Errors are Unavailable with a
  // one-line reason (library not found, driver not loaded, no permission), except a simulator that
  // rejects its scenario, which is InvalidArgument.
  static Result<std::shared_ptr<NvmlLibrary>> Load(const std::string& path);

  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary();

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return lib_.path(); }
  const Resolution& resolution() const { return resolution_; }

 private:
  NvmlLibrary(sys::DynamicLibrary lib, NvmlApi api, Resolution resolution)
      : lib_(std::move(lib)), api_(api), resolution_(std::move(resolution)) {}
  sys::DynamicLibrary lib_;
  NvmlApi api_;
  Resolution resolution_;
};

}  // namespace gpulse::nvml
