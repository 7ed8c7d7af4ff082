#include "health/reading.h"

#include <array>

namespace gpulse::health {
namespace {

struct Slot {
  FieldId id;
  std::optional<double> GpuReading::*member;
};

constexpr auto kSlots = std::to_array<Slot>({
    {84, &GpuReading::inforom_valid},
    {150, &GpuReading::temperature_c},
    {155, &GpuReading::power_w},
    {202, &GpuReading::pcie_replay},
    {240, &GpuReading::power_violation_ns},
    {241, &GpuReading::thermal_violation_ns},
    {311, &GpuReading::ecc_dbe_volatile},
    {390, &GpuReading::retired_sbe},
    {391, &GpuReading::retired_dbe},
    {392, &GpuReading::retired_pending},
    {393, &GpuReading::remapped_uncorrectable},
    {395, &GpuReading::row_remap_failure},
    {409, &GpuReading::nvlink_crc_flit},
    {419, &GpuReading::nvlink_crc_data},
    {429, &GpuReading::nvlink_replay},
    {439, &GpuReading::nvlink_recovery},
});
constexpr FieldId kXidField = 230;

std::vector<FieldIndex> BuildFields() {
  std::vector<FieldIndex> out;
  for (const Slot& s : kSlots) {
    if (auto i = IndexOf(s.id)) out.push_back(*i);
  }
  if (auto i = IndexOf(kXidField)) out.push_back(*i);
  return out;
}

}  // namespace

std::span<const FieldIndex> ReadingFields() {
  static const std::vector<FieldIndex> fields = BuildFields();
  return fields;
}

GpuReading ReadingFromSample(const Sample& s, std::int64_t t_ms) {
  GpuReading r;
  r.t_ms = t_ms;
  r.lost = s.state == DeviceState::kLost;
  // A lost GPU's Xids (79 as it falls off) and action still count; its readings do not.
  r.xids = s.xid_events;
  r.action = s.recommended_action;
  if (r.lost) return r;
  for (const Slot& slot : kSlots) {
    auto i = IndexOf(slot.id);
    if (i && *i < s.values.size()) r.*(slot.member) = s.values[*i];
  }
  return r;
}

void KeepNewest(GpuReading& into, const GpuReading& from) {
  for (const Slot& slot : kSlots) {
    if (from.*(slot.member)) into.*(slot.member) = from.*(slot.member);
  }
}

}  // namespace gpulse::health
