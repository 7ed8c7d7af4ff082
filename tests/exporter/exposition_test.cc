// /metrics as dcgm-exporter writes it (families, label names and order, value formats), what gpulse
// adds (lost devices, XID counters, self metrics), and /health's verdicts.
#include "exporter/exposition.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "exporter/health.h"
#include "exporter/snapshot.h"
#include "prom/parser.h"

namespace gpulse::exporter {
namespace {

SystemInfo TwoGpus() {
  SystemInfo info;
  info.backend = "nvml";
  info.driver_version = "550.54.15";
  info.library_version = "12.550.54.15";
  DeviceInfo a;
  a.index = 0;
  a.name = "NVIDIA \"Quoted\" GPU";
  a.uuid = "GPU-aaaa";
  a.pci_bus_id = "00000000:18:00.0";
  DeviceInfo b = a;
  b.index = 1;
  b.name = "NVIDIA H100 80GB HBM3";
  b.uuid = "GPU-bbbb";
  b.pci_bus_id = "00000000:2A:00.0";
  info.devices = {a, b};
  return info;
}

Sample Reading(std::map<FieldId, double> values, std::int64_t t = 1'000'000'000) {
  Sample s;
  s.t_mono_ns = t;
  s.values.assign(AllFields().size(), std::nullopt);
  for (const auto& [id, v] : values) s.values[*IndexOf(id)] = v;
  return s;
}

struct Line {
  std::string name;
  std::vector<prom::ParsedLabel> labels;
  double value;
};

std::vector<Line> Parse(const std::string& text) {
  std::vector<Line> out;
  prom::ParseCallbacks cb;
  cb.on_sample = [&](const prom::ParsedSample& s) {
    out.push_back({std::string(s.name), s.labels, s.value});
  };
  Status st = prom::ParseExposition(text, cb);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out;
}

std::vector<std::string> LabelNames(const Line& l) {
  std::vector<std::string> names;
  for (const auto& p : l.labels) names.push_back(p.name);
  return names;
}

class ExpositionTest : public ::testing::Test {
 protected:
  SystemInfo info = TwoGpus();
  std::shared_ptr<const CounterSet> counters =
      std::make_shared<const CounterSet>(DefaultCounters());

  std::string Render(const Snapshot& snap, std::optional<std::string> host = "node-1") {
    PageOptions options;
    options.hostname = std::move(host);
    options.version = "0.1.0";
    options.commit = "abc";
    MetricsPage page(info, counters, options);
    std::string out;
    page.Render(snap, 1'500'000'000, out);
    return out;
  }
};

TEST_F(ExpositionTest, LabelsAreDcgmExportersInItsOrder) {
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{155, 302.206}, {252, 74210}});
  snap.entities[1].sample = Reading({{155, 100.5}});
  std::string text = Render(snap);
  EXPECT_NE(text.find("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE "
                      "DCGM_FI_DEV_POWER_USAGE gauge\n"),
            std::string::npos);
  EXPECT_NE(
      text.find(
          "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:18:00.0\","
          "device=\"nvidia0\",modelName=\"NVIDIA \\\"Quoted\\\" GPU\",Hostname=\"node-1\","
          "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 302.206000\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 74210\n"), std::string::npos) << "int64 fields print as integers";
}

TEST_F(ExpositionTest, AbsentReadingsHaveNoSeriesAndEmptyFamiliesNoHeader) {
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{155, 300}});
  snap.entities[1].sample = Reading({});
  std::string text = Render(snap);
  int power = 0;
  for (const Line& l : Parse(text)) {
    if (l.name == "DCGM_FI_DEV_POWER_USAGE") ++power;
    EXPECT_NE(l.name, "DCGM_FI_DEV_GPU_TEMP") << "no device has it";
  }
  EXPECT_EQ(power, 1);
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos) << "no HELP for an empty family";
}

