// A crowd of keep-alive TLS clients for bench/exporter/network.py (issue 39, attack b), in one
// thread on epoll, so that the crowd takes little of the machine's CPU and a scraper's latency
// beside it measures the server rather than the crowd client (Python's ssl took a whole vCPU).
//
// Each of N connections comes from its own loopback address (127.3.x.y), handshakes, sends
// `GET /health` with basic auth, reads the answer, and sends again every PERIOD seconds; a
// connection the server closes (to make room, or otherwise) reconnects at its next turn. Runs until
// SECONDS have passed, or until a line arrives on stdin, then prints one JSON line of counts and its
// own CPU seconds. It writes "ready" on stderr once every connection has answered once.
//
// Usage: crowd PORT N PERIOD_S SECONDS AUTHORIZATION_HEADER_VALUE
#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

enum class State { kIdle, kConnecting, kHandshake, kSending, kReading };

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::kIdle;
  std::string in;
  std::size_t sent = 0;
  bool answered_once = false;
  bool queued = false;  // has a turn in `due`
  bool handshaking = false;
};

// Handshakes in flight at most: more would overflow the server's handshake queue (64) and be
// closed before they start, which is not what a crowd of scrapers does.
constexpr int kMaxHandshaking = 32;

struct Crowd {
  int port = 0;
  double period_s = 10;
  std::string request;
  SSL_CTX* ctx = nullptr;
  int ep = -1;
  std::vector<Conn> conns;
  std::deque<std::pair<Clock::time_point, std::size_t>> due;  // FIFO: the period is constant
  long requests = 0, failures = 0, reconnects = 0, answered = 0;
  int handshaking = 0;

  void Handshaken(Conn& c) {
    if (!c.handshaking) return;
    c.handshaking = false;
    --handshaking;
  }

  void Watch(std::size_t i, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = i;
    if (epoll_ctl(ep, EPOLL_CTL_MOD, conns[i].fd, &ev) != 0) epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
  }

