#include "power/rules/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "power/readers/contract.h"

namespace gpulse::power {
namespace {

std::string PyList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

std::string GroupText(const std::optional<int64_t>& g) { return g ? std::to_string(*g) : "None"; }

Result<Assignment> ParseAssignment(const Json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + " must be an object");
  Assignment a;
  auto role = j.find("worker_role");
  if (role == j.end() || !role->is_string() || !IsKnownRole(role->get<std::string>()))
    return InvalidArgument(where + ".worker_role must be one of prefill, decode, agg");
  a.worker_role = role->get<std::string>();
  auto index = j.find("worker_index");
  if (index == j.end() || !AsStrictInt(*index) || *AsStrictInt(*index) < 0)
    return InvalidArgument(where + ".worker_index must be a non-negative integer");
  a.worker_index = *AsStrictInt(*index);
  auto proc = j.find("worker_process");
  if (proc == j.end() || !AsStrictInt(*proc) || *AsStrictInt(*proc) < 0)
    return InvalidArgument(where + ".worker_process must be a non-negative integer");
  a.worker_process = *AsStrictInt(*proc);
  auto het = j.find("het_group");
  if (het != j.end() && !het->is_null()) {
    if (!AsStrictInt(*het)) return InvalidArgument(where + ".het_group must be null or an integer");
    a.het_group = *AsStrictInt(*het);
  }
  return a;
}

Result<ExpectedDevice> ParseDevice(const Json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + " must be an object");
  ExpectedDevice d;
  auto host = j.find("hostname");
  if (host == j.end() || !IsNonEmptyString(*host))
    return InvalidArgument(where + ".hostname must be a non-empty string");
  d.key.hostname = host->get<std::string>();
  auto gpu = j.find("gpu_index");
  if (gpu == j.end() || !AsStrictInt(*gpu) || *AsStrictInt(*gpu) < 0)
    return InvalidArgument(where + ".gpu_index must be a non-negative integer");
  d.key.gpu_index = *AsStrictInt(*gpu);
  auto list = j.find("assignments");
  if (list == j.end() || !list->is_array() || list->empty())
    return InvalidArgument(where + ".assignments must be a non-empty list");
  for (size_t i = 0; i < list->size(); ++i) {
    auto a = ParseAssignment((*list)[i], fmt::format("{}.assignments[{}]", where, i));
    if (!a.ok()) return a.error();
    d.assignments.push_back(std::move(*a));
  }
  return d;
}

Result<WindowKey> ParseWindowKey(const Json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + " must be an object");
  auto type = j.find("benchmark_type");
  if (type == j.end() || !IsNonEmptyString(*type))
    return InvalidArgument(where + ".benchmark_type must be a non-empty string");
  auto conc = j.find("concurrency");
  if (conc == j.end() || !AsStrictInt(*conc) || *AsStrictInt(*conc) <= 0)
    return InvalidArgument(where + ".concurrency must be a positive integer");
  return WindowKey{type->get<std::string>(), *AsStrictInt(*conc)};
}

const Json* ListOrNull(const Json& m, const char* key, std::string& error) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return nullptr;
  if (!it->is_array())
    error = std::string(key) + " must be a list, got " + std::string(PyTypeName(*it));
  return &*it;
}

std::set<std::string> DeviceRoles(const ExpectedDevice& d) {
  std::set<std::string> roles;
  for (const auto& a : d.assignments) roles.insert(a.worker_role);
  return roles;
}

// The het groups of every node (hostname), over all its devices' assignments.
std::map<std::string, std::set<std::optional<int64_t>>> NodeGroups(const Topology& t) {
  std::map<std::string, std::set<std::optional<int64_t>>> out;
  for (const auto& d : t.devices)
    for (const auto& a : d.assignments) out[d.key.hostname].insert(a.het_group);
  return out;
}

}  // namespace

std::string WindowLabel(const WindowKey& key) {
  return key.benchmark_type + "/" + std::to_string(key.concurrency);
}

Result<Topology> ParseTopology(const Json& manifest) {
  if (!manifest.is_object()) return InvalidArgument("not an object");
  Topology t;
  std::string error;
  if (const Json* devices = ListOrNull(manifest, "expected_devices", error)) {
    if (!error.empty()) return InvalidArgument(error);
    for (size_t i = 0; i < devices->size(); ++i) {
      auto d = ParseDevice((*devices)[i], fmt::format("expected_devices[{}]", i));
      if (!d.ok()) return d.error();
      t.devices.push_back(std::move(*d));
    }
  }
  if (const Json* windows = ListOrNull(manifest, "expected_windows", error)) {
    if (!error.empty()) return InvalidArgument(error);
    for (size_t i = 0; i < windows->size(); ++i) {
      auto w = ParseWindowKey((*windows)[i], fmt::format("expected_windows[{}]", i));
      if (!w.ok()) return w.error();
      t.windows.push_back(std::move(*w));
    }
  }
  return t;
}