TEST_F(ExpositionTest, LostGpuLosesItsSeriesAndSaysSo) {
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{155, 300}});
  snap.entities[1].sample = Reading({});
  snap.entities[1].sample.state = DeviceState::kLost;
  std::map<std::string, double> lost;
  std::map<std::string, double> skipped;
  for (const Line& l : Parse(Render(snap))) {
    for (const auto& lab : l.labels) {
      if (lab.name == "UUID" && lab.value == "GPU-bbbb" && l.name != "gpulse_device_lost" &&
          l.name != "gpulse_device_skipped") {
        ADD_FAILURE() << "lost GPU still has " << l.name;
      }
    }
    if (l.name == "gpulse_device_skipped") skipped[l.labels[1].value] = l.value;
    if (l.name == "gpulse_device_lost") {
      EXPECT_EQ(LabelNames(l), (std::vector<std::string>{"gpu", "UUID", "pci_bus_id"}))
          << "one label set for present and lost GPUs";
      lost[l.labels[1].value] = l.value;
    }
  }
  EXPECT_EQ(lost, (std::map<std::string, double>{{"GPU-aaaa", 0}, {"GPU-bbbb", 1}}));
  EXPECT_EQ(skipped, (std::map<std::string, double>{{"GPU-aaaa", 0}, {"GPU-bbbb", 0}}))
      << "every GPU keeps its gpulse_device_skipped series, 0 when it was read or lost";
  // A lost GPU keeps its XID counter series with the last value (no reset seen by Prometheus).
  snap.entities[1].sample.xid_counts = {{79, 1}};
  bool kept = false;
  for (const Line& l : Parse(Render(snap))) {
    if (l.name == "gpulse_xid_errors_total" && l.labels[1].value == "GPU-bbbb") kept = l.value == 1;
  }
  EXPECT_TRUE(kept);
}

TEST_F(ExpositionTest, XidsAreCountedPerCode) {
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{230, 94}});
  snap.entities[0].sample.xid_counts = {{79, 1}, {94, 3}};
  snap.entities[1].sample = Reading({});
  std::map<std::string, double> counts;
  for (const Line& l : Parse(Render(snap))) {
    if (l.name != "gpulse_xid_errors_total") continue;
    std::vector<std::string> names = LabelNames(l);
    EXPECT_EQ(names.back(), "xid");
    EXPECT_EQ(names.front(), "gpu");
    counts[l.labels.back().value] = l.value;
  }
  EXPECT_EQ(counts, (std::map<std::string, double>{{"79", 1}, {"94", 3}}));
}

TEST_F(ExpositionTest, SelfMetrics) {
  Snapshot snap;
  snap.start_mono_ns = 1'000'000'000;
  snap.duration_ns = 250'000;
  snap.failed_calls_total = 4;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{155, 300}}, 1'000'000'000);
  snap.entities[1].sample = Reading({{155, 300}}, 1'250'000'000);
  std::map<std::string, double> v;
  for (const Line& l : Parse(Render(snap))) {
    std::string key = l.name;
    if (l.name == "gpulse_device_sample_age_seconds") key += l.labels[0].value;
    v[key] = l.value;
  }
  EXPECT_EQ(v["gpulse_build_info"], 1);
  EXPECT_EQ(v["gpulse_backend_up"], 1);
  EXPECT_EQ(v["gpulse_backend_failed_calls_total"], 4);
  EXPECT_DOUBLE_EQ(v["gpulse_scrape_duration_seconds"], 0.00025);
  EXPECT_DOUBLE_EQ(v["gpulse_device_sample_age_seconds0"], 0.5)
      << "rendered at 1.5 s, read at 1.0 s";
  EXPECT_DOUBLE_EQ(v["gpulse_device_sample_age_seconds1"], 0.25);
  EXPECT_EQ(v["gpulse_device_info"], 1);
}

TEST_F(ExpositionTest, NoHostnameDropsTheLabel) {
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{155, 300}});
  snap.entities[1].sample = Reading({{155, 300}});
  std::string text = Render(snap, std::nullopt);
  EXPECT_EQ(text.find("Hostname"), std::string::npos);
}

TEST(DeviceLabels, MigInstancesAndLabelRowsSortedByName) {
  SystemInfo info = TwoGpus();
  auto set = ParseCounters(
      "DCGM_FI_DEV_GPU_UTIL, gauge, x\nDCGM_FI_NVML_VERSION, label, n\nDCGM_FI_DRIVER_VERSION, "
      "label, d\n",
      "f");
  ASSERT_TRUE(set.ok());
  MigInstance mig;
  mig.profile = "3g.20gb";
  mig.gpu_instance_id = 2;
  PageOptions options;
  options.hostname = "h";
  LabelList l = DeviceLabels(info, info.devices[0], &mig, *set, options);
  std::vector<std::string> names;
  for (const auto& [k, v] : l) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu", "UUID", "pci_bus_id", "device", "modelName",
                                             "GPU_I_PROFILE", "GPU_I_ID", "Hostname",
                                             "DCGM_FI_DRIVER_VERSION", "DCGM_FI_NVML_VERSION"}));
  EXPECT_EQ(l[5].second, "3g.20gb");
  EXPECT_EQ(l[6].second, "2");
}

