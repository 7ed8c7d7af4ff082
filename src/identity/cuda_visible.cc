#include "identity/cuda_visible.h"

#include <algorithm>
#include <optional>
#include <string>

#include "identity/mask_tokens.h"

namespace gpulse::identity {
namespace {

constexpr std::size_t kGpuUuidLength = 40;  // "GPU-" + 8-4-4-4-12
constexpr std::size_t kMigUuidLength = 40;  // "MIG-" + 8-4-4-4-12

enum class Order { kPciBusId, kFastestFirst };

// A runtime device: a GPU (position in SystemInfo::devices) or one of its MIG instances.
struct Pick {
  std::size_t pos = 0;
  int mig = -1;  // index into mig_instances, -1 for the whole GPU
  bool operator==(const Pick&) const = default;
};

// What one mask entry means: a device, the end of the list (CUDA stops at an invalid entry), or a
// refusal (what CUDA does is not known).
struct Outcome {
  enum Kind { kDevice, kEnd, kRefuse } kind = kEnd;
  Pick pick;
  std::string why;
  static Outcome Device(Pick p) { return {kDevice, p, ""}; }
  static Outcome End(std::string why) { return {kEnd, {}, std::move(why)}; }
  static Outcome Refuse(std::string why) { return {kRefuse, {}, std::move(why)}; }
};

std::string GpuName(const DeviceInfo& d) { return "GPU " + std::to_string(d.index); }

class CudaResolver {
 public:
  CudaResolver(const SystemInfo& info, const RuntimeScope& scope) : info_(info), scope_(scope) {
    bus_order_ = scope.positions;
    std::stable_sort(bus_order_.begin(), bus_order_.end(), [&](std::size_t a, std::size_t b) {
      return info.devices[a].pci_bus_id < info.devices[b].pci_bus_id;
    });
  }

  Mapping Resolve(std::optional<std::string_view> mask, Order order);

 private:
  bool InScope(std::size_t pos) const {
    return std::find(scope_.positions.begin(), scope_.positions.end(), pos) !=
           scope_.positions.end();
  }
  Outcome Entry(std::string_view token);
  Outcome Integer(std::string_view token);
  // The GPU a UUID or UUID prefix names (as a whole; MIG mode not checked).
  Outcome FindGpu(std::string_view token, std::string_view what);
  Outcome MigUuid(std::string_view token);
  Outcome LegacyMig(std::string_view token);
  Outcome WholeGpu(std::size_t pos);
  // Adds `o` to the mapping; false when the list ends here.
  bool Take(const Outcome& o, std::string_view token, std::size_t entry_no, Mapping& m);
  std::optional<Refusal> OrderRefusal(Order order) const;

