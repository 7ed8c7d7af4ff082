// The amdgpu backend over the fixture trees tests/testdata/sysfs/{mi300x,rx7900} (written by
// make_fixtures.py, whose values the expectations below restate): identity, every readable field,
// unsupported fields absent rather than 0, live changes between reads, missing and failing files,
// malformed gpu_metrics tables, and processes from DRM fdinfo.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/fields.h"
#include "gpu/amdgpu/amdgpu_backend.h"
#include "identity/temp_tree.h"

namespace gpulse::gpu::amdgpu {
namespace {

namespace fs = std::filesystem;
using identity::testing::TempTree;

constexpr double kMiB = 1024.0 * 1024.0;

std::string Fixture(const std::string& name) {
  return std::string(GPULSE_SOURCE_DIR) + "/tests/testdata/sysfs/" + name;
}

std::unique_ptr<AmdgpuBackend> OpenOrDie(const std::string& root, const std::string& proc = "") {
  auto b = AmdgpuBackend::Open(root, proc);
  if (!b.ok()) ADD_FAILURE() << b.error().message;
  return b.ok() ? std::move(b).value() : nullptr;
}

std::vector<FieldIndex> Every() {
  std::vector<FieldIndex> all;
  for (std::size_t i = 0; i < AllFields().size(); ++i) all.push_back(static_cast<FieldIndex>(i));
  return all;
}

FieldIndex F(FieldId id) { return *IndexOf(id); }

// A fixture copied into a temporary directory, symbolic links kept, for tests that change it.
class TreeCopy {
 public:
  explicit TreeCopy(const std::string& fixture) {
    fs::copy(Fixture(fixture), root(),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  std::string root() const { return tmp_.root() + "/sys"; }
  std::string device() const { return root() + "/class/drm/card0/device"; }
  std::string hwmon() const { return device() + "/hwmon/hwmon0"; }
  // Rewrites a file in place (same inode, as sysfs attributes change under an open descriptor).
  void Write(const std::string& path, const std::string& bytes) const {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  std::string Read(const std::string& path) const {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  TempTree tmp_;
};

// Expected value of each field id the fixture gives; every other field must be unsupported.
void ExpectFields(AmdgpuBackend& b, const std::map<FieldId, double>& expected) {
  Sample s;
  const auto all = Every();
  b.Read(0, all, s);
  ASSERT_EQ(s.values.size(), AllFields().size());
  EXPECT_EQ(s.state, DeviceState::kOk);
  EXPECT_GT(s.t_mono_ns, 0);
  EXPECT_GT(s.t_unix_ns, 0);
  for (FieldIndex f : all) {
    const FieldSpec& spec = FieldAt(f);
    auto it = expected.find(spec.id);
    if (it != expected.end()) {
      ASSERT_TRUE(s.values[f].has_value()) << spec.name;
      EXPECT_NEAR(*s.values[f], it->second, 1e-6) << spec.name;
      EXPECT_FALSE(s.unsupported[f]) << spec.name;
    } else {
      EXPECT_FALSE(s.values[f].has_value()) << spec.name << " = " << s.values[f].value_or(0);
      EXPECT_TRUE(s.unsupported[f]) << spec.name << " is neither read nor unsupported";
    }
  }
  EXPECT_EQ(b.stats().failed_calls, 0u);
}

TEST(AmdgpuBackend, Mi300xIdentity) {
  auto b = OpenOrDie(Fixture("mi300x"));
  ASSERT_NE(b, nullptr);
  const SystemInfo& info = b->info();
  EXPECT_EQ(info.backend, "amdgpu");
  EXPECT_EQ(info.driver_version, "6.7.0");
  EXPECT_FALSE(info.simulated);
  ASSERT_EQ(info.devices.size(), 1u);
  const DeviceInfo& d = info.devices[0];
  EXPECT_EQ(d.index, 0u);
  EXPECT_EQ(d.vendor, "amd");
  EXPECT_EQ(d.backend, "amdgpu");
  EXPECT_EQ(d.name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(d.uuid, "GPU-A3D4C2B1E5F60718");
  EXPECT_EQ(d.pci_bus_id, "00000000:C1:00.0");
  EXPECT_EQ(d.memory_total_bytes, 205822885888u);
  EXPECT_EQ(d.power_limit_watts, 750.0);
  EXPECT_EQ(d.max_sm_clock_mhz, 2100u);
  EXPECT_EQ(d.max_memory_clock_mhz, 1300u);
  EXPECT_FALSE(d.mig_enabled);
  EXPECT_EQ(b->device(0).pci_address(), "0000:c1:00.0");
}

TEST(AmdgpuBackend, Rx7900Identity) {
  auto b = OpenOrDie(Fixture("rx7900"));
  ASSERT_NE(b, nullptr);
  const DeviceInfo& d = b->info().devices.at(0);
  EXPECT_EQ(d.name, "AMD GPU 0x744c");  // no product_name on consumer boards
  EXPECT_EQ(d.uuid, "GPU-5A1B2C3D4E5F6071");
  EXPECT_EQ(d.pci_bus_id, "00000000:03:00.0");
  EXPECT_EQ(d.memory_total_bytes, 25753026560u);
  EXPECT_EQ(d.power_limit_watts, 327.0);
  EXPECT_EQ(d.max_sm_clock_mhz, 2500u);
  EXPECT_EQ(d.max_memory_clock_mhz, 1249u);
}

TEST(AmdgpuBackend, Mi300xReadsEveryExposedFieldAndNothingElse) {
  auto b = OpenOrDie(Fixture("mi300x"));
  ASSERT_NE(b, nullptr);
  ExpectFields(*b, {
                       {203, 87},                                   // gpu_busy_percent
                       {204, 41},                                   // mem_busy_percent
                       {250, 205822885888 / kMiB},                  // VRAM total
                       {252, 73014444032 / kMiB},                   // used
                       {251, (205822885888 - 73014444032) / kMiB},  // free
                       {155, 548},  // power1_input: MI300 has no power1_average
                       {156, 123456789012 * 1000.0 / 65536},  // gpu_metrics 1.5
                       {164, 750},                            // power1_cap
                       {150, 62},                             // no edge sensor: junction
                       {140, 55},                             // mem
                       {100, 1400},                           // freq1_input (sclk)
                       {101, 1300},                           // freq2_input (mclk)
                       {202, 0},                              // pcie_replay_count: a real 0
                   });
  // 157 (instantaneous power) would repeat power1_input; 191 (fan): MI300X has no pwm1.
}

TEST(AmdgpuBackend, Rx7900ReadsEveryExposedFieldAndNothingElse) {
  auto b = OpenOrDie(Fixture("rx7900"));
  ASSERT_NE(b, nullptr);
  ExpectFields(*b, {
                       {203, 23},
                       {204, 7},
                       {250, 25753026560 / kMiB},
                       {252, 3221225472 / kMiB},
                       {251, (25753026560 - 3221225472) / kMiB},
                       {155, 187},                         // power1_average
                       {156, 987654321 * 1000.0 / 65536},  // gpu_metrics 1.3
                       {164, 327},
                       {150, 51},  // edge
                       {140, 70},
                       {100, 1880},
                       {101, 1249},
                       {191, 40},  // pwm1 102 of 255
                       {202, 2},
                   });
}

TEST(AmdgpuBackend, InstantPowerIsReadBesideTheAverage) {
  TreeCopy t("rx7900");
  std::ofstream(t.hwmon() + "/power1_input") << "201500000\n";
  auto b = OpenOrDie(t.root());
  Sample s;
  const std::vector<FieldIndex> f = {F(155), F(157)};
  b->Read(0, f, s);
  EXPECT_EQ(s.values[F(155)], 187.0);
  EXPECT_EQ(s.values[F(157)], 201.5);
}

TEST(AmdgpuBackend, LiveValuesFollowTheFiles) {
  TreeCopy t("rx7900");
  auto b = OpenOrDie(t.root());
  ASSERT_NE(b, nullptr);
  const std::vector<FieldIndex> f = {F(155), F(203), F(156), F(150)};
  Sample s;
  b->Read(0, f, s);
  EXPECT_EQ(s.values[F(155)], 187.0);
  EXPECT_EQ(s.values[F(203)], 23.0);
  const double energy0 = *s.values[F(156)];

  t.Write(t.hwmon() + "/power1_average", "215250000\n");
  t.Write(t.device() + "/gpu_busy_percent", "99\n");
  t.Write(t.hwmon() + "/temp1_input", "58000\n");
  std::string metrics = t.Read(t.device() + "/gpu_metrics");
  const std::uint64_t acc = 987654321 + 65536 * 250;  // 250 J later
  for (int i = 0; i < 8; ++i) metrics[24 + i] = static_cast<char>((acc >> (8 * i)) & 0xFF);
  t.Write(t.device() + "/gpu_metrics", metrics);

  b->Read(0, f, s);
  EXPECT_EQ(s.values[F(155)], 215.25);
  EXPECT_EQ(s.values[F(203)], 99.0);
  EXPECT_EQ(s.values[F(150)], 58.0);
  EXPECT_NEAR(*s.values[F(156)] - energy0, 250'000.0, 1e-6);
  EXPECT_EQ(b->stats().failed_calls, 0u);
}

TEST(AmdgpuBackend, MissingFilesAreUnsupportedNotZero) {
  TreeCopy t("rx7900");
  fs::remove(t.device() + "/gpu_busy_percent");
  fs::remove(t.device() + "/gpu_metrics");
  fs::remove(t.hwmon() + "/power1_average");  // and there is no power1_input
  fs::remove(t.hwmon() + "/temp1_input");     // edge gone: the junction stands in
  fs::remove(t.hwmon() + "/temp1_label");
  auto b = OpenOrDie(t.root());
  const std::vector<FieldIndex> f = {F(203), F(156), F(155), F(157), F(150)};
  for (int tick = 0; tick < 2; ++tick) {
    Sample s;
    b->Read(0, f, s);
    for (FieldId id : {203, 156, 155, 157}) {
      EXPECT_FALSE(s.values[F(id)]) << id;
      EXPECT_TRUE(s.unsupported[F(id)]) << id;
    }
    EXPECT_EQ(s.values[F(150)], 63.0);
  }
  EXPECT_EQ(b->stats().failed_calls, 0u);
  EXPECT_EQ(b->stats().unsupported_calls, 4u);  // counted once each, not per tick
}

TEST(AmdgpuBackend, AFileThatFailsToReadIsAFailureThenRecovers) {
  TreeCopy t("rx7900");
  // A directory where the attribute was: open succeeds, pread fails (EISDIR), like EIO or EPERM
  // from an attribute while the GPU resets.
  const std::string power = t.hwmon() + "/power1_average";
  fs::remove(power);
  fs::create_directory(power);
  auto b = OpenOrDie(t.root());
  const std::vector<FieldIndex> f = {F(155), F(203)};
  Sample s;
  b->Read(0, f, s);
  EXPECT_FALSE(s.values[F(155)]);
  EXPECT_FALSE(s.unsupported[F(155)]);  // failed this tick, not unsupported
  EXPECT_EQ(s.values[F(203)], 23.0);    // the other fields are unaffected
  EXPECT_EQ(b->stats().failed_calls, 1u);
  fs::remove(power);
  std::ofstream(power) << "190000000\n";
  b->Read(0, f, s);  // reopened after the failure
  EXPECT_EQ(s.values[F(155)], 190.0);
  EXPECT_EQ(b->stats().failed_calls, 1u);
}

TEST(AmdgpuBackend, MalformedGpuMetricsLeaveEnergyAbsent) {
  TreeCopy t("rx7900");
  const std::string path = t.device() + "/gpu_metrics";
  const std::string good = t.Read(path);
  auto b = OpenOrDie(t.root());
  const std::vector<FieldIndex> f = {F(156), F(155)};
  Sample s;

  t.Write(path, good.substr(0, 100));  // truncated: a failure, tried again next tick
  b->Read(0, f, s);
  EXPECT_FALSE(s.values[F(156)]);
  EXPECT_FALSE(s.unsupported[F(156)]);
  EXPECT_EQ(s.values[F(155)], 187.0);
  EXPECT_EQ(b->stats().failed_calls, 1u);

  std::string wrong = good;
  wrong[0] = 96;  // structure_size says 96 for a 1.3 table
  t.Write(path, wrong);
  b->Read(0, f, s);
  EXPECT_FALSE(s.values[F(156)]);
  EXPECT_EQ(b->stats().failed_calls, 2u);

  t.Write(path, good);
  b->Read(0, f, s);
  EXPECT_TRUE(s.values[F(156)]);
  EXPECT_TRUE(b->device(0).energy_note().empty());

  std::string ones = good;
  for (int i = 0; i < 8; ++i) ones[24 + i] = '\xff';  // the firmware does not fill it
  t.Write(path, ones);
  b->Read(0, f, s);
  EXPECT_FALSE(s.values[F(156)]);
  EXPECT_TRUE(s.unsupported[F(156)]);
  EXPECT_NE(b->device(0).energy_note().find("no energy_accumulator"), std::string::npos);
}

TEST(AmdgpuBackend, UnknownGpuMetricsRevisionIsRecordedOnce) {
  TreeCopy t("rx7900");
  std::string apu(96, '\xff');
  apu[0] = 96;
  apu[1] = 0;
  apu[2] = 2;  // an APU's 2.x table
  apu[3] = 1;
  t.Write(t.device() + "/gpu_metrics", apu);
  auto b = OpenOrDie(t.root());
  const std::vector<FieldIndex> f = {F(156)};
  Sample s;
  for (int tick = 0; tick < 3; ++tick) {
    b->Read(0, f, s);
    EXPECT_FALSE(s.values[F(156)]);
    EXPECT_TRUE(s.unsupported[F(156)]);
  }
  EXPECT_EQ(b->device(0).energy_note(), "gpu_metrics revision 2.1 is not decoded by gpulse");
  EXPECT_EQ(b->stats().unsupported_calls, 1u);
  EXPECT_EQ(b->stats().failed_calls, 0u);
}

TEST(AmdgpuBackend, NoAmdgpuCardIsUnavailable) {
  TempTree empty;
  auto b = AmdgpuBackend::Open(empty.root(), "");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(b.error().message, "no amdgpu GPU under " + empty.root() + "/class/drm");

  // A card of another driver (and a connector entry) is not an amdgpu GPU.
  TreeCopy t("rx7900");
  const std::string dev = fs::read_symlink(t.device() + "/driver").string();
  fs::remove(t.device() + "/driver");
  fs::create_directories(t.root() + "/bus/pci/drivers/radeon");
  fs::create_directory_symlink(fs::path(dev).parent_path() / "radeon", t.device() + "/driver");
  fs::create_directory(t.root() + "/class/drm/card0-DP-1");
  auto other = AmdgpuBackend::Open(t.root(), "");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kUnavailable);
}

TEST(AmdgpuBackend, SimulatedRunsReadOnlyAnExplicitSysfsRoot) {
  BackendOptions options;
  options.simulate = "1xH200";
  auto none = OpenAmdgpuBackend(options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kUnavailable);
  options.sysfs_root = Fixture("mi300x");
  auto b = OpenAmdgpuBackend(options);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ProcessList p = (*b)->Processes(0);
  EXPECT_FALSE(p.processes);  // no procfs root given: no process list
  EXPECT_FALSE(p.error.empty());
}

// A /proc with DRM clients: fd links to /dev/dri nodes and their fdinfo.
class ProcTree {
 public:
  void Client(unsigned pid, unsigned fd, const std::string& fdinfo,
              const std::string& target = "/dev/dri/renderD128") const {
    const std::string dir = tree_.root() + "/" + std::to_string(pid);
    fs::create_directories(dir + "/fd");
    fs::create_symlink(target, dir + "/fd/" + std::to_string(fd));
    Fdinfo(pid, fd, fdinfo);
  }
  void Fdinfo(unsigned pid, unsigned fd, const std::string& fdinfo) const {
    tree_.Write(std::to_string(pid) + "/fdinfo/" + std::to_string(fd), fdinfo);
  }
  const std::string& root() const { return tree_.root(); }

 private:
  TempTree tree_;
};

std::string NewFormat(const std::string& pdev, unsigned client, const std::string& vram,
                      std::uint64_t gfx_ns, std::uint64_t compute_ns = 0) {
  std::string s =
      "pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t1058\ndrm-driver:\tamdgpu\n"
      "drm-client-id:\t" +
      std::to_string(client) + "\ndrm-pdev:\t" + pdev + "\npasid:\t32781\ndrm-memory-vram:\t" +
      vram +
      "\ndrm-memory-gtt:\t2048 KiB\n"
      "drm-memory-cpu:\t0 KiB\namd-memory-visible-vram:\t0 KiB\n";
  if (gfx_ns) s += "drm-engine-gfx:\t" + std::to_string(gfx_ns) + " ns\n";
  if (compute_ns) s += "drm-engine-compute:\t" + std::to_string(compute_ns) + " ns\n";
  return s;
}

const GpuProcess* FindPid(const ProcessList& l, unsigned pid) {
  if (!l.processes) return nullptr;
  for (const GpuProcess& p : *l.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(AmdgpuProcesses, ListsClientsOfTheDeviceDedupedWithLoadFromTheSecondScan) {
  ProcTree proc;
  const std::string pdev = "0000:03:00.0";
  proc.Client(100, 5, NewFormat(pdev, 7, "1048576 KiB", 1'000'000'000));
  proc.Client(100, 6, NewFormat(pdev, 7, "1048576 KiB", 1'000'000'000));  // dup of client 7
  proc.Client(101, 4, NewFormat(pdev, 7, "1048576 KiB", 1'000'000'000));  // shared after fork
  proc.Client(150, 3, NewFormat(pdev, 9, "512 MiB", 0, 200'000'000));
  // Kernels before 5.19.
  proc.Client(200, 3,
              "pos:\t0\npdev:\t0000:03:00.0\npasid:\t32770\nvram mem:\t2048 kB\n"
              "gtt mem:\t0 kB\ncpu mem:\t0 kB\ngfx0:\t12.50%\n");
  proc.Client(300, 3, NewFormat(pdev, 11, "4096", 5), "socket:[1234]");  // not a DRM node
  proc.Client(400, 3, NewFormat("0000:c1:00.0", 12, "4096", 5));         // another GPU
  proc.Client(500, 3, "drm-driver:\ti915\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t13\n");
  fs::create_directories(proc.root() + "/self");  // not a PID
  fs::create_directories(proc.root() + "/600");   // a process without fd/ (exited)

  AmdgpuProcessTracker tracker(proc.root());
  const std::int64_t t0 = 5'000'000'000;
  ProcessList l = tracker.Read(pdev, t0);
  ASSERT_TRUE(l.processes) << l.error;
  EXPECT_EQ(l.source, "fdinfo");
  ASSERT_EQ(l.processes->size(), 3u);  // 100, 150, 200
  const GpuProcess* p100 = FindPid(l, 100);
  ASSERT_NE(p100, nullptr);
  EXPECT_EQ(p100->used_memory_bytes, 1024u * 1024 * 1024);  // client 7 once
  EXPECT_FALSE(p100->sm_util);                              // one scan: no rate yet
  EXPECT_TRUE(p100->graphics);
  const GpuProcess* p150 = FindPid(l, 150);
  ASSERT_NE(p150, nullptr);
  EXPECT_EQ(p150->used_memory_bytes, 512u * 1024 * 1024);
  EXPECT_TRUE(p150->compute);
  const GpuProcess* p200 = FindPid(l, 200);
  ASSERT_NE(p200, nullptr);
  EXPECT_EQ(p200->used_memory_bytes, 2048u * 1024);
  EXPECT_EQ(p200->sm_util, 12.5);
  EXPECT_EQ(FindPid(l, 101), nullptr);

  // Half a second later: the cached scan answers.
  proc.Fdinfo(100, 5, NewFormat(pdev, 7, "1048576 KiB", 1'500'000'000));
  proc.Fdinfo(100, 6, NewFormat(pdev, 7, "1048576 KiB", 1'500'000'000));
  proc.Fdinfo(150, 3, NewFormat(pdev, 9, "512 MiB", 100'000'000, 300'000'000));
  l = tracker.Read(pdev, t0 + 500'000'000);
  EXPECT_FALSE(FindPid(l, 100)->sm_util);
  // A second after the first scan: gfx +0.5 s over 1 s is 50 %; gfx+compute +0.2 s is 20 %.
  l = tracker.Read(pdev, t0 + 1'000'000'000);
  ASSERT_TRUE(FindPid(l, 100)->sm_util);
  EXPECT_NEAR(*FindPid(l, 100)->sm_util, 50.0, 1e-9);
  EXPECT_NEAR(*FindPid(l, 150)->sm_util, 20.0, 1e-9);
  EXPECT_EQ(l.t_mono_ns, t0 + 1'000'000'000);

  // A counter that goes back stays at the larger value: no negative load.
  proc.Fdinfo(100, 5, NewFormat(pdev, 7, "1048576 KiB", 1'400'000'000));
  proc.Fdinfo(100, 6, NewFormat(pdev, 7, "1048576 KiB", 1'400'000'000));
  l = tracker.Read(pdev, t0 + 2'000'000'000);
  EXPECT_EQ(FindPid(l, 100)->sm_util, 0.0);

  // The other GPU's list.
  l = tracker.Read("0000:C1:00.0", t0 + 2'000'000'000);
  ASSERT_TRUE(l.processes);
  ASSERT_EQ(l.processes->size(), 1u);
  EXPECT_EQ(l.processes->front().pid, 400u);
  EXPECT_EQ(l.processes->front().used_memory_bytes, 4096u);
}

TEST(AmdgpuProcesses, BackendListsTheDevicesProcesses) {
  ProcTree proc;
  proc.Client(42, 7, NewFormat("0000:c1:00.0", 3, "8 MiB", 10));
  auto b = OpenOrDie(Fixture("mi300x"), proc.root());
  ASSERT_NE(b, nullptr);
  ProcessList l = b->Processes(0);
  ASSERT_TRUE(l.processes) << l.error;
  ASSERT_EQ(l.processes->size(), 1u);
  EXPECT_EQ(l.processes->front().pid, 42u);
  EXPECT_EQ(l.processes->front().used_memory_bytes, 8u << 20);
}

// Not an assertion: how long one device's full tick takes, printed for bench/RESULTS.md.
TEST(AmdgpuBackend, ReadTimeOfOneDevice) {
  for (const char* name : {"mi300x", "rx7900"}) {
    auto b = OpenOrDie(Fixture(name));
    ASSERT_NE(b, nullptr);
    std::vector<FieldIndex> readable;
    for (FieldIndex f : Every()) {
      if (SourceFor(FieldAt(f), SysfsVendor::kAmdgpu) != SysfsSource::kNotRead)
        readable.push_back(f);
    }
    Sample s;
    b->Read(0, readable, s);  // opens the files
    constexpr int kLoops = 2000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kLoops; ++i) b->Read(0, readable, s);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        kLoops;
    std::printf("amdgpu %s: %.2f us per Read of %zu fields\n", name, us, readable.size());
  }
}

}  // namespace
}  // namespace gpulse::gpu::amdgpu
