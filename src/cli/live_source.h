// Where `gpulse top` gets its frames (docs/schema/live-frame.schema.json): a node agent's or an
// exporter's stream (GET /api/v1/stream), sharing that server's one read per interval with every
// other viewer, or reads of its own when no agent runs.
//
// Which one: --host (or $GPULSE_HOST) names a server, and failing to reach it is an error; --direct
// or a backend flag (--simulate, --nvml-lib) reads directly; otherwise the local agent's socket is
// tried and, when nobody answers there, gpulse reads directly and Describe() says why.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/result.h"
#include "gpu/backend.h"

namespace gpulse::cli {

struct LiveSourceOptions {
  std::string host;            // "" = $GPULSE_HOST, else try the local agent socket
  bool direct = false;         // read the GPUs directly, never through an agent
  gpu::BackendOptions gpu;     // for direct reads
  bool backend_flags = false;  // --simulate or --nvml-lib given: direct
  std::string procfs_root;     // for direct reads (--procfs-root)
  int interval_ms = 1000;      // direct reads: the cadence (a server has its own)
};

class LiveSource {
 public:
  virtual ~LiveSource() = default;
  // The next frame, waiting at most `timeout`; nullopt when none came in time. An error when the
  // source is gone (the agent stopped, the stream broke), naming why.
  virtual Result<std::optional<nlohmann::json>> Next(std::chrono::milliseconds timeout) = 0;
  // For the header line, e.g. "agent unix:///run/gpulse/agent.sock" or
  // "direct (no agent at unix:///run/gpulse/agent.sock: connection refused)".
  virtual std::string Describe() const = 0;
};

// Errors: Unavailable when a named server cannot be reached or refuses the stream (its message,
// e.g. the viewer limit); InvalidArgument for a bad --host; the backend's error for direct reads.
Result<std::unique_ptr<LiveSource>> OpenLiveSource(const LiveSourceOptions& options);

}  // namespace gpulse::cli
