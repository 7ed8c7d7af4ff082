// The `gpulse collect` configuration (src/power/collect_config.h) through ParseCollectConfig, and
// what the collector derives from an accepted one before anything runs: the exporter launch plan
// (PlanExporterLaunch, which REQUIRES a validated config), each node's het group, and the command
// split into words (SplitCommand, also fuzzed on the raw input).
#include "power/collector/collect_config.h"

#include <string>

#include "fuzz/fuzz_util.h"
#include "power/collector/exporter_launch.h"

using namespace gpulse;
using namespace gpulse::power;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  if (auto words = SplitCommand(text); words.ok()) FUZZ_CHECK(!words->empty());
  auto c = ParseCollectConfig(text);
  if (!c.ok()) {
    FUZZ_CHECK(!c.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(!c->endpoints.empty());
  FUZZ_CHECK(c->interval_s > 0 && c->request_timeout_s > 0);
  FUZZ_CHECK(c->join_timeout_s > 2 * c->cycle_deadline_s());
  for (const EndpointConfig& e : c->endpoints) {
    FUZZ_CHECK(e.port != 0);
    (void)HetGroupOf(*c, e.hostname);
  }
  FUZZ_CHECK(SplitCommand(c->exporter.command).ok());
  auto plan = PlanExporterLaunch(*c, "/logs");
  for (const LaunchSpec& s : plan) FUZZ_CHECK(!s.argv.empty() && !s.hostnames.empty());
  return 0;
}
