// The HTML report: one self-contained file (inline CSS and SVG, no network, no external script) with
// the summary tables and, per device, time-series plots of utilization, memory, power and
// temperature on one time axis shared by every plot, plus the process RSS/CPU plot.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "report/render.h"

namespace gpulse::report {
namespace {

constexpr int kWidth = 640, kHeight = 160, kLeft = 56, kRight = 12, kTop = 22, kBottom = 24;
constexpr std::size_t kMaxPoints = 800;  // per series; longer timelines are averaged into buckets

std::string Escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

struct Point {
  double x, y;
};

std::vector<Point> Downsample(const std::vector<Point>& in) {
  if (in.size() <= kMaxPoints) return in;
  std::vector<Point> out;
  std::size_t per = (in.size() + kMaxPoints - 1) / kMaxPoints;
  for (std::size_t i = 0; i < in.size(); i += per) {
    std::size_t end = std::min(in.size(), i + per);
    double sx = 0, sy = 0;
    for (std::size_t k = i; k < end; ++k) {
      sx += in[k].x;
      sy += in[k].y;
    }
    out.push_back({sx / (end - i), sy / (end - i)});
  }
  return out;
}

struct Series {
  std::string name;
  std::string color;
  std::vector<Point> points;
};

// One plot: x from 0 to x_max seconds (shared by every plot of the report), y from 0 to the data's
// maximum (or y_max when given).
std::string Plot(const std::string& title, const std::string& unit, const std::vector<Series>& series,
                 double x_max, std::optional<double> y_max = std::nullopt) {
  double top = y_max.value_or(0);
  for (const Series& s : series) {
    for (const Point& p : s.points) top = std::max(top, p.y);
  }
  if (top <= 0) top = 1;
  if (x_max <= 0) x_max = 1;
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + x / x_max * w; };
  auto Y = [&](double y) { return kTop + h - y / top * h; };
  std::string o = fmt::format(
      "<svg class=\"plot\" data-title=\"{0}\" width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" "
      "role=\"img\" aria-label=\"{0}\">\n",
      Escape(title), kWidth, kHeight);
  o += fmt::format("<text x=\"{}\" y=\"14\" class=\"title\">{} ({})</text>\n", kLeft, Escape(title), Escape(unit));
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>\n", kLeft, kTop, w, h);
  for (int i = 0; i <= 2; ++i) {
    double v = top * i / 2;
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">{:.4g}</text>\n", kLeft - 4, Y(v) + 4, v);
  }
  for (int i = 0; i <= 4; ++i) {
    double v = x_max * i / 4;
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{:.3g} s</text>\n", X(v),
                     kHeight - 6, v);
  }
  int legend_x = kLeft + 200;
  for (const Series& s : series) {
    std::string pts;
    for (const Point& p : Downsample(s.points)) pts += fmt::format("{:.1f},{:.1f} ", X(p.x), Y(p.y));
    o += fmt::format("<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                     Escape(s.name), s.color, pts);
    o += fmt::format("<text x=\"{}\" y=\"14\" class=\"legend\" fill=\"{}\">{}</text>\n", legend_x, s.color, Escape(s.name));
    legend_x += 120;
  }
  if (series.empty() || std::all_of(series.begin(), series.end(), [](const Series& s) { return s.points.empty(); })) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"na\">n/a</text>\n", kLeft + w / 2, kTop + h / 2);
  }
  o += "</svg>\n";
  return o;
}

std::string Row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string o = "<tr>";
  for (const std::string& c : cells) o += fmt::format("<{0}>{1}</{0}>", tag, Escape(c));
  return o + "</tr>\n";
}

template <typename T>
std::string Or(const std::optional<T>& v, const std::function<std::string(T)>& f) {
  return v ? f(*v) : "n/a";
}