  // Its next turn, a period from now, unless it has one.
  void Enqueue(std::size_t i) {
    if (conns[i].queued) return;
    conns[i].queued = true;
    due.emplace_back(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(period_s)),
                     i);
  }

  void Drop(std::size_t i, bool failed) {
    Conn& c = conns[i];
    Handshaken(c);
    if (c.ssl) SSL_free(c.ssl);
    if (c.fd >= 0) close(c.fd);
    const bool answered_before = c.answered_once, queued = c.queued;
    c = Conn{};
    c.answered_once = answered_before;
    c.queued = queued;
    if (failed) ++failures;
    Enqueue(i);
  }

  void Connect(std::size_t i) {
    Conn& c = conns[i];
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl((127u << 24) | (3u << 16) | ((i / 250) << 8) | (i % 250 + 1));
    bind(c.fd, reinterpret_cast<sockaddr*>(&from), sizeof from);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
      return Drop(i, true);
    }
    c.state = State::kConnecting;
    c.handshaking = true;
    ++handshaking;
    ++reconnects;
    Watch(i, EPOLLOUT);
  }

  // Advances connection i as far as it goes without blocking.
  void Step(std::size_t i) {
    Conn& c = conns[i];
    for (;;) {
      if (c.state == State::kConnecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) return Drop(i, true);
        c.ssl = SSL_new(ctx);
        SSL_set_fd(c.ssl, c.fd);
        SSL_set_connect_state(c.ssl);
        c.state = State::kHandshake;
      }
      if (c.state == State::kHandshake) {
        int r = SSL_do_handshake(c.ssl);
        if (r != 1) return Wait(i, r);
        Handshaken(c);
        c.state = State::kSending;
        c.sent = 0;
      }
      if (c.state == State::kSending) {
        while (c.sent < request.size()) {
          int r = SSL_write(c.ssl, request.data() + c.sent, static_cast<int>(request.size() - c.sent));
          if (r <= 0) return Wait(i, r);
          c.sent += static_cast<std::size_t>(r);
        }
        c.state = State::kReading;
        c.in.clear();
      }
      if (c.state == State::kReading) {
        char buf[4096];
        for (;;) {
          int r = SSL_read(c.ssl, buf, sizeof buf);
          if (r <= 0) return Wait(i, r);
          c.in.append(buf, static_cast<std::size_t>(r));
          if (Complete(c.in)) break;
        }
        ++requests;
        if (!c.answered_once) {
          c.answered_once = true;
          ++answered;
        }
        c.state = State::kIdle;
        Watch(i, EPOLLIN);  // readable while idle: the server closed it
        Enqueue(i);
        return;
      }
      if (c.state == State::kIdle) {  // woken while idle: closed by the server (or a stray byte)
        char b;
        if (SSL_peek(c.ssl, &b, 1) <= 0) return Drop(i, true);
        return;
      }
    }
  }

  void Wait(std::size_t i, int r) {
    switch (SSL_get_error(conns[i].ssl, r)) {
      case SSL_ERROR_WANT_READ:
        return Watch(i, EPOLLIN);
      case SSL_ERROR_WANT_WRITE:
        return Watch(i, EPOLLOUT);
      default:
        ERR_clear_error();
        return Drop(i, true);
    }
  }

  static bool Complete(const std::string& in) {
    std::size_t head = in.find("\r\n\r\n");
    if (head == std::string::npos) return false;
    std::size_t cl = in.find("Content-Length: ");
    if (cl == std::string::npos || cl > head) return true;
    return in.size() >= head + 4 + std::strtoul(in.c_str() + cl + 16, nullptr, 10);
  }

  // A connection whose turn has come: a request on its open connection, or a new connection.
  void Turn(std::size_t i) {
    Conn& c = conns[i];
    if (c.fd < 0) return Connect(i);
    if (c.state != State::kIdle) return;
    c.state = State::kSending;
    c.sent = 0;
    Step(i);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: crowd PORT N PERIOD_S SECONDS AUTHORIZATION\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a write to a connection the server closed fails, nothing more
  Crowd crowd;
  crowd.port = std::atoi(argv[1]);
  const std::size_t n = std::strtoul(argv[2], nullptr, 10);
  crowd.period_s = std::atof(argv[3]);
  const double seconds = std::atof(argv[4]);
  crowd.request = std::string("GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: ") + argv[5] + "\r\n\r\n";
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  crowd.ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(crowd.ctx, SSL_VERIFY_NONE, nullptr);
  crowd.ep = epoll_create1(EPOLL_CLOEXEC);
  crowd.conns.resize(n);
  // Everyone connects at first, a little apart, as a crowd does.
  const auto start = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    crowd.conns[i].queued = true;
    crowd.due.emplace_back(start, i);
  }
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  bool said_ready = false;
  std::vector<epoll_event> events(256);
  while (Clock::now() < end) {
    pollfd in{0, POLLIN, 0};
    if (poll(&in, 1, 0) == 1) break;  // told to stop
    auto now = Clock::now();
    int budget = 64;  // connections started per pass, so answers keep flowing meanwhile
    bool blocked = false;  // the next turn waits for a handshake to finish: sleep in epoll
    while (!crowd.due.empty() && crowd.due.front().first <= now && budget-- > 0) {
      std::size_t i = crowd.due.front().second;
      if (crowd.conns[i].fd < 0 && crowd.handshaking >= kMaxHandshaking) {
        blocked = true;
        break;
      }
      crowd.due.pop_front();
      crowd.conns[i].queued = false;
      crowd.Turn(i);
    }
    int wait_ms = 10;
    if (!crowd.due.empty() && !blocked) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(crowd.due.front().first - Clock::now()).count();
      wait_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(ms, 10)));
    }
    int k = epoll_wait(crowd.ep, events.data(), static_cast<int>(events.size()), wait_ms);
    for (int e = 0; e < k; ++e) crowd.Step(static_cast<std::size_t>(events[e].data.u64));
    if (!said_ready && crowd.answered == static_cast<long>(n)) {
      said_ready = true;
      crowd.reconnects = 0;
      crowd.failures = 0;
      std::fprintf(stderr, "ready\n");
      std::fflush(stderr);
    }
  }
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  std::printf("{\"requests\": %ld, \"failures\": %ld, \"reconnects\": %ld, \"cpu_s\": %.3f}\n",
              crowd.requests, crowd.failures, crowd.reconnects,
              self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + self.ru_stime.tv_sec +
                  self.ru_stime.tv_usec / 1e6);
  return 0;
}
