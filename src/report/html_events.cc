#include "report/html_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "report/derive.h"

namespace gpulse::report::html {
namespace {

constexpr std::uint64_t kGpuIdleBit = 1;  // bit 0: the GPU is idle, not a slowdown

double Seconds(std::int64_t ns) { return std::max<std::int64_t>(0, ns) / 1e9; }

std::uint64_t ThrottleBits(const GpuSample& s) {
  return s.has(GpuSample::kClocksEventReasons) ? s.clocks_event_reasons & ~kGpuIdleBit : 0;
}

std::string ReasonNames(std::uint64_t bits) {
  std::string o;
  for (int bit = 0; bit < 64; ++bit) {
    if (bits & (std::uint64_t{1} << bit)) o += (o.empty() ? "" : ", ") + ClockReasonName(bit);
  }
  return o;
}

std::optional<double> LossTime(const Run& run, std::uint32_t device, std::string* reason) {
  for (const Entity& e : run.entities) {
    if (e.kind != EntityKind::kGpu || e.gpu != device || e.state != EntityState::kLost) continue;
    if (!e.lost_unix_ns) continue;
    *reason = e.reason;
    // In double: two unix times from a hand-edited run.json may not have an int64 difference.
    double s =
        (static_cast<double>(*e.lost_unix_ns) - static_cast<double>(run.info.start_unix_ns)) / 1e9;
    return std::max(0.0, s);
  }
  return std::nullopt;
}

}  // namespace

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kXid:
      return "xid";
    case EventKind::kThrottle:
      return "throttle";
    case EventKind::kLost:
      return "lost";
  }
  return "";
}

std::vector<Event> ThrottleIntervals(const Run& run, std::uint32_t device) {
  std::vector<Event> out;
  std::uint64_t bits = 0;  // reasons seen in the open interval; 0 when none is open
  double last_t = 0;
  for (const GpuSample& s : run.gpu_samples) {
    if (s.device_index != device) continue;
    double t = Seconds(s.elapsed_ns);
    std::uint64_t b = ThrottleBits(s);
    if (b != 0 && bits == 0) out.push_back({EventKind::kThrottle, t, t, 0, ""});
    if (b == 0 && bits != 0) {
      out.back().end_s = t;
      out.back().detail = ReasonNames(bits);
    }
    bits = b == 0 ? 0 : bits | b;
    last_t = t;
  }
  if (bits != 0) {  // still throttled at the device's last sample
    out.back().end_s = last_t;
    out.back().detail = ReasonNames(bits);
  }
  return out;
}

std::vector<Event> DeviceEvents(const Run& run, std::uint32_t device) {
  std::vector<Event> out;
  for (const XidEvent& x : run.xid_events) {
    if (x.device_index == device) {
      double t = Seconds(x.elapsed_ns);
      out.push_back({EventKind::kXid, t, t, x.xid, ""});
    }
  }
  for (Event& e : ThrottleIntervals(run, device)) out.push_back(std::move(e));
  std::string reason;
  if (std::optional<double> t = LossTime(run, device, &reason)) {
    out.push_back({EventKind::kLost, *t, *t, 0, reason});
  }
  return out;
}

std::vector<std::uint32_t> DevicesWithEvents(const Run& run) {
  std::set<std::uint32_t> devices;
  for (const XidEvent& x : run.xid_events) devices.insert(x.device_index);
  std::string reason;
  for (const Entity& e : run.entities) {
    if (e.kind == EntityKind::kGpu && LossTime(run, e.gpu, &reason)) devices.insert(e.gpu);
  }
  return {devices.begin(), devices.end()};
}

std::string FormatSeconds(double s) {
  std::string o = fmt::format("{:.3f}", s);
  while (o.back() == '0') o.pop_back();
  if (o.back() == '.') o.pop_back();
  return o == "-0" ? "0" : o;
}

std::string EventText(const Event& e) {
  switch (e.kind) {
    case EventKind::kXid:
      return fmt::format("XID {} at {} s", e.xid, FormatSeconds(e.start_s));
    case EventKind::kThrottle:
      return fmt::format("throttled {} s – {} s: {}", FormatSeconds(e.start_s),
                         FormatSeconds(e.end_s), e.detail);
    case EventKind::kLost:
      return fmt::format("GPU lost at {} s{}", FormatSeconds(e.start_s),
                         e.detail.empty() ? "" : ": " + e.detail);
  }
  return "";
}

}  // namespace gpulse::report::html
