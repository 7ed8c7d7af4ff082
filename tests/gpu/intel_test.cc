// The Intel backend (i915 and xe) over the fixture trees in tests/testdata/sysfs, copied into a
// temporary directory so a test can change a file between two reads:
//   intel-i915-a770/  one Arc A770 (DG2, 0x56a0) at 0000:03:00.0, card0, driver i915: hwmon "i915"
//                     (energy1_input, power1_max, power1_rated_max, power1_crit, in0_input; no
//                     temperature), a per-GT hwmon "i915_gt0" that must be skipped,
//                     card0/gt_{act,cur,max,min,RP0,RP1,RPn,boost}_freq_mhz, a DP connector
//                     entry (card0-DP-1) and renderD128; no VRAM file.
//   intel-xe-b580/    a BMC's ast display at card0 (not Intel: skipped) and an Arc B580
//                     (Battlemage, 0xe20b) at 0000:04:00.0, card1, driver xe: hwmon "xe" with
//                     labelled card/pkg energy and power channels, temp2 "pkg", temp3 "vram",
//                     in1, fan1; tile0/physical_vram_size_bytes; tile0/gt{0,1}/freq0/*.
// Both follow the kernel's Documentation/ABI/testing/sysfs-driver-intel-{i915,xe}-hwmon and the
// xe "GT Frequency Management" kernel-doc. The procfs trees with DRM clients' fdinfo
// (Documentation/gpu/drm-usage-stats.rst) are built by each test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/fields.h"
#include "gpu/intel/intel_backend.h"

