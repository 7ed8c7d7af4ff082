#include "exporter/landing.h"

#include "core/html.h"

namespace gpulse::exporter {

std::string LandingPage(const SystemInfo& info, const std::string& version) {
  std::string gpus =
      std::to_string(info.devices.size()) + " GPU" + (info.devices.size() == 1 ? "" : "s");
  if (info.simulated) gpus += " (simulated: scenario " + info.scenario + ")";
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>gpulse "
         "exporter</title></head>\n"
         "<body>\n<h1>gpulse exporter</h1>\n<p>gpulse " +
         EscapeHtml(version) + ", " + EscapeHtml(gpus) +
         ", dcgm-exporter compatible metrics.</p>\n<ul>\n"
         "<li><a href=\"ui\">/ui</a>: the live view of every GPU</li>\n"
         "<li><a href=\"metrics\">/metrics</a>: Prometheus metrics</li>\n"
         "<li><a href=\"health\">/health</a>: 200 when every GPU was read successfully and "
         "recently</li>\n"
         "<li><a href=\"api/v1/devices\">/api/v1/devices</a>: the GPUs (JSON)</li>\n"
         "<li><a href=\"api/v1/snapshot\">/api/v1/snapshot</a>: the current readings (JSON)</li>\n"
         "</ul>\n</body>\n</html>\n";
}

}  // namespace gpulse::exporter
