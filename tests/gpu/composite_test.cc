// The registry with several backends open at once (src/gpu/registry.h, composite_backend.h):
// devices merged in PCI bus order, calls routed to their own backend, and a backend that hangs,
// throws or fails to open isolated while the others keep reading.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "gpu/composite_backend.h"
#include "gpu/registry.h"

namespace gpulse::gpu {
namespace {

const FieldIndex kPower = *IndexOf(155);

// A backend whose devices read power = 100 * (backend number) + position; it can be told to
// block in Read until released, or to throw.
class FakeBackend : public Backend {
 public:
  FakeBackend(std::string name, std::vector<std::string> pci_ids, double base)
      : base_(base) {
    info_.backend = name;
    for (std::size_t i = 0; i < pci_ids.size(); ++i) {
      DeviceInfo d;
      d.index = static_cast<unsigned>(i);
      d.backend = name;
      d.vendor = name == "nvml" ? "nvidia" : "amd";
      d.pci_bus_id = pci_ids[i];
      info_.devices.push_back(d);
    }
  }
  const SystemInfo& info() const override { return info_; }
  const ReadStats& stats() const override { return stats_; }
  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override {
    ++reads;
    if (throw_on_read) throw std::runtime_error("sysfs went away");
    if (block) {
      std::unique_lock lock(mu);
      cv.wait(lock, [this] { return !block; });
    }
    out.values.assign(AllFields().size(), std::nullopt);
    out.unsupported.assign(AllFields().size(), false);
    for (FieldIndex f : fields) {
      if (f == kPower) out.values[f] = base_ + static_cast<double>(pos);
    }
  }
  Status InjectFault(std::size_t pos, std::string_view fault) override {
    injected.push_back(std::to_string(pos) + " " + std::string(fault));
    return Status::Ok();
  }
  void Release() {
    {
      std::lock_guard lock(mu);
      block = false;
    }
    cv.notify_all();
  }

  std::atomic<int> reads{0};
  std::vector<std::string> injected;  // "pos fault" per InjectFault
  std::atomic<bool> throw_on_read{false};
  bool block = false;  // guarded by mu
  std::mutex mu;
  std::condition_variable cv;

 private:
  SystemInfo info_;
  ReadStats stats_;
  double base_;
};

struct Fleet {
  FakeBackend* nvml;
  FakeBackend* amd;
  std::unique_ptr<Backend> backend;
};

// NVIDIA at buses 0x17 and 0xC1, AMD at 0x03 and 0x85: merged order 03(amd) 17(nv) 85(amd) C1(nv).
// Deadlines are generous: a read that is merely slow on a loaded machine must never count as a
// hang here; only the reads the test blocks ever reach them.
Fleet MakeFleet(std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) {
  auto nv = std::make_unique<FakeBackend>(
      "nvml", std::vector<std::string>{"00000000:17:00.0", "00000000:C1:00.0"}, 100);
  auto amd = std::make_unique<FakeBackend>(
      "amdgpu", std::vector<std::string>{"00000000:85:00.0", "00000000:03:00.0"}, 200);
  Fleet f{nv.get(), amd.get(), nullptr};
  std::vector<NamedBackend> members;
  members.push_back({"nvml", std::move(nv)});
  members.push_back({"amdgpu", std::move(amd)});
  f.backend = MakeCompositeBackend(std::move(members), deadline);
  return f;
}

std::optional<double> Power(Backend& b, std::size_t pos) {
  Sample s;
  const FieldIndex fields[] = {kPower};
  b.Read(pos, fields, s);
  return s.values.at(kPower);
}

TEST(Composite, MergesDevicesInPciBusOrderAndRenumbersThem) {
  Fleet f = MakeFleet();
  const SystemInfo& info = f.backend->info();
  ASSERT_EQ(info.devices.size(), 4u);
  EXPECT_EQ(info.backend, "nvml+amdgpu");
  std::vector<std::string> order;
  for (const DeviceInfo& d : info.devices) {
    order.push_back(d.pci_bus_id + " " + d.backend + " " + std::to_string(d.index) + " " +
                    std::to_string(d.backend_index.value_or(99)));
  }
  EXPECT_EQ(order, (std::vector<std::string>{
                       "00000000:03:00.0 amdgpu 0 1", "00000000:17:00.0 nvml 1 0",
                       "00000000:85:00.0 amdgpu 2 0", "00000000:C1:00.0 nvml 3 1"}));
}

TEST(Composite, RoutesEachReadToItsOwnBackendAndPosition) {
  Fleet f = MakeFleet();
  EXPECT_EQ(Power(*f.backend, 0), 201.0);  // amdgpu position 1
  EXPECT_EQ(Power(*f.backend, 1), 100.0);  // nvml position 0
  EXPECT_EQ(Power(*f.backend, 2), 200.0);
  EXPECT_EQ(Power(*f.backend, 3), 101.0);
  EXPECT_TRUE(BackendFailures(*f.backend).empty());
}

TEST(Composite, InjectFaultGoesToTheBackendOwningTheDeviceAtItsOwnPosition) {
  Fleet f = MakeFleet();
  std::string fault = "{kind: xid, xid: 79}";
  ASSERT_TRUE(f.backend->InjectFault(3, fault).ok());  // nvml position 1
  fault = "overwritten: the composite keeps its own copy";
  EXPECT_EQ(f.nvml->injected, std::vector<std::string>{"1 {kind: xid, xid: 79}"});
  EXPECT_TRUE(f.amd->injected.empty());
}

TEST(Composite, AHangingBackendIsReportedOnceAndTheOtherKeepsReading) {
  Fleet f = MakeFleet(std::chrono::milliseconds(1000));
  {
    std::lock_guard lock(f.amd->mu);
    f.amd->block = true;
  }
  EXPECT_EQ(Power(*f.backend, 0), std::nullopt);  // hangs past the deadline: absent
  for (int tick = 0; tick < 5; ++tick) {
    EXPECT_EQ(Power(*f.backend, 1), 100.0);
    EXPECT_EQ(Power(*f.backend, 3), 101.0);
    EXPECT_EQ(Power(*f.backend, 2), std::nullopt);  // stalled: not asked again
  }
  EXPECT_EQ(f.amd->reads.load(), 1);
  auto failures = BackendFailures(*f.backend);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].backend, "amdgpu");
  EXPECT_TRUE(failures[0].stalled);
  EXPECT_NE(failures[0].reason.find("did not return within 1000 ms"), std::string::npos)
      << failures[0].reason;
  EXPECT_GE(f.backend->stats().failed_calls, 6u);