TEST(Health, Verdicts) {
  SystemInfo info = TwoGpus();
  const std::int64_t s = 1'000'000'000;
  auto snap = [&](std::int64_t start, std::uint64_t failed1, bool lost1) {
    Snapshot sn;
    sn.start_mono_ns = start;
    sn.entities.resize(2);
    sn.entities[1].failed_calls = failed1;
    if (lost1) sn.entities[1].sample.state = DeviceState::kLost;
    return sn;
  };
  Snapshot fresh = snap(10 * s, 0, false);
  Snapshot old = snap(1 * s, 0, false);
  Snapshot failing = snap(10 * s, 2, false);
  Snapshot failing_but_lost = snap(10 * s, 2, true);
  struct Case {
    const Snapshot* snap;
    std::optional<std::int64_t> in_flight;
    bool healthy;
    const char* reason;
  };
  for (const Case& c : std::vector<Case>{
           {&fresh, std::nullopt, true, "ok"},
           {nullptr, std::nullopt, false, "no device read has completed"},
           {&old, std::nullopt, false, "old (limit 5.000 s)"},
           {&failing, std::nullopt, false, "GPU 1 (GPU-bbbb): 2 call(s) failed"},
           {&failing_but_lost, std::nullopt, false, "GPU 1 (GPU-bbbb) is lost"},
           {&fresh, 2 * s, false, "running for 9.000 s"},
           {&fresh, 9 * s, true, "ok"},
       }) {
    HealthVerdict v = EvaluateHealth(info, BuildEntities(info), c.snap, 11 * s, 5 * s, c.in_flight);
    EXPECT_EQ(v.healthy, c.healthy) << v.reason;
    EXPECT_NE(v.reason.find(c.reason), std::string::npos) << v.reason;
  }
  SystemInfo none;
  EXPECT_FALSE(EvaluateHealth(none, {}, &fresh, 11 * s, 5 * s, std::nullopt).healthy);
  Snapshot all_lost = snap(10 * s, 0, true);
  all_lost.entities[0].sample.state = DeviceState::kLost;
  EXPECT_EQ(EvaluateHealth(info, BuildEntities(info), &all_lost, 11 * s, 5 * s, std::nullopt).reason,
            "GPU 0 (GPU-aaaa) is lost (the driver answered GPU_IS_LOST)");
  // A GPU lost before start fails /health before any read, named by what is known of it.
  SystemInfo with_lost = TwoGpus();
  with_lost.skipped.push_back({5, "GPU is lost (nvmlDeviceGetHandleByIndex: GPU_IS_LOST)", true, "", "",
                               "00000000:5D:00.0", "procfs"});
  HealthVerdict v = EvaluateHealth(with_lost, BuildEntities(with_lost), &fresh, 11 * s, 5 * s, std::nullopt);
  EXPECT_FALSE(v.healthy);
  EXPECT_EQ(v.reason, "GPU 5 (00000000:5D:00.0) is lost: GPU is lost (nvmlDeviceGetHandleByIndex: GPU_IS_LOST)");
  // Skipped for lack of permission is not lost: healthy.
  SystemInfo with_skipped = TwoGpus();
  with_skipped.skipped.push_back({5, "no permission", false, "", "", "", ""});
  EXPECT_TRUE(EvaluateHealth(with_skipped, BuildEntities(with_skipped), &fresh, 11 * s, 5 * s, std::nullopt).healthy);
}

}  // namespace
}  // namespace gpulse::exporter

