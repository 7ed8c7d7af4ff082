#include "report/html_plot.h"

#include "core/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpulse::report::html {
namespace {

constexpr std::size_t kMaxPoints = 800;  // per series; longer timelines are averaged into buckets
constexpr int kYIntervals = 4;
constexpr double kXTickSpacing = 70;  // pixels per x tick at least, so "0.25 s" labels never touch

// Maps data to the frame, clamping into it: nothing is drawn outside, even in raw coordinates.
struct Mapper {
  const Geometry& g;
  double x_max, y_top;
  double Left() const { return g.left; }
  double Right() const { return g.left + g.frame_w(); }
  double Top() const { return g.top; }
  double Bottom() const { return g.top + g.frame_h(); }
  double X(double x) const { return Left() + std::clamp(x, 0.0, x_max) / x_max * g.frame_w(); }
  double Y(double y) const { return Bottom() - std::clamp(y, 0.0, y_top) / y_top * g.frame_h(); }
};

double Round2(double v) { return std::round(v * 100) / 100; }

// [t0, t1] on the x axis as a pixel span at least min_w wide, kept inside the frame.
struct Span {
  double x, w;
};
Span SpanOf(const Mapper& m, double t0, double t1, double min_w) {
  double a = m.X(t0), b = m.X(t1);
  if (b - a < min_w) {
    double mid = (a + b) / 2;
    a = mid - min_w / 2;
    b = mid + min_w / 2;
  }
  if (a < m.Left()) {
    b += m.Left() - a;
    a = m.Left();
  }
  if (b > m.Right()) {
    a -= b - m.Right();
    b = m.Right();
  }
  a = Round2(std::max(a, m.Left()));
  b = Round2(b);
  return {a, b - a};
}

double DataMax(const PlotSpec& spec) {
  double top = spec.y_max.value_or(0);
  for (const Series& s : spec.series) {
    for (const Point& p : s.points) {
      if (std::isfinite(p.y)) top = std::max(top, p.y);
    }
  }
  return top;
}

std::string SvgOpen(const char* cls, const Geometry& g, const std::string& label,
                    const std::string& attrs) {
  return fmt::format(
      "<svg class=\"{0}\" data-title=\"{1}\"{4} width=\"{2}\" height=\"{3}\" "
      "viewBox=\"0 0 {2} {3}\" role=\"img\" aria-label=\"{1}\">\n",
      cls, Escape(label), g.width, g.height, attrs);
}

// The clip path (unique id in the page) and the frame rectangle it matches.
std::string FrameAndClip(Canvas& c, const Mapper& m, std::string* id) {
  *id = fmt::format("clip-{}", c.next_clip++);
  std::string rect = fmt::format("x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", m.Left(), m.Top(),
                                 m.g.frame_w(), m.g.frame_h());
  return fmt::format(
      "<defs><clipPath id=\"{}\"><rect {}/></clipPath></defs>\n<rect {} class=\"frame\"/>\n", *id,
      rect, rect);
}

std::string YTicks(const Mapper& m, const Axis& y) {
  std::string o;
  int n = static_cast<int>(std::lround(y.top / y.step));
  for (int i = 0; i <= n; ++i) {
    double v = y.step * i, py = m.Y(v);
    if (i > 0 && i < n) {
      o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                       m.Left(), m.Right(), py, py);
    }
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tick y\" text-anchor=\"end\">{}</text>\n",
                     m.Left() - 4, py + 3.5, FormatTick(v, y.step));
  }
  return o;
}

std::string XTicks(const Mapper& m) {
  int intervals = std::max(2, static_cast<int>(m.g.frame_w() / kXTickSpacing));
  double step = NiceStep(m.x_max / intervals);
  std::string o;
  for (int i = 0; step * i <= m.x_max * (1 + 1e-9); ++i) {
    double v = step * i;
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" class=\"tick x\" text-anchor=\"middle\">{} s</text>\n", m.X(v),
        m.g.height - 6, FormatTick(v, step));
  }
  return o;
}

