// A small asynchronous HTTP/1.1 GET client on one event loop (Boost.Asio/Beast behind this header),
// for pollers that fan out to many endpoints from one thread on one clock (the power collector).
// One HttpTarget keeps one keep-alive connection and at most one request in flight; a reused
// connection the peer closed while idle is retried once on a fresh one inside the same timeout.
//
// Thread-safety: an EventLoop's Run() on one thread; Post() and Stop() from any thread. Everything
// else (HttpTarget, timers) only on the loop thread, i.e. from callbacks or posted functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpulse::net {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs handlers until Stop() (work is kept alive between timers).
  void Run();
  void Stop();
  void Post(std::function<void()> fn);
  // Runs `fn` on the loop at `when` (steady clock). Returns an id for Cancel.
  uint64_t At(std::chrono::steady_clock::time_point when, std::function<void()> fn);
  void Cancel(uint64_t timer_id);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct FetchResult {
  std::optional<int> http_status;  // set when a response arrived
  std::string body;
  // Empty on success (2xx). Otherwise a short class name: "Timeout", "ConnectionRefused",
  // "ConnectionError", "HTTPError" (non-2xx), "ResponseTooLarge".
  std::string error_type;
  std::string error_message;
  bool ok() const { return error_type.empty(); }
};

// Resolves `host` (an IP literal or a name) to one address string within `timeout`.
Result<std::string> ResolveAddress(const std::string& host, std::chrono::milliseconds timeout);

class HttpTarget {
 public:
  // REQUIRES: `address` is an IP literal (see ResolveAddress).
  HttpTarget(EventLoop& loop, std::string address, uint16_t port, std::string path,
             std::size_t max_body_bytes = 16u << 20);
  ~HttpTarget();
  HttpTarget(const HttpTarget&) = delete;
  HttpTarget& operator=(const HttpTarget&) = delete;

  bool busy() const;
  // Starts a GET; `done` runs once on the loop thread. REQUIRES: !busy().
  void Get(std::chrono::milliseconds timeout, std::function<void(FetchResult)> done);

  // For a poller that writes thousands of requests at one instant from several threads (the power
  // collector): the request's bytes never change, so another thread may write them to the socket of
  // an idle connection while the loop thread leaves this target alone, and GetWritten then awaits
  // the answer. Loop thread only, like everything above.
  //
  // The socket of a kept-alive connection with no request in flight; -1 when there is none.
  int IdleSocket() const;
  // The bytes of one request (valid as long as the target).
  std::string_view RequestBytes() const;
  // Closes the connection: after the request was written to IdleSocket() only in part.
  void DropConnection();
  // Starts a GET whose request was written in full to IdleSocket() at `written_at`: only the answer
  // is awaited, until `written_at + timeout`. A connection the peer had closed while it was idle is
  // retried once on a fresh one, as with Get. REQUIRES: !busy().
  void GetWritten(std::chrono::steady_clock::time_point written_at,
                  std::chrono::milliseconds timeout, std::function<void(FetchResult)> done);
  // Abandons the request in flight (its `done` runs with error_type "Cancelled").
  void Cancel();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpulse::net
