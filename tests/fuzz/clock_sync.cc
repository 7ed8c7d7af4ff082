// The outputs `gpulse collect` reads from the clock-sync tools (src/power/collector/clock_sync.cc):
// timedatectl, chronyc tracking and ntpq peers, each with any exit code. A verdict of "synced"
// needs exit code 0; a parser never reads past its input.
//
// Input: byte 0 picks the tool (mod 3) and byte 1 the exit code (0 when even); the rest is output.
#include "power/collector/clock_sync.h"

#include <string>

#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int exit_code = data[1] % 2 == 0 ? 0 : data[1];
  std::string_view out = fuzz::Text(data + 2, size - 2);
  power::ToolVerdict v;
  switch (data[0] % 3) {
    case 0:
      v = power::ParseTimedatectl(exit_code, out);
      break;
    case 1:
      v = power::ParseChronycTracking(exit_code, out);
      break;
    default:
      v = power::ParseNtpqPeers(exit_code, out);
      break;
  }
  if (v.verdict == power::SyncVerdict::kSynced) FUZZ_CHECK(exit_code == 0);
  return 0;
}