std::string Legend(const Geometry& g, const std::vector<Series>& series) {
  std::string o;
  double x = g.left;
  for (const Series& s : series) {
    o += fmt::format("<text x=\"{:.0f}\" y=\"26\" class=\"legend\" fill=\"{}\">{}</text>\n", x,
                     s.color, Escape(s.name));
    x += 16 + 6.5 * s.name.size();
  }
  return o;
}

std::string Polyline(const Series& s, const std::string& pts) {
  return fmt::format(
      "<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" points=\"{}\"/>\n",
      Escape(s.name), s.color, pts);
}

// One polyline per run of present readings: an absent reading is a gap, never a zero.
std::string Lines(const Mapper& m, const Series& s) {
  std::string o, pts, last;
  int n = 0;
  auto flush = [&] {
    if (n == 1) pts += last;  // a lone reading: a zero-length line, drawn as a dot by its round cap
    if (n > 0) o += Polyline(s, pts);
    pts.clear();
    n = 0;
  };
  for (const Point& p : Downsample(s.points, kMaxPoints)) {
    if (!std::isfinite(p.y)) {
      flush();
      continue;
    }
    last = fmt::format("{:.1f},{:.1f} ", m.X(p.x), m.Y(p.y));
    pts += last;
    ++n;
  }
  flush();
  return o;
}

std::string Band(const char* cls, const Mapper& m, Span s) {
  return fmt::format("<rect class=\"{}\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\"/>\n",
                     cls, s.x, m.Top(), s.w, m.g.frame_h());
}

// Event lines and bands on a plot (not the countable markers: no class "event").
std::string Overlays(const Mapper& m, const std::vector<Event>& events) {
  std::string o;
  for (const Event& e : events) {
    if (e.kind == EventKind::kThrottle) {
      o += Band("evband throttle", m, SpanOf(m, e.start_s, e.end_s, 1));
    }
    if (e.kind == EventKind::kLost) o += Band("evband lost", m, SpanOf(m, e.start_s, m.x_max, 1));
    if (e.kind == EventKind::kLost || e.kind == EventKind::kXid) {
      double x = Round2(m.X(e.start_s));
      o += fmt::format(
          "<line class=\"evline {}\" x1=\"{:.2f}\" x2=\"{:.2f}\" y1=\"{}\" y2=\"{}\"/>\n",
          EventKindName(e.kind), x, x, m.Top(), m.Bottom());
    }
  }
  return o;
}

std::string Marker(const Mapper& m, std::uint32_t device, const Event& e) {
  Span s = e.kind == EventKind::kXid        ? SpanOf(m, e.start_s, e.start_s, 4)
           : e.kind == EventKind::kThrottle ? SpanOf(m, e.start_s, e.end_s, 2)
                                            : SpanOf(m, e.start_s, m.x_max, 2);
  std::string data =
      fmt::format(" data-device=\"{}\" data-start=\"{}\"", device, FormatSeconds(e.start_s));
  if (e.kind == EventKind::kXid) data += fmt::format(" data-xid=\"{}\"", e.xid);
  if (e.kind == EventKind::kThrottle) {
    data += fmt::format(" data-end=\"{}\"", FormatSeconds(e.end_s));
  }
  return fmt::format(
      "<rect class=\"event {}\"{} x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" "
      "height=\"{}\"><title>{}</title></rect>\n",
      EventKindName(e.kind), data, s.x, m.Top(), s.w, m.g.frame_h(), Escape(EventText(e)));
}

}  // namespace

std::string Escape(std::string_view s) { return EscapeHtml(s); }

double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  // From one decade below log10's estimate (it may be off by one near powers of ten) upwards.
  for (int e = static_cast<int>(std::floor(std::log10(raw))) - 1;; ++e) {
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
      double v = e >= 0 ? m * std::pow(10.0, e) : m / std::pow(10.0, -e);  // exact for e < 0 too
      if (v >= raw * (1 - 1e-12)) return v;
    }
  }
}

Axis NiceAxis(double max, int max_intervals) {
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  double step = NiceStep(max / std::max(1, max_intervals));
  double n = std::ceil(max / step * (1 - 1e-12));
  return {std::max(1.0, n) * step, step};
}

