// dcgm-exporter's HPC job mapping directory (--hpc-job-mapping-dir): file names, contents, the
// directory read at each device read, and the bounds and failures gpulse adds
// (src/exporter/hpc_job_mapping.h).
#include "exporter/hpc_job_mapping.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exporter/exposition.h"

namespace gpulse::exporter {
namespace {

namespace fs = std::filesystem;
using Jobs = std::vector<std::string>;

TEST(JobMappingFileName, IsDcgmExportersPattern) {
  for (const char* ok : {"0", "7", "12", "00", "2.0", "10.13", "0.00"}) {
    EXPECT_TRUE(IsJobMappingFileName(ok)) << ok;
  }
  for (const char* bad : {"", ".", "0.", ".0", "a", "0.0.0", "1 ", " 1", "-1", "+1", "0x1", "1\n",
                          "gpu0", "0.a", "\xd9\xa3" /* Arabic-Indic three */}) {
    EXPECT_FALSE(IsJobMappingFileName(bad)) << bad;
  }
}

Entity Gpu(unsigned index, std::size_t pos) {
  Entity e;
  e.kind = EntityKind::kGpu;
  e.gpu = index;
  e.device_pos = pos;
  return e;
}

Entity Instance(unsigned gpu, std::optional<unsigned> gi, std::size_t pos) {
  Entity e = Gpu(gpu, pos);
  e.kind = EntityKind::kGpuInstance;
  e.gpu_instance_id = gi;
  return e;
}

TEST(JobMappingFileName, NamesGpusAndInstancesByTheirLabels) {
  EXPECT_EQ(JobMappingFileName(Gpu(3, 0)), "3");
  EXPECT_EQ(JobMappingFileName(Gpu(10, 0)), "10");
  EXPECT_EQ(JobMappingFileName(Instance(2, 0, 0)), "2.0");
  EXPECT_EQ(JobMappingFileName(Instance(2, 13, 0)), "2.13");
  EXPECT_EQ(JobMappingFileName(Instance(2, std::nullopt, 0)), std::nullopt);
  Entity ci = Instance(2, 1, 0);
  ci.kind = EntityKind::kComputeInstance;
  ci.compute_instance_id = 0;
  EXPECT_EQ(JobMappingFileName(ci), std::nullopt);
  for (const Entity& e : {Gpu(0, 0), Gpu(123, 0), Instance(4, 7, 0)}) {
    EXPECT_TRUE(IsJobMappingFileName(*JobMappingFileName(e)));
  }
}

Jobs Parse(std::string_view content) {
  auto jobs = ParseJobMappingFile(content);
  EXPECT_TRUE(jobs.ok()) << content;
  return jobs.ok() ? *jobs : Jobs{"<error>"};
}

TEST(JobMappingContent, OneJobPerLineAsBufioScanLines) {
  EXPECT_EQ(Parse(""), Jobs{});  // a 0-byte file: no jobs
  EXPECT_EQ(Parse("4242"), Jobs{"4242"});
  EXPECT_EQ(Parse("4242\n"), Jobs{"4242"});  // the trailing newline adds no entry
  EXPECT_EQ(Parse("1\n2\n3\n"), (Jobs{"1", "2", "3"}));
  EXPECT_EQ(Parse("1\n2"), (Jobs{"1", "2"}));
  EXPECT_EQ(Parse("1\r\n2\r\n"), (Jobs{"1", "2"}));      // a final \r is dropped
  EXPECT_EQ(Parse("1\r"), Jobs{"1"});                    // at the end of the file too
  EXPECT_EQ(Parse("1\r\r\n"), Jobs{"1\r"});              // only one
  EXPECT_EQ(Parse("a\rb\n"), Jobs{"a\rb"});              // not one inside a line
  EXPECT_EQ(Parse(" 7 \n\t8\n"), (Jobs{" 7 ", "\t8"}));  // no trimming
  EXPECT_EQ(Parse("\n"), Jobs{""});                      // an empty line is the job ""
  EXPECT_EQ(Parse("\r\n"), Jobs{""});
  EXPECT_EQ(Parse("1\n\n2\n"), (Jobs{"1", "", "2"}));
  EXPECT_EQ(Parse("9\n1\n"), (Jobs{"9", "1"}));  // file order, not sorted
}

TEST(JobMappingContent, RepeatedJobsCountOnce) {
  EXPECT_EQ(Parse("5\n5\n6\n5\n"), (Jobs{"5", "6"}));
  EXPECT_EQ(Parse("5\n5\r\n"), Jobs{"5"});
  EXPECT_EQ(Parse("\n\n"), Jobs{""});
}

TEST(JobMappingContent, TooManyJobsIsAnError) {
  EXPECT_TRUE(ParseJobMappingFile("1\n2\n", 2).ok());
  EXPECT_TRUE(ParseJobMappingFile("1\n2\n1\n2\n1\n", 2).ok());  // repeats do not count
  auto many = ParseJobMappingFile("1\n2\n3\n", 2);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("more than 2 jobs"), std::string::npos);
  std::string big;
  for (std::size_t i = 0; i <= kMaxJobsPerFile; ++i) big += std::to_string(i) + "\n";
  EXPECT_FALSE(ParseJobMappingFile(big).ok());
  EXPECT_EQ(Parse(std::string(kMaxJobFileBytes, '\n')), Jobs{""}) << "65536 empty lines: one job";
}

class JobMappingDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulse-hpc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/map";
    fs::create_directory(dir_);
    // GPU 0, GPU 1 (MIG: GPU instances 0 and 13, a compute instance of 0), GPU 2 skipped, GPU 10.
    entities_ = {Gpu(0, 0),         Gpu(1, 1), Instance(1, 0, 1), Instance(1, 13, 1),
                 Instance(1, 0, 1), Gpu(2, 2), Gpu(10, 3)};
    entities_[4].kind = EntityKind::kComputeInstance;
    entities_[4].compute_instance_id = 0;
    entities_[5].state = EntityState::kSkipped;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << content;
  }
  std::vector<std::vector<std::string>> Labels() {
    JobMappingRead r = ReadJobMappingDir(dir_, entities_);
    EXPECT_TRUE(r.dir_present);
    EXPECT_TRUE(r.failures.empty());
    return r.labels;
  }

  std::string root_, dir_;
  std::vector<Entity> entities_;
};

