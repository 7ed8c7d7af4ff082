// The kept /metrics body (src/exporter/page_cache.h): every scrape gets exactly what rendering
// its snapshot at that moment gives, ages included, and a new snapshot or page renders again.
#include "exporter/page_cache.h"

#include <gtest/gtest.h>

namespace gpulse::exporter {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

SystemInfo OneGpu() {
  SystemInfo info;
  info.backend = "nvml";
  DeviceInfo a;
  a.index = 0;
  a.name = "NVIDIA H100";
  a.uuid = "GPU-aaaa";
  a.pci_bus_id = "00000000:18:00.0";
  info.devices = {a};
  return info;
}

std::shared_ptr<const Snapshot> Read(double watts, std::int64_t t) {
  auto snap = std::make_shared<Snapshot>();
  snap->entities.resize(1);
  Sample& s = snap->entities[0].sample;
  s.t_mono_ns = t;
  s.values.assign(AllFields().size(), std::nullopt);
  s.values[*IndexOf(155)] = watts;
  return snap;
}

TEST(PageCache, EveryScrapeIsTheFullRenderAtItsMomentAndANewReadRendersAgain) {
  SystemInfo info = OneGpu();
  auto page = std::make_shared<const MetricsPage>(
      info, std::make_shared<const CounterSet>(DefaultCounters()), PageOptions{});
  PageCache cache;
  auto first = Read(300, 10 * kSecond);
  for (std::int64_t now : {10 * kSecond, 10 * kSecond + kSecond / 4, 12 * kSecond}) {
    std::string cached = "prefix\n", full = "prefix\n";
    cache.Render(page, first, nullptr, now, cached);
    page->Render(*first, now, full);
    EXPECT_EQ(cached, full) << "at " << now;
  }
  std::string later;
  cache.Render(page, first, nullptr, 12 * kSecond, later);
  EXPECT_NE(later.find("gpulse_device_sample_age_seconds{gpu=\"0\",UUID=\"GPU-aaaa\"} 2\n"),
            std::string::npos)
      << later;
  auto second = Read(450, 13 * kSecond);
  std::string next, full;
  cache.Render(page, second, nullptr, 13 * kSecond, next);
  page->Render(*second, 13 * kSecond, full);
  EXPECT_EQ(next, full);
  EXPECT_NE(next.find("} 450.000000\n"), std::string::npos) << "the new read, not the kept body";
}

}  // namespace
}  // namespace gpulse::exporter
