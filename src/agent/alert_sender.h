// Sends policy violations to a Prometheus Alertmanager through its v2 API (POST /api/v2/alerts),
// from a thread of its own, so a slow or absent Alertmanager never delays a tick (docs/health.md,
// "Alertmanager").
//
// Alerts wait in a bounded queue (kMaxQueued; a full queue drops the oldest and counts it) and go
// out in batches, one POST per batch. A POST that cannot connect, times out, or gets a 5xx, 408 or
// 429 is retried with the batch kept, after 0.5 s, doubling to 30 s; any other refusal (a 4xx: a
// wrong prefix, a proxy's 401, an alert the Alertmanager rejects) drops the batch, counted, so one
// bad batch never blocks the alerts behind it. Only plain HTTP: the URL is
// http://HOST:PORT[/PREFIX].
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/result.h"

namespace gpulse::agent {

class AlertSender {
 public:
  static constexpr std::size_t kMaxQueued = 10'000;

  // Checks the URL; starts the sending thread.
  static Result<std::unique_ptr<AlertSender>> Create(const std::string& url);
  ~AlertSender();  // sends what is queued (one try, 2 s at most), then stops
  AlertSender(const AlertSender&) = delete;
  AlertSender& operator=(const AlertSender&) = delete;

  // Queues one alert (an object of the v2 API's postableAlert shape). Never blocks.
  void Send(nlohmann::json alert);

  struct Stats {
    std::uint64_t sent = 0;     // alerts the Alertmanager accepted
    std::uint64_t failed = 0;   // POSTs that failed (retried, or dropped when refused for good)
    std::uint64_t dropped = 0;  // alerts dropped: a full queue, or a batch refused for good
    std::string last_error;
  };
  Stats stats() const;

 private:
  AlertSender(std::string host, std::string port, std::string path);
  void Loop();
  // One POST of `body`; an error names the Alertmanager and what went wrong.
  Status Post(const std::string& body, int timeout_ms) const;

  const std::string host_, port_, path_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> queue_;
  Stats stats_;
  bool stopping_ = false;
  std::thread thread_;  // last
};

}  // namespace gpulse::agent
