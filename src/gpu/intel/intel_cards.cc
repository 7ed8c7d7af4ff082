#include "gpu/intel/intel_cards.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>

#include "gpu/drm/device_names.h"

namespace gpulse::gpu::intel {
namespace {

using drm::SysfsFile;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

std::optional<std::string> ReadText(const sys::RootedFs& fs, const std::string& rel) {
  auto text = fs.ReadFile(rel, 4096);
  if (!text.ok()) return std::nullopt;
  return std::string(Trim(*text));
}

// The file's one decimal or "0x" hex number (drm::ParseUint); nullopt when it
// does not fit a T.
template <typename T>
std::optional<T> ReadNumber(const sys::RootedFs& fs, const std::string& rel) {
  auto v = drm::ParseUint(ReadText(fs, rel).value_or(""));
  if (!v || *v > std::numeric_limits<T>::max()) return std::nullopt;
  return static_cast<T>(*v);
}

// The last component of a symbolic link's target; "" when `rel` is not a link.
std::string LinkBasename(const sys::RootedFs& fs, const std::string& rel) {
  const std::string path = fs.PathOf(rel);
  char target[512];
  ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  std::string_view t(target, static_cast<std::size_t>(n));
  while (t.ends_with('/')) t.remove_suffix(1);
  std::size_t slash = t.rfind('/');
  return std::string(slash == std::string_view::npos ? t : t.substr(slash + 1));
}

// The value of KEY= in a uevent file; "" when absent.
std::string UeventValue(const std::string& uevent, std::string_view key) {
  std::string_view rest = uevent;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
  }
  return "";
}

// Card numbers of class/drm entries named cardN (connectors such as card0-DP-1
// are skipped).
std::vector<unsigned> CardNumbers(const std::vector<std::string>& names) {
  std::vector<unsigned> out;
  for (const std::string& name : names) {
    if (auto n = drm::CardNumber(name)) out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The device-level hwmon directory (name "i915" or "xe"), relative to the root;
// "" when none.
std::string FindHwmon(const sys::RootedFs& fs, const std::string& device,
                      const std::string& driver) {
  auto entries = fs.ListDir(device + "/hwmon");
  if (!entries.ok()) return "";
  std::sort(entries->begin(), entries->end());
  for (const std::string& e : *entries) {
    std::string dir = device + "/hwmon/";
    dir += e;
    if (ReadText(fs, dir + "/name").value_or("") == driver) return dir;
  }
  return "";
}

bool Exists(const sys::RootedFs& fs, const std::string& rel) {
  return ::access(fs.PathOf(rel).c_str(), F_OK) == 0;
}

// The channel number of `kind` ("energy", "temp", ...) labelled `label`, 0 when
// none is.
unsigned LabelledChannel(const sys::RootedFs& fs, const std::string& hwmon, std::string_view kind,
                         std::string_view label) {
  for (unsigned n = 1; n <= 8; ++n) {
    const std::string prefix = hwmon + "/" + std::string(kind) + std::to_string(n);
    if (ReadText(fs, prefix + "_label").value_or("") == label) return n;
  }
  return 0;
}

void OpenHwmon(const sys::RootedFs& fs, IntelCard& card, bool xe) {
  const std::string& h = card.hwmon_dir;
  if (h.empty()) return;
  unsigned energy = LabelledChannel(fs, h, "energy", "card");
  if (energy == 0) energy = Exists(fs, h + "/energy1_input") ? 1 : 0;
  if (energy == 0) energy = Exists(fs, h + "/energy2_input") ? 2 : 0;
  const unsigned channel = energy == 0 ? 1 : energy;
  if (energy != 0) {
    card.energy_uj = SysfsFile(fs.PathOf(h + "/energy" + std::to_string(energy) + "_input"));
  }
  card.power_max_uw = SysfsFile(fs.PathOf(h + "/power" + std::to_string(channel) + "_max"));
  unsigned temp = LabelledChannel(fs, h, "temp", "pkg");
  if (temp == 0) temp = xe ? 2 : 1;
  card.temp_gpu_mc = SysfsFile(fs.PathOf(h + "/temp" + std::to_string(temp) + "_input"));
  unsigned vram = LabelledChannel(fs, h, "temp", "vram");
  if (vram == 0 && xe) vram = 3;
  if (vram != 0) {
    card.temp_memory_mc = SysfsFile(fs.PathOf(h + "/temp" + std::to_string(vram) + "_input"));
  }
}

// xe: the VRAM of every tile (tileN/physical_vram_size_bytes), nullopt when no
// tile has the file.
std::optional<std::uint64_t> XeVramBytes(const sys::RootedFs& fs, const std::string& device) {
  auto entries = fs.ListDir(device);
  if (!entries.ok()) return std::nullopt;
  std::optional<std::uint64_t> total;
  for (const std::string& e : *entries) {
    if (!e.starts_with("tile")) continue;
    std::string rel = device + "/";
    rel.append(e).append("/physical_vram_size_bytes");
    if (auto v = ReadNumber<std::uint64_t>(fs, rel)) {
      total = total.value_or(0) + *v;
    }
  }
  return total;
}

std::optional<IntelCard> OpenCard(const sys::RootedFs& fs, unsigned number) {
  const std::string card_dir = "class/drm/card" + std::to_string(number);
  const std::string device = card_dir + "/device";
  auto vendor = ReadNumber<unsigned>(fs, device + "/vendor");
  if (!vendor || *vendor != 0x8086) return std::nullopt;
  const std::string uevent = ReadText(fs, device + "/uevent").value_or("");
  std::string driver = LinkBasename(fs, device + "/driver");
  if (driver.empty()) driver = UeventValue(uevent, "DRIVER");
  if (driver != "i915" && driver != "xe") return std::nullopt;
  const bool xe = driver == "xe";

  IntelCard card;
  std::string slot = UeventValue(uevent, "PCI_SLOT_NAME");
  if (slot.empty()) slot = LinkBasename(fs, device);
  card.pdev = drm::LowerPciAddress(slot);
  card.integrated = card.pdev == "0000:00:02.0";
  DeviceInfo& info = card.info;
  info.index = number;
  info.vendor = "intel";
  info.profiling_unsupported_reason =
      "the profiling fields (DCGM_FI_PROF_*) are read through NVIDIA's GPM; "
      "i915 and xe have no "
      "equivalent in sysfs";
  info.backend = driver;
  info.pci_bus_id = drm::NvmlPciBusId(slot);
  const unsigned device_id = ReadNumber<unsigned>(fs, device + "/device").value_or(0);
  info.name = IntelGpuName(device_id);
  // Neither driver gives a stable unique id in sysfs (Level Zero makes its UUID
  // up from the PCI address and device id), so there is no UUID rather than an
  // invented one.
  info.uuid = "";
  if (xe) info.memory_total_bytes = XeVramBytes(fs, device);

  const std::string freq = xe ? device + "/tile0/gt0/freq0/" : card_dir + "/gt_";
  card.act_freq_mhz = SysfsFile(fs.PathOf(freq + (xe ? "act_freq" : "act_freq_mhz")));
  static constexpr std::array<const char*, 2> kXeMax = {"rp0_freq", "max_freq"};
  static constexpr std::array<const char*, 2> kI915Max = {"RP0_freq_mhz", "max_freq_mhz"};
  for (const char* max : xe ? kXeMax : kI915Max) {
    if (auto v = ReadNumber<unsigned>(fs, freq + max)) {
      info.max_sm_clock_mhz = *v;
      break;
    }
  }

  card.hwmon_dir = FindHwmon(fs, device, driver);
  OpenHwmon(fs, card, xe);
  std::uint64_t cap_uw = 0;
  if (card.power_max_uw.ReadUint(cap_uw) == drm::ReadOutcome::kOk && cap_uw > 0) {
    info.power_limit_watts = static_cast<double>(cap_uw) / 1e6;
  }
  return card;
}

}  // namespace

std::string IntelGpuName(unsigned device_id) {
  struct Known {
    unsigned id;
    const char* name;
  };
  static constexpr Known kKnown[] = {
      {0x56a0, "Intel Arc A770 Graphics"},        {0x56a1, "Intel Arc A750 Graphics"},
      {0x56a5, "Intel Arc A380 Graphics"},        {0x56c0, "Intel Data Center GPU Flex 170"},
      {0x56c1, "Intel Data Center GPU Flex 140"}, {0x0bd5, "Intel Data Center GPU Max 1550"},
      {0xe20b, "Intel Arc B580 Graphics"},        {0xe20c, "Intel Arc B570 Graphics"},
      {0x64a0, "Intel Arc 130V/140V Graphics"},
  };
  for (const Known& k : kKnown) {
    if (k.id == device_id) return k.name;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "Intel GPU 0x%04x", device_id);
  return buf;
}

Result<std::vector<IntelCard>> FindIntelCards(const sys::RootedFs& sysfs) {
  std::vector<IntelCard> cards;
  auto names = sysfs.ListDir("class/drm");
  if (names.ok()) {
    for (unsigned n : CardNumbers(*names)) {
      if (auto card = OpenCard(sysfs, n)) {
        // Numbered from 0 in card order: a BMC's display on card0 must not make the only GPU
        // "GPU 1" (issue 40). The card number stays in the name and backend_index.
        card->info.backend_index = card->info.index;
        card->info.index = static_cast<unsigned>(cards.size());
        cards.push_back(std::move(*card));
      }
    }
  }
  if (cards.empty()) return Unavailable("no i915 or xe GPU under " + sysfs.PathOf("class/drm"));
  return cards;
}

}  // namespace gpulse::gpu::intel
