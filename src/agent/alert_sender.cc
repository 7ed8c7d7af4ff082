#include "agent/alert_sender.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace gpulse::agent {
namespace {

constexpr std::size_t kMaxBatch = 500;

struct AddrInfo {
  addrinfo* head = nullptr;
  ~AddrInfo() {
    if (head != nullptr) freeaddrinfo(head);
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

void SetTimeouts(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

Result<std::unique_ptr<AlertSender>> AlertSender::Create(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return InvalidArgument("--alertmanager " + url +
                           ": https is not supported (gpulse has no TLS client); use http:// on "
                           "loopback or a local proxy");
  }
  if (url.rfind(kScheme, 0) != 0) {
    return InvalidArgument("--alertmanager " + url + ": the URL must start with http://");
  }
  std::string rest = url.substr(kScheme.size());
  std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::size_t colon = authority.rfind(':');
  if (authority.empty() || colon == std::string::npos || colon + 1 == authority.size() ||
      authority.find('@') != std::string::npos) {
    return InvalidArgument("--alertmanager " + url + ": give http://HOST:PORT[/PREFIX]");
  }
  std::string host = authority.substr(0, colon), port = authority.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (!std::all_of(port.begin(), port.end(), ::isdigit) || port.size() > 5 ||
      std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return InvalidArgument("--alertmanager " + url + ": the port is not a number 1..65535");
  }
  return std::unique_ptr<AlertSender>(
      new AlertSender(std::move(host), std::move(port), prefix + "/api/v2/alerts"));
}

AlertSender::AlertSender(std::string host, std::string port, std::string path)
    : host_(std::move(host)), port_(std::move(port)), path_(std::move(path)) {
  thread_ = std::thread([this] { Loop(); });
}

AlertSender::~AlertSender() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AlertSender::Send(nlohmann::json alert) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      queue_.pop_front();
      ++stats_.dropped;
    }
    queue_.push_back(std::move(alert));
  }
  cv_.notify_all();
}

AlertSender::Stats AlertSender::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void AlertSender::Loop() {
  auto backoff = std::chrono::milliseconds(500);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    // The batch leaves the queue while it is sent, and comes back to its front if sending fails.
    const std::size_t n = std::min(queue_.size(), kMaxBatch);
    nlohmann::json batch = nlohmann::json::array();
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    const bool last_try = stopping_;
    lock.unlock();
    Status s = Post(batch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    last_try ? 2000 : 5000);
    lock.lock();
    if (s.ok()) {
      stats_.sent += n;
      backoff = std::chrono::milliseconds(500);
      continue;
    }
    ++stats_.failed;
    if (stats_.last_error != s.error().message) {
      fmt::print(stderr, "gpulse agent: {}\n", s.error().message);
    }
    stats_.last_error = s.error().message;
    if (s.error().code == ErrorCode::kInvalidArgument) {  // refused for good: not retried
      stats_.dropped += n;
      continue;
    }
    for (std::size_t i = n; i-- > 0;) queue_.push_front(std::move(batch[i]));
    while (queue_.size() > kMaxQueued) {
      queue_.pop_front();
      ++stats_.dropped;
    }
    if (last_try) return;
    cv_.wait_for(lock, backoff, [this] { return stopping_; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30'000));
  }
}

Status AlertSender::Post(const std::string& body, int timeout_ms) const {
  const std::string where = fmt::format("the Alertmanager at {}:{}", host_, port_);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  AddrInfo ai;
  if (int rc = getaddrinfo(host_.c_str(), port_.c_str(), &hints, &ai.head); rc != 0) {
    return Unavailable(where + ": cannot resolve the host: " + gai_strerror(rc));
  }
  Fd sock;
  std::string last = "no address";
  for (addrinfo* a = ai.head; a != nullptr; a = a->ai_next) {
    Fd s{socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol)};
    if (s.fd < 0) continue;
    SetTimeouts(s.fd, timeout_ms);
    if (connect(s.fd, a->ai_addr, a->ai_addrlen) == 0) {
      std::swap(sock.fd, s.fd);
      break;
    }
    last = std::strerror(errno);
  }
  if (sock.fd < 0) return Unavailable(where + ": cannot connect: " + last);
  const bool v6 = host_.find(':') != std::string::npos;
  std::string req = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\nConnection: close\r\nUser-Agent: gpulse-agent\r\n\r\n",
      path_, v6 ? "[" : "", host_, v6 ? "]" : "", port_, body.size());
  req += body;
  for (std::size_t off = 0; off < req.size();) {
    ssize_t n = send(sock.fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return Unavailable(where + ": sending failed: " + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
  std::string head;
  char buf[1024];
  while (head.find("\r\n") == std::string::npos && head.size() < 4096) {
    ssize_t n = recv(sock.fd, buf, sizeof buf, 0);
    if (n <= 0) return Unavailable(where + ": no answer");
    head.append(buf, static_cast<std::size_t>(n));
  }
  // "HTTP/1.1 200 OK"
  std::size_t sp = head.find(' ');
  int status = sp == std::string::npos ? 0 : std::atoi(head.c_str() + sp + 1);
  if (status < 200 || status >= 300) {
    std::string line = head.substr(0, head.find("\r\n"));
    // A client error other than a timeout or a rate limit will not change on a retry (a wrong
    // prefix, a proxy's 401, an alert the Alertmanager rejects): the batch is dropped.
    const bool permanent = status >= 400 && status < 500 && status != 408 && status != 429;
    return Error{permanent ? ErrorCode::kInvalidArgument : ErrorCode::kUnavailable,
                 where + " refused the alerts: " + line};
  }
  return Status::Ok();
}

}  // namespace gpulse::agent
