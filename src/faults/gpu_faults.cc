#include "faults/gpu_faults.h"

#include <algorithm>
#include <utility>

#include "faults/xid_line.h"

namespace gpulse::faults {
namespace {

const ActionInfo& Named(std::string_view name) { return *FindAction(name); }

}  // namespace

void GpuFaults::FromKernelLog(const XidReport& r, bool before_start) {
  Count& c = counts_[r.xid];
  if (before_start) {
    ++c.before;
    NewEvent(r);
  } else if (++c.log > c.nvml) {
    NewEvent(r);
  } else {
    Refine(r);
  }
}

void GpuFaults::FromNvml(std::uint64_t xid, std::int64_t t_unix_ns) {
  Count& c = counts_[xid];
  if (++c.nvml > c.log) NewEvent({xid, t_unix_ns, std::nullopt, false, std::nullopt});
}

void GpuFaults::NewEvent(const XidReport& r) {
  new_events_.push_back(r.xid);
  last_xid_ = r.xid;
  while (!recent_.empty() && recent_.front().first < r.t_unix_ns - kIncidentWindowNs) {
    recent_.pop_front();
  }
  Raise(r);
  recent_.emplace_back(r.t_unix_ns, r.xid);
}

void GpuFaults::Raise(const XidReport& r) {
  const ActionInfo* action = &CatalogueAction(r.xid);
  bool from_driver = false;
  auto recent = [&](auto pred) {
    return std::any_of(recent_.begin(), recent_.end(), [&](const auto& e) {
      return e.first >= r.t_unix_ns - kIncidentWindowNs && pred(e.second);
    });
  };
  if (action->name == "XID_154" && r.text) {
    if (auto value = RecoveryActionOf154(*r.text)) {
      NoteDriverAction(*value, r.t_unix_ns);
      return;
    }
  } else if (action->name == "WORKFLOW_XID_45") {
    const bool caused = r.text && RootCauseXid(*r.text).has_value();
    if (caused || recent([](std::uint64_t x) { return x != 45; })) return;  // not solo: IGNORE
  } else if (r.xid == 48 && recent([](std::uint64_t x) { return x == 63 || x == 64; })) {
    action = &Named("DRAIN_AND_RESET");
  }
  if (action->rank == 0) return;
  pending_.push_back({action, r.xid, r.t_unix_ns, r.pid_alive ? r.pid : std::nullopt, from_driver,
                      r.text.has_value()});
}

void GpuFaults::Refine(const XidReport& r) {
  if (!r.text) return;
  // The newest action of this code raised without the driver's message.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (it->xid != r.xid || it->has_text) continue;
    pending_.erase(std::next(it).base());
    Raise(r);
    return;
  }
  // Nothing pending from it: only Xid 154's "back to none" still matters.
  if (r.xid == 154) {
    if (auto value = RecoveryActionOf154(*r.text); value && *value == 0) {
      NoteDriverAction(0, r.t_unix_ns);
    }
  }
}

void GpuFaults::NoteDriverAction(std::uint64_t value, std::int64_t t_unix_ns) {
  const std::uint64_t before = std::exchange(driver_action_, value);
  std::erase_if(pending_, [](const Pending& p) { return p.from_driver; });
  if (value == 0) {
    if (before != 0) Clear(/*reset=*/true, /*reboot=*/false);  // the driver saw it recover
    return;
  }
  const ActionInfo* a = DriverRecoveryAction(value);
  pending_.push_back({a, 154, t_unix_ns, std::nullopt, true, true});
}

void GpuFaults::NoteReset() {
  driver_action_ = 0;
  Clear(true, false);
}

void GpuFaults::NoteReboot() {
  driver_action_ = 0;
  recent_.clear();  // nothing before a reboot explains an Xid after it
  // No event of the new boot is one of the old: what was counted stays, the matching starts over.
  for (auto& [xid, c] : counts_) {
    c.before += std::max(c.nvml, c.log);
    c.nvml = c.log = 0;
  }
  Clear(true, true);
}

void GpuFaults::Clear(bool reset, bool reboot) {
  std::erase_if(pending_, [&](const Pending& p) {
    switch (p.action->clears) {
      case ActionClears::kNever:
        return true;
      case ActionClears::kProcess:
      case ActionClears::kReset:
        return reset || reboot;
      case ActionClears::kReboot:
        return reboot;
    }
    return false;
  });
}

void GpuFaults::ClearExited(const std::function<bool(std::uint32_t)>& alive) {
  std::erase_if(pending_, [&](const Pending& p) {
    return p.action->clears == ActionClears::kProcess && p.pid && !alive(*p.pid);
  });
}

std::vector<std::uint64_t> GpuFaults::TakeNewEvents() { return std::exchange(new_events_, {}); }

std::vector<XidCount> GpuFaults::Counts() const {
  std::vector<XidCount> out;
  for (const auto& [xid, c] : counts_) {
    const std::uint64_t n = c.before + std::max(c.nvml, c.log);
    if (n > 0) out.push_back({xid, n});
  }
  return out;
}

XidAction GpuFaults::Recommended() const {
  const Pending* best = nullptr;
  for (const Pending& p : pending_) {
    if (best == nullptr || p.action->rank > best->action->rank ||
        (p.action->rank == best->action->rank && p.t_unix_ns >= best->t_unix_ns)) {
      best = &p;
    }
  }
  XidAction out;
  if (best == nullptr) {
    out.action = "NONE";
    return out;
  }
  out.action = std::string(best->action->name);
  out.rank = best->action->rank;
  out.xid = best->xid;
  out.t_unix_ns = best->t_unix_ns;
  out.from_driver = best->from_driver;
  if (const XidEntry* e = FindXid(best->xid)) out.description = std::string(e->description);
  return out;
}

}  // namespace gpulse::faults
