// `gpulse top`'s frame model and pure renderer: parsing the example frame (N/A for nulls, a lost
// GPU, a MIG instance), the bars' numbers, sorting by every key and reversed, the GPU filter, the
// keys, sparklines with a gap, layouts from 120x40 down to 20x5 (no line wider than the screen),
// and the NO_COLOR and ASCII modes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/top_model.h"
#include "cli/top_render.h"

namespace gpulse::cli::top {
namespace {

nlohmann::json ExampleJson() {
  std::ifstream in(std::string(GPULSE_SOURCE_DIR) + "/tests/testdata/live-frame-example.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

FrameModel Example() {
  auto frame = ParseFrame(ExampleJson());
  EXPECT_TRUE(frame.ok()) << frame.error().message;
  return frame.ok() ? *frame : FrameModel{};
}

Screen ScreenOf(int width, int height, bool color = true, bool utf8 = true) {
  return Screen{width, height, color, utf8, "agent unix:///run/gpulse/agent.sock"};
}

std::vector<std::string> Texts(const std::vector<Line>& lines) {
  std::vector<std::string> out;
  for (const Line& l : lines) out.push_back(l.text);
  return out;
}

std::string Joined(const std::vector<Line>& lines) { return PlainText(lines); }

// The lines of the panel whose header starts with `label` (up to the next panel or a blank line).
std::vector<std::string> PanelOf(const std::vector<Line>& lines, const std::string& label) {
  std::vector<std::string> out;
  bool in = false;
  for (const Line& l : lines) {
    bool header = l.text.rfind("GPU ", 0) == 0 || l.text.rfind("\u25b6 GPU ", 0) == 0 ||
                  l.text.rfind("> GPU ", 0) == 0;
    if (in && (header || l.text.empty())) break;
    if (header && (l.text.rfind(label, 0) == 0 || l.text.rfind("\u25b6 " + label, 0) == 0)) {
      std::string rest = l.text.substr(l.text.find(label) + label.size());
      if (rest.empty() || rest[0] == ' ') in = true;
    }
    if (in) out.push_back(l.text);
  }
  return out;
}

bool Contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

// The text after "LABEL [....] " on the panel's lines, and the bar's inside.
struct BarText {
  std::string inside, value;
  bool found = false;
};

// Finds "LABEL [" with LABEL padded by spaces to the label column ("MEM  [", "UTIL [").
std::size_t FindLabel(const std::string& line, const std::string& label) {
  std::size_t at = line.find(label);
  while (at != std::string::npos) {
    std::size_t after = line.find_first_not_of(' ', at + label.size());
    bool starts = at == 0 || line[at - 1] == ' ';
    if (starts && after != std::string::npos && after > at + label.size() - 1 &&
        line[after] == '[' && after - at == 5) {
      return at;
    }
    at = line.find(label, at + 1);
  }
  return std::string::npos;
}

BarText Bar(const std::vector<std::string>& panel, const std::string& label) {
  for (const auto& l : panel) {
    std::size_t at = FindLabel(l, label);
    if (at == std::string::npos) continue;
    std::size_t open = at + 5;
    std::size_t close = l.find(']', open);
    BarText b;
    b.found = true;
    b.inside = l.substr(open + 1, close - open - 1);
    std::string rest = l.substr(close + 2);
    std::size_t gap = rest.find("   ");
    b.value = rest.substr(0, gap);
    while (!b.value.empty() && b.value.back() == ' ') b.value.pop_back();
    return b;
  }
  return {};
}

TEST(TopModel, ParsesTheExampleFrame) {
  FrameModel f = Example();
  EXPECT_EQ(f.seq, 42);
  EXPECT_EQ(f.hostname, "node-a");
  EXPECT_EQ(f.source, "agent");
  EXPECT_TRUE(f.simulated);
  EXPECT_EQ(f.scenario, "faults");
  EXPECT_EQ(f.viewers, 2);
  EXPECT_DOUBLE_EQ(f.interval_seconds, 1.0);
  EXPECT_EQ(f.history_points, 60);
  ASSERT_EQ(f.entities.size(), 4u);
  EXPECT_EQ(GpuCount(f), 4u);

  const EntityModel& g0 = f.entities[0];
  EXPECT_FALSE(g0.instance);
  EXPECT_EQ(g0.name, "NVIDIA A40");
  EXPECT_EQ(g0.state, PanelState::kOk);
  EXPECT_EQ(g0.utilization_percent, 87.0);
  EXPECT_EQ(g0.power_watts, 251.5);
  ASSERT_EQ(g0.utilization_history.size(), 4u);
  EXPECT_EQ(g0.utilization_history[1], 85.0);
  EXPECT_FALSE(g0.utilization_history[2].has_value()) << "null is a gap, not 0";

  const EntityModel& g1 = f.entities[1];
  EXPECT_FALSE(g1.utilization_percent.has_value());
  EXPECT_FALSE(g1.power_watts.has_value());
  EXPECT_FALSE(g1.temperature_celsius.has_value());
  EXPECT_EQ(g1.memory_used_bytes, 1073741824.0);

  const EntityModel& g2 = f.entities[2];
  EXPECT_EQ(g2.state, PanelState::kLost);
  EXPECT_EQ(g2.reason, "the driver answered GPU_IS_LOST");

  const EntityModel& gi = f.entities[3];
  EXPECT_TRUE(gi.instance);
  EXPECT_EQ(gi.gpu, 3u);
  EXPECT_EQ(gi.gpu_instance_id, 1u);
  EXPECT_EQ(gi.profile, "3g.20gb");
  EXPECT_TRUE(gi.utilization_history.empty());

  ASSERT_EQ(f.processes.size(), 3u);
  EXPECT_EQ(f.processes[0].pid, 4242);
  EXPECT_EQ(f.processes[0].container, "3f2a1b4c5d6e");
  EXPECT_FALSE(f.processes[1].user.has_value());
  EXPECT_FALSE(f.processes[1].sm_percent.has_value());
  EXPECT_FALSE(f.processes[2].memory_bytes.has_value());
  EXPECT_EQ(f.processes[2].gpu_instance_id, 1u);
  EXPECT_FALSE(f.process_note.has_value());
}

TEST(TopModel, RefusesOtherFormatsAndShapes) {
  nlohmann::json j = ExampleJson();
  j["format"] = "gpulse.live-frame/v2";
  auto r = ParseFrame(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("gpulse.live-frame/v2"), std::string::npos) << r.error().message;

  j.erase("format");
  EXPECT_FALSE(ParseFrame(j).ok());
  EXPECT_FALSE(ParseFrame(nlohmann::json::array()).ok());
  EXPECT_FALSE(ParseFrame(nlohmann::json("text")).ok());

  j = ExampleJson();
  j["entities"] = "none";
  EXPECT_FALSE(ParseFrame(j).ok());
  j = ExampleJson();
  j["processes"] = nlohmann::json::array({1, 2});
  EXPECT_FALSE(ParseFrame(j).ok());
}

TEST(TopModel, ValuesOfTheWrongTypeReadAsAbsent) {
  nlohmann::json j = ExampleJson();
  j["entities"][0]["utilization_percent"] = "87";
  j["entities"][0]["history"]["power_watts"] = nlohmann::json::array({"x", 1.5});
  j["entities"][0]["name"] = 5;
  j["seq"] = "42";
  auto r = ParseFrame(j);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->entities[0].utilization_percent.has_value());
  EXPECT_FALSE(r->entities[0].name.has_value());
  ASSERT_EQ(r->entities[0].power_history.size(), 2u);
  EXPECT_FALSE(r->entities[0].power_history[0].has_value());
  EXPECT_EQ(r->entities[0].power_history[1], 1.5);
  EXPECT_EQ(r->seq, 0);
}

TEST(TopRender, PanelsShowTheNumbersOfTheFrame) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(120, 40));
  auto g0 = PanelOf(lines, "GPU 0");
  ASSERT_FALSE(g0.empty()) << Joined(lines);
  EXPECT_EQ(g0[0], "GPU 0  NVIDIA A40  GPU-00000000\u2026  00000000:17:00.0  ok");
  EXPECT_EQ(Bar(g0, "UTIL").value, "87%");
  EXPECT_EQ(Bar(g0, "MEM").value, "28.0/45.0 GiB");
  EXPECT_EQ(Bar(g0, "PWR").value, "251.5/300.0 W");
  EXPECT_EQ(Bar(g0, "TEMP").value, "61 \u00b0C");
  EXPECT_EQ(Bar(g0, "SM").value, "1740/1740 MHz");
  EXPECT_EQ(Bar(g0, "MCLK").value, "7251/7251 MHz");
  // 87 % of the bar is filled.
  std::string util = Bar(g0, "UTIL").inside;
  int filled = static_cast<int>(std::count(util.begin(), util.end(), '|'));
  EXPECT_NEAR(static_cast<double>(filled) / static_cast<double>(util.size()), 0.87, 0.02) << util;
  std::string sm = Bar(g0, "SM").inside;
  EXPECT_EQ(sm, std::string(sm.size(), '|')) << "at its max clock";
  EXPECT_TRUE(Contains(g0, "util  ")) << "a sparkline line";

