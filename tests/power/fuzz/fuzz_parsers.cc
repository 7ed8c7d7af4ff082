// libFuzzer target for the power-package parsers: the samples.csv reader (one and three threads
// must agree), and the manifest / window JSON readers with every rule that walks them. The first
// input byte picks the parser. Any crash, sanitizer report or disagreement is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "power/json_io.h"
#include "power/samples_scan.h"
#include "power/topology.h"
#include "power/windows.h"
#include "power/wire_contract.h"

using namespace gpulse::power;

static void FuzzCsv(std::string_view bytes) {
  ScanOptions one;
  one.spans = {{1000.0, 1010.0}, {0.0, 1e18}};
  one.chunk_bytes = 256;
  ScanOptions three = one;
  three.threads = 3;
  SamplesScan a = ScanSamplesBytes(bytes, one);
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1)
    FuzzJson(bytes);
  else
    FuzzCsv(bytes);
  return 0;
}
