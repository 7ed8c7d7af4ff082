// The management CLI's reader of what an agent answers (cli/agent_client.h): the status line, the
// content type and the body of an HTTP/1.1 response, and a streamed body's chunks as they arrive.
// Internal to the CLI; its own file so that a fuzz target can reach it (tests/fuzz/agent_reply.cc).
//
// Thread-compatible.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"

namespace gpulse::cli {

struct AgentReply {
  int status = 0;
  std::string content_type;
  std::string body;
  nlohmann::json json;  // parsed when the body is JSON (else discarded)
};

// A whole response as read until the server closed the connection. `shown` names the agent in the
// error when `raw` is not an HTTP response.
Result<AgentReply> ParseReply(const std::string& raw, const std::string& shown);

// A streamed body (GET /api/v1/stream), chunked or as it is.
class StreamBody {
 public:
  explicit StreamBody(bool chunked) : chunked_(chunked) {}
  // Moves the body bytes at the front of `raw` to `out` (undoing chunked transfer, leaving an
  // incomplete chunk-size line in `raw`); true when any moved.
  bool Decode(std::string& raw, std::string& out);
  // The last chunk has come.
  bool ended() const { return ended_; }

 private:
  bool chunked_;
  std::size_t left_ = 0;  // bytes left in the current chunk
  bool ended_ = false;
};

}  // namespace gpulse::cli