namespace gpulse::gpu::intel {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kSecond = 1'000'000'000;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpulse-intel-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) root_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

void WriteFile(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

// A host: a copy of one fixture sysfs tree, a procfs tree, and a clock the test moves.
class Host {
 public:
  explicit Host(const std::string& fixture) {
    sysfs_ = fs::path(dir_.root()) / "sys";
    proc_ = fs::path(dir_.root()) / "proc";
    fs::create_directories(proc_);
    if (!fixture.empty()) {
      fs::copy(fs::path(GPULSE_SOURCE_DIR) / "tests/testdata/sysfs" / fixture, sysfs_,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    } else {
      fs::create_directories(sysfs_);
    }
  }

  Result<std::unique_ptr<Backend>> Open(bool with_proc = true) {
    BackendOptions options;
    options.sysfs_root = sysfs_.string();
    if (with_proc) options.procfs_root = proc_.string();
    IntelClocks clocks{[this] { return now_ns_; },
                       [this] { return 1'700'000'000 * kSecond + now_ns_; }};
    return OpenIntelBackend(options, clocks);
  }

  // A file of the PCI device (relative to devices/pci0000:00/<slot>/).
  void SetDeviceFile(const std::string& slot, const std::string& rel, const std::string& value) {
    WriteFile(sysfs_ / "devices/pci0000:00" / slot / rel, value + "\n");
  }
  void RemoveDeviceFile(const std::string& slot, const std::string& rel) {
    fs::remove(sysfs_ / "devices/pci0000:00" / slot / rel);
  }

  // /proc/PID/fd/FD → target, and its fdinfo.
  void Fd(unsigned pid, unsigned fd, const std::string& target, const std::string& fdinfo) {
    const fs::path p = proc_ / std::to_string(pid);
    fs::create_directories(p / "fd");
    std::error_code ec;
    fs::remove(p / "fd" / std::to_string(fd), ec);
    fs::create_symlink(target, p / "fd" / std::to_string(fd));
    WriteFile(p / "fdinfo" / std::to_string(fd), fdinfo);
  }
  void DrmFd(unsigned pid, unsigned fd, const std::string& fdinfo) {
    Fd(pid, fd, "/dev/dri/renderD128", fdinfo);
  }

  void Advance(std::int64_t ns) { now_ns_ += ns; }
  const fs::path& sysfs() const { return sysfs_; }

 private:
  TempDir dir_;
  fs::path sysfs_, proc_;
  std::int64_t now_ns_ = 100 * kSecond;
};

FieldIndex Field(FieldId id) { return *IndexOf(id); }

constexpr FieldId kSmClock = 100, kMemClock = 101, kMemTemp = 140, kGpuTemp = 150, kPower = 155,
                  kEnergy = 156, kPowerInstant = 157, kPowerLimit = 164, kFan = 191, kGpuUtil = 203,
                  kMemUtil = 204, kFbTotal = 250, kFbFree = 251, kFbUsed = 252;

std::vector<FieldIndex> Fields(std::initializer_list<FieldId> ids) {
  std::vector<FieldIndex> out;
  for (FieldId id : ids) out.push_back(Field(id));
  return out;
}

std::optional<double> Value(const Sample& s, FieldId id) { return s.values[Field(id)]; }
bool Unsupported(const Sample& s, FieldId id) { return s.unsupported[Field(id)]; }

std::string I915Client(unsigned client_id, std::uint64_t render_ns, std::uint64_t video_ns = 0,
                       const std::string& pdev = "0000:03:00.0") {
  return "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1045\n"
         "drm-driver:\ti915\ndrm-client-id:\t" +
         std::to_string(client_id) + "\ndrm-pdev:\t" + pdev +
         "\ndrm-total-system0:\t4 MiB\ndrm-resident-system0:\t4 MiB\n"
         "drm-total-local0:\t512 MiB\ndrm-resident-local0:\t256 MiB\n"
         "drm-engine-render:\t" +
         std::to_string(render_ns) + " ns\ndrm-engine-copy:\t0 ns\ndrm-engine-video:\t" +
         std::to_string(video_ns) +
         " ns\ndrm-engine-capacity-video:\t2\ndrm-engine-video-enhance:\t0 ns\n";
}

std::string XeClient(unsigned client_id, std::uint64_t rcs, std::uint64_t ccs,
                     std::uint64_t total) {
  const std::string t = std::to_string(total);
  return "drm-driver:\txe\ndrm-client-id:\t" + std::to_string(client_id) +
         "\ndrm-pdev:\t0000:04:00.0\n"
         "drm-total-system:\t0\ndrm-total-gtt:\t8 KiB\ndrm-total-vram0:\t1024 KiB\n"
         "drm-resident-vram0:\t1024 KiB\n"
         "drm-cycles-rcs:\t" +
         std::to_string(rcs) + "\ndrm-total-cycles-rcs:\t" + t +
         "\ndrm-cycles-bcs:\t0\ndrm-total-cycles-bcs:\t" + t + "\ndrm-cycles-ccs:\t" +
         std::to_string(ccs) + "\ndrm-total-cycles-ccs:\t" + t + "\ndrm-engine-capacity-ccs:\t4\n";
}

// --- Opening: DeviceInfo from the fixtures -------------------------------------------------------

TEST(IntelBackendOpen, I915ArcA770) {
  Host host("intel-i915-a770");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  const SystemInfo& info = (*backend)->info();
  EXPECT_EQ(info.backend, "intel");
  ASSERT_EQ(info.devices.size(), 1u);
  const DeviceInfo& d = info.devices[0];
  EXPECT_EQ(d.index, 0u);
  EXPECT_EQ(d.vendor, "intel");
  EXPECT_EQ(d.backend, "i915");
  EXPECT_EQ(d.name, "Intel Arc A770 Graphics");
  EXPECT_EQ(d.uuid, "");
  EXPECT_EQ(d.pci_bus_id, "00000000:03:00.0");
  EXPECT_FALSE(d.memory_total_bytes.has_value());  // i915 has no sysfs VRAM file
  ASSERT_TRUE(d.power_limit_watts.has_value());
  EXPECT_DOUBLE_EQ(*d.power_limit_watts, 190.0);  // power1_max 190000000 µW
  EXPECT_EQ(d.max_sm_clock_mhz, 2400u);           // gt_RP0_freq_mhz
}

TEST(IntelBackendOpen, XeArcB580SkipsOtherVendors) {
  Host host("intel-xe-b580");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  ASSERT_EQ((*backend)->info().devices.size(), 1u);  // card0 is an ast BMC display
  const DeviceInfo& d = (*backend)->info().devices[0];
  EXPECT_EQ(d.index, 0u);  // numbered from 0 though it is card1 (issue 40)
  EXPECT_EQ(d.backend_index, 1u);  // the DRM card number
  EXPECT_EQ(d.vendor, "intel");
  EXPECT_EQ(d.backend, "xe");
  EXPECT_EQ(d.name, "Intel Arc B580 Graphics");
  EXPECT_EQ(d.pci_bus_id, "00000000:04:00.0");
  EXPECT_EQ(d.memory_total_bytes, 12884901888u);
  EXPECT_DOUBLE_EQ(d.power_limit_watts.value_or(0), 190.0);
  EXPECT_EQ(d.max_sm_clock_mhz, 2850u);  // freq0/rp0_freq
}

TEST(IntelBackendOpen, OneBackendServesBothDrivers) {
  // The B580 host with the A770 added as card0 in place of the BMC display.
  Host host("intel-xe-b580");
  const fs::path a770 = fs::path(GPULSE_SOURCE_DIR) / "tests/testdata/sysfs/intel-i915-a770";
  fs::copy(a770 / "devices/pci0000:00/0000:03:00.0",
           host.sysfs() / "devices/pci0000:00/0000:03:00.0",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove(host.sysfs() / "class/drm/card0");
  fs::copy_symlink(a770 / "class/drm/card0", host.sysfs() / "class/drm/card0");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  const SystemInfo& info = (*backend)->info();
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_EQ(info.devices[0].index, 0u);
  EXPECT_EQ(info.devices[0].backend, "i915");
  EXPECT_EQ(info.devices[1].index, 1u);
  EXPECT_EQ(info.devices[1].backend, "xe");
  Sample s;
  (*backend)->Read(1, Fields({kSmClock, kFbTotal}), s);
  EXPECT_EQ(Value(s, kSmClock), 2850.0);
  EXPECT_EQ(Value(s, kFbTotal), 12288.0);
  (*backend)->Read(0, Fields({kSmClock, kFbTotal}), s);
  EXPECT_EQ(Value(s, kSmClock), 2100.0);
  EXPECT_TRUE(Unsupported(s, kFbTotal));
}

TEST(IntelBackendOpen, UnknownDeviceIdIsNamedByItsId) {
  Host host("intel-i915-a770");
  host.SetDeviceFile("0000:03:00.0", "device", "0x1234");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ((*backend)->info().devices[0].name, "Intel GPU 0x1234");
}

TEST(IntelBackendOpen, NoIntelGpuIsUnavailable) {
  Host host("");
  auto backend = host.Open();
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("no i915 or xe GPU under"), std::string::npos);
}

TEST(IntelBackendOpen, SimulatedReadsOnlyAnExplicitSysfsRoot) {
  BackendOptions options;
  options.simulate = "1xH200";
  auto backend = OpenIntelBackend(options);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
}

TEST(IntelBackendOpen, DisabledPowerLimitIsAbsentNotZero) {
  Host host("intel-i915-a770");
  host.SetDeviceFile("0000:03:00.0", "hwmon/hwmon3/power1_max", "0");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  EXPECT_FALSE((*backend)->info().devices[0].power_limit_watts.has_value());
  Sample s;
  (*backend)->Read(0, Fields({kPowerLimit}), s);
  EXPECT_FALSE(Value(s, kPowerLimit).has_value());
}

// --- Reading sysfs -------------------------------------------------------------------------------

TEST(IntelBackendRead, I915ReadingsAndWhatI915DoesNotExpose) {
  Host host("intel-i915-a770");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  const auto fields =
      Fields({kSmClock, kMemClock, kMemTemp, kGpuTemp, kPower, kEnergy, kPowerInstant, kPowerLimit,
              kFan, kMemUtil, kFbTotal, kFbFree, kFbUsed});
  Sample s;
  b.Read(0, fields, s);
  EXPECT_EQ(s.values.size(), AllFields().size());
  EXPECT_EQ(s.t_mono_ns, 100 * kSecond);
  EXPECT_EQ(Value(s, kSmClock), 2100.0);
  EXPECT_EQ(Value(s, kEnergy), 123456789.0);  // 123456789000 µJ
  EXPECT_EQ(Value(s, kPowerLimit), 190.0);
  // The first read has no interval: power is absent, and not unsupported.
  EXPECT_FALSE(Value(s, kPower).has_value());
  EXPECT_FALSE(Unsupported(s, kPower));
  // Not exposed by i915: unsupported, never 0.
  for (FieldId id :
       {kMemClock, kMemTemp, kGpuTemp, kPowerInstant, kFan, kMemUtil, kFbTotal, kFbFree, kFbUsed}) {
    EXPECT_FALSE(Value(s, id).has_value()) << id;
    EXPECT_TRUE(Unsupported(s, id)) << id;
  }
  EXPECT_EQ(b.stats().failed_calls, 0u);

  // 150 J more over 2 s: 75 W.
  host.SetDeviceFile("0000:03:00.0", "hwmon/hwmon3/energy1_input", "123606789000");
  host.Advance(2 * kSecond);
  b.Read(0, fields, s);
  EXPECT_EQ(s.t_mono_ns, 102 * kSecond);
  ASSERT_TRUE(Value(s, kPower).has_value());
  EXPECT_DOUBLE_EQ(*Value(s, kPower), 75.0);
  EXPECT_EQ(Value(s, kEnergy), 123606789.0);
}

TEST(IntelBackendRead, XeReadingsFromTheCardChannel) {
  Host host("intel-xe-b580");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  const auto fields =
      Fields({kSmClock, kMemTemp, kGpuTemp, kPower, kEnergy, kPowerLimit, kFbTotal, kFbUsed, kFan});
  Sample s;
  b.Read(0, fields, s);
  EXPECT_EQ(Value(s, kSmClock), 2850.0);     // tile0/gt0/freq0/act_freq
  EXPECT_EQ(Value(s, kGpuTemp), 48.0);       // temp2 "pkg"
  EXPECT_EQ(Value(s, kMemTemp), 56.0);       // temp3 "vram"
  EXPECT_EQ(Value(s, kFbTotal), 12288.0);    // 12 GiB in MiB
  EXPECT_EQ(Value(s, kEnergy), 45678912.0);  // energy1 "card", not energy2 "pkg"
  EXPECT_EQ(Value(s, kPowerLimit), 190.0);   // power1_max (card)
  EXPECT_TRUE(Unsupported(s, kFbUsed));
  EXPECT_TRUE(Unsupported(s, kFan));  // xe gives RPM, not the percent the field is

  // The card channel moves by 30 J in 0.5 s (60 W); the package channel's change is not read.
  host.SetDeviceFile("0000:04:00.0", "hwmon/hwmon2/energy1_input", "45708912000");
  host.SetDeviceFile("0000:04:00.0", "hwmon/hwmon2/energy2_input", "61234567000");
  host.Advance(kSecond / 2);
  b.Read(0, fields, s);
  EXPECT_DOUBLE_EQ(Value(s, kPower).value_or(-1), 60.0);
}

TEST(IntelBackendRead, EnergyCounterGoingBackwardsMakesPowerAbsent) {
  Host host("intel-i915-a770");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  const auto fields = Fields({kPower});
  Sample s;
  b.Read(0, fields, s);
  host.SetDeviceFile("0000:03:00.0", "hwmon/hwmon3/energy1_input", "1000000");  // driver reload
  host.Advance(kSecond);
  b.Read(0, fields, s);
  EXPECT_FALSE(Value(s, kPower).has_value());
  EXPECT_FALSE(Unsupported(s, kPower));
  host.SetDeviceFile("0000:03:00.0", "hwmon/hwmon3/energy1_input", "21000000");  // +20 J
  host.Advance(kSecond);
  b.Read(0, fields, s);
  EXPECT_DOUBLE_EQ(Value(s, kPower).value_or(-1), 20.0);
}

TEST(IntelBackendRead, MissingFileIsUnsupportedAndBadTextIsAFailedCall) {
  Host host("intel-i915-a770");
  host.RemoveDeviceFile("0000:03:00.0", "hwmon/hwmon3/energy1_input");
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  Sample s;
  b.Read(0, Fields({kPower, kEnergy, kSmClock}), s);
  EXPECT_TRUE(Unsupported(s, kPower));
  EXPECT_TRUE(Unsupported(s, kEnergy));
  EXPECT_EQ(Value(s, kSmClock), 2100.0);

  host.SetDeviceFile("0000:03:00.0", "drm/card0/gt_act_freq_mhz", "garbage");
  b.Read(0, Fields({kSmClock}), s);
  EXPECT_FALSE(Value(s, kSmClock).has_value());
  EXPECT_FALSE(Unsupported(s, kSmClock));
  EXPECT_EQ(b.stats().failed_calls, 1u);

  host.SetDeviceFile("0000:03:00.0", "drm/card0/gt_act_freq_mhz", "1900");  // recovers
  b.Read(0, Fields({kSmClock}), s);
  EXPECT_EQ(Value(s, kSmClock), 1900.0);
}

// --- Utilization and processes from fdinfo -------------------------------------------------------

TEST(IntelBackendUtilization, I915BusiestEngineClassAcrossClients) {
  Host host("intel-i915-a770");
  host.DrmFd(100, 5, I915Client(7, 1'000'000'000));
  host.DrmFd(100, 6, I915Client(7, 1'000'000'000));  // a dup() of the same client: counted once
  host.DrmFd(101, 4, I915Client(8, 0, 4'000'000'000));
  host.Fd(102, 3, "/dev/null", I915Client(9, 0));  // not a DRM file: ignored
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  const auto fields = Fields({kGpuUtil});
  Sample s;
  b.Read(0, fields, s);
  EXPECT_FALSE(Value(s, kGpuUtil).has_value());  // one scan: no interval yet
  EXPECT_FALSE(Unsupported(s, kGpuUtil));

  // Over 1 s: render +500 ms (client 7) + 300 ms (client 9 is not a DRM fd, so not counted);
  // video +1 s of capacity 2 = 50 %.
  host.DrmFd(100, 5, I915Client(7, 1'500'000'000));
  host.DrmFd(100, 6, I915Client(7, 1'500'000'000));
  host.DrmFd(101, 4, I915Client(8, 0, 5'000'000'000));
  host.Fd(102, 3, "/dev/null", I915Client(9, 900'000'000));
  host.Advance(kSecond);
  b.Read(0, fields, s);
  EXPECT_EQ(Value(s, kGpuUtil), 50.0);

  // Another client makes render 50 % + 40 % = 90 %, the busiest class.
  host.DrmFd(103, 7, I915Client(10, 0));
  host.Advance(kSecond);
  b.Read(0, fields, s);  // client 10 appears: no interval for it yet, the others idle
  EXPECT_EQ(Value(s, kGpuUtil), 0.0);
  host.DrmFd(100, 5, I915Client(7, 2'000'000'000));
  host.DrmFd(103, 7, I915Client(10, 400'000'000));
  host.Advance(kSecond);
  b.Read(0, fields, s);
  EXPECT_EQ(Value(s, kGpuUtil), 90.0);

  ProcessList list = b.Processes(0);
  ASSERT_TRUE(list.processes.has_value()) << list.error;
  ASSERT_EQ(list.processes->size(), 3u);
  const GpuProcess& p = (*list.processes)[0];
  EXPECT_EQ(p.pid, 100u);
  EXPECT_EQ(p.used_memory_bytes, 256u << 20);  // drm-resident-local0, once for the dup'd fd
  EXPECT_DOUBLE_EQ(p.sm_util.value_or(-1), 50.0);
  EXPECT_TRUE(p.graphics);
  EXPECT_EQ((*list.processes)[1].pid, 101u);
  EXPECT_DOUBLE_EQ((*list.processes)[1].sm_util.value_or(-1), 0.0);
  EXPECT_DOUBLE_EQ((*list.processes)[2].sm_util.value_or(-1), 40.0);
}

TEST(IntelBackendUtilization, CappedAt100AndCachedForASecond) {
  Host host("intel-i915-a770");
  for (unsigned i = 0; i < 3; ++i) host.DrmFd(200 + i, 3, I915Client(20 + i, 0));
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  Sample s;
  b.Read(0, Fields({kGpuUtil}), s);
  for (unsigned i = 0; i < 3; ++i) host.DrmFd(200 + i, 3, I915Client(20 + i, 600'000'000));
  host.Advance(kSecond);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 100.0);  // 180 % of one render engine, capped
  // Half a second later nothing is rescanned: the same answer, whatever fdinfo says now.
  for (unsigned i = 0; i < 3; ++i) host.DrmFd(200 + i, 3, I915Client(20 + i, 600'000'000));
  host.Advance(kSecond / 2);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 100.0);
  host.Advance(kSecond / 2);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 0.0);
}

TEST(IntelBackendUtilization, CounterGoingBackwardsKeepsTheLargerValue) {
  Host host("intel-i915-a770");
  host.DrmFd(100, 5, I915Client(7, 5'000'000'000));
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  Sample s;
  b.Read(0, Fields({kGpuUtil}), s);
  host.DrmFd(100, 5, I915Client(7, 4'000'000'000));
  host.Advance(kSecond);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 0.0);
  host.DrmFd(100, 5, I915Client(7, 5'250'000'000));  // 250 ms past the larger value
  host.Advance(kSecond);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 25.0);
}

TEST(IntelBackendUtilization, XeCyclesOverTotalCyclesPerCapacity) {
  Host host("intel-xe-b580");
  host.DrmFd(300, 9, XeClient(3, 1000, 0, 100000));
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  Sample s;
  b.Read(0, Fields({kGpuUtil}), s);
  // rcs: +300 of +1000 cycles = 30 %; ccs: +2000 cycles over 4 engines of +1000 = 50 %.
  host.DrmFd(300, 9, XeClient(3, 1300, 2000, 101000));
  host.Advance(kSecond);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 50.0);
  ProcessList list = b.Processes(0);
  ASSERT_TRUE(list.processes.has_value());
  ASSERT_EQ(list.processes->size(), 1u);
  EXPECT_EQ((*list.processes)[0].used_memory_bytes, 1024u * 1024u);  // drm-resident-vram0
  EXPECT_TRUE((*list.processes)[0].compute);
}

TEST(IntelBackendUtilization, ClientsOfAnotherDeviceAreNotCounted) {
  Host host("intel-i915-a770");
  host.DrmFd(100, 5, I915Client(7, 0, 0, "0000:00:02.0"));
  auto backend = host.Open();
  ASSERT_TRUE(backend.ok());
  Backend& b = **backend;
  Sample s;
  b.Read(0, Fields({kGpuUtil}), s);
  host.DrmFd(100, 5, I915Client(7, 900'000'000, 0, "0000:00:02.0"));
  host.Advance(kSecond);
  b.Read(0, Fields({kGpuUtil}), s);
  EXPECT_EQ(Value(s, kGpuUtil), 0.0);
  ProcessList list = b.Processes(0);
  ASSERT_TRUE(list.processes.has_value());
  EXPECT_TRUE(list.processes->empty());
}

TEST(IntelBackendUtilization, WithoutProcfsUtilizationIsUnsupported) {
  Host host("intel-i915-a770");
  auto backend = host.Open(/*with_proc=*/false);
  ASSERT_TRUE(backend.ok());
  // Not simulated and no procfs root given: /proc is used. Build the simulated case instead.
  BackendOptions options;
  options.simulate = "1xH200";
  options.sysfs_root = host.sysfs().string();
  auto simulated = OpenIntelBackend(options);
  ASSERT_TRUE(simulated.ok()) << simulated.error().message;
  Sample s;
  (*simulated)->Read(0, Fields({kGpuUtil}), s);
  EXPECT_TRUE(Unsupported(s, kGpuUtil));
  ProcessList list = (*simulated)->Processes(0);
  EXPECT_FALSE(list.processes.has_value());
  EXPECT_FALSE(list.error.empty());
}

TEST(IntelBackendUtilization, UnreadableProcfsIsAbsentAndCounted) {
  Host host("intel-i915-a770");
  BackendOptions options;
  options.sysfs_root = host.sysfs().string();
  options.procfs_root = host.sysfs().string() + "/no-such-proc";
  auto backend = OpenIntelBackend(options);
  ASSERT_TRUE(backend.ok());
  Sample s;
  (*backend)->Read(0, Fields({kGpuUtil}), s);
  EXPECT_FALSE(Value(s, kGpuUtil).has_value());
  EXPECT_FALSE(Unsupported(s, kGpuUtil));
  EXPECT_EQ((*backend)->stats().failed_calls, 1u);
}

}  // namespace
}  // namespace gpulse::gpu::intel
