// Benchmark endpoints in C++ (issue 14): one process serving a fixed exposition on many loopback
// ports from one epoll loop, the stand-in for exporters on other machines. It replaces
// endpoints.py (asyncio) for the collector benchmark at 4,096 endpoints, where the Python servers
// could not answer 4,096 x 48 kB a second on two cores: their answers, not the collector or
// Prometheus, set the request durations and the missed slots (bench/RESULTS.md).
//
// Usage: collector_endpoints EXPOSITION BASE_PORT COUNT READY_FILE LIFETIME_S
// Listens on 127.0.0.1:BASE_PORT .. BASE_PORT+COUNT-1, answers every GET with the exposition
// (HTTP/1.1, keep-alive, Content-Length), writes READY_FILE (its PID) once every port listens and
// exits by itself after LIFETIME_S seconds. Loopback only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

namespace {

struct Conn {
  std::string in;        // bytes of requests not yet answered
  std::size_t owed = 0;  // responses still to write
  std::size_t sent = 0;  // bytes of the current response already written
};

int Listen(int epfd, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    std::perror("collector_endpoints: bind/listen");
    std::exit(1);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<std::uint64_t>(fd) | (1ull << 32);  // bit 32: a listening socket
  ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
  return fd;
}

// Writes what `c` owes; false when the peer is gone.
bool Flush(int fd, Conn& c, const std::string& response) {
  while (c.owed > 0) {
    ssize_t n = ::send(fd, response.data() + c.sent, response.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    c.sent += static_cast<std::size_t>(n);
    if (c.sent == response.size()) {
      c.sent = 0;
      --c.owed;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s EXPOSITION BASE_PORT COUNT READY_FILE LIFETIME_S\n", argv[0]);
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::stringstream body;
  body << f.rdbuf();
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
      std::to_string(body.str().size()) + "\r\n\r\n" + body.str();
  const int base = std::atoi(argv[2]), count = std::atoi(argv[3]);
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(std::atof(argv[5]));
  int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < count; ++i) Listen(epfd, static_cast<std::uint16_t>(base + i));
  {
    std::string ready = argv[4];
    std::ofstream(ready + ".tmp") << ::getpid();
    std::rename((ready + ".tmp").c_str(), ready.c_str());
  }
  std::unordered_map<int, Conn> conns;
  epoll_event events[256];
  while (std::chrono::steady_clock::now() < end) {
    int n = ::epoll_wait(epfd, events, 256, 1000);
    for (int i = 0; i < n; ++i) {
      const int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
      if (events[i].data.u64 >> 32) {  // accept everything pending
        for (int c; (c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
          ev.data.u64 = static_cast<std::uint64_t>(c);
          ::epoll_ctl(epfd, EPOLL_CTL_ADD, c, &ev);
          conns[c];
        }
        continue;
      }
      Conn& c = conns[fd];
      bool alive = true;
      char buf[4096];
      for (;;) {
        ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r > 0) {
          c.in.append(buf, static_cast<std::size_t>(r));
          continue;
        }
        alive = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        break;
      }
      for (std::size_t at; (at = c.in.find("\r\n\r\n")) != std::string::npos;) {
        c.in.erase(0, at + 4);
        ++c.owed;
      }
      if (!alive || !Flush(fd, c, response)) {
        ::close(fd);
        conns.erase(fd);
      }
    }
  }
  return 0;
}
