// Reads DCGM_FI_DEV_POWER_USAGE out of one exporter scrape (gpulse's exporter or dcgm-exporter: the
// same text format, `gpu` and `UUID` labels, `%f` values; `Hostname` and every other label or
// metric is ignored, so the endpoint map alone names the host). Power sample lines go through the
// one streaming parser in src/prom; every other line only gets a cheap shape check (blank, comment,
// or starting like a metric name; no NUL byte), so a scrape costs little more than one pass over
// it. Thread-safe: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::power {

struct GpuPower {
  int64_t gpu_index = 0;
  std::string uuid;
  double power_w = 0;
};

struct ScrapeParse {
  std::vector<GpuPower> gpus;        // ordered by gpu index, one per index
  std::vector<std::string> reasons;  // deduplicated, first seen first
  std::string parse_error;           // set with endpoint_parse_error
};

// Rules: a body the parser rejects (a malformed power line, a NUL byte, a line that is neither
// blank, a comment nor starts like a metric name) is endpoint_parse_error with no rows; no power
// sample is power_metric_missing; a sample with a non-empty GPU_I_ID or GPU_I_PROFILE is
// mig_instance_unsupported (the metric still counts as present); a `gpu` label absent,
// non-integer or negative is gpu_index_missing; an empty or absent `UUID` is gpu_uuid_missing; a
// non-finite or negative value is invalid_power_value; a gpu index seen twice is
// duplicate_power_metric and every row of that index is dropped.
ScrapeParse ParsePowerScrape(std::string_view body);

}  // namespace gpulse::power
