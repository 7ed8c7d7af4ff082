// The parts of a device entry: load keyframes, MIG configuration, process list.
#include <set>
#include <string>
#include <utility>

#include "activity.h"
#include "device_parser.h"
#include "identity.h"

namespace gpulse::sim {
namespace {

constexpr double kMaxTime = 1e9;    // seconds; ~31 years
constexpr double kMaxMbPerS = 1e7;  // 10 TB/s: above any PCIe or NVLink a GPU has

void AddPoint(const YamlCheck& check, const At& kf, std::string_view key, double t, double min,
              double max, Channel& ch) {
  At v = YamlCheck::Child(kf, key);
  if (v.present) ch.points.push_back({t, check.Number(v, min, max)});
}

// The profiling channels of one keyframe (activity.h derives the ones no keyframe sets).
void AddActivityPoints(const YamlCheck& check, const At& kf, double t, Load& load) {
  AddPoint(check, kf, "sm_active", t, 0, 100, load.sm_active);
  AddPoint(check, kf, "sm_occupancy", t, 0, 100, load.sm_occupancy);
  AddPoint(check, kf, "tensor", t, 0, 100, load.tensor);
  AddPoint(check, kf, "dram", t, 0, 100, load.dram);
  AddPoint(check, kf, "fp64", t, 0, 100, load.fp64);
  AddPoint(check, kf, "fp32", t, 0, 100, load.fp32);
  AddPoint(check, kf, "fp16", t, 0, 100, load.fp16);
  AddPoint(check, kf, "int", t, 0, 100, load.int_util);
  AddPoint(check, kf, "pcie_tx_mb_s", t, 0, kMaxMbPerS, load.pcie_tx_mb_s);
  AddPoint(check, kf, "pcie_rx_mb_s", t, 0, kMaxMbPerS, load.pcie_rx_mb_s);
  AddPoint(check, kf, "nvlink_tx_mb_s", t, 0, kMaxMbPerS, load.nvlink_tx_mb_s);
  AddPoint(check, kf, "nvlink_rx_mb_s", t, 0, kMaxMbPerS, load.nvlink_rx_mb_s);
}

// Fills the channels of `load` from the keyframe list `seq`; returns the last keyframe's t (-1 if
// none).
double ParseKeyframes(const YamlCheck& check, const At& seq, const DeviceSpec& dev, Load& load) {
  check.ExpectSeq(seq);
  const double usable_mib = static_cast<double>(dev.memory_total_mib - dev.memory_reserved_mib);
  double prev_t = -1;
  bool step_at_prev = false;
  for (size_t i = 0; i < seq.node.size(); ++i) {
    At kf = YamlCheck::Element(seq, i);
    check.CheckKeys(kf,
                    {"t", "util", "mem_util", "enc_util", "dec_util", "mem_used_mib", "power_w",
                     "sm_active", "sm_occupancy", "tensor", "dram", "fp64", "fp32", "fp16", "int",
                     "pcie_tx_mb_s", "pcie_rx_mb_s", "nvlink_tx_mb_s", "nvlink_rx_mb_s"});
    At t_at = YamlCheck::Child(kf, "t");
    check.Require(t_at);
    double t = check.Number(t_at, 0, kMaxTime);
    if (t < prev_t) {
      check.Fail(t_at,
                 "keyframe times must not decrease (previous t is " + FormatNumber(prev_t) + ")");
    }
    if (t == prev_t && step_at_prev) {
      check.Fail(t_at, "at most two keyframes may share a time (the two sides of a step)");
    }
    step_at_prev = t == prev_t;
    prev_t = t;
    AddPoint(check, kf, "util", t, 0, 100, load.util);
    AddPoint(check, kf, "mem_util", t, 0, 100, load.mem_util);
    AddPoint(check, kf, "enc_util", t, 0, 100, load.enc_util);
    AddPoint(check, kf, "dec_util", t, 0, 100, load.dec_util);
    At used = YamlCheck::Child(kf, "mem_used_mib");
    if (used.present) {
      double mib = check.Number(used, 0, kMaxTime);
      if (mib > usable_mib) {
        check.Fail(used, "memory used (" + std::to_string(static_cast<uint64_t>(mib)) +
                             " MiB) exceeds memory_total_mib - memory_reserved_mib (" +
                             std::to_string(static_cast<uint64_t>(usable_mib)) + " MiB)");
      }
      load.mem_used_mib.points.push_back({t, mib});
    }
    AddPoint(check, kf, "power_w", t, 0, 100000, load.power_w);
    AddActivityPoints(check, kf, t, load);
  }
  return prev_t;
}

void CheckInstanceFits(const YamlCheck& check, const At& list, const MigConfig& mig,
                       const DeviceSpec& dev) {
  if (!mig.enabled && !mig.instances.empty()) {
    check.Fail(list, "instances are listed but MIG is not enabled (enabled: false)");
  }
  if (mig.instances.size() > mig.max_devices) {
    check.Fail(list, std::to_string(mig.instances.size()) + " instances exceed max_devices (" +
                         std::to_string(mig.max_devices) + ")");
  }
  uint64_t sum = 0;
  for (const MigInstance& m : mig.instances) sum += m.memory_mib;
  if (sum > dev.memory_total_mib - dev.memory_reserved_mib) {
    check.Fail(list, "instances' memory_mib add up to " + std::to_string(sum) +
                         " MiB, more than the device's usable memory");
  }
}

MigInstance ParseInstance(const YamlCheck& check, const At& at, const DeviceSpec& dev) {
  check.CheckKeys(at, {"profile", "gpu_instance_id", "compute_instance_id", "memory_mib",
                       "mem_used_mib", "uuid", "util"});
  MigInstance m;
  At profile = YamlCheck::Child(at, "profile");
  check.Require(profile);
  m.profile = check.String(profile);
  At gi = YamlCheck::Child(at, "gpu_instance_id");
  check.Require(gi);
  m.gpu_instance_id = static_cast<unsigned>(check.Integer(gi, 0, 255));
  At ci = YamlCheck::Child(at, "compute_instance_id");
  if (ci.present) m.compute_instance_id = static_cast<unsigned>(check.Integer(ci, 0, 255));
  At mem = YamlCheck::Child(at, "memory_mib");
  check.Require(mem);
  m.memory_mib =
      static_cast<uint64_t>(check.Integer(mem, 1, static_cast<int64_t>(dev.memory_total_mib)));
  At used = YamlCheck::Child(at, "mem_used_mib");
  if (used.present) {
    m.mem_used_mib =
        static_cast<uint64_t>(check.Integer(used, 0, static_cast<int64_t>(m.memory_mib)));
  }
  At util = YamlCheck::Child(at, "util");
  if (util.present) m.util = check.Number(util, 0, 100);
  At uuid = YamlCheck::Child(at, "uuid");
  m.uuid = uuid.present ? check.String(uuid)
                        : GenerateMigUuid(dev.uuid, m.gpu_instance_id, m.compute_instance_id);
  if (!IsValidUuid(m.uuid, "MIG-")) {
    check.Fail(uuid,
               "'" + m.uuid + "' is not a MIG UUID (MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
  }
  return m;
}

void ParseProcessKind(const YamlCheck& check, const At& at, Process& p) {
  if (!at.present) return;
  std::string kind = check.String(at);
  if (kind == "compute") {
    p.compute = true;
    p.graphics = false;
  } else if (kind == "graphics") {
    p.compute = false;
    p.graphics = true;
  } else if (kind == "compute+graphics") {
    p.compute = p.graphics = true;
  } else {
    check.Fail(at, "expected 'compute', 'graphics' or 'compute+graphics', got '" + kind + "'");
  }
}

void ParseProcessUtil(const YamlCheck& check, const At& item, Process& p) {
  auto get = [&](std::string_view key, std::optional<double>& out) {
    At v = YamlCheck::Child(item, key);
    if (v.present) out = check.Number(v, 0, 100);
  };
  get("sm_util", p.sm_util);
  get("mem_util", p.mem_util);
  get("enc_util", p.enc_util);
  get("dec_util", p.dec_util);
}

}  // namespace

Load ParseLoad(const YamlCheck& check, const At& at, const DeviceSpec& dev) {
  Load load;
  load.power_w.fallback = dev.idle_power_w;
  if (!at.present) {
    ApplyChannelDefaults(load);
    return load;
  }
  if (!at.node.IsMap()) {  // the short form: just the keyframe list
    ParseKeyframes(check, at, dev, load);
    ApplyChannelDefaults(load);
    return load;
  }
  check.CheckKeys(at, {"repeat_s", "keyframes"});
  const At keyframes = YamlCheck::Child(at, "keyframes");
  check.Require(keyframes);
  const double last_t = ParseKeyframes(check, keyframes, dev, load);
  const At repeat = YamlCheck::Child(at, "repeat_s");
  if (repeat.present) {
    load.repeat_s = check.Number(repeat, 0.001, kMaxTime);
    if (last_t > load.repeat_s) {
      check.Fail(repeat, "is shorter than the last keyframe's t (" + FormatNumber(last_t) + ")");
    }
  }
  ApplyChannelDefaults(load);
  return load;
}

MigConfig ParseMig(const YamlCheck& check, const At& at, const DeviceSpec& dev) {
  check.CheckKeys(at, {"enabled", "pending", "max_devices", "instances"});
  MigConfig mig;
  mig.capable = true;
  At enabled = YamlCheck::Child(at, "enabled");
  check.Require(enabled);
  mig.enabled = check.Bool(enabled);
  At pending = YamlCheck::Child(at, "pending");
  mig.pending = pending.present ? check.Bool(pending) : mig.enabled;
  At max = YamlCheck::Child(at, "max_devices");
  mig.max_devices = max.present ? static_cast<unsigned>(check.Integer(max, 1, 7)) : 7;
  At list = YamlCheck::Child(at, "instances");
  if (!list.present) return mig;
  check.ExpectSeq(list);
  std::set<std::pair<unsigned, unsigned>> ids;
  for (size_t i = 0; i < list.node.size(); ++i) {
    At item = YamlCheck::Element(list, i);
    MigInstance m = ParseInstance(check, item, dev);
    if (!ids.insert({m.gpu_instance_id, m.compute_instance_id}).second) {
      check.Fail(item, "another instance has the same gpu_instance_id and compute_instance_id");
    }
    mig.instances.push_back(std::move(m));
  }
  CheckInstanceFits(check, list, mig, dev);
  return mig;
}

std::vector<Process> ParseProcesses(const YamlCheck& check, const At& at, const DeviceSpec& dev) {
  check.ExpectSeq(at);
  std::vector<Process> out;
  std::set<unsigned> pids;
  for (size_t i = 0; i < at.node.size(); ++i) {
    At item = YamlCheck::Element(at, i);
    check.CheckKeys(item, {"pid", "used_memory_mib", "gpu_instance_id", "compute_instance_id",
                           "type", "sm_util", "mem_util", "enc_util", "dec_util"});
    Process p;
    At pid = YamlCheck::Child(item, "pid");
    check.Require(pid);
    if (pid.node.IsScalar() && pid.node.Scalar() == "workload") {
      p.workload = true;
    } else {
      p.pid = static_cast<unsigned>(check.Integer(pid, 1, 4194304));
    }
    if (!pids.insert(p.pid).second) check.Fail(pid, "pid is listed twice on this device");
    At mem = YamlCheck::Child(item, "used_memory_mib");
    check.Require(mem);
    p.used_memory_mib =
        static_cast<uint64_t>(check.Integer(mem, 0, static_cast<int64_t>(dev.memory_total_mib)));
    At gi = YamlCheck::Child(item, "gpu_instance_id");
    At ci = YamlCheck::Child(item, "compute_instance_id");
    if (gi.present || ci.present) {
      if (!dev.mig.enabled) check.Fail(item, "MIG instance ids given but MIG is not enabled");
      check.Require(gi);
      p.gpu_instance_id = static_cast<unsigned>(check.Integer(gi, 0, 255));
      p.compute_instance_id = ci.present ? static_cast<unsigned>(check.Integer(ci, 0, 255)) : 0;
      bool found = false;
      for (const MigInstance& m : dev.mig.instances) {
        found = found || (m.gpu_instance_id == p.gpu_instance_id &&
                          m.compute_instance_id == p.compute_instance_id);
      }
      if (!found) check.Fail(item, "no MIG instance on this device has these instance ids");
    }
    ParseProcessKind(check, YamlCheck::Child(item, "type"), p);
    ParseProcessUtil(check, item, p);
    out.push_back(p);
  }
  return out;
}

}  // namespace gpulse::sim
