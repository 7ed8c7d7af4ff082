// The exporter's counters file (src/exporter/counters.h), dcgm-exporter's CSV: hostile text must
// either fail with the origin and a line number or give a set that survives a round trip: written
// back as `gpulse exporter --print-counters` writes it (FormatCounters) and parsed again, it gives
// the same counters (field, name, type, help) and label rows.
#include "exporter/counters.h"

#include <string>

#include "fuzz/fuzz_util.h"

using namespace gpulse;
using namespace gpulse::exporter;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto set = ParseCounters(fuzz::Text(data, size), "counters.csv");
  if (!set.ok()) {
    FUZZ_CHECK(set.error().message.starts_with("counters.csv"));
    return 0;
  }
  for (const Counter& c : set->counters) FUZZ_CHECK(c.field < AllFields().size());
  for (const LabelRow& l : set->labels) FUZZ_CHECK(l.field != nullptr);
  (void)set->ReadFields();
  std::string text = FormatCounters(*set);
  auto again = ParseCounters(text, "formatted");
  if (!again.ok())
    std::fprintf(stderr, "%s\n--\n%s\n", text.c_str(), again.error().message.c_str());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->counters.size() == set->counters.size());
  for (std::size_t i = 0; i < set->counters.size(); ++i) {
    const Counter &a = set->counters[i], &b = again->counters[i];
    FUZZ_CHECK(a.field == b.field && a.name == b.name && a.type == b.type);
    // regressions/counters/help-of-blanks-only: FormatCounters wrote a help text with blanks at
    // either end unquoted, and reading it back trimmed them (fixed: it quotes them).
    FUZZ_CHECK(b.help == a.help);
  }
  FUZZ_CHECK(again->labels.size() == set->labels.size());
  for (std::size_t i = 0; i < set->labels.size(); ++i)
    FUZZ_CHECK(set->labels[i].field == again->labels[i].field &&
               set->labels[i].name == again->labels[i].name);
  return 0;
}
