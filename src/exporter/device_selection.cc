#include "exporter/device_selection.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string>

namespace gpulse::exporter {
namespace {

constexpr unsigned kMaxIndex = 1023;

}  // namespace

Result<DeviceSelection> ParseDeviceSelection(std::string_view text) {
  DeviceSelection sel;
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("devices \"{}\": {} (dcgm-exporter's forms: f, g, g:0,1, g:0-3, i)",
                                       text, why));
  };
  if (text == "f") return sel;
  if (text == "i") {
    sel.kind = DeviceSelection::Kind::kInstances;
    return sel;
  }
  if (text.starts_with("i:")) {
    return bad("GPU-instance entity ids are DCGM's own numbering, which gpulse does not have; use i");
  }
  if (text != "g" && !text.starts_with("g:")) return bad("expected f, g[:IDS] or i");
  sel.kind = DeviceSelection::Kind::kGpus;
  if (text == "g") return sel;
  std::vector<bool> seen(kMaxIndex + 1);  // "g:0-1023,0-1023,..." stays linear
  std::string_view list = text.substr(2);
  while (true) {
    std::string_view item = list.substr(0, list.find(','));
    auto number = [&](std::string_view n) -> std::optional<unsigned> {
      unsigned v = 0;
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      if (ec != std::errc() || end != n.data() + n.size() || n.empty() || v > kMaxIndex) {
        return std::nullopt;
      }
      return v;
    };
    std::size_t dash = item.find('-');
    auto lo = number(item.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return bad(fmt::format("\"{}\" is not an index or a range a-b", item));
    for (unsigned v = *lo; v <= *hi; ++v) {
      if (!seen[v]) sel.gpus.push_back(v);
      seen[v] = true;
    }
    if (item.size() == list.size()) break;
    list.remove_prefix(item.size() + 1);
  }
  return sel;
}

}  // namespace gpulse::exporter
