#include "gpu/nvml/driver_listing.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

namespace gpulse::nvml {
namespace {

std::string Trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

// The value of "Key: value" in the information file, "" when absent.
std::string Value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return Trim(line.substr(key.size() + 1));
  }
  return "";
}

}  // namespace

std::string NormalizeBusId(const std::string& text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4 ||
      bus > 0xff || device > 0x1f || function > 7) {
    return "";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", domain, bus, device, function);
  return buf;
}

std::vector<DriverGpu> ReadDriverGpus(const sys::RootedFs& procfs) {
  std::vector<DriverGpu> out;
  auto dirs = procfs.ListDir("driver/nvidia/gpus");
  if (!dirs) return out;
  for (const std::string& dir : *dirs) {
    std::string bus = NormalizeBusId(dir);
    if (bus.empty()) continue;
    DriverGpu g;
    g.pci_bus_id = bus;
    if (auto info = procfs.ReadFile("driver/nvidia/gpus/" + dir + "/information", 64 << 10)) {
      g.uuid = Value(*info, "GPU UUID");
      g.name = Value(*info, "Model");
    }
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const DriverGpu& a, const DriverGpu& b) { return a.pci_bus_id < b.pci_bus_id; });
  return out;
}

void FillSkippedIdentity(SystemInfo& info, const std::vector<DriverGpu>& listed) {
  std::set<std::string> claimed;
  for (const DeviceInfo& d : info.devices) claimed.insert(NormalizeBusId(d.pci_bus_id));
  for (const SkippedDevice& s : info.skipped) {
    if (!s.pci_bus_id.empty()) claimed.insert(NormalizeBusId(s.pci_bus_id));
  }
  std::vector<const DriverGpu*> free;
  for (const DriverGpu& g : listed) {
    if (claimed.count(g.pci_bus_id) == 0) free.push_back(&g);
  }
  std::vector<SkippedDevice*> unknown;
  for (SkippedDevice& s : info.skipped) {
    if (s.pci_bus_id.empty() && s.uuid.empty()) unknown.push_back(&s);
  }
  if (unknown.empty() || unknown.size() != free.size()) return;
  std::sort(unknown.begin(), unknown.end(),
            [](const SkippedDevice* a, const SkippedDevice* b) { return a->index < b->index; });
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    unknown[i]->pci_bus_id = free[i]->pci_bus_id;
    unknown[i]->uuid = free[i]->uuid;
    if (unknown[i]->name.empty()) unknown[i]->name = free[i]->name;
    unknown[i]->identity_source = "procfs";
  }
}

}  // namespace gpulse::nvml
