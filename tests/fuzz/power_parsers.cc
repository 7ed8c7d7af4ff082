// The power-package parsers: the samples.csv reader (the fast path and the general parser must
// agree exactly, and so must one and two threads; one and three threads must agree on the results
// that do not depend on summation order), and the manifest / window JSON readers with every rule
// that walks them. The first input byte picks the parser. For samples.csv the thread comparisons
// run on one input in sixteen, chosen by an FNV-1a hash of the input (so a mutation anywhere can
// move an input in or out, and a reproducer always takes the same path), and on every input when
// GPULSE_FUZZ_EVERY_CHECK is set (run.sh sets it for the regression files): every threaded scan
// starts and ends one to three threads, and under ASan each thread's end unmaps its stacks, a TLB
// shootdown across every CPU; on every input they held the target at a few hundred executions a
// second (bench/RESULTS.md). Any crash, sanitizer report or disagreement is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"
#include "power/rules/topology.h"
#include "power/rules/windows.h"
#include "power/rules/wire_contract.h"

using namespace gpulse::power;

static bool SameDouble(double x, double y) { return x == y || (x != x && y != y); }

static bool SameOpt(const std::optional<double>& x, const std::optional<double>& y) {
  return x.has_value() == y.has_value() && (!x || SameDouble(*x, *y));
}

// The fast path and the general parser must agree on everything, bit for bit.
static bool SameScan(const SamplesScan& a, const SamplesScan& b) {
  if (a.Reasons() != b.Reasons() || a.data_rows != b.data_rows ||
      a.malformed_rows != b.malformed_rows || a.max_scrape_seq != b.max_scrape_seq ||
      a.sha256_hex != b.sha256_hex || a.malformed_examples.size() != b.malformed_examples.size() ||
      a.devices.size() != b.devices.size())
    return false;
  for (size_t i = 0; i < a.malformed_examples.size(); ++i)
    if (a.malformed_examples[i].line != b.malformed_examples[i].line ||
        a.malformed_examples[i].why != b.malformed_examples[i].why)
      return false;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const DeviceSamples &x = a.devices[i], &y = b.devices[i];
    if (x.key != y.key || x.uuids != y.uuids || x.rows != y.rows ||
        x.duplicate_rows != y.duplicate_rows || x.non_monotonic != y.non_monotonic ||
        !SameDouble(x.first_t, y.first_t) || !SameDouble(x.last_t, y.last_t) ||
        x.spans.size() != y.spans.size())
      return false;
    for (size_t k = 0; k < x.spans.size(); ++k) {
      const SpanCoverage &c = x.spans[k], &d = y.spans[k];
      if (!SameOpt(c.lower_t, d.lower_t) || !SameOpt(c.upper_t, d.upper_t) ||
          !SameDouble(c.max_gap_s, d.max_gap_s) || c.observed_intervals != d.observed_intervals ||
          c.uuids != d.uuids || !SameDouble(c.energy_j, d.energy_j) ||
          !SameDouble(c.power_min_w, d.power_min_w) || !SameDouble(c.power_max_w, d.power_max_w))
        return false;
    }
  }
  return true;
}

static void FuzzCsv(std::string_view bytes, bool threads) {
  ScanOptions one;
  one.spans = {{1000.0, 1010.0}, {0.0, 1e18}, {1005.0, 1006.0}};
  one.chunk_bytes = 256;
  ScanOptions general = one;
  general.fast_path = false;
  ScanOptions two = one;  // one range, the digest hashed on its own thread from the same reads
  two.threads = 2;
  ScanOptions three = one;
  three.threads = 3;
  SamplesScan a = ScanSamplesBytes(bytes, one);
  if (!SameScan(a, ScanSamplesBytes(bytes, general))) std::abort();
  if (!threads) return;
  if (!SameScan(a, ScanSamplesBytes(bytes, two))) std::abort();
  SamplesScan b = ScanSamplesBytes(bytes, three);
  if (a.Reasons() != b.Reasons() || a.data_rows != b.data_rows ||
      a.devices.size() != b.devices.size() || a.sha256_hex != b.sha256_hex)
    std::abort();
  for (size_t i = 0; i < a.devices.size(); ++i) {
    if (a.devices[i].rows != b.devices[i].rows || a.devices[i].uuids != b.devices[i].uuids)
      std::abort();
    for (size_t k = 0; k < one.spans.size(); ++k)
      if (a.devices[i].spans[k].max_gap_s != b.devices[i].spans[k].max_gap_s) std::abort();
  }
}

static void FuzzJson(std::string_view bytes) {
  auto doc = ParseJsonText(bytes);
  if (!doc.ok()) return;
  (void)ParseWindowFile(*doc, "windows/f.json");
  if (!doc->is_object()) return;
  (void)CheckWireContract(*doc);
  (void)StoredReasons(*doc);
  auto topology = ParseTopology(*doc);
  if (topology.ok()) {
    (void)CheckDevices(*topology, {});
    (void)CheckExpectedRoles(*topology, {{"prefill", 1}, {"decode", 0}});
    (void)CheckDistinctHetGroups(*topology);
  }
  (void)SameEvidence(*doc, *doc);
  (void)Describe(*doc);
}

// FNV-1a (64 bits): fixed, unlike std::hash, so an input's path never depends on the library.
static uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

static bool ThreadChecks(std::string_view bytes) {
  static const bool every = std::getenv("GPULSE_FUZZ_EVERY_CHECK") != nullptr;
  return every || Fnv1a(bytes) % 16 == 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1)
    FuzzJson(bytes);
  else
    FuzzCsv(bytes, ThreadChecks(bytes));
  return 0;
}
