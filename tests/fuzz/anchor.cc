// The anchor of the fuzzing figures (bench/RESULTS.md): a target that only reads every input byte,
// so its executions per second are libFuzzer's own cost (mutation, coverage, sanitizers) on this
// machine. Every other target's rate is stated as a ratio against it, run in the same session.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  volatile std::uint8_t sum = 0;
  for (std::size_t i = 0; i < size; ++i) sum = sum + data[i];
  return 0;
}