TEST_F(JobMappingDir, EachGpuAndInstanceFromItsOwnFile) {
  Write("0", "100\n101\n");
  Write("1", "200\n");
  Write("1.13", "300\n");
  Write("10", "400");
  auto l = Labels();
  ASSERT_EQ(l.size(), entities_.size());
  EXPECT_EQ(l[0], (Jobs{R"(hpc_job="100")", R"(hpc_job="101")"}));
  EXPECT_EQ(l[1], Jobs{R"(hpc_job="200")"});
  EXPECT_EQ(l[2], Jobs{}) << "a plain N file does not label GPU N's MIG instances";
  EXPECT_EQ(l[3], Jobs{R"(hpc_job="300")"});
  EXPECT_EQ(l[4], Jobs{}) << "compute instances have no series";
  EXPECT_EQ(l[6], Jobs{R"(hpc_job="400")"});
}

TEST_F(JobMappingDir, OtherNamesAndSubdirectoriesMatchNothing) {
  for (const char* name : {"00", "01", "1.013", "1.00", "0.", "gpu0", "10 ", "1.13.0"}) {
    Write(name, "999\n");
  }
  fs::create_directory(dir_ + "/0");  // a subdirectory under a GPU's name is skipped
  Write("2", "555\n");                // a skipped GPU has no series to label
  auto l = Labels();
  for (const auto& jobs : l) EXPECT_EQ(jobs, Jobs{});
}

TEST_F(JobMappingDir, EmptyOrMissingFilesLeaveSeriesUnlabelled) {
  Write("0", "");
  Write("1", "\n");  // one empty line: the job ""
  auto l = Labels();
  EXPECT_EQ(l[0], Jobs{});
  EXPECT_EQ(l[1], Jobs{R"(hpc_job="")"});
  EXPECT_EQ(l[6], Jobs{});
}

TEST_F(JobMappingDir, JobIdsAreEscapedLabelValues) {
  Write("0", "a\"b\nc\\d\n\xff\xfe\n");
  Write("1", "\xff\n\xfe\n");  // both render as U+FFFD: one label, not two identical series
  auto l = Labels();
  EXPECT_EQ(l[0], (Jobs{R"(hpc_job="a\"b")", R"(hpc_job="c\\d")",
                        "hpc_job=\"\xef\xbf\xbd\xef\xbf\xbd\""}));
  EXPECT_EQ(l[1], Jobs{"hpc_job=\"\xef\xbf\xbd\""});
}

