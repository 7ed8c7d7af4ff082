// Cost of the agent's compressed series (src/agent/series.h).
//
//   BM_Append          one 1 Hz point of a power-like reading (watts, three decimals) into a series
//                      bounded at 14,400 points, so chunk closing and dropping are included.
//   BM_Query1h         a one-hour range (3,600 points) out of a 14,400-point 1 Hz series.
//   BM_Footprint/KIND  building a 14,400-point 1 Hz series of KIND (constant, integer counter,
//                      power-like); the bytes_per_point counter is bytes() over size().
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "agent/series.h"

namespace gpulse::agent {
namespace {

constexpr std::int64_t kStartMs = 1'700'000'000'000;
constexpr std::size_t kFourHours = 14'400;

// Watts with milliwatt resolution: a slow swing, a watt or two of noise, load steps.
std::vector<double> PowerLike(std::size_t n) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 1.5);
  std::vector<double> values;
  double base = 250.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 1800 == 0) base = 150.0 + static_cast<double>(rng() % 400);
    const double w = base + 40.0 * std::sin(static_cast<double>(i) / 300.0) + noise(rng);
    values.push_back(static_cast<double>(std::llround(w * 1000.0)) / 1000.0);
  }
  return values;
}

// An energy-like counter in millijoules: it grows by about 250 J a second.
std::vector<double> IntegerCounter(std::size_t n) {
  std::mt19937_64 rng(2);
  std::vector<double> values;
  std::int64_t counter = 123'456'789;
  for (std::size_t i = 0; i < n; ++i) {
    counter += 240'000 + static_cast<std::int64_t>(rng() % 20'000);
    values.push_back(static_cast<double>(counter));
  }
  return values;
}

std::vector<double> Constant(std::size_t n) { return std::vector<double>(n, 412.5); }

Series Build(const std::vector<double>& values) {
  Series s(kFourHours);
  for (std::size_t i = 0; i < values.size(); ++i) {
    s.Append(kStartMs + 1000 * static_cast<std::int64_t>(i), values[i]);
  }
  return s;
}

void BM_Append(benchmark::State& state) {
  const std::vector<double> values = PowerLike(1 << 16);
  Series s(kFourHours);
  std::int64_t t = kStartMs;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.Append(t, values[i]));
    t += 1000;
    i = (i + 1) & (values.size() - 1);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_point"] =
      static_cast<double>(s.bytes()) / static_cast<double>(std::max<std::size_t>(s.size(), 1));
}
BENCHMARK(BM_Append);

void BM_Query1h(benchmark::State& state) {
  const Series s = Build(PowerLike(kFourHours));
  const std::int64_t from = kStartMs + 2 * 3'600'000;  // the third hour
  std::vector<Point> out;
  out.reserve(3600);
  for (auto _ : state) {
    out.clear();
    s.Query(from, from + 3'600'000, out);
    benchmark::DoNotOptimize(out.data());
  }
  if (out.size() != 3600) state.SkipWithError("the range did not hold 3,600 points");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(BM_Query1h)->Unit(benchmark::kMicrosecond);

void Footprint(benchmark::State& state, std::vector<double> (*make)(std::size_t)) {
  const std::vector<double> values = make(kFourHours);
  double bytes_per_point = 0;
  for (auto _ : state) {
    const Series s = Build(values);
    bytes_per_point = static_cast<double>(s.bytes()) / static_cast<double>(s.size());
    benchmark::DoNotOptimize(bytes_per_point);
  }
  state.counters["bytes_per_point"] = bytes_per_point;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFourHours));
}
BENCHMARK_CAPTURE(Footprint, constant, &Constant)->Name("BM_Footprint/constant");
BENCHMARK_CAPTURE(Footprint, integer_counter, &IntegerCounter)
    ->Name("BM_Footprint/integer_counter");
BENCHMARK_CAPTURE(Footprint, power_like, &PowerLike)->Name("BM_Footprint/power_like");

}  // namespace
}  // namespace gpulse::agent

BENCHMARK_MAIN();