  std::string header = Texts(lines)[0];
  EXPECT_NE(header.find("node-a"), std::string::npos) << header;
  EXPECT_NE(header.find("4 GPUs"), std::string::npos) << header;
  EXPECT_NE(header.find("simulated: faults"), std::string::npos) << header;
  EXPECT_NE(header.find("  via agent unix://"), std::string::npos) << header;
  EXPECT_NE(header.find("every 1 s"), std::string::npos) << header;
  EXPECT_NE(header.find("seq 42"), std::string::npos) << header;
}

TEST(TopRender, AbsentReadingsAreNaWithAnEmptyBar) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(120, 40));
  auto g1 = PanelOf(lines, "GPU 1");
  ASSERT_FALSE(g1.empty()) << Joined(lines);
  for (const char* label : {"UTIL", "PWR", "TEMP"}) {
    BarText b = Bar(g1, label);
    ASSERT_TRUE(b.found) << label;
    EXPECT_EQ(b.value, "N/A") << label;
    EXPECT_EQ(b.inside, std::string(b.inside.size(), ' ')) << label << ": no bar drawn";
  }
  EXPECT_EQ(Bar(g1, "MEM").value, "1.0/45.0 GiB");
  EXPECT_EQ(Bar(g1, "SM").value, "210/1740 MHz");
}