  // The stuck read returns: the backend is read again and the failure is no longer a stall.
  f.amd->Release();
  std::optional<double> again;
  for (int i = 0; i < 200 && !again; ++i) {
    again = Power(*f.backend, 2);
    if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(again, 200.0);
  failures = BackendFailures(*f.backend);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_FALSE(failures[0].stalled);
}

TEST(Composite, ABackendThatThrowsIsFailedForGoodAndTheOtherKeepsReading) {
  Fleet f = MakeFleet();
  f.amd->throw_on_read = true;
  EXPECT_EQ(Power(*f.backend, 0), std::nullopt);
  EXPECT_EQ(Power(*f.backend, 2), std::nullopt);
  EXPECT_EQ(f.amd->reads.load(), 1);  // not asked again
  EXPECT_EQ(Power(*f.backend, 1), 100.0);
  auto failures = BackendFailures(*f.backend);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_FALSE(failures[0].stalled);
  EXPECT_NE(failures[0].reason.find("threw an exception (sysfs went away)"), std::string::npos)
      << failures[0].reason;
  ProcessList p = f.backend->Processes(0);
  EXPECT_FALSE(p.processes);
  EXPECT_NE(p.error.find("sysfs went away"), std::string::npos) << p.error;
}

TEST(Composite, DestroyingItWhileABackendIsStuckDoesNotWaitForIt) {
  Fleet f = MakeFleet(std::chrono::milliseconds(1000));
  {
    std::lock_guard lock(f.amd->mu);
    f.amd->block = true;
  }
  EXPECT_EQ(Power(*f.backend, 0), std::nullopt);
  f.backend.reset();  // returns although the read is still blocked (the member is left alive)
  f.amd->Release();
}

// Registry entries for OpenBackends.
Result<std::unique_ptr<Backend>> OpenNv(const BackendOptions&) {
  return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(
      "nvml", std::vector<std::string>{"00000000:17:00.0"}, 100));
}
Result<std::unique_ptr<Backend>> OpenAmd(const BackendOptions&) {
  return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(
      "amdgpu", std::vector<std::string>{"00000000:03:00.0"}, 200));
}
Result<std::unique_ptr<Backend>> OpenNone(const BackendOptions&) {
  return Unavailable("no intel GPU under /sys/class/drm");
}
Result<std::unique_ptr<Backend>> OpenBroken(const BackendOptions&) {
  return Error{ErrorCode::kIo, "intel: reading /sys/class/drm/card2/device/vendor: I/O error"};
}
Result<std::unique_ptr<Backend>> OpenThrowing(const BackendOptions&) {
  throw std::runtime_error("bad alloc in probe");
}
Result<std::unique_ptr<Backend>> OpenMistake(const BackendOptions&) {
  return Error{ErrorCode::kInvalidArgument, "--simulate nope: no such scenario"};
}

