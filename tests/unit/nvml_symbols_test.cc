// The loader's declarative symbol table: versioned names first, fallbacks, required vs optional.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpu/nvml/nvml_api.h"
#include "gpu/nvml/nvml_library.h"
#include "sys/dynamic_library.h"

namespace gpulse::nvml {
namespace {

nvmlReturn_t Ok() { return NVML_SUCCESS; }
nvmlReturn_t OkV1() { return NVML_SUCCESS; }

// Every required row resolvable through its newest name, with distinct dummy addresses.
std::map<std::string, void*> NewestOnly() {
  std::map<std::string, void*> m;
  NvmlApi probe;
  for (const SymbolSpec& s : SymbolTable(probe)) {
    if (s.required) m[s.names.front()] = reinterpret_cast<void*>(&Ok);
  }
  return m;
}

SymbolLookup From(const std::map<std::string, void*>& m) {
  return [&m](const char* name) -> void* {
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second;
  };
}

std::string Chosen(const Resolution& r, const char* first_name) {
  NvmlApi probe;
  auto table = SymbolTable(probe);
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (std::string(table[i].names.front()) == first_name) return r.chosen[i];
  }
  return "<no such row>";
}

TEST(NvmlSymbols, PrefersVersionedNames) {
  auto m = NewestOnly();
  m["nvmlInit"] = reinterpret_cast<void*>(&OkV1);
  NvmlApi api;
  auto r = ResolveSymbols(api, From(m));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Chosen(*r, "nvmlInit_v2"), "nvmlInit_v2");
  EXPECT_EQ(reinterpret_cast<void*>(api.Init), reinterpret_cast<void*>(&Ok));
}

TEST(NvmlSymbols, FallsBackToOlderNames) {
  auto m = NewestOnly();
  m.erase("nvmlInit_v2");
  m.erase("nvmlDeviceGetPciInfo_v3");
  m["nvmlInit"] = reinterpret_cast<void*>(&OkV1);
  m["nvmlDeviceGetPciInfo_v2"] = reinterpret_cast<void*>(&Ok);
  m["nvmlDeviceGetCurrentClocksThrottleReasons"] = reinterpret_cast<void*>(&Ok);
  NvmlApi api;
  auto r = ResolveSymbols(api, From(m));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Chosen(*r, "nvmlInit_v2"), "nvmlInit");
  EXPECT_EQ(reinterpret_cast<void*>(api.Init), reinterpret_cast<void*>(&OkV1));
  EXPECT_EQ(Chosen(*r, "nvmlDeviceGetPciInfo_v3"), "nvmlDeviceGetPciInfo_v2");
  EXPECT_EQ(Chosen(*r, "nvmlDeviceGetCurrentClocksEventReasons"),
            "nvmlDeviceGetCurrentClocksThrottleReasons");
}

TEST(NvmlSymbols, MissingRequiredSymbolFailsNamingIt) {
  auto m = NewestOnly();
  m.erase("nvmlDeviceGetCount_v2");
  NvmlApi api;
  auto r = ResolveSymbols(api, From(m));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("nvmlDeviceGetCount_v2 or nvmlDeviceGetCount"), std::string::npos);
  EXPECT_EQ(api.Init, nullptr);  // nothing half-filled is left behind
}

TEST(NvmlSymbols, MissingOptionalSymbolsAreListedAndNull) {
  auto m = NewestOnly();
  NvmlApi api;
  auto r = ResolveSymbols(api, From(m));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(api.DeviceGetPowerUsage, nullptr);
  EXPECT_EQ(api.GpulseSimScenario, nullptr);
  bool listed = false;
  for (const auto& name : r->missing_optional) listed |= name == "nvmlDeviceGetPowerUsage";
  EXPECT_TRUE(listed);
}

TEST(NvmlLibrary, LibraryNotFoundIsUnavailableWithReason) {
  auto lib = NvmlLibrary::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(lib.error().message.find("NVML library not found"), std::string::npos);
  EXPECT_NE(lib.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlLibrary, RealLibraryLackingRequiredSymbolsIsRejected) {
  // libm is a real shared library with none of NVML's symbols.
  auto lib = NvmlLibrary::Load("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("lacks the required symbol nvmlInit_v2 or nvmlInit"),
            std::string::npos);
}

TEST(NvmlLibrary, V1OnlyLibraryLoadsThroughFallbacks) {
  auto lib = NvmlLibrary::Load(std::string(GPULSE_BIN_DIR) + "/libfake-nvml-v1.so");
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_EQ(Chosen((*lib)->resolution(), "nvmlInit_v2"), "nvmlInit");
  EXPECT_EQ(Chosen((*lib)->resolution(), "nvmlDeviceGetCount_v2"), "nvmlDeviceGetCount");
  unsigned n = 0;
  EXPECT_EQ((*lib)->api().DeviceGetCount(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
}

TEST(NvmlLibrary, DriverNotLoadedIsExplained) {
  auto lib = NvmlLibrary::Load(std::string(GPULSE_BIN_DIR) + "/libfake-nvml-nodriver.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(lib.error().message.find("NVIDIA driver not loaded"), std::string::npos);
}

TEST(NvmlLibrary, ChoosesOptionThenEnvironmentThenSoname) {
  unsetenv("GPULSE_NVML_LIBRARY");
  EXPECT_EQ(ChooseLibraryPath(""), "libnvidia-ml.so.1");
  setenv("GPULSE_NVML_LIBRARY", "/opt/env.so", 1);
  EXPECT_EQ(ChooseLibraryPath(""), "/opt/env.so");
  EXPECT_EQ(ChooseLibraryPath("/opt/flag.so"), "/opt/flag.so");
  unsetenv("GPULSE_NVML_LIBRARY");
}

}  // namespace
}  // namespace gpulse::nvml
