// Unit tests of the collector's HTTP client (src/net/http_client.h) against a scripted server on
// 127.0.0.1: success and keep-alive reuse, a peer that closes an idle keep-alive connection,
// connection refused, a request timeout, HTTP errors and the body size limit, and a request written
// to the idle socket by another thread (GetWritten).
#include "net/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace gpulse::net {
namespace {

using namespace std::chrono_literals;

// A listening loopback socket on a kernel-chosen port.
int Listen(uint16_t& port, bool listen_too = true) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (listen_too) {
    EXPECT_EQ(::listen(fd, 16), 0);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// Reads one request head; false when the peer closed.
bool ReadRequest(int fd) {
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (::read(fd, &c, 1) != 1) return false;
    head += c;
  }
  return true;
}

// Without SIGPIPE: a client that gave up may have closed the connection.
void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string Response(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Serves connections one after another with `per_connection(fd)` on its own thread; counts them.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int)> per_connection)
      : fd_(Listen(port_)), thread_([this, f = std::move(per_connection)] {
          for (;;) {
            int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0 || stop_) {
              if (c >= 0) ::close(c);
              return;
            }
            ++connections_;
            current_ = c;
            f(c);
            current_ = -1;
            ::close(c);
          }
        }) {}
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);                              // wakes accept()
    if (int c = current_; c >= 0) ::shutdown(c, SHUT_RDWR);  // wakes a read on a kept-alive one
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  uint16_t port_ = 0;
  int fd_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> current_{-1};
  std::thread thread_;
};

// An event loop on its own thread and a blocking Get through it.
class ClientFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_ = std::thread([this] { loop_.Run(); });
  }
  void TearDown() override {
    loop_.Post([this] { target_.reset(); });
    loop_.Post([this] { loop_.Stop(); });
    thread_.join();
  }
  void Target(uint16_t port, size_t max_body = 16u << 20) {
    std::promise<void> made;
    loop_.Post([&] {
      target_ = std::make_unique<HttpTarget>(loop_, "127.0.0.1", port, "/metrics", max_body);
      made.set_value();
    });
    made.get_future().wait();
  }
  FetchResult Get(std::chrono::milliseconds timeout = 5000ms) {
    std::promise<FetchResult> result;
    loop_.Post(
        [&] { target_->Get(timeout, [&](FetchResult r) { result.set_value(std::move(r)); }); });
    return result.get_future().get();
  }

  // On the loop thread, like every call of the target.
  template <class F>
  auto OnLoop(F f) {
    std::promise<decltype(f())> result;
    loop_.Post([&] { result.set_value(f()); });
    return result.get_future().get();
  }
  // What the collector does at a slot: the request written to the idle connection's socket on
  // another thread (this one), then only the answer awaited. `backdate` dates the write earlier.
  FetchResult WriteHereThenGetWritten(std::chrono::steady_clock::duration backdate = {}) {
    int fd = OnLoop([&] { return target_->IdleSocket(); });
    std::string bytes = OnLoop([&] { return std::string(target_->RequestBytes()); });
    EXPECT_GE(fd, 0);
    auto written_at = std::chrono::steady_clock::now() - backdate;
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    std::promise<FetchResult> result;
    loop_.Post([&] {
      target_->GetWritten(written_at, 5000ms,
                          [&](FetchResult r) { result.set_value(std::move(r)); });
    });
    return result.get_future().get();
  }

  EventLoop loop_;
  std::unique_ptr<HttpTarget> target_;
  std::thread thread_;
};

TEST_F(ClientFixture, ARequestWrittenByAnotherThreadIsAnsweredOnTheKeptConnection) {
  std::atomic<int> requests{0};
  ScriptedServer server([&](int fd) {
    while (ReadRequest(fd)) {
      ++requests;
      WriteAll(fd, Response(200, "up " + std::to_string(requests.load()) + "\n"));
    }
  });
  Target(server.port());
  EXPECT_EQ(OnLoop([&] { return target_->IdleSocket(); }), -1) << "no connection yet";
  ASSERT_TRUE(Get().ok());
  FetchResult r = WriteHereThenGetWritten();
  ASSERT_TRUE(r.ok()) << r.error_type << ": " << r.error_message;
  EXPECT_EQ(r.body, "up 2\n");
  EXPECT_EQ(requests.load(), 2);
  EXPECT_EQ(server.connections(), 1);
  FetchResult third = Get();
  ASSERT_TRUE(third.ok()) << "the connection stays usable";
  EXPECT_EQ(third.body, "up 3\n") << "GetWritten sent nothing of its own";
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(ClientFixture, AWrittenRequestsDeadlineCountsFromItsWrite) {
  ScriptedServer server([](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, Response(200, "ok\n"));
    if (ReadRequest(fd)) {
      std::this_thread::sleep_for(1s);  // answers, but after the deadline of a write 10 s ago
      WriteAll(fd, Response(200, "late\n"));
    }
  });
  Target(server.port());
  ASSERT_TRUE(Get().ok());
  FetchResult r = WriteHereThenGetWritten(10s);  // written "10 s ago" with a 5 s timeout
  EXPECT_EQ(r.error_type, "Timeout") << "the deadline is the write's time plus the timeout";
}