TEST_F(JobMappingDir, AMissingDirectoryLabelsNothing) {
  JobMappingRead r = ReadJobMappingDir(root_ + "/absent", entities_);
  EXPECT_FALSE(r.dir_present);
  EXPECT_TRUE(r.failures.empty());
  ASSERT_EQ(r.labels.size(), entities_.size());
  for (const auto& jobs : r.labels) EXPECT_EQ(jobs, Jobs{});
  std::ofstream(root_ + "/file") << "0\n";
  EXPECT_FALSE(ReadJobMappingDir(root_ + "/file", entities_).dir_present);
}

TEST_F(JobMappingDir, FilesThatCannotBeUsedAreFailuresOfTheirGpuOnly) {
  Write("0", std::string(kMaxJobFileBytes + 1, '1'));  // over the size bound
  ASSERT_EQ(mkfifo((dir_ + "/1").c_str(), 0600), 0);   // would block a reader: not regular
  Write("1.0", "1\n2\n3\n");                           // over a bound of 2 jobs
  Write("10", "77\n");
  JobMappingRead r = ReadJobMappingDir(dir_, entities_, kMaxJobFileBytes, 2);
  EXPECT_TRUE(r.dir_present);
  ASSERT_EQ(r.failures.size(), 3u);
  EXPECT_EQ(r.failures[0].file, "0");
  EXPECT_NE(r.failures[0].reason.find("larger than 65536 bytes"), std::string::npos);
  EXPECT_EQ(r.failures[1].file, "1");
  EXPECT_EQ(r.failures[1].reason, "not a regular file");
  EXPECT_EQ(r.failures[2].file, "1.0");
  EXPECT_EQ(r.labels[0], Jobs{});
  EXPECT_EQ(r.labels[1], Jobs{});
  EXPECT_EQ(r.labels[2], Jobs{});
  EXPECT_EQ(r.labels[6], Jobs{R"(hpc_job="77")"});
  // Exactly at the bound is fine.
  Write("0", std::string(kMaxJobFileBytes, '1'));
  r = ReadJobMappingDir(dir_, entities_);
  EXPECT_EQ(r.labels[0].size(), 1u);
  if (geteuid() != 0) {  // root reads whatever the mode says
    Write("0", "5\n");
    chmod((dir_ + "/0").c_str(), 0);
    r = ReadJobMappingDir(dir_, entities_);
    ASSERT_FALSE(r.failures.empty());
    EXPECT_EQ(r.failures[0].file, "0");
  }
}

TEST_F(JobMappingDir, CheckRefusesWhatIsNotADirectory) {
  EXPECT_TRUE(CheckJobMappingDir(dir_).ok());
  EXPECT_TRUE(CheckJobMappingDir(root_ + "/absent").ok()) << "it may come later";
  std::ofstream(root_ + "/file") << "0\n";
  Status s = CheckJobMappingDir(root_ + "/file");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not a directory"), std::string::npos);
}

TEST_F(JobMappingDir, ApplyFollowsTheFilesAndSaysEachFailureOnce) {
  std::vector<std::string> said;
  JobMapping m(root_ + "/later", entities_, [&](const std::string& l) { said.push_back(l); });
  ASSERT_TRUE(m.Check().ok());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("no such directory"), std::string::npos);

  auto snap = std::make_shared<const Snapshot>();
  auto a = m.Apply(snap);
  ASSERT_TRUE(a->job_mapping);
  EXPECT_FALSE(a->job_mapping->dir_present);
  EXPECT_EQ(said.size(), 1u) << "still missing: nothing new to say";

  fs::create_directory(root_ + "/later");
  std::ofstream(root_ + "/later/0") << "11\n";
  a = m.Apply(snap);
  EXPECT_TRUE(a->job_mapping->dir_present);
  EXPECT_EQ(a->job_labels[0], Jobs{R"(hpc_job="11")"});
  EXPECT_EQ(said.size(), 2u);  // the directory came

  std::ofstream(root_ + "/later/0") << "12\n";
  EXPECT_EQ(m.Apply(snap)->job_labels[0], Jobs{R"(hpc_job="12")"}) << "re-read at every read";

  std::ofstream(root_ + "/later/0") << std::string(kMaxJobFileBytes + 1, 'x');
  for (int i = 0; i < 3; ++i) {
    a = m.Apply(snap);
    EXPECT_EQ(a->job_labels[0], Jobs{});
  }
  EXPECT_EQ(a->job_mapping->failures_total, 3u) << "counted at each read";
  EXPECT_EQ(m.failures_total(), 3u);
  EXPECT_EQ(said.size(), 3u) << "said once";
  EXPECT_NE(said[2].find("/later/0: larger than"), std::string::npos) << said[2];

  fs::remove(root_ + "/later/0");
  EXPECT_EQ(m.Apply(snap)->job_labels[0], Jobs{});
  std::ofstream(root_ + "/later/0") << std::string(kMaxJobFileBytes + 1, 'x');
  m.Apply(snap);
  EXPECT_EQ(said.size(), 4u) << "a failure after a recovery is said again";

  fs::remove_all(root_ + "/later");
  a = m.Apply(snap);
  EXPECT_FALSE(a->job_mapping->dir_present);
  EXPECT_EQ(said.size(), 5u);  // the directory went
  EXPECT_NE(said[4].find("gone"), std::string::npos);
  EXPECT_NE(snap.get(), a.get()) << "a snapshot someone else holds is copied, not changed";
  EXPECT_TRUE(snap->job_labels.empty());
}

