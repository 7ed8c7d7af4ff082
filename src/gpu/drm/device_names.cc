// DRM card names and PCI address forms (device_names.h).
#include "gpu/drm/device_names.h"

#include <cctype>
#include <charconv>

namespace gpulse::gpu::drm {

std::optional<unsigned> CardNumber(std::string_view name) {
  if (!name.starts_with("card") || name.size() == 4) return std::nullopt;
  unsigned n = 0;
  auto [p, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), n);
  if (ec != std::errc() || p != name.data() + name.size()) return std::nullopt;
  return n;
}

std::string LowerPciAddress(std::string_view pci_address) {
  std::string out(pci_address);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string NvmlPciBusId(std::string_view a) {
  // dddd:bb:dd.f
  if (a.size() != 12 || a[4] != ':' || a[7] != ':' || a[10] != '.') return "";
  std::string out = "0000";
  for (char c : a) {
    if (c != ':' && c != '.' && !std::isxdigit(static_cast<unsigned char>(c))) return "";
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace gpulse::gpu::drm
