#include "identity/level_zero_visible.h"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "identity/mask_tokens.h"

namespace gpulse::identity {
namespace {

using Positions = std::vector<std::size_t>;

// A plain list of distinct ascending decimal indices below `count`, as positions; else the
// reason it is not one. `what` names the list in messages.
std::variant<Positions, Refusal> PlainIndexList(std::string_view list, std::size_t count,
                                                const std::string& what) {
  Positions out;
  for (std::string_view token : SplitCommas(list)) {
    if (token.find('.') != std::string_view::npos) {
      return Refusal{what + " entry " + Quoted(token) +
                     " names a sub-device (tile); gpulse's devices are whole GPUs"};
    }
    auto index = ParseDecimal(token);
    if (!index) {
      return Refusal{what + " entry " + Quoted(token) +
                     " is not a plain decimal index, and only plain index lists are resolved"};
    }
    if (*index >= count) {
      return Refusal{what + " index " + Quoted(token) + " is out of range (" +
                     std::to_string(count) +
                     " devices), and what the runtime does with it is not documented"};
    }
    for (std::size_t p : out) {
      if (p == *index) {
        return Refusal{what + " index " + Quoted(token) +
                       " repeats an earlier one, and what the runtime does with that is not "
                       "documented"};
      }
    }
    if (!out.empty() && *index < out.back()) {
      return Refusal{what + " lists " + Quoted(token) +
                     " after a larger index, and the order the runtime reports masked devices "
                     "in is not documented"};
    }
    out.push_back(*index);
  }
  return out;
}

// ZE_AFFINITY_MASK over all devices: the visible positions, or a refusal.
std::variant<Positions, Refusal> ApplyAffinityMask(const Environment& env, std::size_t count) {
  auto mask = env.Get("ZE_AFFINITY_MASK");
  if (!mask) {
    Positions all;
    for (std::size_t i = 0; i < count; ++i) all.push_back(i);
    return all;
  }
  if (mask->empty()) {
    return Refusal{
        "ZE_AFFINITY_MASK is set and empty, and what Level Zero does with an empty "
        "mask is not documented"};
  }
  return PlainIndexList(*mask, count, "ZE_AFFINITY_MASK");
}

// ONEAPI_DEVICE_SELECTOR over the devices Level Zero shows: positions into `visible`.
std::variant<Positions, Refusal> ApplySelector(const Environment& env, std::size_t visible) {
  auto selector = env.Get("ONEAPI_DEVICE_SELECTOR");
  if (!selector) {
    return Refusal{
        "ONEAPI_DEVICE_SELECTOR is unset, so SYCL lists the GPUs once per backend "
        "(Level Zero and OpenCL) and which one a SYCL ordinal is cannot be known; "
        "ONEAPI_DEVICE_SELECTOR=level_zero:... makes it known"};
  }
  const std::string var = "ONEAPI_DEVICE_SELECTOR=" + Quoted(*selector);
  if (selector->empty())
    return Refusal{var + " is empty, and what DPC++ does then is not documented"};
  if (selector->find(';') != std::string_view::npos) {
    return Refusal{var + " has several terms, and only one level_zero term is resolved"};
  }
  if (selector->starts_with('!')) {
    return Refusal{var +
                   " is a negative filter, and only a plain level_zero index list is "
                   "resolved"};
  }
  const std::size_t colon = selector->find(':');
  if (colon == std::string_view::npos) {
    return Refusal{var + " has no backend, and only level_zero:<indices> is resolved"};
  }
  const std::string_view backend = selector->substr(0, colon);
  const std::string_view devices = selector->substr(colon + 1);
  if (backend != "level_zero") {
    return Refusal{var + " selects backend " + Quoted(backend) +
                   ", whose devices gpulse does not number (only level_zero is resolved)"};
  }
  if (devices == "*" || devices == "gpu") {
    Positions all;
    for (std::size_t i = 0; i < visible; ++i) all.push_back(i);
    return all;
  }
  return PlainIndexList(devices, visible, "ONEAPI_DEVICE_SELECTOR");
}

}  // namespace

Mapping ResolveLevelZero(const Environment& env, std::span<const DeviceInfo> devices,
                         LevelZeroApi api, std::span<const unsigned> tiles) {
  Mapping m;
  const auto hierarchy = env.Get("ZE_FLAT_DEVICE_HIERARCHY");
  for (std::size_t i = 0; i < tiles.size() && i < devices.size(); ++i) {
    if (tiles[i] > 1 && (!hierarchy || *hierarchy != "COMPOSITE")) {
      m.refusal = Refusal{"GPU " + std::to_string(devices[i].index) + " has " +
                          std::to_string(tiles[i]) + " tiles and ZE_FLAT_DEVICE_HIERARCHY is " +
                          (hierarchy ? Quoted(*hierarchy) : std::string("unset (FLAT)")) +
                          ", so Level Zero numbers tiles, not GPUs; "
                          "ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE numbers GPUs"};
      return m;
    }
  }
  auto masked = ApplyAffinityMask(env, devices.size());
  if (auto* refusal = std::get_if<Refusal>(&masked)) {
    m.refusal = *refusal;
    return m;
  }
  Positions chosen = std::get<Positions>(masked);
  if (api == LevelZeroApi::kSycl) {
    auto selected = ApplySelector(env, chosen.size());
    if (auto* refusal = std::get_if<Refusal>(&selected)) {
      m.refusal = *refusal;
      return m;
    }
    Positions out;
    for (std::size_t k : std::get<Positions>(selected)) out.push_back(chosen[k]);
    if (env.Get("ZE_AFFINITY_MASK") && env.Get("ONEAPI_DEVICE_SELECTOR")) {
      m.notes.push_back(
          "ONEAPI_DEVICE_SELECTOR's indices count the devices ZE_AFFINITY_MASK left "
          "visible (the Level Zero driver applies the mask first)");
    }
    chosen = std::move(out);
  } else if (auto s = env.Get("ONEAPI_DEVICE_SELECTOR")) {
    m.notes.push_back("ONEAPI_DEVICE_SELECTOR=" + Quoted(*s) +
                      " is ignored: the DPC++/SYCL runtime reads it, Level Zero does not");
  }
  for (std::size_t p : chosen) m.ordinals.push_back(ToPhysical(devices[p]));
  return m;
}

}  // namespace gpulse::identity
