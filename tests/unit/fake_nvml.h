// An NVML API of fakes for backend unit tests (go-nvml's mock idea): every entry point reads one
// global FakeNvml, whose per-device return codes and values each test sets. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/nvml/nvml_api.h"

namespace gpulse::testing {

struct FakeDevice {
  std::string name = "Fake GPU";
  std::string uuid = "GPU-00000000-0000-0000-0000-000000000000";
  nvmlReturn_t handle_rc = NVML_SUCCESS;   // what nvmlDeviceGetHandleByIndex answers
  std::map<std::string, nvmlReturn_t> rc;  // per entry point name, e.g. "GetPowerUsage"
  std::map<std::string, int> calls;        // how often each entry point was called
  unsigned power_mw = 250000;
  unsigned long long energy_mj = 123456789;
  unsigned util_gpu = 90, util_mem = 40;
  unsigned temp_c = 65;
  int pstate = 0;
  unsigned long long xid_pending = 0;  // delivered once by EventSetWait when nonzero
  bool memory_v2 = true;               // false: _v2 answers ARGUMENT_VERSION_MISMATCH
  // A MIG device handle (an entry of FakeNvml::mig): its parent's position, GI and CI ids.
  std::size_t parent = 0;
  unsigned gpu_instance_id = 0, compute_instance_id = 0;
};

struct FakeNvml {
  std::vector<FakeDevice> devices;
  // MIG device handles; a GPU with any is MIG-enabled. They answer every call a GPU answers (a
  // driver that did would tempt a backend into copying the parent's readings).
  std::vector<FakeDevice> mig;
};

// Installs `fake` as the global state and returns an API whose every member calls into it.
nvml::NvmlApi MakeFakeApi(FakeNvml* fake);

}  // namespace gpulse::testing