// The exposition: each counter series of a GPU with jobs once per job, hpc_job after
// dcgm-exporter's labels (and before the XID gauge's err_code/err_msg), with pods (-k) once per
// container and job; gpulse's own families unlabelled; the mapping's self metrics.
TEST(JobMappingExposition, OneSeriesPerJob) {
  SystemInfo info;
  info.backend = "nvml";
  info.driver_version = "550.54.15";
  DeviceInfo a;
  a.index = 0;
  a.name = "NVIDIA H100 80GB HBM3";
  a.uuid = "GPU-aaaa";
  a.pci_bus_id = "00000000:18:00.0";
  DeviceInfo b = a;
  b.index = 1;
  b.uuid = "GPU-bbbb";
  info.devices = {a, b};
  MetricsPage page(info, std::make_shared<const CounterSet>(DefaultCounters()),
                   PageOptions{"node-1", "v", "c", false, {}, false});
  Snapshot snap;
  for (int i = 0; i < 2; ++i) {
    DeviceReading& r = snap.entities.emplace_back();
    r.sample.t_mono_ns = 1;
    r.sample.values.assign(AllFields().size(), std::nullopt);
    r.sample.values[*IndexOf(FieldId{150})] = 40 + i;  // DCGM_FI_DEV_GPU_TEMP
    r.sample.values[*IndexOf(FieldId{230})] = 79;      // DCGM_FI_DEV_XID_ERRORS
  }
  snap.job_labels = {{R"(hpc_job="7")", R"(hpc_job="a\"b")"}, {}};
  snap.job_mapping = JobMappingStatus{true, 3};
  std::string text;
  page.Render(snap, 2, text);
  const std::string gpu0 =
      R"(DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",)"
      R"(device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",)"
      R"(DCGM_FI_DRIVER_VERSION="550.54.15",)";
  EXPECT_NE(text.find(gpu0 + R"(hpc_job="7"} 40)" + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find(gpu0 + R"(hpc_job="a\"b"} 40)" + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(DCGM_FI_DRIVER_VERSION="550.54.15"} 41)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(hpc_job="7",err_code="79",err_msg=")"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"(gpulse_device_info{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",)"
                      R"(device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",)"
                      R"(DCGM_FI_DRIVER_VERSION="550.54.15",hpc_job)"),
            std::string::npos);
  EXPECT_NE(text.find("\ngpulse_hpc_job_mapping_dir_present 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE gpulse_hpc_job_mapping_failures_total counter\n"
                      "gpulse_hpc_job_mapping_failures_total 3\n"),
            std::string::npos);

  // With -k too: once per container and job.
  PodLabels pods;
  pods.by_entity = {{R"(pod="p",namespace="n",container="c")"}, {}};
  text.clear();
  page.Render(snap, 2, text, &pods);
  EXPECT_NE(text.find(R"(container="c",hpc_job="7"} 40)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(container="c",hpc_job="a\"b"} 40)"), std::string::npos) << text;

  // Without the flag, no mapping families.
  snap.job_mapping.reset();
  snap.job_labels.clear();
  text.clear();
  page.Render(snap, 2, text);
  EXPECT_EQ(text.find("gpulse_hpc_job_mapping"), std::string::npos);
  EXPECT_EQ(text.find("hpc_job"), std::string::npos);
}

}  // namespace
}  // namespace gpulse::exporter