TEST(TopRender, LostGpuShowsItsReasonAndNoBars) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(120, 40));
  auto g2 = PanelOf(lines, "GPU 2");
  ASSERT_EQ(g2.size(), 1u) << Joined(lines);
  EXPECT_NE(g2[0].find("LOST: the driver answered GPU_IS_LOST"), std::string::npos) << g2[0];

  FrameModel f = Example();
  f.entities[1].state = PanelState::kSkipped;
  f.entities[1].reason = "NO_PERMISSION";
  auto g1 = PanelOf(Render(f, ViewState{}, ScreenOf(120, 40)), "GPU 1");
  ASSERT_EQ(g1.size(), 1u);
  EXPECT_NE(g1[0].find("SKIPPED: NO_PERMISSION"), std::string::npos) << g1[0];
}

TEST(TopRender, InstancePanelHasNoClockBarsWithoutClocks) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(120, 40));
  auto gi = PanelOf(lines, "GPU 3/GI 1 3g.20gb");
  ASSERT_FALSE(gi.empty()) << Joined(lines);
  EXPECT_NE(gi[0].find("MIG-00000000\u2026"), std::string::npos) << gi[0];
  EXPECT_EQ(Bar(gi, "MEM").value, "2.0/20.0 GiB");
  EXPECT_EQ(Bar(gi, "UTIL").value, "N/A");
  EXPECT_FALSE(Bar(gi, "SM").found);
  EXPECT_FALSE(Bar(gi, "MCLK").found);
}

FrameModel WithProcesses() {
  FrameModel f = Example();
  auto p = [](std::int64_t pid, unsigned gpu, Reading mem, Reading sm) {
    ProcessModel m;
    m.pid = pid;
    m.gpu = gpu;
    m.memory_bytes = mem;
    m.sm_percent = sm;
    m.command = "cmd" + std::to_string(pid);
    return m;
  };
  f.processes = {p(30, 1, 3e9, 10), p(10, 0, 5e9, std::nullopt), p(20, 0, std::nullopt, 50),
                 p(40, 3, 1e9, 90), p(5, 1, 5e9, 50)};
  return f;
}

std::vector<std::int64_t> Pids(const FrameModel& f, const ViewState& v) {
  std::vector<std::int64_t> out;
  for (const auto& p : ListedProcesses(f, v)) out.push_back(p.pid);
  return out;
}

