#include "identity/runtime_scope.h"

#include <algorithm>

#include "identity/mask_tokens.h"

namespace gpulse::identity {
namespace {

constexpr std::string_view kVar = "NVIDIA_VISIBLE_DEVICES";

std::string SkippedText(const SystemInfo& info) {
  std::vector<std::string> names;
  for (const SkippedDevice& s : info.skipped) names.push_back("GPU " + std::to_string(s.index));
  return JoinNames(names);
}

// One NVIDIA_VISIBLE_DEVICES entry → a device position, or why not.
std::variant<std::size_t, Refusal> ContainerEntry(std::string_view token, const SystemInfo& info,
                                                  std::string_view who) {
  const auto& devices = info.devices;
  if (auto index = ParseDecimal(token)) {
    for (std::size_t pos = 0; pos < devices.size(); ++pos) {
      if (devices[pos].index == *index) return pos;
    }
    return Refusal{std::string(who) + " was given GPU " + std::string(token) + " (" +
                   std::string(kVar) + "), which gpulse cannot read"};
  }
  if (token.starts_with("GPU-")) {
    for (std::size_t pos = 0; pos < devices.size(); ++pos) {
      if (devices[pos].uuid == token) return pos;
    }
    return Refusal{std::string(who) + " was given " + std::string(token) + " (" +
                   std::string(kVar) + "), which is not a GPU gpulse can read"};
  }
  return Refusal{std::string(who) + " was given " + Quoted(token) + " in " + std::string(kVar) +
                 ": gpulse resolves whole GPUs by index or UUID only (MIG instances and other "
                 "forms are not resolved)"};
}

}  // namespace

RuntimeScope HostScope(const SystemInfo& info) {
  RuntimeScope scope;
  for (std::size_t pos = 0; pos < info.devices.size(); ++pos) scope.positions.push_back(pos);
  if (!info.skipped.empty()) {
    scope.uncounted = "NVML could not read " + SkippedText(info) +
                      ", so where it falls in the runtime's numbering is unknown";
    return scope;
  }
  for (const DeviceInfo& d : info.devices) {
    if (d.pci_bus_id.empty()) {
      scope.uncounted =
          "GPU " + std::to_string(d.index) + " has no PCI bus id, so the bus order is unknown";
      return scope;
    }
  }
  return scope;
}

std::variant<RuntimeScope, Refusal> ContainerScope(const Environment& env, const SystemInfo& info,
                                                   std::string_view who) {
  auto value = env.Get(kVar);
  if (!value) {
    return Refusal{
        std::string(who) +
        " runs in another container and its environment does not say "
        "which GPUs the container was given (no " +
        std::string(kVar) +
        "; CDI or device mounts may have given them), so its device numbering is unknown"};
  }
  RuntimeScope scope;
  if (*value == "all") {
    scope = HostScope(info);
    return scope;
  }
  if (value->empty() || *value == "none" || *value == "void") return scope;  // no GPU injected
  for (std::string_view token : SplitCommas(*value)) {
    auto entry = ContainerEntry(token, info, who);
    if (auto* refusal = std::get_if<Refusal>(&entry)) return *refusal;
    std::size_t pos = std::get<std::size_t>(entry);
    if (std::find(scope.positions.begin(), scope.positions.end(), pos) == scope.positions.end()) {
      scope.positions.push_back(pos);
    }
  }
  std::sort(scope.positions.begin(), scope.positions.end());
  for (std::size_t pos : scope.positions) {
    if (info.devices[pos].pci_bus_id.empty()) {
      scope.uncounted = "GPU " + std::to_string(info.devices[pos].index) +
                        " has no PCI bus id, so the bus order is unknown";
    }
  }
  return scope;
}

}  // namespace gpulse::identity
