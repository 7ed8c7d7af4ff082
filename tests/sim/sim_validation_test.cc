// Invalid scenario files: each is rejected at nvmlInit_v2 (NVML_ERROR_UNKNOWN) with a message that
// names the file, the line, the key and the problem.
#include <string>
#include <vector>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

struct BadScenario {
  const char* rule;
  const char* yaml;
  const char* key;      // the key path the message must name
  const char* problem;  // a fragment of the problem description
  int line;             // the line the message must point at (0: not checked)
};

// A minimal valid device, for cases about something else.
#define GPU "{name: G, memory_total_mib: 1024, power_limit_w: 100}"

const std::vector<BadScenario>& Cases() {
  static const std::vector<BadScenario> cases = {
      {"unknown top-level key", "nmae: x\ndevices: [" GPU "]\n", "nmae", "unknown key", 1},
      {"duplicate top-level key", "devices: [" GPU "]\nname: a\ndevices: []\n", "devices",
       "duplicate key (first at line 1)", 3},
      {"duplicate device key",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n    "
       "power_limit_w: 700\n",
       "devices[0].power_limit_w", "duplicate key (first at line 4)", 5},
      {"unknown device key",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limt_w: 100\n",
       "devices[0].power_limt_w",
       "unknown key (did you mean 'power_limit_w'?); allowed here: name, uuid", 4},
      {"unknown device_defaults key", "device_defaults: {colour: red}\ndevices: [" GPU "]\n",
       "device_defaults.colour", "unknown key", 1},
      {"wrong type", "devices:\n  - {name: G, memory_total_mib: lots, power_limit_w: 100}\n",
       "devices[0].memory_total_mib", "expected a whole number, got 'lots'", 2},
      {"wrong type: map for a number",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: {w: 1}}\n",
       "devices[0].power_limit_w", "expected a finite number, got a map", 2},
      {"wrong type: bool",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, ecc: maybe}\n",
       "devices[0].ecc", "expected true or false", 2},
      {"missing required key", "devices:\n  - {name: G, power_limit_w: 100}\n",
       "devices[0].memory_total_mib", "required key is missing", 2},
      {"negative keyframe time",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: -1, util: 5}\n",
       "devices[0].load[0].t", "-1 is negative", 6},
      {"negative fault time",
       "devices: [" GPU "]\nfaults:\n  - {at: -0.5, device: 0, kind: gpu_lost}\n", "faults[0].at",
       "is negative", 3},
      {"decreasing keyframe times",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 2, util: 5}\n      - {t: 1, util: 5}\n",
       "devices[0].load[1].t", "must not decrease", 7},
      {"util above 100",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, util: 5}\n      - {t: 1, util: 120}\n",
       "devices[0].load[1].util", "120 is out of range [0, 100]", 7},
      {"memory used above total",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    memory_reserved_mib: 24\n"
       "    power_limit_w: 100\n    load: [{t: 0, mem_used_mib: 1010}]\n",
       "devices[0].load[0].mem_used_mib", "exceeds memory_total_mib - memory_reserved_mib", 6},
      {"process memory above total",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    processes: [{pid: 1, used_memory_mib: 4096}]\n",
       "devices[0].processes[0].used_memory_mib", "out of range", 5},
      {"fault device out of range",
       "devices: [" GPU "]\nfaults:\n  - {at: 1, device: 4, kind: gpu_lost}\n", "faults[0].device",
       "device index 4 is out of range (the scenario has 1 device)", 3},
      {"unknown fault kind",
       "devices: [" GPU "]\nfaults:\n  - {at: 1, device: 0, kind: meltdown}\n", "faults[0].kind",
       "unknown fault kind 'meltdown'; known: xid, not_supported", 3},
      {"unknown call name",
       "devices: [" GPU "]\nfaults:\n"
       "  - {at: 0, device: 0, kind: not_supported, calls: [power_usage, power_instnat]}\n",
       "faults[0].calls[1]", "unknown call name 'power_instnat' (did you mean 'power_instant'?)",
       3},
      {"unknown unsupported call on a device",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, unsupported: [fan]}\n",
       "devices[0].unsupported[0]", "unknown call name 'fan'", 2},
      {"unknown throttle reason",
       "devices: [" GPU "]\nfaults:\n  - {at: 0, device: 0, kind: throttle, reasons: [too_hot]}\n",
       "faults[0].reasons[0]", "unknown throttle reason 'too_hot'", 3},
      {"key of another fault kind",
       "devices: [" GPU "]\nfaults:\n  - {at: 1, until: 2, device: 0, kind: xid, xid: 79}\n",
       "faults[0].until", "unknown key; allowed here: at, device, kind, xid", 3},
      {"until not after at",
       "devices: [" GPU "]\nfaults:\n  - {at: 2, until: 1, device: 0, kind: throttle, reasons: "
       "[hw_slowdown]}\n",
       "faults[0].until", "must be later than at (2)", 3},
      {"xid missing", "devices: [" GPU "]\nfaults:\n  - {at: 1, device: 0, kind: xid}\n",
       "faults[0].xid", "required key is missing", 3},
      {"ECC fault without ECC",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, ecc: false}\n"
       "faults:\n  - {at: 1, device: 0, kind: ecc, sbe: 1}\n",
       "faults[0].kind", "ecc fault on a device with ecc: false", 4},
      {"duplicate uuid",
       "devices:\n  - {name: G, memory_total_mib: 1, power_limit_w: 1, uuid: "
       "GPU-00000000-0000-0000-0000-000000000001}\n"
       "  - {name: G, memory_total_mib: 1, power_limit_w: 1, uuid: "
       "GPU-00000000-0000-0000-0000-000000000001}\n",
       "devices[1]", "uuid 'GPU-00000000-0000-0000-0000-000000000001' is also used by devices[0]",
       3},
      {"malformed uuid",
       "devices:\n  - {name: G, memory_total_mib: 1, power_limit_w: 1, uuid: GPU-1234}\n",
       "devices[0].uuid", "is not a GPU UUID", 2},
      {"duplicate bus id",
       "device_defaults: {pci_bus_id: \"0000:17:00.0\"}\ndevices: [" GPU ", " GPU "]\n",
       "devices[1]", "pci_bus_id '00000000:17:00.0' is also used by devices[0]", 2},
      {"malformed bus id",
       "devices:\n  - {name: G, memory_total_mib: 1, power_limit_w: 1, pci_bus_id: \"17-00\"}\n",
       "devices[0].pci_bus_id", "expected a PCI bus id", 2},
      {"bad value inherited from device_defaults",
       "device_defaults:\n  power_limit_w: -5\ndevices:\n  - {name: G, memory_total_mib: 1}\n",
       "device_defaults.power_limit_w", "-5 is negative", 2},
      {"idle clock above max",
       "devices:\n  - {name: G, memory_total_mib: 1, power_limit_w: 1, max_sm_clock_mhz: 1000, "
       "idle_sm_clock_mhz: 1200}\n",
       "devices[0].idle_sm_clock_mhz", "is above max_sm_clock_mhz (1000)", 2},
      {"repeat shorter than the keyframes",
       "devices:\n  - name: G\n    memory_total_mib: 1\n    power_limit_w: 1\n    load:\n"
       "      repeat_s: 5\n      keyframes: [{t: 0}, {t: 8}]\n",
       "devices[0].load.repeat_s", "is shorter than the last keyframe's t (8)", 6},
      {"MIG instances without MIG enabled",
       "devices:\n  - name: G\n    memory_total_mib: 40960\n    power_limit_w: 400\n"
       "    mig:\n      enabled: false\n      instances:\n"
       "        - {profile: 1g.5gb, gpu_instance_id: 9, memory_mib: 4864}\n",
       "devices[0].mig.instances", "MIG is not enabled", 8},
      {"MIG instances larger than the GPU",
       "devices:\n  - name: G\n    memory_total_mib: 8192\n    power_limit_w: 400\n"
       "    mig:\n      enabled: true\n      instances:\n"
       "        - {profile: a, gpu_instance_id: 1, memory_mib: 5000}\n"
       "        - {profile: b, gpu_instance_id: 2, memory_mib: 5000}\n",
       "devices[0].mig.instances", "add up to 10000 MiB", 8},
      {"process in a missing MIG instance",
       "devices:\n  - name: G\n    memory_total_mib: 8192\n    power_limit_w: 400\n"
       "    mig: {enabled: true, instances: [{profile: a, gpu_instance_id: 1, memory_mib: 4000}]}\n"
       "    processes: [{pid: 5, used_memory_mib: 10, gpu_instance_id: 2}]\n",
       "devices[0].processes[0]", "no MIG instance on this device has these instance ids", 6},
      {"nvlink_links above 18",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, nvlink_links: 19}\n",
       "devices[0].nvlink_links", "19 is out of range [0, 18]", 2},
      {"gpm not a bool",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, gpm: yes-ish}\n",
       "devices[0].gpm", "expected true or false, got 'yes-ish'", 2},
      {"fan not a bool",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, fan: 3}\n",
       "devices[0].fan", "expected true or false", 2},
      {"negative activity channel",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, util: 5, tensor: -5}\n",
       "devices[0].load[0].tensor", "-5 is negative", 6},
      {"activity percentage above 100",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, sm_active: 101}\n",
       "devices[0].load[0].sm_active", "101 is out of range [0, 100]", 6},
      {"negative PCIe rate",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, pcie_rx_mb_s: -1}\n",
       "devices[0].load[0].pcie_rx_mb_s", "-1 is negative", 6},
      {"NVLink rate above 10 TB/s",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, nvlink_tx_mb_s: 2e7}\n",
       "devices[0].load[0].nvlink_tx_mb_s", "out of range [0, 1e+07]", 6},
      {"misspelt activity channel",
       "devices:\n  - name: G\n    memory_total_mib: 1024\n    power_limit_w: 100\n"
       "    load:\n      - {t: 0, tensr: 5}\n",
       "devices[0].load[0].tensr", "unknown key (did you mean 'tensor'?)", 6},
      {"MIG instance util above 100",
       "devices:\n  - name: G\n    memory_total_mib: 8192\n    power_limit_w: 400\n"
       "    mig: {enabled: true, instances: [{profile: a, gpu_instance_id: 1, memory_mib: 4000, "
       "util: 120}]}\n",
       "devices[0].mig.instances[0].util", "120 is out of range [0, 100]", 5},
      {"negative NVLink counter",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, nvlink_links: 2, "
       "counters: {nvlink_replay: -2}}\n",
       "devices[0].counters.nvlink_replay", "-2 is negative", 2},
      {"unknown gpm fault mode",
       "devices: [{name: H100, memory_total_mib: 1024, power_limit_w: 100}]\nfaults:\n"
       "  - {at: 0, device: 0, kind: gpm, mode: stuck}\n",
       "faults[0].mode", "unknown gpm fault mode 'stuck'; known: fail, zero, out_of_range", 3},
      {"gpm fault mode misspelt",
       "devices: [{name: H100, memory_total_mib: 1024, power_limit_w: 100}]\nfaults:\n"
       "  - {at: 0, device: 0, kind: gpm, mode: zeros}\n",
       "faults[0].mode", "unknown gpm fault mode 'zeros' (did you mean 'zero'?)", 3},
      {"gpm fault without a mode",
       "devices: [{name: H100, memory_total_mib: 1024, power_limit_w: 100}]\nfaults:\n"
       "  - {at: 0, device: 0, kind: gpm}\n",
       "faults[0].mode", "required key is missing", 3},
      {"gpm fault on a GPU without GPM",
       "devices: [" GPU "]\nfaults:\n  - {at: 0, device: 0, kind: gpm, mode: zero}\n",
       "faults[0].kind", "gpm fault on a device with gpm: false", 3},
      {"nvlink_errors fault without links",
       "devices: [" GPU
       "]\nfaults:\n  - {at: 0, device: 0, kind: nvlink_errors, nvlink_replay: 1}\n",
       "faults[0].kind", "nvlink_errors fault on a device with nvlink_links: 0", 3},
      {"nvlink_errors fault with another kind's key",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, nvlink_links: 2}\n"
       "faults:\n  - {at: 0, device: 0, kind: nvlink_errors, count: 1}\n",
       "faults[0].count",
       "unknown key; allowed here: at, device, kind, nvlink_crc_flit, nvlink_crc_data", 4},
      {"unknown call name near a new one",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, unsupported: "
       "[fan_sped]}\n",
       "devices[0].unsupported[0]", "unknown call name 'fan_sped' (did you mean 'fan_speed'?)", 2},
      {"minimum power limit above the limit",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, min_power_limit_w: "
       "150}\n",
       "devices[0].min_power_limit_w", "is above power_limit_w (100)", 2},
      {"maximum power limit below the limit",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, max_power_limit_w: "
       "99}\n",
       "devices[0].max_power_limit_w", "is below power_limit_w (100)", 2},
      {"PCIe link generation out of range",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, pcie_link_gen: 7}\n",
       "devices[0].pcie_link_gen", "7 is out of range [1, 6]", 2},
      {"PCIe link width not a lane count",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, pcie_link_width: 12}\n",
       "devices[0].pcie_link_width", "expected a PCIe link width: 1, 2, 4, 8, 16 or 32", 2},
      {"compute mode out of range",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, compute_mode: 4}\n",
       "devices[0].compute_mode", "4 is out of range [0, 3]", 2},
      {"settings_permission not a bool",
       "devices:\n  - {name: G, memory_total_mib: 1024, power_limit_w: 100, "
       "settings_permission: maybe}\n",
       "devices[0].settings_permission", "maybe", 2},
      {"inforom_corrupt fault with another kind's key",
       "devices: [" GPU "]\nfaults:\n  - {at: 0, device: 0, kind: inforom_corrupt, count: 1}\n",
       "faults[0].count", "unknown key; allowed here: at, until, device, kind", 3},
      {"no devices", "devices: []\n", "devices", "list 1 to 64 devices", 1},
      {"empty file", "", "", "the scenario is empty", 0},
      {"YAML syntax error", "devices: [" GPU "\nfaults: {\n", "", "YAML error", 0},
      {"a list where a map belongs", "- 1\n- 2\n", "", "expected a map of keys, got a list", 1},
  };
  return cases;
}

