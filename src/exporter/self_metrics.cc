#include "exporter/self_metrics.h"

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "core/fields.h"
#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

using enum SelfMetric;

void Header(std::string& out, SelfMetric m) {
  const SelfMetricSpec& s = SelfMetricAt(m);
  prom::AppendFamilyHeader(out, s.name, s.help, s.prom_type);
}

// One family with one sample; nothing when the reading is absent.
template <class T>
void Single(std::string& out, SelfMetric m, const std::optional<T>& value) {
  if (!value) return;
  Header(out, m);
  fmt::format_to(std::back_inserter(out), "{} {}\n", SelfMetricAt(m).name, *value);
}

// One family with one label, a sample per value.
void Labelled(std::string& out, SelfMetric m, std::string_view label,
              std::initializer_list<std::pair<std::string_view, std::uint64_t>> samples) {
  Header(out, m);
  for (const auto& [value, count] : samples) {
    fmt::format_to(std::back_inserter(out), "{}{{{}=\"{}\"}} {}\n", SelfMetricAt(m).name, label,
                   value, count);
  }
}

void Process(std::string& out, const sys::ProcessStats& p) {
  Single(out, kProcessCpuSeconds, p.cpu_seconds);
  Single(out, kProcessOpenFds, p.open_fds);
  Single(out, kProcessMaxFds, p.max_fds);
  Single(out, kProcessVirtualMemory, p.virtual_bytes);
  Single(out, kProcessVirtualMemoryMax, p.virtual_max_bytes);
  Single(out, kProcessResidentMemory, p.resident_bytes);
  Single(out, kProcessStartTime, p.start_time_unix_s);
}

void Server(std::string& out, const net::ServerStats& s) {
  using U = std::optional<std::uint64_t>;
  Single(out, kHttpConnections, U(s.connections_open));
  Single(out, kHttpConnectionsAccepted, U(s.connections_accepted));
  Single(out, kHttpConnectionsRefused, U(s.connections_rejected));
  Labelled(out, kHttpConnectionsEvicted, "reason",
           {{"unproven", s.connections_evicted}, {"idle", s.connections_evicted_idle}});
  Single(out, kHttpRequests, U(s.requests));
  Labelled(out, kHttpRequestsRefused, "reason",
           {{"header_too_large", s.refused_header},
            {"body_too_large", s.refused_body},
            {"malformed", s.refused_malformed},
            {"in_flight", s.refused_busy},
            {"auth_busy", s.auth_busy}});
  Labelled(out, kHttpTlsHandshakesFailed, "reason",
           {{"queue_full", s.handshakes_refused}, {"error", s.handshakes_failed}});
  Single(out, kWebConfigLastReloadSuccessful, U(s.web_config_ok ? 1 : 0));
  Labelled(out, kWebConfigReloads, "result",
           {{"success", s.web_config_reloads}, {"failure", s.web_config_reload_failures}});
}

}  // namespace

std::string RenderSelfMetrics(const sys::ProcessStats& process, const net::ServerStats& server) {
  std::string out;
  out.reserve(4096);
  Process(out, process);
  Server(out, server);
  return out;
}

}  // namespace gpulse::exporter
