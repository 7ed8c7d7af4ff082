// `/`: a short HTML page naming the exporter and linking its endpoints (the "Writing exporters"
// guide asks for one).
#pragma once

#include <string>

#include "core/device.h"

namespace gpulse::exporter {

std::string LandingPage(const SystemInfo& info, const std::string& version);

}  // namespace gpulse::exporter