using SimValidationTest = SimTest;

TEST_F(SimValidationTest, InvalidScenariosAreRejectedWithAPreciseMessage) {
  for (const BadScenario& c : Cases()) {
    SCOPED_TRACE(c.rule);
    TempScenario file("bad.yaml", c.yaml);
    if (TryLoad(file.path()) != NVML_ERROR_UNKNOWN) {
      ADD_FAILURE() << "accepted";
      api.Shutdown();
      continue;
    }
    const std::string why = api.LastError();
    EXPECT_EQ(why.rfind(file.path(), 0), 0u) << "names the file first: " << why;
    if (c.line > 0) {
      const std::string at_line = file.path() + ":" + std::to_string(c.line) + ":";
      EXPECT_EQ(why.rfind(at_line, 0), 0u) << "points at line " << c.line << ": " << why;
    }
    if (*c.key != '\0') {
      EXPECT_NE(why.find(std::string(": ") + c.key + ": "), std::string::npos)
          << "names " << c.key << ": " << why;
    }
    EXPECT_NE(why.find(c.problem), std::string::npos) << "says '" << c.problem << "': " << why;
    unsigned count = 0;
    EXPECT_EQ(api.Count(&count), NVML_ERROR_UNINITIALIZED) << "a rejected scenario serves nothing";
  }
}

