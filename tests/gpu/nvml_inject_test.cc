// Backend::InjectFault: through the NVML backend over the simulator loaded as --simulate loads it
// (the real dlopen path), an injected XID shows in the next read of the XID field and a bad or
// late fault comes back as an error value with the simulator's reason; a backend over a real
// driver, or one that does not override it, answers kUnavailable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/fields.h"
#include "gpu/nvml/nvml_backend.h"
#include "unit/scenario_backend.h"

namespace gpulse::nvml {
namespace {

// Two H100s; nothing happens in the scenario itself.
constexpr const char* kScenario = R"(name: inject
device_defaults: {wobble: false}
devices:
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700}
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700}
)";

FieldIndex F(FieldId id) { return *IndexOf(id); }

ErrorCode Code(const Status& st) { return st.ok() ? ErrorCode::kInternal : st.error().code; }

class NvmlInjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scenario_ = std::make_unique<testing::ScenarioDir>(
        "gpulse-inject", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
        kScenario);
    auto opened = scenario_->Open();
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    backend_ = std::move(opened).value();
    ASSERT_TRUE(backend_->info().simulated);
    // Simulated time 0, as the agent's simulated clock starts: earlier than the real-clock
    // moment the backend registered its event set, which must not matter for injected XIDs.
    ASSERT_TRUE(backend_->SetSimulatedClock(0));
  }
  void TearDown() override { backend_.reset(); }
  // The XID field, and power (a device call, which finds a lost GPU).
  Sample ReadXid(std::size_t pos) {
    const FieldIndex fields[] = {F(155), F(230)};
    Sample s;
    backend_->Read(pos, fields, s);
    return s;
  }

  std::unique_ptr<testing::ScenarioDir> scenario_;  // outlives backend_
  std::unique_ptr<gpu::Backend> backend_;
};

TEST_F(NvmlInjectTest, AnInjectedXidIsInTheNextRead) {
  EXPECT_TRUE(ReadXid(1).xid_events.empty());
  const Status st = backend_->InjectFault(1, "{kind: xid, xid: 79}");
  ASSERT_TRUE(st.ok()) << st.error().message;
  Sample s = ReadXid(1);
  EXPECT_EQ(s.xid_events, std::vector<std::uint64_t>{79});
  EXPECT_EQ(s.values[F(230)], 79.0);
  EXPECT_TRUE(ReadXid(1).xid_events.empty()) << "reported once";
  EXPECT_TRUE(ReadXid(0).xid_events.empty()) << "GPU 0 raised nothing";
}

TEST_F(NvmlInjectTest, AnInjectedXidFollowsTheSimulatedClock) {
  ASSERT_TRUE(backend_->SetSimulatedClock(30));
  ASSERT_TRUE(backend_->InjectFault(0, "{kind: xid, xid: 48}").ok());
  EXPECT_EQ(ReadXid(0).xid_events, std::vector<std::uint64_t>{48});
}

TEST_F(NvmlInjectTest, ABadFaultIsInvalidArgumentWithTheReason) {
  const Status st = backend_->InjectFault(0, "{kind: xid, xid: 79, device: 1}");
  ASSERT_EQ(Code(st), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("simulated GPU 0"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("device: not allowed in an injected fault"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(Code(backend_->InjectFault(0, std::string_view("{kind: gpu_lost}\0x", 18))),
            ErrorCode::kInvalidArgument);
}

TEST_F(NvmlInjectTest, AnInjectedLossLosesTheGpuAndLaterFaultsAreNotFound) {
  ASSERT_TRUE(backend_->InjectFault(0, "{kind: gpu_lost}").ok());
  EXPECT_EQ(ReadXid(0).state, DeviceState::kLost);
  EXPECT_EQ(ReadXid(1).state, DeviceState::kOk);
  const Status st = backend_->InjectFault(0, "{kind: xid, xid: 79}");
  ASSERT_EQ(Code(st), ErrorCode::kNotFound);
  EXPECT_NE(st.error().message.find("is lost"), std::string::npos) << st.error().message;
}

// A backend that does not override InjectFault: the default answer.
class PlainBackend final : public gpu::Backend {
 public:
  const SystemInfo& info() const override { return info_; }
  void Read(std::size_t, std::span<const FieldIndex>, Sample&) override {}
  const gpu::ReadStats& stats() const override { return stats_; }

 private:
  SystemInfo info_;
  gpu::ReadStats stats_;
};

TEST(BackendInjectFault, TheDefaultIsUnavailable) {
  PlainBackend b;
  const Status st = b.InjectFault(0, "{kind: xid, xid: 79}");
  ASSERT_EQ(Code(st), ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message.find("--simulate"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace gpulse::nvml
