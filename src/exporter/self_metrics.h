// The exporter's and the agent's metrics about themselves, at the end of /metrics: the process
// collector's families of Prometheus' client libraries (process_resident_memory_bytes,
// process_open_fds, process_cpu_seconds_total, process_start_time_seconds, ...), and the HTTP
// server's connections, refusals and web-config reloads (gpulse_http_*, gpulse_web_config_*).
// docs/metrics.md lists them.
#pragma once

#include <string>

#include "net/server.h"
#include "sys/process_stats.h"

namespace gpulse::exporter {

// The families, in the text exposition format; a reading that is absent is left out.
std::string RenderSelfMetrics(const sys::ProcessStats& process, const net::ServerStats& server);

}  // namespace gpulse::exporter
