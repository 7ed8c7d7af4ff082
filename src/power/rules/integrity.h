// Whether samples.csv is the file the manifest describes: its SHA-256 against samples_sha256 and
// its data rows against sample_row_count. validate-power fails a package on these and `energy`
// withholds every figure of one (issue 40: energy used to integrate a tampered samples.csv), so
// both call this one check. Thread-safe: no shared state.
#pragma once

#include <string>
#include <vector>

#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"

namespace gpulse::power {

// The digest: present, a lowercase SHA-256, equal to the bytes on disk. Appends what is wrong to
// `failures`; true when the digest was verified.
bool CheckDigest(const Json& manifest, const SamplesScan& samples,
                 std::vector<std::string>& failures);

// sample_row_count, when the manifest has one and samples.csv's header could be read, against the
// data rows. Appends what is wrong to `failures`.
void CheckRowCount(const Json& manifest, const SamplesScan& samples,
                   std::vector<std::string>& failures);

// Both checks; empty when samples.csv is verified.
std::vector<std::string> SamplesIntegrityFailures(const Json& manifest, const SamplesScan& samples);

}  // namespace gpulse::power
