// RAII wrapper over dlopen: the only place gpulse loads a shared library. Move-only; closing happens
// in the destructor. Not thread-safe to close while another thread looks symbols up.
#pragma once

#include <string>

#include "core/result.h"

namespace gpulse::sys {

class DynamicLibrary {
 public:
  // Loads `path` (a file path or a soname searched by the dynamic loader) with RTLD_NOW|RTLD_LOCAL.
  // The error names the path and carries dlerror()'s text.
  static Result<DynamicLibrary> Open(const std::string& path);

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // Returns the symbol's address or nullptr when the library does not export it.
  void* Lookup(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  DynamicLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace gpulse::sys
