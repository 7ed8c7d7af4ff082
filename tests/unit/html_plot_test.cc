// The HTML report's plot pieces: nice axes, tick labels, gaps, clamping, and the events of a
// device.
#include "report/html_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "report/html_events.h"
#include "report/render.h"

namespace gpulse::report::html {
namespace {

TEST(NiceStep, IsTheSmallestNiceNumberAtLeastTheRawStep) {
  EXPECT_DOUBLE_EQ(NiceStep(1), 1);
  EXPECT_DOUBLE_EQ(NiceStep(25), 25);
  EXPECT_DOUBLE_EQ(NiceStep(26), 50);
  EXPECT_DOUBLE_EQ(NiceStep(175), 200);
  EXPECT_DOUBLE_EQ(NiceStep(101), 200);
  EXPECT_DOUBLE_EQ(NiceStep(2.1), 2.5);
  EXPECT_DOUBLE_EQ(NiceStep(9.99), 10);
  EXPECT_DOUBLE_EQ(NiceStep(1000), 1000);
  EXPECT_DOUBLE_EQ(NiceStep(0.3), 0.5);
  EXPECT_DOUBLE_EQ(NiceStep(0.07), 0.1);
  EXPECT_DOUBLE_EQ(NiceStep(0.001), 0.001);
  EXPECT_DOUBLE_EQ(NiceStep(0.2), 0.2);
}

TEST(NiceStep, NonPositiveOrNonFiniteGivesOne) {
  EXPECT_EQ(NiceStep(0), 1);
  EXPECT_EQ(NiceStep(-3), 1);
  EXPECT_EQ(NiceStep(std::nan("")), 1);
  EXPECT_EQ(NiceStep(INFINITY), 1);
}

bool IsNice(double v) {
  double mag = std::pow(10.0, std::floor(std::log10(v)));
  double m = v / mag;
  for (double n : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (std::abs(m - n) < 1e-9) return true;
  }
  return false;
}

TEST(NiceAxis, TopIsAWholeNumberOfNiceStepsAtLeastTheMaximum) {
  EXPECT_DOUBLE_EQ(NiceAxis(100, 4).top, 100);
  EXPECT_DOUBLE_EQ(NiceAxis(100, 4).step, 25);
  EXPECT_DOUBLE_EQ(NiceAxis(700, 4).top, 800);
  EXPECT_DOUBLE_EQ(NiceAxis(74, 4).top, 80);
  EXPECT_DOUBLE_EQ(NiceAxis(0, 4).top, 1);
  for (double max = 0.013; max < 1e6; max *= 1.37) {
    Axis a = NiceAxis(max, 4);
    EXPECT_GE(a.top, max * (1 - 1e-12)) << max;
    EXPECT_TRUE(IsNice(a.step)) << max;
    double n = a.top / a.step;
    EXPECT_NEAR(n, std::round(n), 1e-9) << max;
    EXPECT_LE(std::round(n), 4) << max;
  }
}

TEST(FormatTick, PrintsTheDecimalsTheStepNeedsAndNoNoise) {
  EXPECT_EQ(FormatTick(0, 25), "0");
  EXPECT_EQ(FormatTick(75, 25), "75");
  EXPECT_EQ(FormatTick(0.5, 0.25), "0.5");
  EXPECT_EQ(FormatTick(0.75, 0.25), "0.75");
  EXPECT_EQ(FormatTick(2.5, 2.5), "2.5");
  EXPECT_EQ(FormatTick(1, 0.5), "1");
  EXPECT_EQ(FormatTick(0.1 * 3, 0.1), "0.3");
  EXPECT_EQ(FormatTick(80000, 20000), "80000");
  EXPECT_EQ(FormatSeconds(1.5), "1.5");
  EXPECT_EQ(FormatSeconds(1.0), "1");
  EXPECT_EQ(FormatSeconds(1.2524), "1.252");
}

TEST(Downsample, KeepsAGapWhereAReadingIsAbsent) {
  std::vector<Point> in;
  for (int i = 0; i < 100; ++i) in.push_back({double(i), i == 50 ? std::nan("") : 1.0});
  std::vector<Point> out = Downsample(in, 10);
  EXPECT_LE(out.size(), 11u);
  EXPECT_EQ(std::count_if(out.begin(), out.end(), [](const Point& p) { return std::isnan(p.y); }),
            1);
}

// Every x,y pair of every polyline in an SVG.
std::vector<Point> Coordinates(const std::string& svg) {
  std::vector<Point> out;
  std::regex points("points=\"([^\"]*)\"");
  std::regex pair("(-?[0-9.]+),(-?[0-9.]+)");
  for (std::sregex_iterator it(svg.begin(), svg.end(), points), end; it != end; ++it) {
    std::string p = (*it)[1];
    for (std::sregex_iterator jt(p.begin(), p.end(), pair); jt != end; ++jt) {
      out.push_back({std::stod((*jt)[1]), std::stod((*jt)[2])});
    }
  }
  return out;
}

TEST(Plot, ClampsEveryPointIntoTheFrameAndBreaksLinesAtGaps) {
  Canvas c{PlotGeometry(true), 2.0};
  Series s{"CPU", "#000", {{0, 10}, {0.5, -40}, {1, std::nan("")}, {1.5, 1e9}, {2.5, 30}}};
  std::string svg = Plot(c, {"CPU", "%", {s}, 100.0});
  std::vector<Point> pts = Coordinates(svg);
  ASSERT_EQ(pts.size(), 4u);
  const Geometry& g = c.geo;
  for (const Point& p : pts) {
    EXPECT_GE(p.x, g.left);
    EXPECT_LE(p.x, g.left + g.frame_w());
    EXPECT_GE(p.y, g.top);
    EXPECT_LE(p.y, g.top + g.frame_h());
  }
  std::regex polyline("<polyline");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(svg.begin(), svg.end(), polyline), std::sregex_iterator()),
      2);
  EXPECT_NE(svg.find("clip-path=\"url(#clip-0)\""), std::string::npos);
  EXPECT_EQ(c.next_clip, 1);
}

