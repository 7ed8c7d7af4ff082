#include "faults/fault_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/clock.h"

namespace gpulse::faults {
namespace {

namespace fs = std::filesystem;

// Two GPUs (3b and 5d) and one NVML could not open (9a), with NVML events fed by hand.
class FakeBackend final : public gpu::Backend {
 public:
  FakeBackend() {
    info_.backend = "nvml";
    info_.devices.resize(2);
    info_.devices[0].pci_bus_id = "00000000:3B:00.0";
    info_.devices[1].index = 1;
    info_.devices[1].pci_bus_id = "00000000:5D:00.0";
    info_.skipped.push_back({2, "lost", true, "", "", "00000000:9A:00.0", "procfs", {}});
    events.resize(2);
  }
  const SystemInfo& info() const override { return info_; }
  void Read(std::size_t pos, std::span<const FieldIndex>, Sample& out) override {
    out.values.assign(AllFields().size(), std::nullopt);
    out.unsupported.assign(AllFields().size(), false);
    out.values[*IndexOf(310)] = ecc.first;
    out.values[*IndexOf(311)] = ecc.second;
    out.xid_events = std::exchange(events[pos], {});
    out.xid_counts.clear();
  }
  const gpu::ReadStats& stats() const override { return stats_; }
  Status ResetGpu(std::size_t) override { return Status::Ok(); }

  std::vector<std::vector<std::uint64_t>> events;
  std::pair<std::optional<double>, std::optional<double>> ecc;  // volatile SBE, DBE

 private:
  SystemInfo info_;
  gpu::ReadStats stats_;
};

class FaultBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpulse-faults-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    log_ = (dir_ / "kmsg").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A record `age_s` seconds before now on the kernel log's clock (negative: after now).
  void Line(double age_s, const std::string& message) {
    const std::int64_t usec = MonotonicNowNs() / 1000 - static_cast<std::int64_t>(age_s * 1e6);
    std::ofstream(log_, std::ios::app) << "4," << ++seq_ << "," << usec << ",-;" << message << "\n";
  }
  std::unique_ptr<FaultBackend> Open() {
    auto fake = std::make_unique<FakeBackend>();
    fake_ = fake.get();
    return std::make_unique<FaultBackend>(std::move(fake), FaultOptions{log_, "/proc"});
  }
  std::vector<FieldIndex> XidField() { return {*IndexOf(230)}; }
  static std::uint64_t CountOf(const Sample& s, std::uint64_t xid) {
    for (const XidCount& c : s.xid_counts) {
      if (c.xid == xid) return c.count;
    }
    return 0;
  }

