#include "faults/gpu_faults.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "faults/xid_line.h"

namespace gpulse::faults {
namespace {

const ActionInfo& Named(std::string_view name) { return *FindAction(name); }

}  // namespace

GpuFaults::Count* GpuFaults::CountOf(std::uint64_t xid) {
  auto it = counts_.find(xid);
  if (it != counts_.end()) return &it->second;
  if (counts_.size() >= kMaxCodes) {
    ++dropped_;
    return nullptr;
  }
  return &counts_[xid];
}

void GpuFaults::FromKernelLog(const XidReport& r, bool before_start) {
  Count* c = CountOf(r.xid);
  if (c == nullptr) return;
  if (before_start) {
    ++c->before;
    NewEvent(r);
  } else if (++c->log > c->nvml) {
    NewEvent(r);
  } else {
    Refine(r);
  }
}

void GpuFaults::FromNvml(std::uint64_t xid, std::int64_t t_unix_ns) {
  Count* c = CountOf(xid);
  if (c != nullptr && ++c->nvml > c->log) {
    NewEvent({xid, t_unix_ns, std::nullopt, false, std::nullopt});
  }
}

void GpuFaults::NewEvent(const XidReport& r) {
  if (new_events_.size() >= kMaxNewEvents) new_events_.erase(new_events_.begin());
  new_events_.push_back(r.xid);
  last_xid_ = r.xid;
  if (r.xid == 63 || r.xid == 64) {
    // The driver may log the retirement after the Xid 48 it goes with: drain and reset then too.
    for (Pending& p : pending_) {
      if (p.xid == 48 && p.action->name == "RESET_GPU" &&
          std::abs(p.t_unix_ns - r.t_unix_ns) <= kIncidentWindowNs) {
        p.action = &Named("DRAIN_AND_RESET");
      }
    }
  }
  Raise(r);
  if (r.xid != 45) last_other_ns_ = r.t_unix_ns;
  if (r.xid == 63 || r.xid == 64) last_retirement_ns_ = r.t_unix_ns;
}

void GpuFaults::Raise(const XidReport& r) {
  const ActionInfo* action = &CatalogueAction(r.xid);
  auto within = [&](const std::optional<std::int64_t>& t) {
    return t && r.t_unix_ns - *t <= kIncidentWindowNs && *t - r.t_unix_ns <= kIncidentWindowNs;
  };
  if (action->name == "XID_154" && r.text) {
    if (auto value = RecoveryActionOf154(*r.text)) {
      NoteDriverAction(*value, r.t_unix_ns);
      return;
    }
  } else if (action->name == "WORKFLOW_XID_45") {
    const bool caused = r.text && RootCauseXid(*r.text).has_value();
    if (caused || within(last_other_ns_)) return;  // not solo: IGNORE
  } else if (r.xid == 48 && within(last_retirement_ns_)) {
    action = &Named("DRAIN_AND_RESET");
  }
  if (action->rank == 0) return;
  Add({action, r.xid, r.t_unix_ns, r.pid_alive ? r.pid : std::nullopt, false, r.text.has_value()});
}

// One entry per action, process and source: a repeat takes the newest Xid and time. Past the
// bound, the least severe (the oldest among equals) goes.
void GpuFaults::Add(Pending p) {
  for (Pending& q : pending_) {
    if (q.action == p.action && q.pid == p.pid && q.from_driver == p.from_driver) {
      q = p;
      return;
    }
  }
  pending_.push_back(p);
  if (pending_.size() <= kMaxPending) return;
  auto least =
      std::min_element(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
        return a.action->rank != b.action->rank ? a.action->rank < b.action->rank
                                                : a.t_unix_ns < b.t_unix_ns;
      });
  pending_.erase(least);
}

void GpuFaults::Refine(const XidReport& r) {
  if (!r.text) return;
  // The newest action of this code raised without the driver's message: it is the same event,
  // so it keeps its time; only what the message changes about it changes.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (it->xid != r.xid || it->has_text) continue;
    XidReport same = r;
    same.t_unix_ns = it->t_unix_ns;
    const Pending before = *it;
    pending_.erase(std::next(it).base());
    Raise(same);
    // Resolved to the same action: keep the entry as it was, now with the message.
    for (Pending& q : pending_) {
      if (q.action == before.action && q.xid == before.xid && q.t_unix_ns == before.t_unix_ns) {
        q.has_text = true;
      }
    }
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
  Add({DriverRecoveryAction(value), 154, t_unix_ns, std::nullopt, true, true});
}

void GpuFaults::NoteReset() {
  driver_action_ = 0;
  Clear(true, false);
}

void GpuFaults::NoteReboot() {
  driver_action_ = 0;
  last_other_ns_.reset();  // nothing before a reboot explains an Xid after it
  last_retirement_ns_.reset();
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