GpuSample Reasons(std::int64_t t_ms, std::uint64_t reasons, bool present = true) {
  GpuSample s;
  s.elapsed_ns = t_ms * 1'000'000;
  s.clocks_event_reasons = reasons;
  if (present) s.present |= GpuSample::kClocksEventReasons;
  return s;
}

TEST(Events, ConsecutiveThrottledSamplesAreOneIntervalAndIdleIsNotThrottling) {
  report::Run run;
  for (GpuSample s : {Reasons(0, 0), Reasons(100, 1), Reasons(200, 8), Reasons(300, 8 | 32 | 1),
                      Reasons(400, 1), Reasons(500, 8), Reasons(600, 0, false), Reasons(700, 4)}) {
    run.gpu_samples.push_back(s);
  }
  std::vector<Event> t = ThrottleIntervals(run, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0].start_s, 0.2);
  EXPECT_DOUBLE_EQ(t[0].end_s, 0.4);
  EXPECT_EQ(t[0].detail, "hw_slowdown, sw_thermal_slowdown");
  EXPECT_DOUBLE_EQ(t[1].start_s, 0.5);
  EXPECT_DOUBLE_EQ(t[1].end_s, 0.6);  // a sample without the reading ends the interval
  EXPECT_DOUBLE_EQ(t[2].start_s, 0.7);
  EXPECT_DOUBLE_EQ(t[2].end_s, 0.7);  // still throttled at the last sample
  EXPECT_EQ(t[2].detail, "sw_power_cap");
}

TEST(Events, XidsAndTheTimedLossOfTheDeviceEachGiveOneMarker) {
  report::Run run;
  run.info.start_unix_ns = 1'000'000'000'000;
  run.xid_events = {{1'000'000'000, 3, 79}, {500'000'000, 0, 94}, {1'250'000'000, 3, 13}};
  Entity lost;
  lost.gpu = 3;
  lost.state = EntityState::kLost;
  lost.reason = "GPU_IS_LOST";
  lost.lost_unix_ns = run.info.start_unix_ns + 1'500'000'000;
  run.entities = {lost};
  std::vector<Event> e = DeviceEvents(run, 3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(EventText(e[0]), "XID 79 at 1 s");
  EXPECT_EQ(EventText(e[2]), "GPU lost at 1.5 s: GPU_IS_LOST");
  EXPECT_EQ(DevicesWithEvents(run), (std::vector<std::uint32_t>{0, 3}));
  Canvas c{PlotGeometry(false), 2.0};
  std::string strip = EventsStrip(c, 3, e);
  std::regex xid("class=\"event xid\" data-device=\"3\"");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(strip.begin(), strip.end(), xid), std::sregex_iterator()),
      2);
  EXPECT_NE(strip.find("<title>XID 13 at 1.25 s</title>"), std::string::npos);
  EXPECT_NE(strip.find("class=\"event lost\""), std::string::npos);
}