std::string Summary(const Run& run, const Report& r) {
  const RunInfo& i = run.info;
  std::string cmd;
  for (const std::string& w : i.command) cmd += (cmd.empty() ? "" : " ") + w;
  std::string o = "<table class=\"summary\">\n";
  o += Row({"command", cmd});
  o += Row({"duration", fmt::format("{:.3f} s", i.duration_ns / 1e9)});
  o += Row({"exit", i.exit_signal ? fmt::format("signal {}", *i.exit_signal)
                                  : i.exit_code ? fmt::format("code {}", *i.exit_code) : "did not start"});
  o += Row({"sample period", fmt::format("{} ms", i.sample_period_ns / 1'000'000)});
  if (i.simulated) o += Row({"GPUs", "simulated (scenario " + i.scenario + ")"});
  if (i.gpu_unavailable_reason) o += Row({"GPU", "no GPU samples collected: " + *i.gpu_unavailable_reason});
  const ResourceReport& p = r.resource;
  auto bytes = [](std::uint64_t b) { return FormatBytes(b); };
  o += Row({"process RSS peak / mean", Or<std::uint64_t>(p.rss_max_bytes, bytes) + " / " + Or<std::uint64_t>(p.rss_mean_bytes, bytes)});
  o += Row({"process CPU mean", Or<double>(p.cpu_mean_percent, [](double v) { return fmt::format("{:.0f}%", v); })});
  o += Row({"GPU energy", Or<double>(r.gpu.energy_millijoules, [](double v) { return fmt::format("{:.1f} J", v / 1000); }) +
                              (r.gpu.energy_source ? " (" + *r.gpu.energy_source + ")" : "")});
  o += "</table>\n";
  if (r.gpu.per_device.empty()) return o;
  o += "<table class=\"devices\">\n";
  o += Row({"GPU", "UUID", "samples", "VRAM peak", "SM mean", "power mean", "temp peak", "energy"}, "th");
  for (const DeviceReport& d : r.gpu.per_device) {
    const GpuAggregates& a = d.aggregates;
    o += Row({std::to_string(d.device_index), d.uuid, std::to_string(a.sample_count),
              Or<std::uint64_t>(a.memory_used_max_bytes, bytes),
              Or<std::uint32_t>(a.utilization_mean_percent, [](std::uint32_t v) { return fmt::format("{}%", v); }),
              Or<std::uint32_t>(a.power_mean_milliwatts, [](std::uint32_t v) { return fmt::format("{:.1f} W", v / 1000.0); }),
              Or<std::uint32_t>(a.temperature_max_celsius, [](std::uint32_t v) { return fmt::format("{} C", v); }),
              Or<double>(d.energy.millijoules, [](double v) { return fmt::format("{:.1f} J", v / 1000); })});
  }
  return o + "</table>\n";
}

std::string DeviceGroup(const Run& run, const DeviceReport& d, double x_max) {
  Series util{"GPU util", "#1f77b4", {}}, memutil{"memory util", "#ff7f0e", {}};
  Series mem{"used", "#2ca02c", {}}, power{"power", "#d62728", {}}, temp{"GPU", "#9467bd", {}};
  double mem_total = 0;
  for (const GpuSample& s : run.gpu_samples) {
    if (s.device_index != d.device_index) continue;
    double t = s.elapsed_ns / 1e9;
    // Absent readings are gaps in the plot, never zeros.
    if (s.has(GpuSample::kUtilization)) util.points.push_back({t, static_cast<double>(s.utilization_percent)});
    if (s.has(GpuSample::kMemoryUtilization)) memutil.points.push_back({t, static_cast<double>(s.memory_utilization_percent)});
    if (s.has(GpuSample::kMemoryUsed)) mem.points.push_back({t, s.memory_used_bytes / 1073741824.0});
    if (s.has(GpuSample::kMemoryTotal)) mem_total = std::max(mem_total, s.memory_total_bytes / 1073741824.0);
    if (s.has(GpuSample::kPower)) power.points.push_back({t, s.power_draw_milliwatts / 1000.0});
    if (s.has(GpuSample::kTemperature)) temp.points.push_back({t, static_cast<double>(s.temperature_celsius)});
  }
  std::string o = fmt::format("<section class=\"plot-group device\" data-device=\"{}\">\n<h2>GPU {}{}</h2>\n", d.device_index,
                              d.device_index, d.uuid.empty() ? "" : " — " + Escape(d.uuid));
  std::vector<Series> u{util};
  if (!memutil.points.empty()) u.push_back(memutil);
  o += Plot("utilization", "%", u, x_max, 100.0);
  o += Plot("memory used", "GiB", {mem}, x_max, mem_total);
  std::optional<double> limit;
  for (const DeviceInfo& info : run.devices) {
    if (info.index == d.device_index) limit = info.power_limit_watts;
  }
  o += Plot("power draw", "W", {power}, x_max, limit);
  o += Plot("temperature", "C", {temp}, x_max);
  return o + "</section>\n";
}

