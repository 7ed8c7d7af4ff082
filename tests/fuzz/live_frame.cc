// The live frame `gpulse top --host` reads from an exporter or agent (src/cli/top_model.cc
// ParseFrame): any JSON a server sends. A frame that is accepted has entities and processes that
// the renderer can walk (GpuCount never exceeds the entities).
#include <nlohmann/json.hpp>

#include "cli/top_model.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(fuzz::Text(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto frame = cli::top::ParseFrame(j);
  if (!frame) return 0;
  FUZZ_CHECK(cli::top::GpuCount(*frame) <= frame->entities.size());
  return 0;
}
