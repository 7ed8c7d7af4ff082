// gpulse's HTTP/1.1 server: one event loop on one thread (Boost.Asio/Beast behind this header), so
// a slow, idle or malicious client costs a socket and a few kilobytes, never a thread, and never
// delays another client's scrape.
//
// Limits: connections in all and per client address (over either a new connection is closed at
// once, except that at the global limit the oldest connection that has not yet passed a request
// makes room), request header size (431), request body size (413), a TLS handshake deadline and a
// first-request deadline from the connect (both well below the idle timeout), a read timeout for
// each later request (idle keep-alive connections and slow-loris clients are closed), a write
// timeout (a client that stops reading is dropped). Only GET and HEAD are served (405 otherwise;
// POST, PUT and DELETE too with allow_writes), after authentication. Optional TLS and basic
// authentication (web_config.h): bcrypt runs on a small pool of worker threads, never on the loop,
// with a bounded queue (503 when full) and a few checks per client address (429 past that). An idle
// connection holds no request buffers and, with TLS, no OpenSSL record buffers; memory freed after
// a burst of connections is returned.
//
// Thread-safety: Create, Run and the destructor from one thread; Post, Shutdown, OnSignal's
// callbacks and the Respond callbacks handed to the handler are safe from any thread.
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
  std::chrono::milliseconds first_request_timeout{10'000};  // connect to the first whole request
  std::chrono::milliseconds read_timeout{30'000};   // waiting for and reading each later request
  std::chrono::milliseconds write_timeout{10'000};  // writing one response
  std::chrono::milliseconds drain_timeout{5'000};  // Shutdown: longest wait for responses in flight
  int gzip_level = kDefaultGzipLevel;
  WebConfig web;  // TLS, basic auth, extra headers (TCP only)
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

struct ServerStats {
  std::uint64_t connections_open = 0;
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_rejected = 0;  // over max_connections
  std::uint64_t requests = 0;
  std::uint64_t connections_evicted =
      0;                        // closed at the limit to make room, never having passed a request
  std::uint64_t auth_busy = 0;  // 429 and 503 answers for authentication checks
  std::uint64_t unix_refused = 0;  // unix-socket clients closed for their credentials
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

  struct Impl;  // the event loop and its sessions (server.cc)

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulse::net
