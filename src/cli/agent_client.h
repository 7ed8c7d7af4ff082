// How the management verbs (`group`, `watch`, `stats`, `dmon --host`) talk to a node agent: one
// blocking HTTP/1.1 request over the agent's unix socket or TCP, JSON in and out.
//
// --host takes unix://PATH, HOST:PORT, http://HOST:PORT or https://HOST:PORT (default:
// $GPULSE_HOST, else the local socket sys::FindAgentSocket finds: /run/gpulse/agent.sock, else the
// per-user socket an agent started without root made). With https:// the agent's
// certificate is verified (--ca-file, else the system's CAs; --insecure skips it) and --cert-file
// and --key-file present a client certificate. Basic auth, when the agent's web config asks for it,
// comes from $GPULSE_AGENT_USER and $GPULSE_AGENT_PASSWORD.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/agent_reply.h"
#include "core/result.h"

namespace CLI {
class App;
}

namespace gpulse::cli {

// "" = $GPULSE_HOST, else the default socket (sys/runtime_dir.h).
std::string ResolveAgentHost(const std::string& flag);

// Sends one request; fails (Unavailable) when the agent cannot be reached, naming the host.
Result<AgentReply> CallAgent(const std::string& host, const std::string& method,
                             const std::string& target, const std::string& body = "");

// An answer read as it comes (GET /api/v1/stream): the head once, then the body's bytes, chunked
// transfer decoded, for as long as the server sends them.
class AgentStream {
 public:
  virtual ~AgentStream() = default;
  // Waits at most `timeout` for more body bytes and appends them to `out`: true when some came,
  // false when none did in time. Unavailable when the connection ended or broke.
  virtual Result<bool> Read(std::string& out, std::chrono::milliseconds timeout) = 0;
};

// Sends GET `target` and reads the head. Errors: Unavailable when the server cannot be reached or
// answers other than 200 (the message carries its answer, e.g. the viewer limit); `*reached` says
// whether a server answered at all.
Result<std::unique_ptr<AgentStream>> OpenAgentStream(const std::string& host,
                                                     const std::string& target,
                                                     bool* reached = nullptr);

// The message of an error reply ({"error": ...}), else the status and body.
std::string ReplyError(const AgentReply& r);

// One JSON call of a management verb: the answer's JSON when its status is `want`; otherwise
// prints "gpulse VERB: why" on stderr, sets *code (kExitUsage for a 400, 404 or 501, else
// kExitFailure) and answers nullopt.
std::optional<nlohmann::json> CallForVerb(const std::string& verb, const std::string& host,
                                          const std::string& method, const std::string& target,
                                          const nlohmann::json& body, int want, int* code);

// Adds --host and the TLS flags (--ca-file, --cert-file, --key-file, --insecure) to a verb.
void AddHostOption(CLI::App& app, std::string& host);

}  // namespace gpulse::cli