std::string FormatTick(double value, double step) {
  int decimals = 0;
  for (double s = std::abs(step);
       decimals < 9 && std::abs(s - std::round(s)) > 1e-6 * std::max(1.0, s); s *= 10) {
    ++decimals;
  }
  std::string o = fmt::format("{:.{}f}", value, decimals);
  if (decimals > 0) {
    while (o.back() == '0') o.pop_back();
    if (o.back() == '.') o.pop_back();
  }
  return o == "-0" ? "0" : o;
}

Geometry PlotGeometry(bool compact) {
  if (compact) return Geometry{300, 140, 48, 10, 32, 22};
  return Geometry{};
}

Geometry StripGeometry(const Geometry& plot) {
  return Geometry{plot.width, 40, plot.left, plot.right, 4, 20};
}

std::vector<Point> Downsample(const std::vector<Point>& in, std::size_t max_points) {
  if (in.size() <= max_points || max_points == 0) return in;
  std::vector<Point> out;
  std::size_t per = (in.size() + max_points - 1) / max_points;
  for (std::size_t i = 0; i < in.size(); i += per) {
    std::size_t end = std::min(in.size(), i + per), n = 0;
    double sx = 0, sy = 0;
    bool gap = false;
    for (std::size_t k = i; k < end; ++k) {
      if (!std::isfinite(in[k].y)) {
        gap = true;
        continue;
      }
      sx += in[k].x;
      sy += in[k].y;
      ++n;
    }
    if (n > 0) out.push_back({sx / n, sy / n});
    if (gap) out.push_back({in[end - 1].x, std::nan("")});
  }
  return out;
}

std::string Plot(Canvas& c, const PlotSpec& spec, const std::vector<Event>& events) {
  Axis y = NiceAxis(DataMax(spec), kYIntervals);
  Mapper m{c.geo, c.x_max, y.top};
  std::string clip;
  std::string o = SvgOpen("plot", c.geo, spec.title,
                          fmt::format(" data-y-top=\"{}\" data-y-step=\"{}\"",
                                      FormatTick(y.top, y.step), FormatTick(y.step, y.step)));
  o += fmt::format("<text x=\"{}\" y=\"12\" class=\"title\">{} ({})</text>\n", c.geo.left,
                   Escape(spec.title), Escape(spec.unit));
  o += Legend(c.geo, spec.series);
  o += FrameAndClip(c, m, &clip);
  o += YTicks(m, y) + XTicks(m);
  o += fmt::format("<g clip-path=\"url(#{})\">\n", clip) + Overlays(m, events);
  bool any = false;
  for (const Series& s : spec.series) {
    o += Lines(m, s);
    any = any || std::any_of(s.points.begin(), s.points.end(),
                             [](const Point& p) { return std::isfinite(p.y); });
  }
  o += "</g>\n";
  if (!any) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"na\">n/a</text>\n",
                     m.Left() + c.geo.frame_w() / 2, m.Top() + c.geo.frame_h() / 2);
  }
  return o + "</svg>\n";
}

std::string EventsStrip(Canvas& c, std::uint32_t device, const std::vector<Event>& events) {
  Geometry g = StripGeometry(c.geo);
  Mapper m{g, c.x_max, 1};
  std::string clip;
  std::string o = SvgOpen("events-strip", g, fmt::format("events of GPU {}", device),
                          fmt::format(" data-device=\"{}\"", device));
  o += FrameAndClip(c, m, &clip);
  o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">events</text>\n",
                   m.Left() - 4, m.Top() + g.frame_h() / 2 + 3.5);
  o += XTicks(m);
  o += fmt::format("<g clip-path=\"url(#{})\">\n", clip);
  // Bands first, point markers on top of them.
  for (const Event& e : events) {
    if (e.kind != EventKind::kXid) o += Marker(m, device, e);
  }
  for (const Event& e : events) {
    if (e.kind == EventKind::kXid) o += Marker(m, device, e);
  }
  o += "</g>\n";
  if (events.empty()) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"na small\">none</text>\n", m.Left() + 4,
                     m.Top() + g.frame_h() / 2 + 3.5);
  }
  return o + "</svg>\n";
}

}  // namespace gpulse::report::html