TEST(TopRender, SortsByEveryKeyAndReversed) {
  FrameModel f = WithProcesses();
  ViewState v;
  using P = std::vector<std::int64_t>;
  // memory descending, ties by GPU then PID, absent last.
  EXPECT_EQ(Pids(f, v), (P{10, 5, 30, 40, 20}));
  v.reverse = true;
  EXPECT_EQ(Pids(f, v), (P{40, 30, 10, 5, 20})) << "absent stays last";
  v = {};
  v.sort = SortKey::kSm;
  EXPECT_EQ(Pids(f, v), (P{40, 20, 5, 30, 10}));
  v.reverse = true;
  EXPECT_EQ(Pids(f, v), (P{30, 20, 5, 40, 10}));
  v = {};
  v.sort = SortKey::kPid;
  EXPECT_EQ(Pids(f, v), (P{5, 10, 20, 30, 40}));
  v.reverse = true;
  EXPECT_EQ(Pids(f, v), (P{40, 30, 20, 10, 5}));
  v = {};
  v.sort = SortKey::kGpu;
  EXPECT_EQ(Pids(f, v), (P{10, 20, 5, 30, 40}));
  v.reverse = true;
  EXPECT_EQ(Pids(f, v), (P{40, 5, 30, 10, 20}));
}

TEST(TopRender, ProcessListIsRenderedInSortOrder) {
  FrameModel f = WithProcesses();
  ViewState v;
  v.sort = SortKey::kPid;
  auto texts = Texts(Render(f, v, ScreenOf(120, 0)));
  std::vector<std::size_t> at;
  for (const char* cmd : {"cmd5", "cmd10", "cmd20", "cmd30", "cmd40"}) {
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (texts[i].find(cmd) != std::string::npos &&
          texts[i].find(std::string(cmd) + "0") == std::string::npos) {
        at.push_back(i);
      }
    }
  }
  ASSERT_EQ(at.size(), 5u);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  EXPECT_TRUE(Contains(texts, "sort: pid (ascending)"));
  // "-" for absent values.
  f = Example();
  texts = Texts(Render(f, ViewState{}, ScreenOf(120, 0)));
  bool found = false;
  for (const auto& t : texts) {
    if (t.find("   4300 ") == 0) {
      found = true;
      EXPECT_EQ(t, "   4300 -          1         953 MiB    - -              -");
    }
  }
  EXPECT_TRUE(found) << PlainText(Render(f, ViewState{}, ScreenOf(120, 0)));
}

TEST(TopRender, KeysChangeTheView) {
  FrameModel f = Example();
  ViewState v;
  EXPECT_EQ(ApplyKey('s', &f, v), KeyAction::kChanged);
  EXPECT_EQ(v.sort, SortKey::kSm);
  EXPECT_EQ(ApplyKey('s', &f, v), KeyAction::kChanged);
  EXPECT_EQ(v.sort, SortKey::kPid);
  EXPECT_EQ(ApplyKey('r', &f, v), KeyAction::kChanged);
  EXPECT_TRUE(v.reverse);
  EXPECT_EQ(ApplyKey('s', &f, v), KeyAction::kChanged);
  EXPECT_EQ(v.sort, SortKey::kGpu);
  EXPECT_FALSE(v.reverse) << "a new column starts in its natural order";
  EXPECT_EQ(ApplyKey('s', &f, v), KeyAction::kChanged);
  EXPECT_EQ(v.sort, SortKey::kMemory);

  EXPECT_EQ(ApplyKey('1', &f, v), KeyAction::kChanged);
  EXPECT_EQ(v.selected_gpu, 1u);
  EXPECT_EQ(ApplyKey('7', &f, v), KeyAction::kIgnored) << "no GPU 7 in the frame";
  EXPECT_EQ(v.selected_gpu, 1u);
  EXPECT_EQ(ApplyKey('a', &f, v), KeyAction::kChanged);
  EXPECT_FALSE(v.selected_gpu.has_value());

  EXPECT_EQ(ApplyKey(' ', &f, v), KeyAction::kChanged);
  EXPECT_TRUE(v.paused);
  EXPECT_EQ(ApplyKey('p', &f, v), KeyAction::kChanged);
  EXPECT_FALSE(v.paused);
  EXPECT_EQ(ApplyKey('h', &f, v), KeyAction::kChanged);
  EXPECT_TRUE(v.help);
  EXPECT_EQ(ApplyKey('?', &f, v), KeyAction::kChanged);
  EXPECT_FALSE(v.help);
  EXPECT_EQ(ApplyKey('x', &f, v), KeyAction::kIgnored);
  EXPECT_EQ(ApplyKey('q', &f, v), KeyAction::kQuit);
}