TEST(Escape, EscapesMarkupCharacters) {
  EXPECT_EQ(Escape("<a href=\"x\">&</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
}

std::size_t Count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(RenderHtml, NamesEachDeviceRowAndKeepsEventsOfGpusWithoutSamples) {
  report::Run run;
  run.info.duration_ns = 2'000'000'000;
  GpuSample s = Reasons(0, 0);
  s.device_index = 0;
  run.gpu_samples.push_back(s);
  run.devices.push_back(DeviceInfo{0, "Model <X>", "GPU-abc", "", {}, {}, {}, {}, {}, false, {}});
  Entity gone;
  gone.gpu = 5;
  gone.uuid = "GPU-five";
  gone.state = EntityState::kLost;
  run.entities = {gone};
  run.xid_events = {{1'000'000'000, 5, 79}};
  std::string page = RenderHtml(run, Derive(run));
  EXPECT_NE(page.find("<section class=\"plot-group device\" data-device=\"0\">\n"),
            std::string::npos);
  EXPECT_NE(page.find(">GPU 0 — Model &lt;X&gt; — GPU-abc</h2>"), std::string::npos);
  EXPECT_NE(page.find("data-name=\"Model &lt;X&gt;\" data-uuid=\"GPU-abc\""), std::string::npos);
  EXPECT_EQ(Count(page, "<svg class=\"plot\""), 6u);  // 2 process plots, 4 device plots
  EXPECT_EQ(Count(page, "<svg class=\"events-strip\""), 2u);
  EXPECT_NE(page.find(">GPU 5 — GPU-five</h3>"), std::string::npos);
  EXPECT_EQ(Count(page, "class=\"event xid\""), 1u);
  EXPECT_EQ(Count(page, "class=\"event lost\""), 0u);  // lost, but no loss time: no marker
  EXPECT_EQ(Count(page, "<clipPath id="), 8u);
  EXPECT_EQ(page.find("http"), std::string::npos);  // self-contained
}

// Issue 40: CMD exiting 5 ms after a tick made the last CPU point one 10 ms tick over 5 ms: 200 %.
TEST(CpuPercentSeries, AShortFinalSpanJoinsTheOneBeforeIt) {
  // 100 Hz ticks; samples every 100 ms using 50 % of a core (5 ticks each), then an exit 5 ms
  // after the last tick that caught one more tick.
  std::deque<ResourceSample> s;
  for (int k = 0; k <= 4; ++k) s.push_back({k * 100'000'000LL, 0, 5u * k, 0, 1, 1});
  s.push_back({405'000'000LL, 0, 21, 0, 1, 1});
  auto points = CpuPercentSeries(s, 100);
  ASSERT_EQ(points.size(), 4u);
  for (std::size_t i = 0; i + 1 < points.size(); ++i) EXPECT_NEAR(points[i].y, 50, 1e-9);
  EXPECT_DOUBLE_EQ(points.back().x, 0.405);
  EXPECT_NEAR(points.back().y, 6.0 / 100 / 0.105 * 100, 1e-9) << "6 ticks over 105 ms, not 200 %";
  for (const auto& p : points) EXPECT_LT(p.y, 100);
}

TEST(CpuPercentSeries, FastTicksArePooledToTenClockTicks) {
  std::deque<ResourceSample> s;
  for (int k = 0; k <= 10; ++k) s.push_back({k * 20'000'000LL, 0, static_cast<std::uint64_t>(k) / 2, 0, 1, 1});
  auto points = CpuPercentSeries(s, 100);  // 20 ms ticks: a point every 100 ms
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].x, 0.1);
  EXPECT_NEAR(points[0].y, 2.0 / 100 / 0.1 * 100, 1e-9);
  EXPECT_TRUE(CpuPercentSeries(std::deque<ResourceSample>{s[0]}, 100).empty());
  EXPECT_TRUE(CpuPercentSeries(s, 0).empty());
}

}  // namespace
}  // namespace gpulse::report::html