DeviceCheck CheckDevices(const Topology& topology, const std::vector<DeviceSamples>& observed) {
  DeviceCheck out;
  auto add = [&out](std::string_view reason, std::string detail) {
    if (std::find(out.reasons.begin(), out.reasons.end(), reason) == out.reasons.end())
      out.reasons.emplace_back(reason);
    out.details.emplace_back(std::string(reason), std::move(detail));
  };
  std::set<DeviceKey> expected, seen;
  for (const auto& d : topology.devices) expected.insert(d.key);
  for (const auto& d : observed) seen.insert(d.key);
  if (expected.empty()) add(reason::kExpectedDeviceMissing, "the expected device set is empty");
  for (const auto& k : expected)
    if (!seen.count(k)) add(reason::kExpectedDeviceMissing, DeviceLabel(k) + " was never observed");
  for (const auto& k : seen)
    if (!expected.count(k)) add(reason::kUnexpectedDevice, DeviceLabel(k) + " is not expected");
  std::map<std::string, DeviceKey> owner;
  for (const auto& d : observed) {
    if (d.uuids.size() > 1)
      add(reason::kGpuUuidChanged,
          DeviceLabel(d.key) + " reported " + std::to_string(d.uuids.size()) + " UUIDs");
    for (const auto& u : d.uuids) {
      auto [it, fresh] = owner.emplace(u, d.key);
      if (!fresh && it->second != d.key)
        add(reason::kGpuUuidChanged, "UUID " + u + " appears under " + DeviceLabel(it->second) +
                                         " and " + DeviceLabel(d.key));
    }
  }
  for (const auto& d : topology.devices) {
    if (DeviceRoles(d).size() > 1)
      add(reason::kConflictingWorkerRoles, DeviceLabel(d.key) + " has more than one worker role");
    std::set<std::optional<int64_t>> groups;
    for (const auto& a : d.assignments) groups.insert(a.het_group);
    if (groups.size() > 1)
      add(reason::kConflictingHetGroups, DeviceLabel(d.key) + " has more than one het group");
  }
  for (const auto& [node, groups] : NodeGroups(topology))
    if (groups.size() > 1)
      add(reason::kConflictingHetGroups, "node " + node + " has different het groups");
  return out;
}

bool RolesConflict(const Topology& topology) {
  return std::any_of(topology.devices.begin(), topology.devices.end(),
                     [](const ExpectedDevice& d) { return DeviceRoles(d).size() > 1; });
}

std::map<std::string, int64_t> RoleCounts(const Topology& topology) {
  std::map<std::string, int64_t> counts;
  for (const auto& d : topology.devices) {
    auto roles = DeviceRoles(d);
    if (roles.size() == 1) ++counts[*roles.begin()];
  }
  return counts;
}

std::vector<std::string> CheckExpectedRoles(const Topology& topology,
                                            const std::map<std::string, int64_t>& expected) {
  std::vector<std::string> out;
  if (expected.empty()) return out;
  std::vector<std::string> unknown, negative;
  for (const auto& [role, n] : expected) {
    if (!IsKnownRole(role)) unknown.push_back(role);
    if (n < 0) negative.push_back(role);
  }
  if (!unknown.empty()) {
    out.push_back("unknown expected roles: " + PyList(unknown) +
                  "; allowed roles are ['prefill', 'decode', 'agg']");
    return out;
  }
  if (!negative.empty()) {
    out.push_back("expected role counts must be non-negative integers: " + PyList(negative));
    return out;
  }
  if (RolesConflict(topology)) {
    out.push_back("conflicting_worker_roles (topology)");
    out.push_back("role count assertions not evaluated because worker roles conflict");
    return out;
  }
  auto found = RoleCounts(topology);
  std::vector<std::string> want_set, have_set;
  for (const auto& [role, n] : expected)
    if (n > 0) want_set.push_back(role);
  for (const auto& [role, n] : found) have_set.push_back(role);
  if (want_set != have_set)
    out.push_back("expected exactly the roles " + PyList(want_set) + ", found " + PyList(have_set));
  for (const auto& [role, n] : expected) {
    int64_t m = found.count(role) ? found.at(role) : 0;
    if (m != n) out.push_back(fmt::format("expected {} {} GPUs, found {}", n, role, m));
  }
  return out;
}

std::vector<std::string> CheckDistinctHetGroups(const Topology& topology) {
  std::vector<std::string> out;
  if (RolesConflict(topology)) {
    out.push_back("distinct het-group assertion not evaluated because worker roles conflict");
    return out;
  }
  // Het groups are resolved per node: a role occupies the groups of the nodes that host it.
  auto node_groups = NodeGroups(topology);
  std::map<std::string, std::set<std::optional<int64_t>>> role_groups;
  for (const auto& d : topology.devices)
    for (const auto& role : DeviceRoles(d))
      for (const auto& g : node_groups[d.key.hostname]) role_groups[role].insert(g);
  std::map<int64_t, std::vector<std::string>> by_group;
  for (const auto& [role, groups] : role_groups) {
    if (groups.size() != 1) {
      std::vector<std::string> names;
      for (const auto& g : groups) names.push_back(GroupText(g));
      std::string list;
      for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
      out.push_back("role " + role + " spans het groups [" + list + "], expected exactly one");
      continue;
    }
    const auto& g = *groups.begin();
    if (!g || *g < 0) {
      out.push_back("role " + role + " has het group " + GroupText(g) +
                    ", expected a non-negative integer");
      continue;
    }
    by_group[*g].push_back(role);
  }
  for (const auto& [g, roles] : by_group)
    if (roles.size() > 1)
      out.push_back("roles share a het group: {" + std::to_string(g) + ": " + PyList(roles) + "}");
  return out;
}

}  // namespace gpulse::power
