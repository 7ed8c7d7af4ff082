// The self-metrics' /proc readers (src/sys/process_stats.cc): a /proc/PID/stat line, whose command
// name may hold spaces and parentheses, and /proc/stat's btime line.
#include "fuzz/fuzz_util.h"
#include "sys/process_stats.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  if (auto line = sys::ParseStatLine(text)) FUZZ_CHECK(text.find(')') != std::string_view::npos);
  if (auto boot = sys::ParseBootTime(text)) FUZZ_CHECK(*boot >= 0);
  return 0;
}
