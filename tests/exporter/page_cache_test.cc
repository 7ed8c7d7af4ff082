// The kept /metrics body (src/exporter/page_cache.h): every scrape gets exactly what rendering
// its snapshot at that moment gives, ages included, and a new snapshot or page renders again.
#include "exporter/page_cache.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <optional>

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

// zlib's gzip reader, which checks the trailer; nullopt unless the member ends cleanly.
std::optional<std::string> Gunzip(const std::string& gz) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return std::nullopt;
  std::string out(1 << 20, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&s, Z_FINISH);
  out.resize(out.size() - s.avail_out);
  inflateEnd(&s);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
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

TEST(PageCache, AGzipScrapeInflatesToThePlainScrapeAndItsTail) {
  SystemInfo info = OneGpu();
  auto page = std::make_shared<const MetricsPage>(
      info, std::make_shared<const CounterSet>(DefaultCounters()), PageOptions{});
  PageCache cache;
  const std::string tail = "gpulse_live_viewers 3\n";
  for (auto snap : {Read(300, 10 * kSecond), Read(450, 13 * kSecond)}) {
    const std::int64_t t = snap->entities[0].sample.t_mono_ns;
    for (std::int64_t now : {t, t + kSecond / 4, t + 2 * kSecond}) {
      std::string gz = "kept";
      ASSERT_TRUE(cache.RenderGzip(page, snap, nullptr, now, tail, 1, gz).ok());
      ASSERT_EQ(gz.substr(0, 4), "kept") << "appended";
      std::string plain;
      page->Render(*snap, now, plain);
      auto back = Gunzip(gz.substr(4));
      ASSERT_TRUE(back.has_value()) << "at " << now;
      EXPECT_EQ(*back, plain + tail) << "at " << now;
    }
  }
  // The plain and the gzip scrapes share the kept body; another level compresses it again.
  std::string plain, gz;
  auto snap = Read(500, 20 * kSecond);
  cache.Render(page, snap, nullptr, 21 * kSecond, plain);
  ASSERT_TRUE(cache.RenderGzip(page, snap, nullptr, 21 * kSecond, "", 9, gz).ok());
  auto back = Gunzip(gz);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, plain);
  EXPECT_NE(back->find("} 500.000000\n"), std::string::npos);
}

TEST(PageCache, AGzipScrapeWithoutAgesIsTheBodyAndTail) {
  SystemInfo info = OneGpu();
  auto page = std::make_shared<const MetricsPage>(
      info, std::make_shared<const CounterSet>(DefaultCounters()), PageOptions{});
  auto never_read = std::make_shared<const Snapshot>();  // no entity read: no ages
  PageCache cache;
  std::string gz, plain;
  ASSERT_TRUE(cache.RenderGzip(page, never_read, nullptr, kSecond, "tail\n", 1, gz).ok());
  page->Render(*never_read, kSecond, plain);
  auto back = Gunzip(gz);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, plain + "tail\n");
  EXPECT_EQ(back->find("sample_age"), std::string::npos) << *back;
}

}  // namespace
}  // namespace gpulse::exporter
