// The HTTP request and response as gpulse's handlers see them: plain structs, no Boost types, so
// code that serves pages does not pull the Asio/Beast headers in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpulse::net {

class EventStream;  // net/event_stream.h

// Who is at the other end of a unix-socket connection (SO_PEERCRED), as the kernel says.
struct PeerCredentials {
  std::uint32_t pid = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

struct HttpRequest {
  // GET or HEAD; also POST, PUT and DELETE when the server allows writes (405 otherwise).
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // target without the query
  bool accepts_gzip = false;
  std::string remote;  // peer address, for logs ("unix" for the unix socket)
  std::string body;    // POST and PUT (at most ServerOptions::max_body_bytes)
  std::string content_type;
  std::optional<PeerCredentials> peer;  // set for unix-socket clients only
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  bool compressible = false;  // gzip the body when the client accepts it
  // The body is gzip already: the handler compressed it because the request's accepts_gzip was
  // set. Sent as it is, with Content-Encoding: gzip and Vary: Accept-Encoding.
  bool gzipped = false;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  // Set: a streamed answer (event_stream.h). The head is written with `status`, `content_type`
  // and `headers`, then the stream's frames as chunks; `body` and `compressible` are ignored.
  std::shared_ptr<EventStream> stream;
};

// Completes a request. Thread-safe; call exactly once, from any thread.
using Respond = std::function<void(HttpResponse)>;

// Serves one request. Runs on the server's event-loop thread and must not block: long work goes
// elsewhere and calls `respond` when done.
using Handler = std::function<void(const HttpRequest&, Respond respond)>;

HttpResponse TextResponse(int status, std::string body);

}  // namespace gpulse::net
