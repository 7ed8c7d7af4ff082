// The counters file: which fields the exporter serves, in dcgm-exporter's CSV format, so a file
// written for dcgm-exporter works unchanged:
//
//   # comment
//   DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).
//   DCGM_FI_DRIVER_VERSION, label, Driver Version
//
// Each line is `field, type, help` (exactly three comma-separated fields, whitespace trimmed, CSV
// double quotes allowed around a field). `type` is gauge, counter or label: a label row attaches
// the field's string value as a label to every series instead of making a family. Fields are DCGM
// names or DCGM 4.6 aliases. A DCGM field gpulse knows but cannot read (profiling, NVLink, ...) is
// skipped with a warning; anything else that is wrong fails with the file, the line number and the
// reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/fields.h"
#include "core/result.h"

namespace gpulse::exporter {

struct Counter {
  FieldIndex field;
  std::string name;  // as the family is exposed: the DCGM name or alias the file used
  PromType type;
  std::string help;
};

struct LabelRow {
  const LabelFieldSpec* field;
  std::string name;  // the label name: the DCGM name or alias the file used
};

struct CounterSet {
  std::string origin;                 // the file path, or "built-in default"
  std::vector<Counter> counters;      // file order
  std::vector<LabelRow> labels;       // file order
  std::vector<std::string> warnings;  // "FILE:LINE: skipping NAME: reason"

  // The catalogue fields to read for this set: every counter's, plus the XID field (230), which
  // gpulse_xid_errors_total needs whether or not the file lists it.
  std::vector<FieldIndex> ReadFields() const;
};

// `origin` names the text in messages ("FILE:LINE: ...").
Result<CounterSet> ParseCounters(std::string_view text, const std::string& origin);
Result<CounterSet> LoadCounters(const std::string& path);

// dcgm-exporter's default counters (research/dcgm.md §1) for every field gpulse reads: the 20
// readable families and the driver-version label. Help texts are the catalogue's.
CounterSet DefaultCounters();

// The set written back in the counters file format (`gpulse exporter --print-counters`).
std::string FormatCounters(const CounterSet& set);

}  // namespace gpulse::exporter
