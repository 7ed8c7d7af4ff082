// Micro-benchmarks of the samples.csv pass (src/power), in memory, so the page cache and the kernel
// copy are out of the picture. Each is a throughput (bytes/s) over the same generated text, shaped
// like bench/power/gen_package.py (16 nodes x 8 GPUs, 1 s cycles, 4 windows):
//   BM_CountLines      the anchor: memchr over the bytes, what `wc -l` does
//   BM_Sha256          the digest alone (OpenSSL EVP; SHA-NI where the CPU has it)
//   BM_Read            the line reader alone (copy into the read buffer, cut at line ends)
//   BM_ScanNoDigest    every row rule, device table and window accumulators, no digest
//   BM_Scan            the single-threaded pass validate-power runs (rules + digest)
//   BM_ScanThreads/N   the same with N threads (digest on its own thread, N-1 parser ranges)
//   BM_GeneralRow      the general row parser alone (what a row that misses the fast path costs)
// Run: build/bin/power_scan_bench   (bench/power/run.sh measures the real file end to end)
#include <benchmark/benchmark.h>

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "power/readers/byte_source.h"
#include "power/readers/contract.h"
#include "power/readers/samples_row.h"
#include "power/readers/samples_scan.h"

namespace gpulse::power {
namespace {

constexpr double kT0 = 1700000000.0;
constexpr int kNodes = 16, kGpus = 8, kWindows = 4;

std::string Repr(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

struct Corpus {
  std::string text;
  std::vector<TimeSpan> spans;
};

const Corpus& TheCorpus() {
  static const Corpus corpus = [] {
    Corpus c;
    c.text = std::string(kSamplesHeader) + "\n";
    const size_t target = 64u << 20;
    int64_t seq = 0;
    while (c.text.size() < target) {
      auto cycle = static_cast<double>(seq);
      std::string prefix = "1," + Repr(kT0 + cycle + 0.000123) + "," + std::to_string(seq) + ",";
      for (int n = 0; n < kNodes; ++n)
        for (int g = 0; g < kGpus; ++g) {
          char row[256];
          int len =
              std::snprintf(row, sizeof row, "node-%03d,%d,GPU-%016x-%04d-4c7e-9a1b-%03d000000%d,",
                            n, g, 0x9e3779b9u * (n * kGpus + g + 1), g, n, g);
          c.text += prefix;
          c.text.append(row, len);
          c.text += Repr(100.25 + static_cast<double>((seq * 7 + int64_t{g} * 13) % 600)) + "\n";
        }
      ++seq;
    }
    double span = static_cast<double>(seq - 5);
    for (int w = 0; w < kWindows; ++w) {
      double start = kT0 + 2.5 + w * span / kWindows;
      c.spans.push_back({start, start + span / kWindows - 2.0});
    }
    return c;
  }();
  return corpus;
}

void Throughput(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(TheCorpus().text.size()));
}

void BM_CountLines(benchmark::State& state) {
  const std::string& t = TheCorpus().text;
  for (auto _ : state) {
    size_t n = 0;
    for (const char *p = t.data(), *e = p + t.size();
         (p = static_cast<const char*>(std::memchr(p, '\n', e - p))); ++p)
      ++n;
    benchmark::DoNotOptimize(n);
  }
  Throughput(state);
}
BENCHMARK(BM_CountLines)->Unit(benchmark::kMillisecond);

void BM_Sha256(benchmark::State& state) {
  const std::string& t = TheCorpus().text;
  for (auto _ : state) {
    Sha256 sha;
    for (size_t i = 0; i < t.size(); i += kReadStepBytes)
      sha.Update(std::string_view(t).substr(i, kReadStepBytes));
    benchmark::DoNotOptimize(sha.HexDigest());
  }
  Throughput(state);
}
BENCHMARK(BM_Sha256)->Unit(benchmark::kMillisecond);

void ScanWith(benchmark::State& state, int threads, bool digest) {
  ScanOptions o;
  o.spans = TheCorpus().spans;
  o.threads = threads;
  o.digest = digest;
  for (auto _ : state) {
    SamplesScan s = ScanSamplesBytes(TheCorpus().text, o);
    if (!s.Reasons().empty() || s.devices.size() != static_cast<size_t>(kNodes) * kGpus)
      state.SkipWithError("the generated corpus did not validate");
    benchmark::DoNotOptimize(s);
  }
  Throughput(state);
}

void BM_ScanNoDigest(benchmark::State& state) { ScanWith(state, 1, false); }
BENCHMARK(BM_ScanNoDigest)->Unit(benchmark::kMillisecond);

void BM_Scan(benchmark::State& state) { ScanWith(state, 1, true); }
BENCHMARK(BM_Scan)->Unit(benchmark::kMillisecond);

void BM_ScanThreads(benchmark::State& state) {
  ScanWith(state, static_cast<int>(state.range(0)), true);
}
BENCHMARK(BM_ScanThreads)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Read(benchmark::State& state) {
  auto src = MemorySource(TheCorpus().text);
  for (auto _ : state) {
    size_t n = 0;
    Status st = ForEachBlock(
        *src, 0, src->size(), ScanOptions{}.chunk_bytes, [&](std::string_view b) { n += b.size(); },
        [] {});
    if (!st.ok()) state.SkipWithError("read failed");
    benchmark::DoNotOptimize(n);
  }
  Throughput(state);
}
BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond);

void BM_GeneralRow(benchmark::State& state) {
  const std::string& t = TheCorpus().text;
  std::string scratch;
  size_t first = t.find('\n') + 1;
  for (auto _ : state) {
    size_t ok = 0;
    for (size_t p = first, nl; (nl = t.find('\n', p)) != std::string::npos; p = nl + 1)
      ok += ParseSampleRow(std::string_view(t).substr(p, nl - p), scratch).ok;
    benchmark::DoNotOptimize(ok);
  }
  Throughput(state);
}
BENCHMARK(BM_GeneralRow)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpulse::power

BENCHMARK_MAIN();
