// The server's limits against hostile clients (issue 39): bytes bounded before they are buffered,
// malformed requests answered 400, a full connection table that still admits a new scraper,
// requests in flight bounded apart, and a web config that is re-read when it changes. Every wait is
// bounded by a socket timeout; nothing asserts on elapsed time.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "exporter/server_client.h"
#include "net/server.h"

namespace gpulse::net {
namespace {

using test_client::Client;
using test_client::Get;
using test_client::ServerTest;

// A handler that holds /hold requests unanswered until the test answers them.
struct Parking {
  std::mutex mu;
  std::vector<Respond> parked;
  Handler Make() {
    return [this](const HttpRequest& r, Respond respond) {
      if (r.path == "/hold") {
        std::lock_guard lock(mu);
        parked.push_back(std::move(respond));
        return;
      }
      respond(TextResponse(200, "hello " + r.path));
    };
  }
  void WaitFor(std::size_t n) {
    for (;;) {
      std::lock_guard lock(mu);
      if (parked.size() >= n) return;
    }
  }
  void AnswerAll() {
    std::lock_guard lock(mu);
    for (auto& r : parked) r(TextResponse(200, "held"));
    parked.clear();
  }
};

std::string StatusLine(const std::string& response) { return response.substr(0, 12); }

TEST_F(ServerTest, AChunkExtensionLongerThanTheBufferIsRefusedBeforeItEnds) {
  ServerOptions o;  // 8 KiB of header and 4 KiB of body: a 12 KiB read buffer
  Start(o, Hello());
  Client c(server->local_address());
  c.Send("GET /metrics HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1;");
  c.Send(std::string(64 * 1024, 'e'));  // the line goes on: the server must not wait for its end
  std::string r = c.Receive();
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 400") << r.substr(0, 200);
  EXPECT_EQ(r.find("hello"), std::string::npos) << "never reaches the handler";
  EXPECT_EQ(server->stats().refused_malformed, 1u);
  Client after(server->local_address());
  after.Send(Get("/ok"));
  EXPECT_NE(after.Receive("hello /ok").find("200 OK"), std::string::npos);
}

TEST_F(ServerTest, ARequestLineLongerThanTheBufferGets431) {
  Start({}, Hello());
  Client c(server->local_address());
  c.Send("GET /" + std::string(64 * 1024, 'p'));
  std::string r = c.Receive();
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 431") << r.substr(0, 200);
  EXPECT_EQ(server->stats().refused_header, 1u);
}

TEST_F(ServerTest, MalformedRequestsGet400AsGoAnswersThem) {
  Start({}, Hello());
  const std::vector<std::string> cases = {
      "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  // bad chunk size
      "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",  // conflict
      "GET /\r\n\r\n",                                                                  // HTTP/0.9
      std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11) +
          std::string(40, 'r'),            // TLS
      "GET / HTTP/1.1\r\nHost t\r\n\r\n",  // a header line without a colon
  };
  for (const std::string& req : cases) {
    Client c(server->local_address());
    c.Send(req);
    std::string r = c.Receive();
    EXPECT_EQ(StatusLine(r), "HTTP/1.1 400")
        << "request " << ::testing::PrintToString(req) << " -> " << r.substr(0, 200);
    EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  }
  EXPECT_EQ(server->stats().refused_malformed, cases.size());
}

TEST_F(ServerTest, AtTheLimitTheIdleConnectionUnusedLongestMakesRoom) {
  ServerOptions o;
  o.max_connections = 2;
  Start(o, Hello());
  Client a(server->local_address()), b(server->local_address());
  a.Send(Get("/a"));
  ASSERT_NE(a.Receive("hello /a").find("hello /a"), std::string::npos);
  b.Send(Get("/b"));
  ASSERT_NE(b.Receive("hello /b").find("hello /b"), std::string::npos);
  a.Send(Get("/a2"));  // a is now the more recently used of the two
  ASSERT_NE(a.Receive("hello /a2").find("hello /a2"), std::string::npos);
  Client scraper(server->local_address());
  scraper.Send(Get("/s"));
  EXPECT_NE(scraper.Receive("hello /s").find("hello /s"), std::string::npos);
  EXPECT_TRUE(b.ClosedByPeer()) << "b was idle the longest";
  a.Send(Get("/a3"));
  EXPECT_NE(a.Receive("hello /a3").find("hello /a3"), std::string::npos);
  EXPECT_EQ(server->stats().connections_evicted_idle, 1u);
  EXPECT_EQ(server->stats().connections_rejected, 0u);
}

TEST_F(ServerTest, AYoungUnprovenConnectionStaysWhileAnIdleOneCanGo) {
  // A crowd that reconnects must push out its own idle connections, not a new scraper that is
  // still in its handshake (or, here, has not sent its request yet).
  ServerOptions o;
  o.max_connections = 2;
  o.unproven_grace = std::chrono::milliseconds(60'000);
  Start(o, Hello());
  Client idle(server->local_address());
  idle.Send(Get("/i"));
  ASSERT_NE(idle.Receive("hello /i").find("hello /i"), std::string::npos);
  Client scraper(server->local_address());  // connected, request not sent yet: unproven, young
  Client crowd(server->local_address());    // the table is full: the idle one goes
  EXPECT_TRUE(idle.ClosedByPeer());
  scraper.Send(Get("/s"));
  EXPECT_NE(scraper.Receive("hello /s").find("200 OK"), std::string::npos);
  EXPECT_EQ(server->stats().connections_evicted_idle, 1u);
  EXPECT_EQ(server->stats().connections_evicted, 0u);
}

TEST_F(ServerTest, AnUnprovenConnectionPastItsGraceGoesBeforeAnIdleOne) {
  ServerOptions o;
  o.max_connections = 2;
  o.unproven_grace = std::chrono::milliseconds(0);  // every unproven connection counts as stalled
  Start(o, Hello());
  Client idle(server->local_address());
  idle.Send(Get("/i"));
  ASSERT_NE(idle.Receive("hello /i").find("hello /i"), std::string::npos);
  Client silent(server->local_address());
  Client next(server->local_address());
  EXPECT_TRUE(silent.ClosedByPeer());
  idle.Send(Get("/i2"));
  EXPECT_NE(idle.Receive("hello /i2").find("hello /i2"), std::string::npos);
  EXPECT_EQ(server->stats().connections_evicted, 1u);
}

TEST_F(ServerTest, WhenEveryConnectionIsBusyANewOneIsClosed) {
  Parking p;
  ServerOptions o;
  o.max_connections = 2;
  Start(o, p.Make());
  Client a(server->local_address()), b(server->local_address());
  a.Send(Get("/hold"));
  b.Send(Get("/hold"));
  p.WaitFor(2);
  Client over(server->local_address());
  EXPECT_TRUE(over.ClosedByPeer());
  EXPECT_EQ(server->stats().connections_rejected, 1u);
  p.AnswerAll();
  EXPECT_NE(a.Receive("held").find("held"), std::string::npos);
  EXPECT_NE(b.Receive("held").find("held"), std::string::npos);
}

TEST_F(ServerTest, RequestsInFlightAreBoundedApartFromConnections) {
  Parking p;
  ServerOptions o;
  o.max_requests_in_flight = 1;
  Start(o, p.Make());
  Client a(server->local_address());
  a.Send(Get("/hold"));
  p.WaitFor(1);
  Client b(server->local_address());
  b.Send(Get("/x"));
  std::string r = b.Receive("retry");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 503") << r;
  EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
  p.AnswerAll();
  EXPECT_NE(a.Receive("held").find("held"), std::string::npos);
  b.Send(Get("/y"));  // the same connection, now that the first answer has gone
  EXPECT_NE(b.Receive("hello /y").find("200 OK"), std::string::npos);
  EXPECT_EQ(server->stats().refused_busy, 1u);
}

// alice:s3cret and bob:s3cret (cost 4).
constexpr const char* kHash = "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6";
const std::string kAlice = "Authorization: Basic YWxpY2U6czNjcmV0\r\n";
const std::string kBob = "Authorization: Basic Ym9iOnMzY3JldA==\r\n";

class WebConfigReloadTest : public ServerTest {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("gpulse-webreload-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "web.yml").string();
  }
  void TearDown() override {
    ServerTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  std::string Ask(const std::string& who) {
    Client c(server->local_address());
    c.Send(Get("/m", who + "Connection: close\r\n"));
    return StatusLine(c.Receive());
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(WebConfigReloadTest, AChangedFileAppliesToTheNextRequestAndABrokenOneKeepsTheOld) {
  Write(std::string("basic_auth_users:\n  alice: ") + kHash + "\n");
  auto web = LoadWebConfig(path_);
  ASSERT_TRUE(web.ok()) << web.error().message;
  ServerOptions o;
  o.web = *web;
  o.web_config_file = path_;
  std::vector<std::string> said;
  std::mutex mu;
  o.log = [&](const std::string& s) {
    std::lock_guard lock(mu);
    said.push_back(s);
  };
  Start(o, Hello());
  Client kept(server->local_address());  // a keep-alive scraper, through every change
  kept.Send(Get("/k", kAlice));
  EXPECT_NE(kept.Receive("hello /k").find("200 OK"), std::string::npos);
  EXPECT_EQ(Ask(kBob), "HTTP/1.1 401");

  Write(std::string("basic_auth_users:\n  bob: ") + kHash + "\n");  // alice's password rotated out
  EXPECT_EQ(Ask(kBob), "HTTP/1.1 200");
  EXPECT_EQ(Ask(kAlice), "HTTP/1.1 401");
  kept.Send(Get("/k2", kAlice));
  EXPECT_NE(kept.Receive("Unauthorized").find("401"), std::string::npos)
      << "on an open connection too";
  EXPECT_EQ(server->stats().web_config_reloads, 1u);

  Write("basic_auth_users:\n  bob: not-a-hash\n");  // broken: bob's stays in force
  EXPECT_EQ(Ask(kBob), "HTTP/1.1 200");
  EXPECT_EQ(Ask(kBob), "HTTP/1.1 200");
  EXPECT_EQ(server->stats().web_config_reload_failures, 1u) << "said once per change";
  EXPECT_FALSE(server->stats().web_config_ok);

  Write("http_server_config:\n  headers:\n    X-Frame-Options: deny\n");  // auth off, a header on
  Client plain(server->local_address());
  plain.Send(Get("/p", "Connection: close\r\n"));
  std::string r = plain.Receive();
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 200") << r;
  EXPECT_NE(r.find("X-Frame-Options: deny"), std::string::npos) << r;
  EXPECT_TRUE(server->stats().web_config_ok);
  std::lock_guard lock(mu);
  ASSERT_EQ(said.size(), 3u);
  EXPECT_NE(said[1].find("not reloaded, the previous one stays in force"), std::string::npos)
      << said[1];
  EXPECT_NE(said[1].find(path_), std::string::npos) << said[1];
}

TEST_F(WebConfigReloadTest, SwitchingToTlsNeedsARestartAndIsRefused) {
  Write("");
  ServerOptions o;
  o.web_config_file = path_;
  o.log = [](const std::string&) {};
  Start(o, Hello());
  Write("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n");
  EXPECT_EQ(Ask(""), "HTTP/1.1 200");
  EXPECT_EQ(server->stats().web_config_reload_failures, 1u);
  EXPECT_FALSE(server->stats().web_config_ok);
}

}  // namespace
}  // namespace gpulse::net
