// gpulse's HTTP/1.1 server: one event loop on one thread (Boost.Asio/Beast behind this header), so
// a slow, idle or malicious client costs a socket and a few kilobytes, never a thread, and never
// delays another client's scrape.
//
// Limits (docs/exporter.md, "Limits"): every byte a client sends is bounded before it is buffered:
// the read buffer holds at most max_header_bytes + max_body_bytes, so a request line, a header
// line, a chunk-size line with its extensions or a trailer longer than that is refused (431 before
// the header ends, 400 after), a header over max_header_bytes gets 431, a body over max_body_bytes
// 413, and a request Beast cannot parse 400; each closes the connection. Connections in all and per
// client address: at the global limit a new connection makes room by closing, first, the oldest
// connection that has not passed a request within unproven_grace of its connect (stalled), else
// the idle keep-alive connection unused the longest, else the oldest unproven one, so a crowd
// holding idle connections never locks a new scraper out; only when every connection is busy is
// the new one closed. Requests handed to the handler and not yet answered are
// bounded apart (503 past max_requests_in_flight). A TLS handshake deadline and a first-request
// deadline from the connect (both well below the idle timeout), a read timeout for each later
// request, a write timeout. Only GET and HEAD are served (405 otherwise; POST, PUT and DELETE too
// with allow_writes), after authentication.
//
// Off the loop: TLS handshakes run on a handshake thread and bcrypt on a small pool (web_config.h,
// basic_auth.h), each with a bounded queue, so neither can delay a scrape on a connection already
// established (ADR 0024). The web config is re-read, as exporter-toolkit does, when its file or a
// file it names changes (checked at each new TCP connection) or on ReloadWebConfig: a new one that
// does not load keeps the old one in force and is logged and counted. An idle connection holds no
// request buffers and, with TLS, no OpenSSL record buffers; memory freed after a burst of
// connections is returned.
//
// Thread-safety: Create, Run and the destructor from one thread; Post, Shutdown, OnSignal's
// callbacks, ReloadWebConfig and the Respond callbacks handed to the handler are safe from any
// thread.
// Lifetime: a Respond callback keeps its connection alive and must be called or destroyed before
// the Server is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "net/basic_auth.h"
#include "net/http_types.h"
#include "net/http_util.h"
#include "net/web_config.h"

namespace gpulse::net {

struct ServerOptions {
  std::string address = ":9400";
  std::size_t max_connections = 2048;
  std::size_t max_header_bytes = 8 * 1024;
  std::size_t max_body_bytes = 4 * 1024;
  std::size_t max_connections_per_peer = 256;  // from one client address
  std::size_t max_auth_checks_per_peer = 4;    // bcrypt checks in flight for one client address
  std::size_t max_auth_queue = 64;             // bcrypt checks waiting for the pool
  std::chrono::milliseconds handshake_timeout{5'000};       // connect to TLS handshake done
  // At the connection limit an unproven connection younger than this is closed to make room only
  // when no idle keep-alive connection can go: a new scraper mid-handshake is not pushed out by a
  // crowd that reconnects; one older (stalled, silent) goes first.
  std::chrono::milliseconds unproven_grace{2'000};
  std::chrono::milliseconds first_request_timeout{10'000};  // connect to the first whole request
  std::chrono::milliseconds read_timeout{30'000};   // waiting for and reading each later request
  std::chrono::milliseconds write_timeout{10'000};  // writing one response
  std::chrono::milliseconds drain_timeout{5'000};  // Shutdown: longest wait for responses in flight
  // Requests handed to the handler and not yet answered; one more is answered 503 at once.
  std::size_t max_requests_in_flight = 256;
  std::size_t max_handshakes_queued = 64;  // TLS handshakes waiting for their thread; closed past it
  int gzip_level = kDefaultGzipLevel;
  WebConfig web;  // TLS, basic auth, extra headers (TCP only)
  // The file `web` was loaded from ("" = none): re-read when it or a file it names changes.
  std::string web_config_file;
  // Where the server says what it did on its own (a web config reloaded or refused).
  std::function<void(const std::string&)> log;
  // POST, PUT and DELETE reach the handler, with their body (a management API); else 405.
  bool allow_writes = false;
  // Also serve on a unix socket at this path ("" = none), without TLS or basic auth: the socket's
  // mode and group decide who may connect, and a client whose credentials (SO_PEERCRED) show
  // neither the server's user, root, nor the socket's group is closed at once. A socket file left
  // by a server that is gone is replaced; a live one, or a path that is not a socket, is refused.
  std::string unix_socket_path;
  unsigned unix_socket_mode = 0660;
  std::optional<unsigned> unix_socket_gid;  // chgrp the socket to this group; default: ours
  BasicAuth::Verifier verify_password = BcryptMatches;  // how basic auth checks; tests substitute
};

// The most a connection's read buffer holds: a line longer than this (request line, header line,
// chunk-size line with its extensions, trailer) is refused instead of buffered.
inline std::size_t ReadBufferLimit(const ServerOptions& o) {
  return o.max_header_bytes + o.max_body_bytes;
}

struct ServerStats {
  std::uint64_t connections_open = 0;
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_rejected = 0;  // closed at once: every slot busy, or per-address limit
  std::uint64_t requests = 0;
  // Closed at the limit to make room: never having passed a request / idle between requests.
  std::uint64_t connections_evicted = 0;
  std::uint64_t connections_evicted_idle = 0;
  std::uint64_t auth_busy = 0;  // 429 and 503 answers for authentication checks
  std::uint64_t unix_refused = 0;  // unix-socket clients closed for their credentials
  std::uint64_t refused_header = 0;     // 431: request line or header over its limit
  std::uint64_t refused_body = 0;       // 413
  std::uint64_t refused_malformed = 0;  // 400: unparseable, or a chunk line over the limit
  std::uint64_t refused_busy = 0;       // 503: max_requests_in_flight reached
  std::uint64_t handshakes_refused = 0;  // TLS handshake queue full: connection closed
  std::uint64_t handshakes_failed = 0;   // TLS handshakes that failed or timed out
  std::uint64_t web_config_reloads = 0;           // a changed web config put in force
  std::uint64_t web_config_reload_failures = 0;   // a changed web config that did not load
  bool web_config_ok = true;  // the last reload (if any) succeeded
  std::int64_t web_config_loaded_unix_s = 0;  // when the config in force was loaded (0: at start)
};

class Server {
 public:
  // Binds and listens (so the first request can come as soon as this returns). Fails on a bad or
  // busy address, or TLS files that do not load, naming the problem.
  static Result<std::unique_ptr<Server>> Create(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound address, e.g. "127.0.0.1:9400" or "[::]:9400" (with the real port when 0 was asked).
  std::string local_address() const;
  std::string unix_socket_path() const;  // "" when none
  bool tls() const;

  // Runs the event loop on the calling thread; returns once Shutdown has drained the connections.
  void Run();

  // Stops accepting, closes idle connections, lets requests in progress finish (at most
  // drain_timeout), then makes Run return.
  void Shutdown();

  // Runs `fn` on the loop thread.
  void Post(std::function<void()> fn);

  // Runs `fn` on the loop thread each time the process receives `signo`. REQUIRES: before Run.
  void OnSignal(int signo, std::function<void()> fn);

  ServerStats stats() const;  // a snapshot; exact only on the loop thread

  // Re-reads the web config file now (SIGHUP), even if nothing seems to have changed.
  void ReloadWebConfig();

  struct Impl;  // the event loop and its sessions (server_impl.h)

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulse::net
