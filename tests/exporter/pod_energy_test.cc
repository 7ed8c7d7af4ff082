// The per-pod energy counter (src/exporter/pod_usage.h, UsageEnergyIntegrator): the power estimate
// integrated by the trapezoid rule between reads, per (entity, pod).
#include <gtest/gtest.h>

#include "exporter/pod_usage.h"

namespace gpulse::exporter {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

HolderUsage Row(std::size_t entity, const char* labels, std::optional<double> watts) {
  HolderUsage r;
  r.entity = entity;
  r.labels = labels;
  r.power_watts = watts;
  return r;
}

TEST(PodEnergy, TrapezoidBetweenReadsPerEntityAndPod) {
  UsageEnergyIntegrator e;
  std::vector<HolderUsage> rows = {Row(0, "pod=\"a\"", 100), Row(0, "pod=\"b\"", 50)};
  e.Integrate(rows, 10 * kSecond);
  EXPECT_EQ(rows[0].energy_joules, 0.0);  // a counter starts at 0
  rows = {Row(0, "pod=\"a\"", 200), Row(0, "pod=\"b\"", 50)};
  e.Integrate(rows, 12 * kSecond);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 300.0);  // (100 + 200) / 2 W x 2 s
  EXPECT_DOUBLE_EQ(*rows[1].energy_joules, 100.0);
  rows = {Row(0, "pod=\"a\"", 200), Row(0, "pod=\"b\"", 50)};
  e.Integrate(rows, 12 * kSecond);  // the same read served again: nothing added
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 300.0);
}

TEST(PodEnergy, UnknownPowerAddsNothingAndAGoneRowStartsAgain) {
  UsageEnergyIntegrator e;
  std::vector<HolderUsage> rows = {Row(1, "pod=\"a\"", 100)};
  e.Integrate(rows, 0);
  rows = {Row(1, "pod=\"a\"", std::nullopt)};
  e.Integrate(rows, kSecond);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 0.0);
  rows = {Row(1, "pod=\"a\"", 100)};
  e.Integrate(rows, 2 * kSecond);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 0.0);  // unknown at one end of the interval
  rows = {Row(1, "pod=\"a\"", 100)};
  e.Integrate(rows, 3 * kSecond);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 100.0);
  std::vector<HolderUsage> none;
  e.Integrate(none, 4 * kSecond);  // the pod left
  rows = {Row(1, "pod=\"a\"", 100)};
  e.Integrate(rows, 5 * kSecond);
  EXPECT_DOUBLE_EQ(*rows[0].energy_joules, 0.0);  // back: a new counter, never the gap
}

}  // namespace
}  // namespace gpulse::exporter
