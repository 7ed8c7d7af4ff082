// gpu_metrics decoding, one test per revision. Each test lays its table out itself: the member
// list of the kernel's struct (kgd_pp_interface.h) under C's natural alignment gives the offsets,
// independently of the offset table in src/gpu/amdgpu/gpu_metrics.cc, and the bytes start as the
// kernel's 0xFF fill.
#include "gpu/amdgpu/gpu_metrics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace gpulse::gpu::amdgpu {
namespace {

struct Member {
  const char* name;
  std::size_t size;  // of one element
  std::size_t count = 1;
};

// A struct's bytes, laid out from its members like a C compiler does.
class Table {
 public:
  Table(std::uint8_t frev, std::uint8_t crev, const std::vector<Member>& members) {
    std::size_t offset = 4, align = 2;  // after metrics_table_header
    for (const Member& m : members) {
      offset = (offset + m.size - 1) / m.size * m.size;
      offsets_[m.name] = {offset, m.size};
      offset += m.size * m.count;
      align = std::max(align, m.size);
    }
    size_ = (offset + align - 1) / align * align;
    bytes_.assign(size_, std::byte{0xFF});
    Put("structure_size_", 0, 2, size_);
    bytes_[2] = std::byte{frev};
    bytes_[3] = std::byte{crev};
  }
  std::size_t size() const { return size_; }
  Table& Set(const std::string& name, std::uint64_t value) {
    auto [offset, size] = offsets_.at(name);
    Put(name, offset, size, value);
    return *this;
  }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::vector<std::byte>& raw() { return bytes_; }