TEST(TopRender, SelectingAGpuFiltersTheProcessesAndMarksItsPanel) {
  FrameModel f = WithProcesses();
  ViewState v;
  ASSERT_EQ(ApplyKey('0', &f, v), KeyAction::kChanged);
  EXPECT_EQ(Pids(f, v), (std::vector<std::int64_t>{10, 20}));
  auto lines = Render(f, v, ScreenOf(120, 40));
  auto texts = Texts(lines);
  EXPECT_TRUE(Contains(texts, "GPU 0 only"));
  EXPECT_FALSE(Contains(texts, "cmd30"));
  bool marked = false;
  for (const Line& l : lines) {
    if (l.text.rfind("\u25b6 GPU 0  ", 0) == 0) {
      marked = true;
      ASSERT_FALSE(l.spans.empty());
      EXPECT_TRUE(l.spans[0].reverse);
      EXPECT_EQ(l.spans[0].length, DisplayWidth(l.text));
    }
    if (l.text.rfind("GPU 1  ", 0) == 0) {
      for (const Span& s : l.spans) EXPECT_FALSE(s.reverse) << l.text;
    }
  }
  EXPECT_TRUE(marked) << Joined(lines);
}

TEST(TopRender, SparklineShowsGapsAndLevels) {
  History h = {0.0, 50.0, std::nullopt, 100.0};
  EXPECT_EQ(Sparkline(h, 100, 6, true), "  \u2581\u2585 \u2588");
  EXPECT_EQ(Sparkline(h, 100, 6, false), "   = #");
  EXPECT_EQ(Sparkline(h, 100, 2, true), " \u2588") << "the newest points";
  EXPECT_EQ(Sparkline({}, 100, 3, true), "   ");
  History ramp;
  for (int i = 0; i < 8; ++i) ramp.push_back(i * 12.5 + 1);
  EXPECT_EQ(Sparkline(ramp, 100, 8, true), "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588");
  EXPECT_EQ(Sparkline(ramp, 100, 8, false), " .:-=+*#");
  EXPECT_EQ(Sparkline({250.0, -5.0}, 100, 2, false), "# ") << "clamped";
}

FrameModel EightGpus() {
  FrameModel f = Example();
  std::vector<EntityModel> entities;
  for (unsigned i = 0; i < 8; ++i) {
    EntityModel e = f.entities[0];
    e.gpu = i;
    e.entity = i;
    entities.push_back(e);
  }
  f.entities = entities;
  return f;
}

void ExpectFits(const std::vector<Line>& lines, int width, int height) {
  if (height > 0) {
    EXPECT_EQ(static_cast<int>(lines.size()), height);
  }
  for (const Line& l : lines) {
    EXPECT_LE(DisplayWidth(l.text), width) << l.text;
    for (const Span& s : l.spans) {
      EXPECT_GE(s.column, 0);
      EXPECT_GT(s.length, 0);
      EXPECT_LE(s.column + s.length, DisplayWidth(l.text)) << l.text;
    }
  }
}

TEST(TopRender, LayoutsFitEveryScreen) {
  struct Size {
    int w, h;
  };
  for (const FrameModel& f : {Example(), EightGpus(), WithProcesses()}) {
    for (Size s : {Size{120, 40}, Size{80, 24}, Size{20, 5}, Size{60, 20}, Size{30, 10},
                   Size{200, 60}, Size{1, 1}, Size{10, 2}, Size{72, 3}}) {
      for (bool help : {false, true}) {
        SCOPED_TRACE(testing::Message() << s.w << "x" << s.h << " help " << help);
        ViewState v;
        v.help = help;
        v.paused = true;
        v.status = "disconnected: the agent at unix:///x stopped (retrying every second)";
        ExpectFits(Render(f, v, ScreenOf(s.w, s.h)), s.w, s.h);
        ExpectFits(Render(f, v, ScreenOf(s.w, s.h, false, false)), s.w, s.h);
      }
    }
  }
}