namespace gpulse::exporter {
namespace {

TEST(DeviceSelection, DcgmExportersForms) {
  using K = DeviceSelection::Kind;
  EXPECT_EQ(ParseDeviceSelection("f")->kind, K::kFlex);
  EXPECT_EQ(ParseDeviceSelection("i")->kind, K::kInstances);
  auto g = ParseDeviceSelection("g");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->kind, K::kGpus);
  EXPECT_TRUE(g->gpus.empty());
  auto list = ParseDeviceSelection("g:3,0-1,1");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->gpus, (std::vector<unsigned>{3, 0, 1}));
  for (const char* bad : {"", "x", "g:", "g:,", "g:1,", "g:a", "g:2-1", "g:-1", "g:1-", "i:0", "f:0",
                          "g:99999999999"}) {
    auto r = ParseDeviceSelection(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("devices \""), std::string::npos) << r.error().message;
  }
}

TEST(ReplaceBlanks, RunsOfBlanksBecomeOneDash) {
  EXPECT_EQ(ReplaceBlanks("NVIDIA H100 80GB HBM3"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(ReplaceBlanks("  NVIDIA \t A100  "), "NVIDIA-A100");
  EXPECT_EQ(ReplaceBlanks("NVIDIA-A10"), "NVIDIA-A10");
  EXPECT_EQ(ReplaceBlanks(""), "");
}

}  // namespace
}  // namespace gpulse::exporter

namespace gpulse::exporter {
namespace {

// Kubernetes mode (issue 20): each holder of an entity gets its own copy of the entity's series
// with pod, namespace, container (and vgpu for a replica) after dcgm-exporter's labels; the XID
// gauge keeps err_code/err_msg after them; an entity nobody holds keeps one unlabelled series;
// Slurm mode's job labels take the same path.
TEST(PodLabelsExposition, OneSeriesPerHolderAndNoneForTheRest) {
  SystemInfo info = TwoGpus();
  identity::PodAssignments a;
  a.pods = 3;
  a.by_entity = {{{"embed", "ml", "e", "2"}, {"vllm", "ml", "v", "1"}}, {}};
  PodLabels pods = RenderPodLabels(a);
  pods.up = true;
  pods.lists_total = 4;
  ASSERT_EQ(pods.by_entity[0].size(), 2u);
  EXPECT_EQ(pods.by_entity[0][0], "pod=\"embed\",namespace=\"ml\",container=\"e\",vgpu=\"2\"");
  Snapshot snap;
  snap.entities.resize(2);
  snap.entities[0].sample = Reading({{150, 40}, {230, 94}});
  snap.entities[1].sample = Reading({{150, 41}});
  PageOptions options;
  MetricsPage page(info, std::make_shared<const CounterSet>(DefaultCounters()), options);
  std::string text;
  page.Render(snap, 1'500'000'000, text, &pods);
  std::vector<std::string> temp_pods;
  int unlabelled = 0;
  for (const Line& l : Parse(text)) {
    std::map<std::string, std::string> m;
    for (const auto& p : l.labels) m[p.name] = p.value;
    if (l.name == "DCGM_FI_DEV_GPU_TEMP") {
      if (m.contains("pod")) {
        EXPECT_EQ(m["gpu"], "0");
        temp_pods.push_back(m["pod"]);
      } else {
        EXPECT_EQ(m["gpu"], "1");
        ++unlabelled;
      }
    }
    if (l.name == "DCGM_FI_DEV_XID_ERRORS") {
      EXPECT_TRUE(m.contains("pod") && m.contains("err_code")) << text;
      EXPECT_EQ(LabelNames(l).back(), "err_msg");
    }
    if (l.name == "gpulse_kubelet_up") EXPECT_EQ(l.value, 1);
    if (l.name == "gpulse_kubelet_lists_total") EXPECT_EQ(l.value, 4);
    if (l.name == "gpulse_kubelet_pods") EXPECT_EQ(l.value, 3);
  }
  EXPECT_EQ(temp_pods, (std::vector<std::string>{"embed", "vllm"}));
  EXPECT_EQ(unlabelled, 1);

  // Slurm mode: the snapshot's job labels, when no pods are given.
  snap.job_labels = {{}, {"hpc_job=\"4242\""}};
  std::string jobs;
  page.Render(snap, 1'500'000'000, jobs);
  EXPECT_NE(jobs.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), std::string::npos);
  EXPECT_NE(jobs.find("hpc_job=\"4242\"} 41"), std::string::npos) << jobs;
  EXPECT_EQ(jobs.find("gpulse_kubelet_up"), std::string::npos) << "kubelet metrics only with -k";
}

}  // namespace
}  // namespace gpulse::exporter