 private:
  void Put(const std::string&, std::size_t offset, std::size_t size, std::uint64_t value) {
    for (std::size_t i = 0; i < size; ++i)
      bytes_[offset + i] = std::byte((value >> (8 * i)) & 0xFF);
  }
  std::map<std::string, std::pair<std::size_t, std::size_t>> offsets_;
  std::size_t size_ = 0;
  std::vector<std::byte> bytes_;
};

// The members after the header, in order, of each revision.
std::vector<Member> V10() {
  return {{"system_clock_counter", 8}, {"temperature_edge", 2},    {"temperature_hotspot", 2},
          {"temperature_mem", 2},      {"temperature_vr", 2, 3},   {"average_gfx_activity", 2},
          {"average_umc_activity", 2}, {"average_mm_activity", 2}, {"average_socket_power", 2},
          {"energy_accumulator", 4},   {"average_clocks", 2, 7},   {"current_gfxclk", 2},
          {"current_socclk", 2},       {"current_uclk", 2},        {"current_other", 2, 4},
          {"throttle_status", 4},      {"current_fan_speed", 2},   {"pcie_link_width", 1},
          {"pcie_link_speed", 1}};
}
std::vector<Member> V11() {
  return {{"temperature_edge", 2},     {"temperature_hotspot", 2},
          {"temperature_mem", 2},      {"temperature_vr", 2, 3},
          {"average_gfx_activity", 2}, {"average_umc_activity", 2},
          {"average_mm_activity", 2},  {"average_socket_power", 2},
          {"energy_accumulator", 8},   {"system_clock_counter", 8},
          {"average_clocks", 2, 7},    {"current_gfxclk", 2},
          {"current_socclk", 2},       {"current_uclk", 2},
          {"current_other", 2, 4},     {"throttle_status", 4},
          {"current_fan_speed", 2},    {"pcie_link_width", 2},
          {"pcie_link_speed", 2},      {"padding", 2},
          {"gfx_activity_acc", 4},     {"mem_activity_acc", 4},
          {"temperature_hbm", 2, 4}};
}
std::vector<Member> V12() {
  auto m = V11();
  m.push_back({"firmware_timestamp", 8});
  return m;
}
std::vector<Member> V13() {
  auto m = V12();
  m.insert(m.end(), {{"voltage", 2, 3}, {"padding1", 2}, {"indep_throttle_status", 8}});
  return m;
}
// 1.4-1.6: `jpeg` adds jpeg_activity[32] (1.5+), `residency` the throttler residencies (1.6),
// `nak` the PCIe NAK counters (1.5+).
std::vector<Member> V14Family(bool jpeg, bool residency, bool nak) {
  std::vector<Member> m = {{"temperature_hotspot", 2},  {"temperature_mem", 2},
                           {"temperature_vrsoc", 2},    {"curr_socket_power", 2},
                           {"average_gfx_activity", 2}, {"average_umc_activity", 2},
                           {"vcn_activity", 2, 4}};
  if (jpeg) m.push_back({"jpeg_activity", 2, 32});
  m.insert(m.end(), {{"energy_accumulator", 8}, {"system_clock_counter", 8}});
  if (residency) m.insert(m.end(), {{"accumulation_counter", 4}, {"residencies", 4, 5}});
  m.insert(m.end(), {{"throttle_status", 4},
                     {"gfxclk_lock_status", 4},
                     {"pcie_link", 2, 2},
                     {"xgmi_link", 2, 2},
                     {"gfx_activity_acc", 4},
                     {"mem_activity_acc", 4},
                     {"pcie_counters", 8, 5}});
  if (nak) m.push_back({"pcie_nak", 4, 2});
  m.insert(m.end(), {{"xgmi_read_data_acc", 8, 8},
                     {"xgmi_write_data_acc", 8, 8},
                     {"firmware_timestamp", 8},
                     {"current_gfxclk", 2, 8},
                     {"current_socclk", 2, 4},
                     {"current_vclk0", 2, 4},
                     {"current_dclk0", 2, 4},
                     {"current_uclk", 2},
                     {"padding", 2}});
  return m;
}

// A dGPU table (1.0-1.3) with every decoded member set.
Table DgpuTable(std::uint8_t crev, const std::vector<Member>& members) {
  Table t(1, crev, members);
  t.Set("temperature_edge", 51).Set("temperature_hotspot", 63).Set("temperature_mem", 70);
  t.Set("average_gfx_activity", 23).Set("average_umc_activity", 7).Set("average_mm_activity", 5);
  t.Set("average_socket_power", 187).Set("energy_accumulator", 987654321);
  t.Set("system_clock_counter", 3'600'000'000'000).Set("current_gfxclk", 1880);
  t.Set("current_uclk", 1249).Set("throttle_status", 0x4);
  return t;
}

void ExpectDgpu(const Table& t, std::uint8_t crev) {
  EXPECT_EQ(GpuMetricsSize(1, crev), t.size());
  auto m = DecodeGpuMetrics(t.bytes());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->format_revision, 1);
  EXPECT_EQ(m->content_revision, crev);
  EXPECT_EQ(m->temperature_edge_c, 51);
  EXPECT_EQ(m->temperature_hotspot_c, 63);
  EXPECT_EQ(m->temperature_mem_c, 70);
  EXPECT_EQ(m->gfx_activity_pct, 23);
  EXPECT_EQ(m->umc_activity_pct, 7);
  EXPECT_EQ(m->mm_activity_pct, 5);
  EXPECT_EQ(m->socket_power_w, 187);
  EXPECT_EQ(m->energy_accumulator, 987654321u);
  EXPECT_EQ(m->system_clock_counter_ns, 3'600'000'000'000u);
  EXPECT_EQ(m->current_gfxclk_mhz, 1880);
  EXPECT_EQ(m->current_uclk_mhz, 1249);
  EXPECT_EQ(m->throttle_status, 0x4u);
}

TEST(GpuMetrics, Revision1_0IsEightyBytesWithA32BitAccumulator) {
  Table t = DgpuTable(0, V10());
  EXPECT_EQ(t.size(), 80u);
  ExpectDgpu(t, 0);
  EXPECT_FALSE(DecodeGpuMetrics(t.bytes())->indep_throttle_status);
  t.Set("energy_accumulator", 0xFFFFFFFF);
  EXPECT_FALSE(DecodeGpuMetrics(t.bytes())->energy_accumulator);
}

TEST(GpuMetrics, Revision1_1) {
  Table t = DgpuTable(1, V11());
  EXPECT_EQ(t.size(), 96u);
  ExpectDgpu(t, 1);
}

TEST(GpuMetrics, Revision1_2) {
  Table t = DgpuTable(2, V12());
  EXPECT_EQ(t.size(), 104u);
  ExpectDgpu(t, 2);
}

TEST(GpuMetrics, Revision1_3HasTheIndependentThrottleBits) {
  Table t = DgpuTable(3, V13());
  EXPECT_EQ(t.size(), 120u);
  t.Set("indep_throttle_status", 0x10000);
  ExpectDgpu(t, 3);
  EXPECT_EQ(DecodeGpuMetrics(t.bytes())->indep_throttle_status, 0x10000u);
}