TEST(TopRender, LayoutAt120x40HasFullPanelsAndTheFooter) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(120, 40));
  auto texts = Texts(lines);
  ASSERT_EQ(texts.size(), 40u);
  EXPECT_NE(texts.back().find("q quit"), std::string::npos) << texts.back();
  EXPECT_NE(texts.back().find("s sort:memory"), std::string::npos) << texts.back();
  EXPECT_TRUE(Contains(PanelOf(lines, "GPU 0"), "util  ")) << "sparklines";
  EXPECT_TRUE(Contains(texts, "PROCESSES"));
  EXPECT_TRUE(Contains(texts, "python3"));
}

TEST(TopRender, LayoutAt80x24KeepsBarsForFourGpus) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(80, 24));
  ASSERT_EQ(lines.size(), 24u);
  auto g0 = PanelOf(lines, "GPU 0");
  EXPECT_EQ(Bar(g0, "UTIL").value, "87%") << Joined(lines);
  EXPECT_TRUE(Contains(Texts(lines), "PROCESSES"));
}

TEST(TopRender, EightGpusOn80x24BecomeOneLineEach) {
  auto lines = Render(EightGpus(), ViewState{}, ScreenOf(80, 24));
  auto texts = Texts(lines);
  ASSERT_EQ(texts.size(), 24u);
  for (int i = 0; i < 8; ++i) {
    std::string want = "GPU " + std::to_string(i) + "  UTIL 87%  MEM 28.0/45.0 GiB";
    EXPECT_TRUE(Contains(texts, want)) << want << "\n" << Joined(lines);
  }
  EXPECT_FALSE(Contains(texts, "UTIL [")) << "no room for panels";
}

TEST(TopRender, EightGpusOn120x40KeepBarsInThreeColumns) {
  auto lines = Render(EightGpus(), ViewState{}, ScreenOf(120, 40));
  ASSERT_EQ(lines.size(), 40u);
  SCOPED_TRACE(Joined(lines));
  for (int i = 0; i < 8; ++i) {
    auto panel = PanelOf(lines, "GPU " + std::to_string(i));
    ASSERT_GE(panel.size(), 3u) << i;
    EXPECT_EQ(Bar(panel, "UTIL").value, "87%");
    EXPECT_EQ(Bar(panel, "PWR").value, "251.5/300.0 W");
    EXPECT_EQ(Bar(panel, "MCLK").value, "7251/7251 MHz");
  }
  EXPECT_TRUE(Contains(Texts(lines), "python3")) << "room for the processes";
}

TEST(TopRender, TinyScreenShowsWhatFits) {
  auto lines = Render(Example(), ViewState{}, ScreenOf(20, 5));
  auto texts = Texts(lines);
  ASSERT_EQ(texts.size(), 5u);
  EXPECT_EQ(texts[0].rfind("gpulse top", 0), 0u);
  EXPECT_EQ(texts[1].rfind("GPU 0", 0), 0u) << Joined(lines);
  EXPECT_EQ(texts[4].rfind("q quit", 0), 0u);
}

TEST(TopRender, PlainTextHasEveryProcessAndNoFooter) {
  FrameModel f = WithProcesses();
  auto texts = Texts(Render(f, ViewState{}, ScreenOf(100, 0, false)));
  for (const char* cmd : {"cmd5", "cmd10", "cmd20", "cmd30", "cmd40"}) {
    EXPECT_TRUE(Contains(texts, cmd)) << cmd;
  }
  EXPECT_FALSE(Contains(texts, "q quit"));
  EXPECT_EQ(PanelOf(Render(f, ViewState{}, ScreenOf(100, 0)), "GPU 0").size(), 5u)
      << "header, three rows of bars, sparklines";
}

TEST(TopRender, LongProcessListsSayHowManyMore) {
  FrameModel f = Example();
  for (int i = 0; i < 50; ++i) {
    ProcessModel p;
    p.pid = 1000 + i;
    f.processes.push_back(p);
  }
  auto texts = Texts(Render(f, ViewState{}, ScreenOf(120, 40)));
  bool more = false;
  for (const auto& t : texts) more = more || t.find(" more") != std::string::npos;
  EXPECT_TRUE(more) << PlainText(Render(f, ViewState{}, ScreenOf(120, 40)));
}

