#include "device_parser.h"

#include <array>
#include <cmath>
#include <string>

#include "gpu/nvml/nvml_abi.h"
#include "identity.h"

namespace gpulse::sim {

const std::initializer_list<std::string_view> kDeviceKeys = {
    "name",
    "uuid",
    "pci_bus_id",
    "pci_device_id",
    "pci_subsystem_id",
    "minor_number",
    "memory_total_mib",
    "memory_reserved_mib",
    "power_limit_w",
    "idle_power_w",
    "max_sm_clock_mhz",
    "idle_sm_clock_mhz",
    "max_mem_clock_mhz",
    "idle_mem_clock_mhz",
    "max_video_clock_mhz",
    "idle_temp_c",
    "max_temp_c",
    "memory_temp",
    "ecc",
    "wobble",
    "gpm",
    "fan",
    "nvlink_links",
    "pcie_link_gen",
    "pcie_link_width",
    "power_usage",
    "energy_offset_j",
    "energy_update_ms",
    "compute_mode",
    "persistence_mode",
    "min_power_limit_w",
    "max_power_limit_w",
    "settings_permission",
    "unsupported",
    "counters",
    "mig",
    "load",
    "processes",
};

namespace {

constexpr int64_t kMaxMib = int64_t{1} << 30;  // 1 PiB: far above any GPU, far below overflow
constexpr int64_t kMaxCount = int64_t{1} << 40;

// Name fragments of the GPUs with GPM (Hopper and later): the default of a device's `gpm` key.
constexpr std::array<std::string_view, 7> kGpmNames = {"H100", "H200", "H20",  "GH200",
                                                       "B100", "B200", "GB200"};

bool HasGpmByName(std::string_view name) {
  for (std::string_view fragment : kGpmNames) {
    if (name.find(fragment) != std::string_view::npos) return true;
  }
  return false;
}

unsigned ClockOr(const YamlCheck& check, const At& at, unsigned fallback) {
  return at.present ? static_cast<unsigned>(check.Integer(at, 1, 100000)) : fallback;
}

void ParseIdentity(const YamlCheck& check, const DeviceFields& f, unsigned index,
                   const std::string& scenario_name, DeviceSpec& d) {
  At name = f.Get("name");
  check.Require(name);
  d.name = check.String(name);
  if (d.name.empty() || d.name.size() >= 64) check.Fail(name, "must be 1 to 63 characters");

  At uuid = f.Get("uuid");
  d.uuid = uuid.present ? check.String(uuid) : GenerateGpuUuid(scenario_name, index);
  if (!IsValidUuid(d.uuid, "GPU-")) {
    check.Fail(uuid,
               "'" + d.uuid + "' is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
  }

  At bus = f.Get("pci_bus_id");
  if (bus.present) {
    auto normal = NormalizePciBusId(check.String(bus));
    if (!normal) check.Fail(bus, "expected a PCI bus id such as \"00000000:17:00.0\"");
    d.pci_bus_id = *normal;
  } else {
    d.pci_bus_id = GeneratePciBusId(index);
  }
  At dev_id = f.Get("pci_device_id");
  if (dev_id.present) d.pci_device_id = static_cast<unsigned>(check.Integer(dev_id, 0, 0xFFFF));
  At sub_id = f.Get("pci_subsystem_id");
  if (sub_id.present) {
    d.pci_subsystem_id = static_cast<unsigned>(check.Integer(sub_id, 0, 0xFFFFFFFFLL));
  }
  At minor = f.Get("minor_number");
  d.minor_number = minor.present ? static_cast<unsigned>(check.Integer(minor, 0, 255)) : index;
}

// min_power_limit_w / max_power_limit_w: the range nvmlDeviceSetPowerManagementLimit accepts.
void ParsePowerRange(const YamlCheck& check, const DeviceFields& f, DeviceSpec& d) {
  At min = f.Get("min_power_limit_w");
  d.min_power_limit_w = min.present ? check.Number(min, 1, 100000) : 0.5 * d.power_limit_w;
  if (d.min_power_limit_w > d.power_limit_w) {
    check.Fail(min, "is above power_limit_w (" + FormatNumber(d.power_limit_w) + ")");
  }
  At max = f.Get("max_power_limit_w");
  d.max_power_limit_w = max.present ? check.Number(max, 1, 100000) : d.power_limit_w;
  if (d.max_power_limit_w < d.power_limit_w) {
    check.Fail(max, "is below power_limit_w (" + FormatNumber(d.power_limit_w) + ")");
  }
}

void ParseMemoryAndPower(const YamlCheck& check, const DeviceFields& f, unsigned index,
                         const std::string& scenario_name, DeviceSpec& d) {
  At total = f.Get("memory_total_mib");
  check.Require(total);
  d.memory_total_mib = static_cast<uint64_t>(check.Integer(total, 1, kMaxMib));
  At reserved = f.Get("memory_reserved_mib");
  if (reserved.present) {
    d.memory_reserved_mib = static_cast<uint64_t>(
        check.Integer(reserved, 0, static_cast<int64_t>(d.memory_total_mib) - 1));
  }

  At limit = f.Get("power_limit_w");
  check.Require(limit);
  d.power_limit_w = check.Number(limit, 1, 100000);
  At idle = f.Get("idle_power_w");
  d.idle_power_w = idle.present ? check.Number(idle, 0, d.power_limit_w) : 0.1 * d.power_limit_w;

  ParsePowerRange(check, f, d);

  At mode = f.Get("power_usage");
  if (mode.present) {
    std::string m = check.String(mode);
    if (m == "average") {
      d.power_usage = PowerUsageMode::kAverage;
    } else if (m == "instant") {
      d.power_usage = PowerUsageMode::kInstant;
    } else {
      check.Fail(mode, "expected 'average' or 'instant', got '" + m + "'");
    }
  }
  At update = f.Get("energy_update_ms");
  if (update.present) d.energy_update_s = check.Number(update, 0, 10000) / 1000.0;
  At offset = f.Get("energy_offset_j");
  if (offset.present) {
    d.energy_offset_j = check.Number(offset, 0, 1e12);
  } else {
    // A plausible "energy since driver load": 1 to 100 MJ, stable per device.
    uint64_t h = StableHash(scenario_name + "/energy/" + std::to_string(index));
    d.energy_offset_j = std::floor(1e6 + static_cast<double>(h % 99'000'000ULL));
  }
}

void ParseClocksAndTemps(const YamlCheck& check, const DeviceFields& f, DeviceSpec& d) {
  d.max_sm_clock_mhz = ClockOr(check, f.Get("max_sm_clock_mhz"), 1500);
  At idle_sm = f.Get("idle_sm_clock_mhz");
  d.idle_sm_clock_mhz = ClockOr(check, idle_sm, std::min(210u, d.max_sm_clock_mhz));
  if (d.idle_sm_clock_mhz > d.max_sm_clock_mhz) {
    check.Fail(idle_sm, "is above max_sm_clock_mhz (" + std::to_string(d.max_sm_clock_mhz) + ")");
  }
  d.max_mem_clock_mhz = ClockOr(check, f.Get("max_mem_clock_mhz"), 1500);
  At idle_mem = f.Get("idle_mem_clock_mhz");
  d.idle_mem_clock_mhz = ClockOr(check, idle_mem, d.max_mem_clock_mhz);
  if (d.idle_mem_clock_mhz > d.max_mem_clock_mhz) {
    check.Fail(idle_mem,
               "is above max_mem_clock_mhz (" + std::to_string(d.max_mem_clock_mhz) + ")");
  }

  // NVML's video clock runs below the SM clock: 85 % of it unless the scenario says.
  d.max_video_clock_mhz = ClockOr(check, f.Get("max_video_clock_mhz"),
                                  static_cast<unsigned>(std::lround(0.85 * d.max_sm_clock_mhz)));

  At idle_t = f.Get("idle_temp_c");
  d.idle_temp_c = idle_t.present ? check.Number(idle_t, -40, 120) : 30;
  At max_t = f.Get("max_temp_c");
  d.max_temp_c = max_t.present ? check.Number(max_t, -40, 120) : 80;
  if (d.max_temp_c < d.idle_temp_c) {
    check.Fail(max_t.present ? max_t : idle_t, "max_temp_c is below idle_temp_c");
  }
}

void ParseFlags(const YamlCheck& check, const DeviceFields& f, DeviceSpec& d) {
  At mem_temp = f.Get("memory_temp");
  if (mem_temp.present) d.memory_temp = check.Bool(mem_temp);
  At ecc = f.Get("ecc");
  if (ecc.present) d.ecc = check.Bool(ecc);
  At wobble = f.Get("wobble");
  if (wobble.present) d.wobble = check.Bool(wobble);
  At unsupported = f.Get("unsupported");
  if (unsupported.present) d.unsupported = ParseCallList(check, unsupported);
  if (!d.memory_temp) d.unsupported.set(static_cast<size_t>(Call::kMemoryTemp));
  At compute = f.Get("compute_mode");
  if (compute.present) d.compute_mode = static_cast<int>(check.Integer(compute, 0, 3));
  At persistence = f.Get("persistence_mode");
  if (persistence.present) d.persistence_mode = check.Bool(persistence);
  At permission = f.Get("settings_permission");
  if (permission.present) d.settings_permission = check.Bool(permission);
  if (!d.ecc) {
    d.unsupported.set(static_cast<size_t>(Call::kEcc));
    d.unsupported.set(static_cast<size_t>(Call::kEccMode));
    d.unsupported.set(static_cast<size_t>(Call::kRetiredPages));
    d.unsupported.set(static_cast<size_t>(Call::kRemappedRows));
  }
}

// gpm, fan and nvlink_links: what the board has, folded into `unsupported` where it lacks it.
void ParseHardware(const YamlCheck& check, const DeviceFields& f, DeviceSpec& d) {
  At gpm = f.Get("gpm");
  d.gpm = gpm.present ? check.Bool(gpm) : HasGpmByName(d.name);
  At fan = f.Get("fan");
  if (fan.present) d.fan = check.Bool(fan);
  At links = f.Get("nvlink_links");
  if (links.present) {
    d.nvlink_links = static_cast<unsigned>(check.Integer(links, 0, NVML_NVLINK_MAX_LINKS));
  }
  // Hopper and later (the GPM names) have PCIe gen 5; earlier data-center GPUs gen 4.
  At gen = f.Get("pcie_link_gen");
  if (gen.present) {
    d.pcie_link_gen = static_cast<unsigned>(check.Integer(gen, 1, 6));
  } else {
    d.pcie_link_gen = HasGpmByName(d.name) ? 5 : 4;
  }
  At width = f.Get("pcie_link_width");
  if (width.present) {
    d.pcie_link_width = static_cast<unsigned>(check.Integer(width, 1, 32));
    if (d.pcie_link_width != 1 && d.pcie_link_width != 2 && d.pcie_link_width != 4 &&
        d.pcie_link_width != 8 && d.pcie_link_width != 16 && d.pcie_link_width != 32) {
      check.Fail(width, "expected a PCIe link width: 1, 2, 4, 8, 16 or 32");
    }
  }
  if (!d.gpm) d.unsupported.set(static_cast<size_t>(Call::kGpm));
  if (!d.fan) d.unsupported.set(static_cast<size_t>(Call::kFanSpeed));
  if (d.nvlink_links == 0) d.unsupported.set(static_cast<size_t>(Call::kNvlink));
}

void ParseCounters(const YamlCheck& check, const At& at, Counters& c) {
  check.CheckKeys(at,
                  {"ecc_sbe", "ecc_dbe", "pcie_replay", "retired_pages_sbe", "retired_pages_dbe",
                   "remapped_rows_correctable", "remapped_rows_uncorrectable", "nvlink_crc_flit",
                   "nvlink_crc_data", "nvlink_replay", "nvlink_recovery"});
  auto get = [&](std::string_view key, uint64_t& out) {
    At v = YamlCheck::Child(at, key);
    if (v.present) out = static_cast<uint64_t>(check.Integer(v, 0, kMaxCount));
  };
  get("ecc_sbe", c.ecc_sbe);
  get("ecc_dbe", c.ecc_dbe);
  get("pcie_replay", c.pcie_replay);
  get("retired_pages_sbe", c.retired_pages_sbe);
  get("retired_pages_dbe", c.retired_pages_dbe);
  get("remapped_rows_correctable", c.remapped_rows_correctable);
  get("remapped_rows_uncorrectable", c.remapped_rows_uncorrectable);
  get("nvlink_crc_flit", c.nvlink_crc_flit);
  get("nvlink_crc_data", c.nvlink_crc_data);
  get("nvlink_replay", c.nvlink_replay);
  get("nvlink_recovery", c.nvlink_recovery);
}

}  // namespace

At DeviceFields::Get(std::string_view key) const {
  At own = YamlCheck::Child(device_, key);
  if (own.present || !defaults_.present) return own;
  At inherited = YamlCheck::Child(defaults_, key);
  return inherited.present ? inherited : own;
}

DeviceSpec ParseDevice(const YamlCheck& check, const DeviceFields& f, unsigned index,
                       const std::string& scenario_name) {
  check.CheckKeys(f.device(), kDeviceKeys);
  DeviceSpec d;
  ParseIdentity(check, f, index, scenario_name, d);
  ParseMemoryAndPower(check, f, index, scenario_name, d);
  ParseClocksAndTemps(check, f, d);
  ParseFlags(check, f, d);
  ParseHardware(check, f, d);
  if (At counters = f.Get("counters"); counters.present) ParseCounters(check, counters, d.counters);
  if (At mig = f.Get("mig"); mig.present) d.mig = ParseMig(check, mig, d);
  d.load = ParseLoad(check, f.Get("load"), d);
  if (At procs = f.Get("processes"); procs.present) d.processes = ParseProcesses(check, procs, d);
  return d;
}

CallSet ParseCallList(const YamlCheck& check, const At& at) {
  check.ExpectSeq(at);
  CallSet set;
  for (size_t i = 0; i < at.node.size(); ++i) {
    At item = YamlCheck::Element(at, i);
    std::string name = check.String(item);
    auto call = CallFromName(name);
    if (!call) {
      check.Fail(item, "unknown call name '" + name + "'" + Suggestion(name, CallNames()) +
                           "; known: " + AllCallNames());
    }
    set.set(static_cast<size_t>(*call));
  }
  return set;
}

}  // namespace gpulse::sim
