// The HTML report: one self-contained file (inline CSS and SVG, no network, no external script)
// with the summary tables, the process tree's RSS/CPU plots and one row per device: its
// utilization, memory, power and temperature plots side by side on one time axis shared by every
// plot, and the events strip (XIDs, throttling, loss) under them. The SVG pieces are in
// html_plot.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/shell_words.h"
#include "report/html_events.h"
#include "report/html_plot.h"
#include "report/render.h"

namespace gpulse::report {
namespace {

using html::Canvas;
using html::Escape;
using html::Event;
using html::PlotSpec;
using html::Series;

constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();  // a gap in the plot

std::string Row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string o = "<tr>";
  for (const std::string& c : cells) o += fmt::format("<{0}>{1}</{0}>", tag, Escape(c));
  return o + "</tr>\n";
}

template <typename T>
std::string Or(const std::optional<T>& v, const std::function<std::string(T)>& f) {
  return v ? f(*v) : "n/a";
}

// The GPUs of the run with no sample (skipped, lost before the start, or never answered), in GPU
// order: the report names each with its state rather than leaving it out.
std::vector<const Entity*> GpusWithoutSamples(const Run& run, const Report& r) {
  std::vector<const Entity*> out;
  for (const Entity& e : run.entities) {
    if (e.kind != EntityKind::kGpu) continue;
    const auto& per = r.gpu.per_device;
    if (std::none_of(per.begin(), per.end(),
                     [&](const DeviceReport& d) { return d.device_index == e.gpu; }))
      out.push_back(&e);
  }
  std::sort(out.begin(), out.end(), [](const Entity* a, const Entity* b) { return a->gpu < b->gpu; });
  return out;
}

std::string UnsampledState(const Entity& e) {
  std::string state = e.state == EntityState::kSkipped ? "skipped"
                      : e.state == EntityState::kLost  ? (e.lost_unix_ns ? "lost" : "lost before start")
                                                        : "no samples";
  return e.reason.empty() ? state : state + ": " + e.reason;
}

std::string Summary(const Run& run, const Report& r) {
  const RunInfo& i = run.info;
  const std::string cmd = ShellJoin(i.command);
  std::string o = "<table class=\"summary\">\n";
  o += Row({"command", cmd});
  o += Row({"duration", fmt::format("{:.3f} s", i.duration_ns / 1e9)});
  o += Row({"exit", i.exit_signal ? fmt::format("signal {}", *i.exit_signal)
                    : i.exit_code ? fmt::format("code {}", *i.exit_code)
                                  : "did not start"});
  o += Row({"sample period", fmt::format("{} ms", i.sample_period_ns / 1'000'000)});
  if (i.simulated) o += Row({"GPUs", "simulated (scenario " + i.scenario + ")"});
  if (i.gpu_unavailable_reason)
    o += Row({"GPU", "no GPU samples collected: " + *i.gpu_unavailable_reason});
  const ResourceReport& p = r.resource;
  auto bytes = [](std::uint64_t b) { return FormatBytes(b); };
  o += Row({"process RSS peak / mean", Or<std::uint64_t>(p.rss_max_bytes, bytes) + " / " +
                                           Or<std::uint64_t>(p.rss_mean_bytes, bytes)});
  o += Row({"process CPU mean",
            Or<double>(p.cpu_mean_percent, [](double v) { return fmt::format("{:.0f}%", v); })});
  auto joules = [](std::uint64_t mj) { return fmt::format("{:.1f} J", mj / 1000.0); };
  o += Row({"GPU energy", Or<std::uint64_t>(r.gpu.energy_millijoules, joules) +
                              (r.gpu.energy_source
                                   ? std::string(" (") + EnergySourceName(*r.gpu.energy_source) + ")"
                                   : "")});
  o += "</table>\n";
  const std::vector<const Entity*> unsampled = GpusWithoutSamples(run, r);
  if (r.gpu.per_device.empty() && unsampled.empty()) return o;
  o += "<table class=\"devices\">\n";
  o += Row({"GPU", "UUID", "samples", "VRAM peak", "SM mean", "power mean", "temp peak", "energy"},
           "th");
  std::size_t next = 0;  // every GPU in GPU order: one without samples says why (issue 40)
  auto unsampled_below = [&](std::uint32_t index) {
    for (; next < unsampled.size() && unsampled[next]->gpu < index; ++next) {
      const Entity& e = *unsampled[next];
      o += fmt::format(
          "<tr class=\"unsampled\"><td>{}</td><td>{}</td><td>0</td><td colspan=\"5\">{}</td></tr>\n",
          e.gpu, Escape(e.uuid), Escape(UnsampledState(e)));
    }
  };
  for (const DeviceReport& d : r.gpu.per_device) {
    unsampled_below(d.device_index);
    const GpuAggregates& a = d.aggregates;
    o +=
        Row({std::to_string(d.device_index), d.uuid, std::to_string(a.sample_count),
             Or<std::uint64_t>(a.memory_used_max_bytes, bytes),
             Or<std::uint32_t>(a.utilization_mean_percent,
                               [](std::uint32_t v) { return fmt::format("{}%", v); }),
             Or<std::uint32_t>(a.power_mean_milliwatts,
                               [](std::uint32_t v) { return fmt::format("{:.1f} W", v / 1000.0); }),
             Or<std::uint32_t>(a.temperature_max_celsius,
                               [](std::uint32_t v) { return fmt::format("{} C", v); }),
             Or<std::uint64_t>(d.energy.millijoules,
                               [](std::uint64_t v) { return fmt::format("{:.1f} J", v / 1000.0); })});
  }
  unsampled_below(~0u);
  return o + "</table>\n";
}

const DeviceInfo* FindDevice(const Run& run, std::uint32_t index) {
  for (const DeviceInfo& info : run.devices) {
    if (info.index == index) return &info;
  }
  return nullptr;
}

// "GPU 0 — NVIDIA A40 — GPU-…", skipping the parts that are unknown.
std::string DeviceHeader(const char* tag, std::uint32_t index, const std::string& name,
                         const std::string& uuid) {
  std::string text = fmt::format("GPU {}", index);
  for (const std::string& part : {name, uuid}) {
    if (!part.empty()) text += " — " + part;
  }
  return fmt::format("<{0} class=\"device-name\" data-name=\"{1}\" data-uuid=\"{2}\">{3}</{0}>\n",
                     tag, Escape(name), Escape(uuid), Escape(text));
}

struct DeviceSeries {
  Series util{"GPU util", "#1f77b4", {}}, memutil{"memory util", "#ff7f0e", {}};
  Series mem{"used", "#2ca02c", {}}, power{"power", "#d62728", {}}, temp{"GPU", "#9467bd", {}};
  double mem_total = 0;
  bool has_memutil = false;
};

// Absent readings are gaps in the plot (NaN points), never zeros.
DeviceSeries CollectDevice(const Run& run, std::uint32_t index) {
  DeviceSeries d;
  auto add = [](Series& s, double t, bool present, double v) {
    s.points.push_back({t, present ? v : kAbsent});
  };
  for (const GpuSample& s : run.gpu_samples) {
    if (s.device_index != index) continue;
    double t = s.elapsed_ns / 1e9;
    add(d.util, t, s.has(GpuSample::kUtilization), s.utilization_percent);
    add(d.memutil, t, s.has(GpuSample::kMemoryUtilization), s.memory_utilization_percent);
    add(d.mem, t, s.has(GpuSample::kMemoryUsed), s.memory_used_bytes / 1073741824.0);
    add(d.power, t, s.has(GpuSample::kPower), s.power_draw_milliwatts / 1000.0);
    add(d.temp, t, s.has(GpuSample::kTemperature), s.temperature_celsius);
    d.has_memutil = d.has_memutil || s.has(GpuSample::kMemoryUtilization);
    if (s.has(GpuSample::kMemoryTotal))
      d.mem_total = std::max(d.mem_total, s.memory_total_bytes / 1073741824.0);
  }
  return d;
}

std::string DeviceGroup(const Run& run, const DeviceReport& d, Canvas& c) {
  DeviceSeries s = CollectDevice(run, d.device_index);
  std::vector<Event> events = html::DeviceEvents(run, d.device_index);
  const DeviceInfo* info = FindDevice(run, d.device_index);
  std::string uuid = d.uuid.empty() && info ? info->uuid : d.uuid;
  std::string o =
      fmt::format("<section class=\"plot-group device\" data-device=\"{}\">\n", d.device_index);
  o += DeviceHeader("h2", d.device_index, info ? info->name : "", uuid);
  o += "<div class=\"plots\">\n";
  std::vector<Series> u{s.util};
  if (s.has_memutil) u.push_back(s.memutil);
  o += html::Plot(c, {"utilization", "%", u, 100.0}, events);
  o += html::Plot(
      c,
      {"memory used", "GiB", {s.mem}, s.mem_total > 0 ? std::optional(s.mem_total) : std::nullopt},
      events);
  o += html::Plot(c, {"power draw", "W", {s.power}, info ? info->power_limit_watts : std::nullopt},
                  events);
  o += html::Plot(c, {"temperature", "C", {s.temp}, std::nullopt}, events);
  o += html::EventsStrip(c, d.device_index, events);
  return o + "</div>\n</section>\n";
}

std::string ProcessGroup(const Run& run, Canvas& c) {
  Series rss{"RSS", "#17becf", {}}, cpu{"CPU", "#bcbd22", CpuPercentSeries(run.resource_samples,
                                                                           run.clock_ticks_per_second)};
  for (const ResourceSample& s : run.resource_samples) {
    rss.points.push_back({s.elapsed_ns / 1e9, s.rss_bytes / 1048576.0});
  }
  std::string o = "<section class=\"process\">\n<h2>Process tree</h2>\n<div class=\"plots\">\n";
  o += html::Plot(c, {"resident memory", "MiB", {rss}, std::nullopt});
  o += html::Plot(c, {"CPU", "% of one core", {cpu}, std::nullopt});
  return o + "</div>\n</section>\n";
}

// Every GPU that has no row (no samples: skipped, lost before the run): its state and reason, and
// the strip of its XIDs and loss when it has any.
std::string EventsWithoutRow(const Run& run, const Report& report, Canvas& c) {
  std::string o;
  const std::vector<std::uint32_t> with_events = html::DevicesWithEvents(run);
  for (const Entity* e : GpusWithoutSamples(run, report)) {
    o += fmt::format("<div class=\"unsampled\" data-device=\"{}\" data-state=\"{}\">\n", e->gpu,
                     EntityStateName(e->state));
    o += DeviceHeader("h3", e->gpu, e->name, e->uuid);
    o += "<p class=\"state\">" + Escape(UnsampledState(*e)) + "; no readings</p>\n";
    if (std::find(with_events.begin(), with_events.end(), e->gpu) != with_events.end())
      o += html::EventsStrip(c, e->gpu, html::DeviceEvents(run, e->gpu));
    o += "</div>\n";
  }
  if (o.empty()) return o;
  return "<section class=\"unsampled-events\">\n<h2>GPUs without samples</h2>\n" + o +
         "</section>\n";
}

std::string Style(const html::Geometry& g) {
  constexpr const char* kStyle = R"(body{{font-family:sans-serif;margin:1.5em;color:#222}}
h1{{font-size:1.4em}}h2{{font-size:1.1em;margin:1em 0 .3em}}
h3{{font-size:1em;margin:.6em 0 .2em}}table{{border-collapse:collapse;margin:.5em 0}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}
.device-rows{{display:grid;grid-template-columns:minmax(0,1fr);row-gap:.4em}}
.plots{{display:grid;grid-template-columns:repeat(auto-fill,{0}px);gap:2px 12px;max-width:{1}px}}
.plots svg{{display:block}}.events-strip{{grid-column:1}}
.frame{{fill:#fafafa;stroke:#999}}.grid{{stroke:#e4e4e4}}.tick{{font-size:10px;fill:#555}}
.title{{font-size:12px;font-weight:bold}}.legend{{font-size:11px}}
.na{{font-size:14px;fill:#999}}.small{{font-size:10px}}
polyline.series{{stroke-width:1.5;stroke-linecap:round;stroke-linejoin:round}}
.evline{{stroke-width:1}}.evline.xid{{stroke:#d62728}}
.evline.lost{{stroke:#333;stroke-dasharray:3 2}}
.evband.throttle{{fill:#ff7f0e;fill-opacity:.12}}.evband.lost{{fill:#777;fill-opacity:.15}}
.event.xid{{fill:#d62728}}.event.throttle{{fill:#ff7f0e;fill-opacity:.6}}
.event.lost{{fill:#555;fill-opacity:.7}}
pre{{background:#f4f4f4;padding:.6em;overflow:auto}})";
  return fmt::format(kStyle, g.width, 4 * g.width + 3 * 12);  // at most four plots in a row
}

double TimeAxisEnd(const Run& run) {
  double x_max = run.info.duration_ns / 1e9;
  for (const GpuSample& s : run.gpu_samples) x_max = std::max(x_max, s.elapsed_ns / 1e9);
  for (const ResourceSample& s : run.resource_samples) x_max = std::max(x_max, s.elapsed_ns / 1e9);
  return x_max > 0 ? x_max : 1;
}

}  // namespace

namespace {

// CPU % of one core between two samples. A drop in the summed CPU time (in a run.json of a gpulse
// before schema 3, a descendant that exited took its time with it) is no reading: a gap, not a
// negative value.
double CpuPercent(const ResourceSample& a, const ResourceSample& b, long ticks_per_second) {
  double j = static_cast<double>(b.cpu_user_jiffies + b.cpu_system_jiffies) -
             static_cast<double>(a.cpu_user_jiffies + a.cpu_system_jiffies);
  if (j < 0) return kAbsent;
  double dt = (static_cast<double>(b.elapsed_ns) - static_cast<double>(a.elapsed_ns)) / 1e9;
  return j / ticks_per_second / dt * 100;
}

}  // namespace

std::vector<html::Point> CpuPercentSeries(const std::deque<ResourceSample>& s,
                                          long ticks_per_second) {
  std::vector<html::Point> points;
  if (ticks_per_second <= 0 || s.size() < 2) return points;
  const double min_span_ns = kMinCpuSpanTicks * 1e9 / static_cast<double>(ticks_per_second);
  std::size_t anchor = 0, previous = 0;  // where the last point's span starts, and the one before
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (static_cast<double>(s[i].elapsed_ns - s[anchor].elapsed_ns) < min_span_ns) continue;
    points.push_back({s[i].elapsed_ns / 1e9, CpuPercent(s[anchor], s[i], ticks_per_second)});
    previous = anchor;
    anchor = i;
  }
  const std::size_t last = s.size() - 1;
  if (anchor == last || s[last].elapsed_ns <= s[anchor].elapsed_ns) return points;
  // A final span shorter than the minimum (CMD exited just after a tick) joins the one before it.
  const std::size_t from = points.empty() ? 0 : previous;
  if (!points.empty()) points.pop_back();
  points.push_back({s[last].elapsed_ns / 1e9, CpuPercent(s[from], s[last], ticks_per_second)});
  return points;
}

std::string RenderHtml(const Run& run, const Report& report) {
  Canvas c{html::PlotGeometry(report.gpu.per_device.size() > 2), TimeAxisEnd(run)};
  const std::string cmd = ShellJoin(run.info.command);
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += fmt::format("<title>gpulse run: {}</title>\n<style>{}</style>\n</head>\n<body>\n",
                   Escape(cmd), Style(c.geo));
  o += fmt::format("<h1>gpulse run report: <code>{}</code></h1>\n", Escape(cmd));
  o += Summary(run, report);
  o += ProcessGroup(run, c);
  if (report.gpu.per_device.empty()) {
    o += "<p class=\"no-gpu\">No GPU samples collected";
    o += run.info.gpu_unavailable_reason ? ": " + Escape(*run.info.gpu_unavailable_reason) : "";
    o += ".</p>\n";
  }
  o += "<div class=\"device-rows\">\n";
  for (const DeviceReport& d : report.gpu.per_device) o += DeviceGroup(run, d, c);
  o += "</div>\n" + EventsWithoutRow(run, report, c);
  o += "<h2>Text report</h2>\n<pre>" + Escape(RenderText(run, report)) + "</pre>\n";
  // Marks the page as fully parsed for the browser test; the report needs no script to display.
  o += "<script>document.body.dataset.plotGroups=String(document.querySelectorAll('.plot-group')."
       "length);"
       "document.body.dataset.ready='1';</script>\n";
  return o + "</body>\n</html>\n";
}

}  // namespace gpulse::report