void ExpectMi300(std::uint8_t crev, const std::vector<Member>& members, std::size_t size) {
  Table t(1, crev, members);
  EXPECT_EQ(t.size(), size);
  EXPECT_EQ(GpuMetricsSize(1, crev), size);
  t.Set("temperature_hotspot", 62).Set("temperature_mem", 55).Set("curr_socket_power", 548);
  t.Set("average_gfx_activity", 87).Set("average_umc_activity", 41).Set("vcn_activity", 3);
  t.Set("energy_accumulator", 123456789012).Set("system_clock_counter", 86'400'000'000'000);
  t.Set("throttle_status", 0x2).Set("current_gfxclk", 1400).Set("current_uclk", 1300);
  auto m = DecodeGpuMetrics(t.bytes());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->temperature_edge_c);  // no edge sensor on MI300
  EXPECT_EQ(m->temperature_hotspot_c, 62);
  EXPECT_EQ(m->temperature_mem_c, 55);
  EXPECT_EQ(m->socket_power_w, 548);
  EXPECT_EQ(m->gfx_activity_pct, 87);
  EXPECT_EQ(m->umc_activity_pct, 41);
  EXPECT_EQ(m->mm_activity_pct, 3);
  EXPECT_EQ(m->energy_accumulator, 123456789012u);
  EXPECT_EQ(m->system_clock_counter_ns, 86'400'000'000'000u);
  EXPECT_EQ(m->throttle_status, 0x2u);
  EXPECT_EQ(m->current_gfxclk_mhz, 1400);
  EXPECT_EQ(m->current_uclk_mhz, 1300);
  EXPECT_FALSE(m->indep_throttle_status);
}

TEST(GpuMetrics, Revision1_4) { ExpectMi300(4, V14Family(false, false, false), 288); }
TEST(GpuMetrics, Revision1_5) { ExpectMi300(5, V14Family(true, false, true), 360); }
TEST(GpuMetrics, Revision1_6) { ExpectMi300(6, V14Family(true, true, true), 384); }

TEST(GpuMetrics, AllOnesFieldsAreAbsent) {
  Table t(1, 3, V13());  // nothing but the header written over the 0xFF fill
  auto m = DecodeGpuMetrics(t.bytes());
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->temperature_edge_c);
  EXPECT_FALSE(m->socket_power_w);
  EXPECT_FALSE(m->energy_accumulator);
  EXPECT_FALSE(m->throttle_status);
  EXPECT_FALSE(m->current_gfxclk_mhz);
}

TEST(GpuMetrics, TruncatedTableIsRefused) {
  Table t = DgpuTable(3, V13());
  auto m = DecodeGpuMetrics(t.bytes().first(119));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(DecodeGpuMetrics(t.bytes().first(3)).ok());
  EXPECT_FALSE(DecodeGpuMetrics({}).ok());
}

TEST(GpuMetrics, StructureSizeMustMatchTheRevision) {
  Table t = DgpuTable(3, V13());
  t.raw()[0] = std::byte{96};  // claims 96 bytes for a 1.3 table
  auto m = DecodeGpuMetrics(t.bytes());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().message.find("structure_size 96"), std::string::npos);
}

TEST(GpuMetrics, UnknownRevisionIsUnavailableNotGuessed) {
  for (auto [frev, crev] : {std::pair{2, 1}, {3, 0}, {1, 7}, {0, 0}}) {
    Table t(static_cast<std::uint8_t>(frev), static_cast<std::uint8_t>(crev), V13());
    auto m = DecodeGpuMetrics(t.bytes());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code, ErrorCode::kUnavailable);
    EXPECT_NE(m.error().message.find(std::to_string(frev) + "." + std::to_string(crev)),
              std::string::npos);
  }
}

TEST(GpuMetrics, EnergyUnitIsTwoToTheMinusSixteenJoules) {
  EXPECT_DOUBLE_EQ(EnergyAccumulatorToMilliJoules(65536), 1000.0);
  EXPECT_NEAR(EnergyAccumulatorToMilliJoules(1), 0.015259, 1e-6);
}

}  // namespace
}  // namespace gpulse::gpu::amdgpu