  fs::path dir_;
  std::string log_;
  int seq_ = 0;
  FakeBackend* fake_ = nullptr;
};

TEST_F(FaultBackendTest, LinesBeforeStartAndAfterReachTheirGpuByPciAddressCountedOnce) {
  Line(3600, "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, DBE");
  Line(3500, "NVRM: Xid (PCI:0000:5d:00): 13, Graphics Exception");
  Line(3400, "NVRM: Xid (PCI:0000:ff:00): 13, a GPU that is not here");
  auto b = Open();
  auto fields = XidField();
  Sample s0, s1;
  b->Read(0, fields, s0);
  b->Read(1, fields, s1);
  EXPECT_EQ(CountOf(s0, 48), 1u);
  EXPECT_EQ(s0.xid_events, (std::vector<std::uint64_t>{48}));
  EXPECT_EQ(s0.values[fields[0]], 48.0);
  ASSERT_TRUE(s0.recommended_action);
  EXPECT_EQ(s0.recommended_action->action, "RESET_GPU");
  EXPECT_EQ(CountOf(s1, 13), 1u);
  EXPECT_EQ(s1.recommended_action->action, "RESTART_APP");
  EXPECT_EQ(b->kernel_log().unmatched, 1u);
  EXPECT_TRUE(b->kernel_log().readable);

  // The same Xid through NVML and the log after start: one event.
  fake_->events[0] = {94};
  Line(-1, "NVRM: Xid (PCI:0000:3b:00): 94, pid=1, name=x, Contained");
  b->Read(0, fields, s0);
  EXPECT_EQ(CountOf(s0, 94), 1u);
  EXPECT_EQ(s0.xid_events, (std::vector<std::uint64_t>{94}));
  b->Read(0, fields, s0);
  EXPECT_TRUE(s0.xid_events.empty());
  EXPECT_EQ(CountOf(s0, 94), 1u);
}

TEST_F(FaultBackendTest, AGpuNvmlCannotOpenStillGetsItsXids) {
  Line(10, "NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.");
  auto b = Open();
  Sample s;
  b->ReadSkipped(0, XidField(), s);
  EXPECT_EQ(CountOf(s, 79), 1u);
  ASSERT_TRUE(s.recommended_action);
  EXPECT_EQ(s.recommended_action->action, "RESTART_BM");
}

TEST_F(FaultBackendTest, AResetThroughTheLayerClearsAndANewLogIsAReboot) {
  Line(10, "NVRM: Xid (PCI:0000:3b:00): 95, Uncontained");
  Line(10, "NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.");
  auto b = Open();
  Sample s;
  b->Read(0, XidField(), s);
  EXPECT_EQ(s.recommended_action->action, "RESET_GPU");
  ASSERT_TRUE(b->ResetGpu(0).ok());
  b->Read(0, XidField(), s);
  EXPECT_EQ(s.recommended_action->action, "NONE");
  EXPECT_EQ(CountOf(s, 95), 1u);
  b->Read(1, XidField(), s);
  EXPECT_EQ(s.recommended_action->action, "RESTART_BM");
  std::ofstream(log_, std::ios::trunc) << "6,1,5,-;Linux version 6.1\n";
  b->Read(1, XidField(), s);
  EXPECT_EQ(s.recommended_action->action, "NONE");
  EXPECT_EQ(CountOf(s, 79), 1u);
  EXPECT_EQ(b->kernel_log().restarts, 1u);
}

TEST_F(FaultBackendTest, SxidsAreCountedPerSwitchOncePerError) {
  Line(5, "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32");
  Line(5,
       "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Severity 0 Engine instance 32 Sub-engine "
       "instance 00");
  Line(5, "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Data {0x00000000, 0x00000000}");
  Line(5, "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 33");
  auto b = Open();
  Sample s;
  b->Read(0, XidField(), s);
  auto sx = b->sxids();
  ASSERT_EQ(sx.size(), 1u);
  EXPECT_EQ(sx[0].nvswitch, 2u);
  EXPECT_EQ(sx[0].pci_bus_id, "0000:05:00.0");
  EXPECT_EQ(sx[0].count, 2u);
}

TEST_F(FaultBackendTest, RecordsNotFromTheKernelAreNotXids) {
  // A process writing to /dev/kmsg gets the user facility (1): PRIORITY 12, not 4.
  std::ofstream(log_, std::ios::app) << "12,1,5,-;NVRM: Xid (PCI:0000:3b:00): 79, forged\n"
                                     << "4,2,6,-;usb: NVRM: Xid (PCI:0000:3b:00): 79, inside\n";
  auto b = Open();
  Sample s;
  b->Read(0, XidField(), s);
  EXPECT_TRUE(s.xid_counts.empty());
  EXPECT_EQ(s.recommended_action->action, "NONE");
  EXPECT_EQ(b->kernel_log().foreign, 1u);
}

TEST_F(FaultBackendTest, OneEccCounterMissingFromARead_IsNotAReset) {
  Line(10, "NVRM: Xid (PCI:0000:3b:00): 95, Uncontained");
  auto b = Open();
  auto sbe = *IndexOf(310), dbe = *IndexOf(311);
  std::vector<FieldIndex> both = {*IndexOf(230), sbe, dbe}, dbe_only = {*IndexOf(230), dbe};
  Sample s;
  // The fake reads nothing: put the counters in by hand after each read, as a backend would.
  auto read = [&](std::vector<FieldIndex> fields, std::optional<double> sv,
                  std::optional<double> dv) {
    fake_->ecc = {sv, dv};
    b->Read(0, fields, s);
    return s.recommended_action->action;
  };
  EXPECT_EQ(read(both, 3, 0), "RESET_GPU");
  EXPECT_EQ(read(dbe_only, std::nullopt, 0), "RESET_GPU") << "SBE not read: not a drop to 0";
  EXPECT_EQ(read(both, 3, 0), "RESET_GPU");
  EXPECT_EQ(read(both, 0, 0), "NONE") << "the volatile SBE count went back: a reset";
}

TEST_F(FaultBackendTest, AnUnreadableLogIsStatedNotFatal) {
  auto fake = std::make_unique<FakeBackend>();
  FaultBackend b(std::move(fake), FaultOptions{"/nonexistent/kmsg", "/proc"});
  EXPECT_FALSE(b.kernel_log().readable);
  EXPECT_NE(b.kernel_log().error.find("/nonexistent/kmsg"), std::string::npos);
  Sample s;
  b.Read(0, std::vector<FieldIndex>{*IndexOf(230)}, s);
  EXPECT_EQ(s.recommended_action->action, "NONE");
}

}  // namespace
}  // namespace gpulse::faults