  const SystemInfo& info_;
  const RuntimeScope& scope_;
  std::vector<std::size_t> bus_order_;
  std::vector<Pick> picks_;
  bool counted_ = false;  // some entry (or an unset mask) counted GPUs
};

Outcome CudaResolver::WholeGpu(std::size_t pos) {
  const DeviceInfo& d = info_.devices[pos];
  if (d.mig_enabled.value_or(false)) {
    return Outcome::Refuse(GpuName(d) +
                           " has MIG enabled: CUDA cannot use it as a whole GPU, and "
                           "which of its MIG instances CUDA would enumerate instead is not "
                           "documented; name the instance by its MIG-… UUID");
  }
  return Outcome::Device({pos, -1});
}

Outcome CudaResolver::Integer(std::string_view token) {
  counted_ = true;
  if (!scope_.uncounted.empty()) {
    return Outcome::Refuse("integer entries count the GPUs the runtime can open, and " +
                           scope_.uncounted + "; name GPUs by UUID instead");
  }
  auto i = ParseDecimal(token);
  if (!i || *i >= bus_order_.size()) {
    return Outcome::End("entry " + Quoted(token) + " is out of range: the runtime can open " +
                        std::to_string(bus_order_.size()) + " GPU(s)");
  }
  return WholeGpu(bus_order_[*i]);
}

Outcome CudaResolver::FindGpu(std::string_view token, std::string_view what) {
  std::vector<std::string> uuids;
  for (const DeviceInfo& d : info_.devices) uuids.push_back(d.uuid);
  PrefixMatches all = MatchPrefix(token, uuids);
  std::vector<std::size_t> in_scope;
  for (std::size_t pos : all.exact) {
    if (InScope(pos)) in_scope.push_back(pos);
  }
  const bool full = token.size() == kGpuUuidLength;
  if (!scope_.uncounted.empty() && !full) {
    return Outcome::Refuse(std::string(what) + " " + Quoted(token) + " is a UUID prefix, and " +
                           scope_.uncounted + ": it may match that GPU too; give the full UUID");
  }
  if (in_scope.size() == 1) return Outcome::Device({in_scope.front(), -1});
  if (in_scope.size() > 1) {
    std::vector<std::string> names;
    names.reserve(in_scope.size());
    for (std::size_t pos : in_scope) names.push_back(GpuName(info_.devices[pos]));
    return Outcome::End(std::string(what) + " " + Quoted(token) + " is an ambiguous UUID prefix (" +
                        JoinNames(names) + "); CUDA needs a unique prefix");
  }
  if (!all.exact.empty()) {
    return Outcome::End(std::string(what) + " " + Quoted(token) + " names " +
                        GpuName(info_.devices[all.exact.front()]) +
                        ", which this workload's runtime cannot open");
  }
  if (!all.ignoring_case.empty()) {
    return Outcome::Refuse(std::string(what) + " " + Quoted(token) + " matches " +
                           GpuName(info_.devices[all.ignoring_case.front()]) +
                           " only when case is ignored; whether CUDA ignores case is not "
                           "documented; write the UUID as nvidia-smi -L prints it");
  }
  if (!scope_.uncounted.empty()) {
    return Outcome::Refuse(std::string(what) + " " + Quoted(token) +
                           " matches no GPU gpulse can read, and " + scope_.uncounted);
  }
  return Outcome::End(std::string(what) + " " + Quoted(token) + " matches no GPU");
}

Outcome CudaResolver::MigUuid(std::string_view token) {
  std::vector<std::string> uuids;
  std::vector<Pick> picks;
  for (std::size_t pos : scope_.positions) {
    const DeviceInfo& d = info_.devices[pos];
    for (std::size_t k = 0; k < d.mig_instances.size(); ++k) {
      uuids.push_back(d.mig_instances[k].uuid);
      picks.push_back({pos, static_cast<int>(k)});
    }
  }
  PrefixMatches m = MatchPrefix(token, uuids);
  const bool full = token.size() == kMigUuidLength;
  if (!scope_.uncounted.empty() && !(full && m.exact.size() == 1)) {
    return Outcome::Refuse("MIG entry " + Quoted(token) +
                           " cannot be checked against every GPU: " + scope_.uncounted);
  }
  if (m.exact.size() == 1) return Outcome::Device(picks[m.exact.front()]);
  if (m.exact.size() > 1) {
    return Outcome::End("MIG entry " + Quoted(token) + " is an ambiguous UUID prefix");
  }
  if (!m.ignoring_case.empty()) {
    return Outcome::Refuse("MIG entry " + Quoted(token) +
                           " matches a MIG instance only when case is ignored; whether CUDA "
                           "ignores case is not documented");
  }
  return Outcome::End("MIG entry " + Quoted(token) +
                      " matches no MIG instance the runtime can open");
}

Outcome CudaResolver::LegacyMig(std::string_view token) {
  // MIG-GPU-<uuid>/<gi>/<ci>
  std::vector<std::string_view> parts;
  std::string_view rest = token.substr(4);
  for (std::size_t slash; (slash = rest.find('/')) != std::string_view::npos;) {
    parts.push_back(rest.substr(0, slash));
    rest.remove_prefix(slash + 1);
  }
  parts.push_back(rest);
  auto gi = parts.size() == 3 ? ParseDecimal(parts[1]) : std::nullopt;
  auto ci = parts.size() == 3 ? ParseDecimal(parts[2]) : std::nullopt;
  if (!gi || !ci) {
    return Outcome::End("MIG entry " + Quoted(token) +
                        " is not MIG-GPU-<uuid>/<gpu instance>/<compute instance>");
  }
  Outcome gpu = FindGpu(parts[0], "MIG entry's GPU");
  if (gpu.kind != Outcome::kDevice) return gpu;
  const DeviceInfo& d = info_.devices[gpu.pick.pos];
  for (std::size_t k = 0; k < d.mig_instances.size(); ++k) {
    const MigInstance& m = d.mig_instances[k];
    if (m.gpu_instance_id == *gi && m.compute_instance_id == *ci) {
      return Outcome::Device({gpu.pick.pos, static_cast<int>(k)});
    }
  }
  if (!d.mig_enabled.value_or(false)) {
    return Outcome::End("MIG entry " + Quoted(token) + ": " + GpuName(d) +
                        " does not have MIG enabled");
  }
  return Outcome::End("MIG entry " + Quoted(token) + ": " + GpuName(d) +
                      " has no MIG instance with GPU instance " + std::to_string(*gi) +
                      " and compute instance " + std::to_string(*ci));
}

Outcome CudaResolver::Entry(std::string_view token) {
  if (HasWhitespace(token)) {
    return Outcome::Refuse("entry " + Quoted(token) +
                           " contains whitespace, and how CUDA reads it "
                           "is not documented; remove the spaces");
  }
  if (IsDecimal(token)) return Integer(token);
  if (token.starts_with("MIG-GPU-")) return LegacyMig(token);
  if (token.starts_with("MIG-")) return MigUuid(token);
  if (token.starts_with("GPU-")) {
    Outcome o = FindGpu(token, "entry");
    return o.kind == Outcome::kDevice ? WholeGpu(o.pick.pos) : o;
  }
  return Outcome::End("entry " + Quoted(token) + " is not a GPU index, GPU UUID or MIG UUID");
}

bool CudaResolver::Take(const Outcome& o, std::string_view token, std::size_t entry_no,
                        Mapping& m) {
  if (o.kind == Outcome::kRefuse) {
    m.refusal = Refusal{o.why};
    return false;
  }
  if (o.kind == Outcome::kEnd) {
    m.notes.push_back(o.why +
                      ": CUDA stops at the first invalid entry, so the list ends before entry " +
                      std::to_string(entry_no) + " " + Quoted(token));
    return false;
  }
  for (std::size_t k = 0; k < picks_.size(); ++k) {
    if (picks_[k] == o.pick) {
      m.notes.push_back("entry " + std::to_string(entry_no) + " " + Quoted(token) +
                        " repeats entry " + std::to_string(k) +
                        ": CUDA stops at the first duplicate, so the list ends there");
      return false;
    }
    if (picks_[k].mig >= 0 && o.pick.mig >= 0) {
      m.refusal = Refusal{"entry " + std::to_string(entry_no) + " " + Quoted(token) +
                          " is a second MIG instance: CUDA enumerates one MIG instance per "
                          "process, and whether it skips this entry or stops the list is not "
                          "documented"};
      return false;
    }
  }
  picks_.push_back(o.pick);
  const DeviceInfo& d = info_.devices[o.pick.pos];
  m.ordinals.push_back(ToPhysical(d, o.pick.mig >= 0 ? &d.mig_instances[o.pick.mig] : nullptr));
  return true;
}

// The speed class CUDA's FASTEST_FIRST heuristic could tell apart: the model, and for a MIG
// instance its profile.
std::string SpeedClass(const PhysicalDevice& p) {
  return p.mig ? p.name + " MIG " + p.mig->profile : p.name;
}

std::optional<Refusal> CudaResolver::OrderRefusal(Order order) const {
  if (order == Order::kPciBusId) return std::nullopt;
  std::vector<std::string> classes;
  auto add = [&](const std::string& c) {
    if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
  };
  for (std::size_t i = 0; i < picks_.size(); ++i) {
    const DeviceInfo& d = info_.devices[picks_[i].pos];
    add(SpeedClass(ToPhysical(d, picks_[i].mig >= 0 ? &d.mig_instances[picks_[i].mig] : nullptr)));
  }
  // Integer entries count GPUs in the runtime's order, so every GPU the runtime can open matters.
  if (counted_) {
    for (std::size_t pos : scope_.positions) add(info_.devices[pos].name);
  }
  if (classes.size() <= 1) return std::nullopt;
  return Refusal{
      "CUDA_DEVICE_ORDER is FASTEST_FIRST (CUDA's default when unset) and the GPUs it "
      "orders differ (" +
      JoinNames(classes) +
      "): CUDA's speed heuristic decides their "
      "order, which gpulse cannot reproduce; set CUDA_DEVICE_ORDER=PCI_BUS_ID"};
}

Mapping CudaResolver::Resolve(std::optional<std::string_view> mask, Order order) {
  Mapping m;
  if (!mask) {
    m.notes.push_back("CUDA_VISIBLE_DEVICES is unset: every GPU the runtime can open is visible");
    counted_ = true;
    if (!scope_.uncounted.empty()) {
      m.refusal = Refusal{"the runtime numbers every GPU it can open, and " + scope_.uncounted};
      return m;
    }
    for (std::size_t i = 0; i < bus_order_.size(); ++i) {
      if (!Take(WholeGpu(bus_order_[i]), std::to_string(i), i, m)) break;
    }
  } else if (mask->empty()) {
    m.notes.push_back("CUDA_VISIBLE_DEVICES is set and empty: no GPU is visible");
  } else {
    std::vector<std::string_view> tokens = SplitCommas(*mask);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!Take(Entry(tokens[i]), tokens[i], i, m)) break;
    }
  }
  if (auto refusal = OrderRefusal(order)) {
    m.ordinals.clear();
    m.refusal = refusal;
    return m;
  }
  if (order == Order::kFastestFirst && picks_.size() > 1) {
    m.notes.push_back("FASTEST_FIRST resolved: every GPU it orders is " +
                      SpeedClass(m.ordinals.front()) +
                      ", so CUDA's speed order is the PCI bus order");
  }
  return m;
}

}  // namespace

Mapping ResolveCuda(const Environment& env, const SystemInfo& info, const RuntimeScope& scope) {
  Order order = Order::kFastestFirst;
  std::string order_note = "CUDA_DEVICE_ORDER is unset: FASTEST_FIRST, CUDA's default";
  if (auto value = env.Get("CUDA_DEVICE_ORDER")) {
    if (*value == "PCI_BUS_ID") {
      order = Order::kPciBusId;
      order_note = "CUDA_DEVICE_ORDER=PCI_BUS_ID: GPUs in ascending PCI bus id order";
    } else if (*value == "FASTEST_FIRST") {
      order_note = "CUDA_DEVICE_ORDER=FASTEST_FIRST";
    } else {
      Mapping m;
      m.refusal = Refusal{"CUDA_DEVICE_ORDER=" + Quoted(*value) +
                          " is neither PCI_BUS_ID nor FASTEST_FIRST, and what CUDA does with it "
                          "is not documented"};
      return m;
    }
  }
  CudaResolver resolver(info, scope);
  Mapping m = resolver.Resolve(env.Get("CUDA_VISIBLE_DEVICES"), order);
  m.notes.insert(m.notes.begin(), order_note);
  return m;
}

}  // namespace gpulse::identity
