// The SVG pieces of the HTML report: time-series plots with nice axes, clipped to their frames, and
// the thin events strip under each device's plots. Every string from the run is escaped here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/html_events.h"

namespace gpulse::report::html {

std::string Escape(std::string_view s);

// The smallest nice number (1, 2, 2.5 or 5 × 10^k) that is ≥ raw; 1 when raw is not positive.
double NiceStep(double raw);

// A value axis from 0 to top in steps of `step`: step is NiceStep(max / max_intervals), top the
// first multiple of step ≥ max (so at most max_intervals intervals, and nothing above the top).
struct Axis {
  double top = 1;
  double step = 1;
};
Axis NiceAxis(double max, int max_intervals);

// A tick label without noise: the decimals the step needs, trailing zeros dropped ("0", "2.5").
std::string FormatTick(double value, double step);

// One plot's box: its size and the margins around the frame that holds the data.
struct Geometry {
  int width = 640, height = 160;
  int left = 56, right = 12, top = 32, bottom = 22;
  double frame_w() const { return width - left - right; }
  double frame_h() const { return height - top - bottom; }
};
Geometry PlotGeometry(bool compact);  // compact: the small plots of pages with more than 2 GPUs
Geometry StripGeometry(const Geometry& plot);  // same width and x margins, thin

struct Point {
  double x, y;  // y NaN: the reading is absent there (a gap in the line)
};

// Bucket means of at most about `max_points` points. A bucket holding an absent reading keeps a gap
// after its mean, so an absent reading never disappears into a line.
std::vector<Point> Downsample(const std::vector<Point>& in, std::size_t max_points);

struct Series {
  std::string name;
  std::string color;
  std::vector<Point> points;
};

struct PlotSpec {
  std::string title, unit;
  std::vector<Series> series;
  std::optional<double> y_max;  // the axis reaches at least this (e.g. 100 %, the power limit)
};

// What every plot of a page shares: the geometry, the time axis (0 … x_max seconds) and the
// counter that makes each clip path id unique in the page.
struct Canvas {
  Geometry geo;
  double x_max = 1;
  int next_clip = 0;
};

// One plot. `events` are drawn as thin lines and light bands (class "evline"/"evband", never
// "event": the countable markers are in the events strip).
std::string Plot(Canvas& c, const PlotSpec& spec, const std::vector<Event>& events = {});

// The events strip of one device: one marker per event, class "event KIND", with a <title>.
std::string EventsStrip(Canvas& c, std::uint32_t device, const std::vector<Event>& events);

}  // namespace gpulse::report::html
