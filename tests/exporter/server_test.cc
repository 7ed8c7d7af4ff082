// The HTTP server on loopback: requests, limits (header size, connections, read timeout), methods,
// gzip, responses completed from another thread while other clients are served, and draining.
// Every wait is bounded by a socket timeout; nothing asserts on elapsed time.
#include "net/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpulse::net {
namespace {

// A blocking client socket with a receive timeout, so a test can never hang.
class Client {
 public:
  explicit Client(const std::string& address) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  bool connected() const { return connected_; }
  void Send(const std::string& s) {
    ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  // Reads until the peer closes, or until `until` appears and the Content-Length body is complete.
  std::string Receive(const std::string& until = "") {
    std::string got;
    char buf[4096];
    for (;;) {
      if (!until.empty() && Complete(got, until)) return got;
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return got;
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  // True when the server closed the connection (read returns 0) within the 10 s receive timeout.
  bool ClosedByPeer() {
    char c;
    return read(fd_, &c, 1) == 0;
  }

 private:
  static bool Complete(const std::string& got, const std::string& until) {
    std::size_t head = got.find("\r\n\r\n");
    if (head == std::string::npos || got.find(until) == std::string::npos) return false;
    std::size_t cl = got.find("Content-Length: ");
    if (cl == std::string::npos || cl > head) return true;
    std::size_t len = std::stoul(got.substr(cl + 16));
    return got.size() >= head + 4 + len;
  }
  int fd_ = -1;
  bool connected_ = false;
};

std::string Get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

class ServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions o, Handler h) {
    o.address = "127.0.0.1:0";
    auto s = Server::Create(std::move(o), std::move(h));
    ASSERT_TRUE(s.ok()) << s.error().message;
    server = std::move(s).value();
    loop = std::thread([this] { server->Run(); });
  }
  void TearDown() override {
    if (server) {
      server->Shutdown();
      loop.join();
    }
  }
  static Handler Hello() {
    return [](const HttpRequest& r, Respond respond) {
      HttpResponse res;
      res.body = r.path == "/big" ? std::string(5000, 'a') : "hello " + r.path;
      res.compressible = true;
      respond(std::move(res));
    };
  }
  std::unique_ptr<Server> server;
  std::thread loop;
};

TEST_F(ServerTest, ServesGetWithKeepAlive) {
  Start({}, Hello());
  Client c(server->local_address());
  ASSERT_TRUE(c.connected());
  c.Send(Get("/metrics?x=1"));
  std::string r = c.Receive("hello");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("hello /metrics"), std::string::npos) << "path without the query";
  c.Send(Get("/again"));
  EXPECT_NE(c.Receive("hello /again").find("hello /again"), std::string::npos) << "same connection";
}

TEST_F(ServerTest, HeadAndMethods) {
  Start({}, Hello());
  Client c(server->local_address());
  c.Send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  std::string r = c.Receive("only GET");
  EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD"), std::string::npos);
  Client h(server->local_address());
  h.Send("HEAD /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string head = h.Receive();
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: 8"), std::string::npos) << head;
  EXPECT_EQ(head.find("hello"), std::string::npos) << "no body for HEAD";
}

TEST_F(ServerTest, GzipOnlyWhenAccepted) {
  Start({}, Hello());
  Client c(server->local_address());
  c.Send(Get("/big", "Accept-Encoding: gzip\r\nConnection: close\r\n"));
  std::string r = c.Receive();
  EXPECT_NE(r.find("Content-Encoding: gzip"), std::string::npos) << r.substr(0, 300);
  EXPECT_EQ(r.find(std::string(100, 'a')), std::string::npos);
  Client plain(server->local_address());
  plain.Send(Get("/big", "Connection: close\r\n"));
  std::string p = plain.Receive();
  EXPECT_EQ(p.find("Content-Encoding"), std::string::npos);
  EXPECT_NE(p.find(std::string(5000, 'a')), std::string::npos);
}

TEST_F(ServerTest, OversizedHeaderGets431) {
  ServerOptions o;
  o.max_header_bytes = 1024;
  Start(o, Hello());
  Client c(server->local_address());
  c.Send(Get("/x", "X-Big: " + std::string(4000, 'b') + "\r\n"));
  std::string r = c.Receive();
  EXPECT_EQ(r.rfind("HTTP/1.1 431", 0), 0u) << r.substr(0, 100);
}

TEST_F(ServerTest, ConnectionsOverTheLimitAreClosedAndOthersStillServed) {
  ServerOptions o;
  o.max_connections = 2;
  Start(o, Hello());
  Client a(server->local_address()), b(server->local_address());
  a.Send(Get("/a"));
  ASSERT_NE(a.Receive("hello /a").find("hello /a"), std::string::npos);
  b.Send(Get("/b"));
  ASSERT_NE(b.Receive("hello /b").find("hello /b"), std::string::npos);
  Client over(server->local_address());
  EXPECT_TRUE(over.ClosedByPeer());
  a.Send(Get("/a2"));
  EXPECT_NE(a.Receive("hello /a2").find("hello /a2"), std::string::npos);
  EXPECT_GE(server->stats().connections_rejected, 1u);
}

TEST_F(ServerTest, IdleAndSlowClientsAreClosedAfterTheReadTimeout) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  Start(o, Hello());
  Client idle(server->local_address());
  Client slow(server->local_address());
  slow.Send("GET /x HTTP/1.1\r\n");  // never finishes its header
  EXPECT_TRUE(idle.ClosedByPeer());
  EXPECT_TRUE(slow.ClosedByPeer());
}

TEST_F(ServerTest, ARequestAnsweredLaterDoesNotBlockOthers) {
  std::mutex mu;
  std::vector<Respond> parked;
  Start({}, [&](const HttpRequest& r, Respond respond) {
    if (r.path == "/slow") {
      std::lock_guard lock(mu);
      parked.push_back(std::move(respond));
      return;
    }
    respond(TextResponse(200, "fast"));
  });
  Client slow(server->local_address());
  slow.Send(Get("/slow"));
  Client fast(server->local_address());
  fast.Send(Get("/fast"));
  EXPECT_NE(fast.Receive("fast").find("fast"), std::string::npos) << "served while /slow waits";
  for (;;) {
    std::lock_guard lock(mu);
    if (!parked.empty()) break;
  }
  std::thread other([&] {
    std::lock_guard lock(mu);
    parked[0](TextResponse(200, "late"));
  });
  other.join();
  EXPECT_NE(slow.Receive("late").find("late"), std::string::npos);
}

TEST_F(ServerTest, ShutdownClosesIdleConnectionsAndFinishesResponsesInFlight) {
  std::mutex mu;
  std::vector<Respond> parked;
  Start({}, [&](const HttpRequest&, Respond respond) {
    std::lock_guard lock(mu);
    parked.push_back(std::move(respond));
  });
  Client idle(server->local_address());
  Client busy(server->local_address());
  busy.Send(Get("/x"));
  for (;;) {  // until the server has the request
    std::lock_guard lock(mu);
    if (!parked.empty()) break;
  }
  server->Shutdown();
  EXPECT_TRUE(idle.ClosedByPeer());
  {
    std::lock_guard lock(mu);
    parked[0](TextResponse(200, "done"));
  }
  std::string r = busy.Receive();
  EXPECT_NE(r.find("done"), std::string::npos);
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  loop.join();
  parked.clear();  // Respond callbacks must not outlive the server (server.h)
  server.reset();
}

ServerOptions At(const std::string& address) {
  ServerOptions o;
  o.address = address;
  return o;
}

TEST(ServerCreate, BadAndBusyAddressesFail) {
  auto bad = Server::Create(At("nonsense"), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  auto first = Server::Create(At("127.0.0.1:0"), {});
  ASSERT_TRUE(first.ok());
  auto busy = Server::Create(At((*first)->local_address()), {});
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.error().message.find("cannot bind"), std::string::npos) << busy.error().message;
}

}  // namespace
}  // namespace gpulse::net