// An open that blocks until the test releases it (a discovery read of a GPU in reset).
std::mutex g_open_mu;
std::condition_variable g_open_cv;
bool g_open_blocked = true;
Result<std::unique_ptr<Backend>> OpenHanging(const BackendOptions& o) {
  std::unique_lock lock(g_open_mu);
  g_open_cv.wait(lock, [] { return !g_open_blocked; });
  return OpenAmd(o);
}

TEST(Registry, ABackendThatDoesNotFinishOpeningIsLeftOutAndTheOthersAreRead) {
  const BackendEntry entries[] = {{"nvml", &OpenNv}, {"amdgpu", &OpenHanging}};
  auto b = OpenBackends({}, entries, std::chrono::milliseconds(1000));
  {
    std::lock_guard lock(g_open_mu);
    g_open_blocked = false;
  }
  g_open_cv.notify_all();
  ASSERT_TRUE(b.ok()) << b.error().message;
  const SystemInfo& info = (*b)->info();
  ASSERT_EQ(info.devices.size(), 1u);
  EXPECT_EQ(info.devices[0].backend, "nvml");
  ASSERT_EQ(info.backend_errors.size(), 1u);
  EXPECT_EQ(info.backend_errors[0],
            "amdgpu did not finish opening within 1000 ms (a GPU in reset or a hung driver?)");
  EXPECT_EQ(Power(**b, 0), 100.0);
}

TEST(Registry, OneBackendIsReturnedAsItIsWithItsOwnNumbers) {
  const BackendEntry entries[] = {{"nvml", &OpenNv}, {"intel", &OpenNone}};
  auto b = OpenBackends({}, entries);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*b)->info().backend, "nvml");
  EXPECT_FALSE((*b)->info().devices[0].backend_index);
}

TEST(Registry, EveryBackendThatFindsGpusContributesThem) {
  const BackendEntry entries[] = {{"nvml", &OpenNv}, {"amdgpu", &OpenAmd}, {"intel", &OpenNone}};
  auto b = OpenBackends({}, entries);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ((*b)->info().devices.size(), 2u);
  EXPECT_EQ((*b)->info().devices[0].backend, "amdgpu");
  EXPECT_EQ((*b)->info().devices[1].backend, "nvml");
  EXPECT_EQ(Power(**b, 0), 200.0);
  EXPECT_EQ(Power(**b, 1), 100.0);
}

TEST(Registry, ABackendThatFailsOrThrowsOnOpenIsLeftOutWithItsReason) {
  const BackendEntry entries[] = {
      {"nvml", &OpenNv}, {"intel", &OpenBroken}, {"amdgpu", &OpenThrowing}};
  auto b = OpenBackends({}, entries);
  ASSERT_TRUE(b.ok()) << b.error().message;
  const SystemInfo& info = (*b)->info();
  ASSERT_EQ(info.devices.size(), 1u);
  EXPECT_EQ(info.devices[0].index, 0u);  // one backend read: its own numbers
  ASSERT_EQ(info.backend_errors.size(), 2u);
  EXPECT_NE(info.backend_errors[0].find("I/O error"), std::string::npos);
  EXPECT_NE(info.backend_errors[1].find("amdgpu threw while opening: bad alloc in probe"),
            std::string::npos);
  EXPECT_EQ(Power(**b, 0), 100.0);
}

TEST(Registry, AConfigurationMistakeIsNeverReadPast) {
  const BackendEntry entries[] = {{"nvml", &OpenMistake}, {"amdgpu", &OpenAmd}};
  auto b = OpenBackends({}, entries);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kInvalidArgument);
}

TEST(Registry, NoGpusAnywhereSaysWhyForEachBackend) {
  const BackendEntry entries[] = {{"intel", &OpenNone}, {"amdgpu", &OpenNone}};
  auto b = OpenBackends({}, entries);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(b.error().message,
            "no intel GPU under /sys/class/drm; no intel GPU under /sys/class/drm");
}

}  // namespace
}  // namespace gpulse::gpu