TEST(TopRender, NoColorKeepsBoldAndReverseOnly) {
  ViewState v;
  v.paused = true;
  v.selected_gpu = 0;
  auto lines = Render(Example(), v, ScreenOf(120, 40, /*color=*/false));
  bool bold = false, reverse = false;
  for (const Line& l : lines) {
    for (const Span& s : l.spans) {
      EXPECT_EQ(s.tone, Tone::kNone) << l.text;
      bold = bold || s.bold;
      reverse = reverse || s.reverse;
    }
  }
  EXPECT_TRUE(bold);
  EXPECT_TRUE(reverse);
  EXPECT_TRUE(Contains(Texts(lines), "PAUSED"));

  bool toned = false;
  for (const Line& l : Render(Example(), v, ScreenOf(120, 40))) {
    for (const Span& s : l.spans) toned = toned || s.tone != Tone::kNone;
  }
  EXPECT_TRUE(toned) << "colours when allowed";
}

TEST(TopRender, AsciiModeWritesOnlyAscii) {
  ViewState v;
  v.selected_gpu = 0;
  auto lines = Render(Example(), v, ScreenOf(120, 40, false, false));
  for (const Line& l : lines) {
    for (char c : l.text) EXPECT_LT(static_cast<unsigned char>(c), 0x80) << l.text;
  }
  auto g0 = PanelOf(lines, "> GPU 0");
  ASSERT_FALSE(g0.empty()) << Joined(lines);
  EXPECT_NE(g0[0].find("GPU-00000000..."), std::string::npos) << g0[0];
  EXPECT_EQ(Bar(g0, "TEMP").value, "61 C");
  // History 80, 85, null, 87 of 100: level 6 ('*') each, a gap for the null.
  EXPECT_TRUE(Contains(g0, "util  " + std::string(Sparkline({}, 100, 0, false)))) << g0.back();
  EXPECT_NE(g0.back().find("** *"), std::string::npos) << g0.back();
}

TEST(TopRender, FrameTextCannotReachTheTerminalRaw) {
  FrameModel f = Example();
  f.processes[0].command = "evil\x1b[2Jname";
  f.processes[0].user = "j\xc3\xbcrgen";
  f.hostname = "host\n";
  auto texts = Texts(Render(f, ViewState{}, ScreenOf(120, 0)));
  EXPECT_TRUE(Contains(texts, "evil?[2Jname"));
  EXPECT_TRUE(Contains(texts, "j?rgen"));
  EXPECT_TRUE(Contains(texts, "host?"));
  for (const auto& t : texts) EXPECT_EQ(t.find('\x1b'), std::string::npos);
}

TEST(TopRender, StatusLineSaysPausedAndDisconnected) {
  ViewState v;
  v.paused = true;
  v.status = "disconnected: connection refused (retrying every second)";
  auto texts = Texts(Render(Example(), v, ScreenOf(120, 40)));
  EXPECT_EQ(texts[1], "PAUSED  disconnected: connection refused (retrying every second)");
  EXPECT_NE(texts.back().find("p resume"), std::string::npos);
}

TEST(TopRender, HelpListsTheKeys) {
  ViewState v;
  v.help = true;
  auto texts = Texts(Render(Example(), v, ScreenOf(120, 40)));
  for (const char* key :
       {"quit", "sort the processes", "reverse", "select that GPU", "all GPUs", "pause", "help"}) {
    EXPECT_TRUE(Contains(texts, key)) << key;
  }
  EXPECT_FALSE(Contains(texts, "UTIL ["));
}

TEST(TopRender, DirectSourceIsNamedAsIs) {
  Screen s = ScreenOf(160, 0);
  s.source = "direct (no agent at unix:///run/gpulse/agent.sock: connection refused)";
  auto texts = Texts(Render(Example(), ViewState{}, s));
  EXPECT_NE(texts[0].find("  direct (no agent at"), std::string::npos) << texts[0];
  EXPECT_EQ(texts[0].find("via direct"), std::string::npos) << texts[0];
  s.source = "via agent unix:///x.sock";
  texts = Texts(Render(Example(), ViewState{}, s));
  EXPECT_NE(texts[0].find("  via agent unix:///x.sock"), std::string::npos) << texts[0];
  EXPECT_EQ(texts[0].find("via via"), std::string::npos) << texts[0];
}

TEST(TopRender, SortKeyNames) {
  for (SortKey k : {SortKey::kMemory, SortKey::kSm, SortKey::kPid, SortKey::kGpu}) {
    EXPECT_EQ(ParseSortKey(SortKeyName(k)), k);
  }
  EXPECT_FALSE(ParseSortKey("cpu").has_value());
}

}  // namespace
}  // namespace gpulse::cli::top