TEST_F(ClientFixture, NoIdleSocketWhileARequestIsInFlight) {
  std::promise<void> release;
  auto released = release.get_future().share();
  ScriptedServer server([released](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, Response(200, "ok\n"));
    if (ReadRequest(fd)) released.wait();  // the second request waits
  });
  Target(server.port());
  ASSERT_TRUE(Get().ok());
  std::promise<FetchResult> second;
  loop_.Post([&] { target_->Get(5000ms, [&](FetchResult r) { second.set_value(std::move(r)); }); });
  EXPECT_EQ(OnLoop([&] { return target_->IdleSocket(); }), -1);
  EXPECT_TRUE(OnLoop([&] { return target_->busy(); }));
  release.set_value();
  auto done = second.get_future();
  done.wait();
}

TEST_F(ClientFixture, AWrittenRequestOnAConnectionThePeerClosedIsRetriedOnAFreshOne) {
  ScriptedServer server([](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, Response(200, "ok\n"));  // then close, unannounced
  });
  Target(server.port());
  ASSERT_TRUE(Get().ok());
  FetchResult r = WriteHereThenGetWritten();
  ASSERT_TRUE(r.ok()) << r.error_type << ": " << r.error_message;
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(ClientFixture, DropConnectionClosesTheIdleConnection) {
  ScriptedServer server([](int fd) {
    while (ReadRequest(fd)) WriteAll(fd, Response(200, "ok\n"));
  });
  Target(server.port());
  ASSERT_TRUE(Get().ok());
  EXPECT_GE(OnLoop([&] { return target_->IdleSocket(); }), 0);
  OnLoop([&] {
    target_->DropConnection();
    return 0;
  });
  EXPECT_EQ(OnLoop([&] { return target_->IdleSocket(); }), -1);
  ASSERT_TRUE(Get().ok());
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(ClientFixture, KeepAliveReusesOneConnection) {
  ScriptedServer server([](int fd) {
    while (ReadRequest(fd)) WriteAll(fd, Response(200, "up 1\n"));
  });
  Target(server.port());
  for (int i = 0; i < 3; ++i) {
    FetchResult r = Get();
    ASSERT_TRUE(r.ok()) << r.error_type << ": " << r.error_message;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.body, "up 1\n");
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(ClientFixture, IdleConnectionClosedByThePeerIsRetriedOnAFreshOne) {
  ScriptedServer server([](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, Response(200, "ok\n"));  // then close, unannounced
  });
  Target(server.port());
  ASSERT_TRUE(Get().ok());
  FetchResult second = Get();
  ASSERT_TRUE(second.ok()) << second.error_type << ": " << second.error_message;
  EXPECT_EQ(second.body, "ok\n");
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(ClientFixture, ConnectionRefused) {
  uint16_t port = 0;
  int bound = Listen(port, /*listen_too=*/false);  // holds the port, accepts nothing
  Target(port);
  FetchResult r = Get();
  EXPECT_EQ(r.error_type, "ConnectionRefused");
  EXPECT_FALSE(r.http_status.has_value());
  ::close(bound);
}

TEST_F(ClientFixture, SilentServerIsATimeout) {
  std::promise<void> release;
  auto released = release.get_future().share();
  ScriptedServer server([released](int fd) {
    ReadRequest(fd);
    released.wait();  // never answers while the client waits
  });
  Target(server.port());
  FetchResult r = Get(200ms);
  EXPECT_EQ(r.error_type, "Timeout");
  EXPECT_FALSE(r.http_status.has_value());
  release.set_value();
}

TEST_F(ClientFixture, Non2xxIsAnHttpErrorWithItsStatus) {
  ScriptedServer server([](int fd) {
    while (ReadRequest(fd)) WriteAll(fd, Response(500, "broken\n"));
  });
  Target(server.port());
  FetchResult r = Get();
  EXPECT_EQ(r.error_type, "HTTPError");
  EXPECT_EQ(r.http_status, 500);
}

TEST_F(ClientFixture, BodyOverTheLimitIsRejected) {
  ScriptedServer server([](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, Response(200, std::string(4096, 'x')));
  });
  Target(server.port(), /*max_body=*/1024);
  FetchResult r = Get();
  EXPECT_EQ(r.error_type, "ResponseTooLarge") << r.error_message;
  EXPECT_TRUE(r.body.empty());
}

TEST_F(ClientFixture, GarbageInsteadOfHttpIsAConnectionError) {
  ScriptedServer server([](int fd) {
    if (ReadRequest(fd)) WriteAll(fd, "this is not HTTP\r\n\r\n");
  });
  Target(server.port());
  FetchResult r = Get();
  EXPECT_EQ(r.error_type, "ConnectionError");
}

}  // namespace
}  // namespace gpulse::net