// Issue 13: a scenario of a million GPUs was parsed whole (3 GB) before the 64-GPU limit was
// checked; now the node count is checked from parser events before yaml-cpp builds a node. One
// of 60,000 GPUs (3.5 MiB, under the 4 MiB file cap) must be refused by that count.
TEST_F(SimValidationTest, AHugeScenarioIsRefusedBeforeItIsBuilt) {
  std::string yaml = "devices:\n";
  for (int i = 0; i < 60'000; ++i) yaml += "  - " GPU "\n";
  TempScenario file("huge.yaml", yaml);
  ASSERT_EQ(TryLoad(file.path()), NVML_ERROR_UNKNOWN);
  const std::string why = api.LastError();
  EXPECT_NE(why.find("more than 100000 nodes: refused"), std::string::npos) << why;
}

// Aliases are not expanded by the node count of the file, but by every walk over the tree: ten
// levels of ten aliases each would be 10^10 visits.
TEST_F(SimValidationTest, AnAliasBombIsRefused) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) yaml += ", " + prev;
    yaml += "]\n";
  }
  yaml += "devices: [" GPU "]\n";
  TempScenario file("bomb.yaml", yaml);
  ASSERT_EQ(TryLoad(file.path()), NVML_ERROR_UNKNOWN);
  const std::string why = api.LastError();
  EXPECT_NE(why.find("too many nodes (aliases expanded)"), std::string::npos) << why;
}

TEST_F(SimValidationTest, ValidMinimalScenarioLoadsWithDefaults) {
  TempScenario file("minimal.yaml", "devices: [" GPU "]\n");
  Load(file.path());
  EXPECT_STREQ(api.ScenarioName(), "minimal");
  char buf[80];
  ASSERT_EQ(api.DriverVersion(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "550.54.15");
  nvmlDevice_t d = Device(0);
  EXPECT_EQ(Name(d), "G");
  EXPECT_EQ(Util(d), 0u);
  unsigned minor = 9;
  ASSERT_EQ(api.Minor(d, &minor), NVML_SUCCESS);
  EXPECT_EQ(minor, 0u);
}

}  // namespace
}  // namespace gpulse::sim::testing
