// Process lists through NVML fakes: the call order (detail list, _v2, measured _v3, v1), the _v3
// stride trap with 16-, 24- and 32-byte strides and several processes (a single entry hides stride
// bugs), "not available" memory, lists that grow between calls, per-process utilization, and the
// once-per-second rate limit.
#include "gpu/nvml/nvml_process_list.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "gpu/backend.h"
#include "gpu/nvml/nvml_processes.h"

namespace gpulse::nvml {
namespace {

struct Proc {
  unsigned pid;
  unsigned long long mem;
  unsigned gi = NVML_INSTANCE_ID_NONE;
  unsigned ci = NVML_INSTANCE_ID_NONE;
};

// The state every fake entry point reads; reset per test.
struct Fake {
  std::vector<Proc> compute, graphics;
  std::size_t v3_stride = 24;  // bytes per entry the fake _v3 writes
  bool v3_clears_whole_buffer = false;
  std::map<std::string, nvmlReturn_t> rc;  // forced return codes by call name
  std::map<std::string, int> calls;
  int grow_after_count = 0;  // this many extra processes appear after the count query
  std::vector<nvmlProcessUtilizationSample_t> samples;
  std::vector<unsigned long long> last_seen_args;
};
Fake* g = nullptr;

nvmlReturn_t Forced(const char* name) {
  ++g->calls[name];
  auto it = g->rc.find(name);
  return it == g->rc.end() ? NVML_SUCCESS : it->second;
}

// The count-then-fill protocol, writing each entry through `write(i, dst)`.
template <typename Write>
nvmlReturn_t Protocol(const char* name, std::vector<Proc>& list, unsigned* count, bool have_buffer,
                      Write write) {
  if (nvmlReturn_t rc = Forced(name); rc != NVML_SUCCESS) return rc;
  if (!have_buffer && g->grow_after_count > 0) {
    const unsigned needed = static_cast<unsigned>(list.size());
    for (int i = 0; i < g->grow_after_count; ++i) list.push_back({9000u + i, 1u << 20});
    g->grow_after_count = 0;
    *count = needed;  // the answer is already stale
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*count < list.size() || !have_buffer) {
    bool none = list.empty();
    *count = static_cast<unsigned>(list.size());
    return none ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < list.size(); ++i) write(i);
  *count = static_cast<unsigned>(list.size());
  return NVML_SUCCESS;
}

std::vector<Proc>& ListOf(bool compute) { return compute ? g->compute : g->graphics; }

template <bool kCompute>
nvmlReturn_t V1(nvmlDevice_t, unsigned* count, nvmlProcessInfo_v1_t* out) {
  auto& list = ListOf(kCompute);
  return Protocol(kCompute ? "v1" : "gv1", list, count, out != nullptr, [&](unsigned i) {
    out[i] = {list[i].pid, list[i].mem};
  });
}

template <bool kCompute>
nvmlReturn_t V2(nvmlDevice_t, unsigned* count, nvmlProcessInfo_v2_t* out) {
  auto& list = ListOf(kCompute);
  return Protocol(kCompute ? "v2" : "gv2", list, count, out != nullptr, [&](unsigned i) {
    out[i] = {list[i].pid, list[i].mem, list[i].gi, list[i].ci};
  });
}

// _v3 as drivers wrote it: the v2 fields first, then padding up to `v3_stride` bytes (the 32-byte
// layout's usedGpuCcProtectedMemory written as 0).
template <bool kCompute>
nvmlReturn_t V3(nvmlDevice_t, unsigned* count, void* out) {
  auto& list = ListOf(kCompute);
  auto* bytes = static_cast<unsigned char*>(out);
  const unsigned capacity = *count;
  nvmlReturn_t rc = Protocol(kCompute ? "v3" : "gv3", list, count, out != nullptr, [&](unsigned i) {
    unsigned char* e = bytes + i * g->v3_stride;
    std::memset(e, 0, g->v3_stride);
    std::memcpy(e, &list[i].pid, 4);
    std::memcpy(e + 8, &list[i].mem, 8);
    if (g->v3_stride >= 24) {
      std::memcpy(e + 16, &list[i].gi, 4);
      std::memcpy(e + 20, &list[i].ci, 4);
    }
  });
  if (rc == NVML_SUCCESS && g->v3_clears_whole_buffer && out != nullptr) {
    std::memset(bytes + list.size() * g->v3_stride, 0, (capacity - list.size()) * g->v3_stride);
  }
  return rc;
}

nvmlReturn_t DetailList(nvmlDevice_t, nvmlProcessDetailList_v1_t* l) {
  if (l->version != nvmlProcessDetailList_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  auto& list = ListOf(l->mode == NVML_PROCESS_MODE_COMPUTE);
  return Protocol("detail", list, &l->numProcArrayEntries, l->procArray != nullptr,
                  [&](unsigned i) {
                    l->procArray[i] = {list[i].pid, list[i].mem, list[i].gi, list[i].ci, 0};
                  });
}

nvmlReturn_t Utilization(nvmlDevice_t, nvmlProcessUtilizationSample_t* out, unsigned* count,
                         unsigned long long last_seen) {
  if (nvmlReturn_t rc = Forced("util"); rc != NVML_SUCCESS) return rc;
  std::vector<nvmlProcessUtilizationSample_t> newer;
  for (const auto& s : g->samples) {
    if (s.timeStamp > last_seen) newer.push_back(s);
  }
  if (out != nullptr) g->last_seen_args.push_back(last_seen);
  if (newer.empty()) return NVML_ERROR_NOT_FOUND;
  if (out == nullptr || *count < newer.size()) {
    *count = static_cast<unsigned>(newer.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (std::size_t i = 0; i < newer.size(); ++i) out[i] = newer[i];
  *count = static_cast<unsigned>(newer.size());
  return NVML_SUCCESS;
}

nvmlDevice_t kDev = reinterpret_cast<nvmlDevice_t>(0x10);

class ProcessListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = &fake;
    fake.compute = {{101, 1ull << 30}, {202, 2ull << 30, 2, 0}, {303, NVML_VALUE_NOT_AVAILABLE}};
  }
  void TearDown() override { g = nullptr; }

  // Which calls the driver exports.
  void Export(bool detail, bool v2, bool v3, bool v1) {
    api = NvmlApi{};
    if (detail) api.DeviceGetRunningProcessDetailList = &DetailList;
    if (v2) {
      api.DeviceGetComputeRunningProcesses_v2 = &V2<true>;
      api.DeviceGetGraphicsRunningProcesses_v2 = &V2<false>;
    }
    if (v3) {
      api.DeviceGetComputeRunningProcesses_v3 = &V3<true>;
      api.DeviceGetGraphicsRunningProcesses_v3 = &V3<false>;
    }
    if (v1) {
      api.DeviceGetComputeRunningProcesses_v1 = &V1<true>;
      api.DeviceGetGraphicsRunningProcesses_v1 = &V1<false>;
    }
  }

  RawProcessList Compute() {
    auto r = ListProcesses(api, kDev, ProcessKind::kCompute);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : RawProcessList{};
  }

  void ExpectTheThreeProcesses(const RawProcessList& l, bool with_mig_ids) {
    ASSERT_EQ(l.entries.size(), 3u);
    EXPECT_EQ(l.entries[0].pid, 101u);
    EXPECT_EQ(l.entries[1].pid, 202u);
    EXPECT_EQ(l.entries[2].pid, 303u);
    EXPECT_EQ(l.entries[0].used_memory_bytes, 1ull << 30);
    EXPECT_EQ(l.entries[1].used_memory_bytes, 2ull << 30);
    EXPECT_FALSE(l.entries[2].used_memory_bytes.has_value())
        << "NVML_VALUE_NOT_AVAILABLE is absent";
    EXPECT_FALSE(l.entries[0].gpu_instance_id.has_value()) << "not MIG";
    if (with_mig_ids) {
      EXPECT_EQ(l.entries[1].gpu_instance_id, 2u);
      EXPECT_EQ(l.entries[1].compute_instance_id, 0u);
    } else {
      EXPECT_FALSE(l.entries[1].gpu_instance_id.has_value());
    }
  }

  Fake fake;
  NvmlApi api;
};

TEST_F(ProcessListTest, DetailListIsPreferredAndUses32ByteEntries) {
  Export(true, true, true, true);
  RawProcessList l = Compute();
  EXPECT_EQ(l.source, "nvmlDeviceGetRunningProcessDetailList");
  ExpectTheThreeProcesses(l, true);
  EXPECT_EQ(fake.calls["v2"], 0);
  EXPECT_EQ(fake.calls["v3"], 0);
}

TEST_F(ProcessListTest, V2Uses24ByteEntries) {
  Export(false, true, true, true);
  RawProcessList l = Compute();
  EXPECT_EQ(l.source, "nvmlDeviceGetComputeRunningProcesses_v2");
  ExpectTheThreeProcesses(l, true);
  EXPECT_EQ(fake.calls["v3"], 0) << "_v3 is not trusted while _v2 answers";
}

TEST_F(ProcessListTest, V1Uses16ByteEntriesWithoutMigIds) {
  Export(false, false, false, true);
  RawProcessList l = Compute();
  EXPECT_EQ(l.source, "nvmlDeviceGetComputeRunningProcesses");
  ExpectTheThreeProcesses(l, false);
}

class V3Stride : public ProcessListTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(V3Stride, IsMeasuredNotAssumed) {
  fake.v3_stride = GetParam();
  Export(false, false, true, false);
  RawProcessList l = Compute();
  EXPECT_EQ(l.source, "nvmlDeviceGetComputeRunningProcesses_v3");
  ExpectTheThreeProcesses(l, GetParam() >= 24);
}

INSTANTIATE_TEST_SUITE_P(Strides, V3Stride, ::testing::Values(16, 24, 32));

TEST_F(ProcessListTest, V3ThatClearsItsWholeBufferIsNotUsed) {
  fake.v3_stride = 32;
  fake.v3_clears_whole_buffer = true;
  Export(false, false, true, true);
  RawProcessList l = Compute();
  EXPECT_EQ(l.source, "nvmlDeviceGetComputeRunningProcesses") << "falls back to v1";
  ExpectTheThreeProcesses(l, false);
}

TEST_F(ProcessListTest, UnsupportedDetailListFallsThrough) {
  fake.rc["detail"] = NVML_ERROR_NOT_SUPPORTED;
  Export(true, true, false, false);
  EXPECT_EQ(Compute().source, "nvmlDeviceGetComputeRunningProcesses_v2");
  fake.rc["detail"] = NVML_ERROR_FUNCTION_NOT_FOUND;
  EXPECT_EQ(Compute().source, "nvmlDeviceGetComputeRunningProcesses_v2");
}

TEST_F(ProcessListTest, RealErrorIsTheAnswerNotAFallback) {
  fake.rc["v2"] = NVML_ERROR_NO_PERMISSION;
  Export(false, true, false, true);
  auto r = ListProcesses(api, kDev, ProcessKind::kCompute);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNoPermission);
  EXPECT_NE(r.error().message.find("nvmlDeviceGetComputeRunningProcesses_v2"), std::string::npos);
  EXPECT_EQ(fake.calls["v1"], 0);
}

TEST_F(ProcessListTest, NoCallAtAllIsUnavailable) {
  Export(false, false, false, false);
  auto r = ListProcesses(api, kDev, ProcessKind::kGraphics);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

TEST_F(ProcessListTest, ListGrowingBetweenCallsIsReadAgain) {
  fake.grow_after_count = 12;  // more than the slack the reader allows for
  Export(false, true, false, false);
  RawProcessList l = Compute();
  EXPECT_EQ(l.entries.size(), 15u);
  EXPECT_GE(fake.calls["v2"], 3) << "count, a fill that was too small, the fill that fit";
}

TEST_F(ProcessListTest, EmptyListIsAnEmptyAnswer) {
  fake.compute.clear();
  Export(true, true, true, true);
  RawProcessList l = Compute();
  EXPECT_TRUE(l.entries.empty());
  EXPECT_EQ(l.source, "nvmlDeviceGetRunningProcessDetailList");
}

TEST(MeasureStride, FindsTheStrideFromUntouchedBytes) {
  for (std::size_t stride : {16u, 24u, 32u}) {
    std::vector<unsigned char> buf(32 * 8, 0xA5);
    std::memset(buf.data(), 0, stride * 2);  // two entries written
    EXPECT_EQ(MeasureStride(buf, 2, 0xA5), stride);
  }
  std::vector<unsigned char> untouched(64, 0xA5);
  EXPECT_FALSE(MeasureStride(untouched, 2, 0xA5).has_value()) << "nothing written";
}

// ProcessReader: merge, utilization, rate limit.
class ReaderTest : public ProcessListTest {
 protected:
  void SetUp() override {
    ProcessListTest::SetUp();
    Export(true, true, false, false);
    api.DeviceGetProcessUtilization = &Utilization;
  }
  static constexpr std::int64_t kSecond = 1'000'000'000;
  static constexpr std::int64_t kNowUs = 1'700'000'000'000'000;
};

TEST_F(ReaderTest, MergesComputeAndGraphicsByPid) {
  fake.graphics = {{202, 3ull << 30}, {404, 1ull << 20}};
  ProcessReader r(&api, kDev);
  ProcessList l = r.Read(0, kNowUs);
  ASSERT_TRUE(l.processes.has_value()) << l.error;
  ASSERT_EQ(l.processes->size(), 4u);
  const GpuProcess& both = (*l.processes)[1];
  EXPECT_EQ(both.pid, 202u);
  EXPECT_TRUE(both.compute);
  EXPECT_TRUE(both.graphics);
  EXPECT_EQ(both.used_memory_bytes, 3ull << 30);
  EXPECT_FALSE((*l.processes)[3].compute);
  EXPECT_TRUE((*l.processes)[3].graphics);
}

TEST_F(ReaderTest, UtilizationAveragesSamplesDropsNoiseAndUnknownPids) {
  fake.samples = {{101, kNowUs - 300'000, 40, 10, 0, 0},
                  {101, kNowUs - 100'000, 60, 20, 4, 2},
                  {202, kNowUs - 100'000, 150, 0, 0, 0},  // > 100: driver noise, dropped
                  {999, kNowUs - 100'000, 50, 5, 0, 0}};  // not a listed process
  ProcessReader r(&api, kDev);
  ProcessList l = r.Read(0, kNowUs);
  ASSERT_TRUE(l.processes.has_value());
  EXPECT_EQ(l.utilization_source, "nvmlDeviceGetProcessUtilization");
  const auto& p = *l.processes;
  EXPECT_EQ(p[0].sm_util, 50.0);
  EXPECT_EQ(p[0].mem_util, 15.0);
  EXPECT_EQ(p[0].enc_util, 2.0);
  EXPECT_FALSE(p[1].sm_util.has_value()) << "only noisy samples: absent, not clamped";
  EXPECT_FALSE(p[2].sm_util.has_value()) << "no sample: absent, not 0";
  ASSERT_EQ(fake.last_seen_args.size(), 1u);
  EXPECT_EQ(fake.last_seen_args[0], static_cast<unsigned long long>(kNowUs - 1'000'000))
      << "the first window is the last second";
}

TEST_F(ReaderTest, NextWindowStartsAfterTheNewestSampleSeen) {
  fake.samples = {{101, kNowUs - 100'000, 60, 20, 0, 0}};
  ProcessReader r(&api, kDev);
  (void)r.Read(0, kNowUs);
  fake.samples.push_back({101, kNowUs + 900'000, 70, 20, 0, 0});
  ProcessList l = r.Read(2 * kSecond, kNowUs + 2'000'000);
  ASSERT_EQ(fake.last_seen_args.size(), 2u);
  EXPECT_EQ(fake.last_seen_args[1], static_cast<unsigned long long>(kNowUs - 100'000));
  EXPECT_EQ((*l.processes)[0].sm_util, 70.0);
}

TEST_F(ReaderTest, NoSampleIsAbsentUtilization) {
  ProcessReader r(&api, kDev);
  ProcessList l = r.Read(0, kNowUs);  // fake answers NOT_FOUND
  ASSERT_TRUE(l.processes.has_value());
  EXPECT_FALSE((*l.processes)[0].sm_util.has_value());
  EXPECT_EQ(l.utilization_source, "");
}

TEST_F(ReaderTest, ListsAreReadAtMostOncePerSecond) {
  ProcessReader r(&api, kDev);
  (void)r.Read(0, kNowUs);
  const int after_first = fake.calls["detail"];
  EXPECT_GT(after_first, 0);
  ProcessList cached = r.Read(gpu::kProcessListMinIntervalNs - 1, kNowUs + 999'999);
  EXPECT_EQ(fake.calls["detail"], after_first) << "answered from the cache";
  EXPECT_EQ(cached.t_mono_ns, 0) << "the cached list keeps its own time";
  (void)r.Read(gpu::kProcessListMinIntervalNs, kNowUs + 1'000'000);
  EXPECT_GT(fake.calls["detail"], after_first);
}

TEST_F(ReaderTest, ComputeListErrorLeavesTheListAbsentWithTheReason) {
  fake.rc["detail"] = NVML_ERROR_GPU_IS_LOST;
  ProcessReader r(&api, kDev);
  ProcessList l = r.Read(0, kNowUs);
  EXPECT_FALSE(l.processes.has_value());
  EXPECT_NE(l.error.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
}

}  // namespace
}  // namespace gpulse::nvml