std::string ProcessGroup(const Run& run, double x_max) {
  Series rss{"RSS", "#17becf", {}}, cpu{"CPU", "#bcbd22", {}};
  const auto& s = run.resource_samples;
  for (std::size_t i = 0; i < s.size(); ++i) {
    double t = s[i].elapsed_ns / 1e9;
    rss.points.push_back({t, s[i].rss_bytes / 1048576.0});
    if (i > 0 && s[i].elapsed_ns > s[i - 1].elapsed_ns && run.clock_ticks_per_second > 0) {
      double j = static_cast<double>(s[i].cpu_user_jiffies + s[i].cpu_system_jiffies) -
                 static_cast<double>(s[i - 1].cpu_user_jiffies + s[i - 1].cpu_system_jiffies);
      double dt = (s[i].elapsed_ns - s[i - 1].elapsed_ns) / 1e9;
      cpu.points.push_back({t, j / run.clock_ticks_per_second / dt * 100});
    }
  }
  std::string o = "<section class=\"process\">\n<h2>Process tree</h2>\n";
  o += Plot("resident memory", "MiB", {rss}, x_max);
  o += Plot("CPU", "% of one core", {cpu}, x_max);
  return o + "</section>\n";
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
svg.plot{display:block;margin:4px 0}.frame{fill:#fafafa;stroke:#999}.tick{font-size:10px;fill:#555}
.title{font-size:12px;font-weight:bold}.legend{font-size:11px}.na{font-size:14px;fill:#999}
pre{background:#f4f4f4;padding:.6em;overflow:auto})";

}  // namespace

std::string RenderHtml(const Run& run, const Report& report) {
  double x_max = run.info.duration_ns / 1e9;
  for (const GpuSample& s : run.gpu_samples) x_max = std::max(x_max, s.elapsed_ns / 1e9);
  std::string cmd;
  for (const std::string& w : run.info.command) cmd += (cmd.empty() ? "" : " ") + w;
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += fmt::format("<title>gpulse run: {}</title>\n<style>{}</style>\n</head>\n<body>\n", Escape(cmd), kStyle);
  o += fmt::format("<h1>gpulse run report: <code>{}</code></h1>\n", Escape(cmd));
  o += Summary(run, report);
  o += ProcessGroup(run, x_max);
  if (report.gpu.per_device.empty()) {
    o += "<p class=\"no-gpu\">No GPU samples collected";
    o += run.info.gpu_unavailable_reason ? ": " + Escape(*run.info.gpu_unavailable_reason) : "";
    o += ".</p>\n";
  }
  for (const DeviceReport& d : report.gpu.per_device) o += DeviceGroup(run, d, x_max);
  o += "<h2>Text report</h2>\n<pre>" + Escape(RenderText(run, report)) + "</pre>\n";
  // Marks the page as fully parsed for the browser test; the report needs no script to display.
  o += "<script>document.body.dataset.plotGroups=String(document.querySelectorAll('.plot-group').length);"
       "document.body.dataset.ready='1';</script>\n";
  return o + "</body>\n</html>\n";
}

}  // namespace gpulse::report
