// The HTTP server on loopback: requests, limits (header size, connections, read timeout), methods,
// gzip, responses completed from another thread while other clients are served, and draining.
// Every wait is bounded by a socket timeout; nothing asserts on elapsed time.
#include "net/server.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/server_client.h"

namespace gpulse::net {
namespace {

using test_client::Client;
using test_client::Get;
using test_client::ServerTest;

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

TEST_F(ServerTest, AnAnswerGzippedByItsHandlerIsSentAsItIs) {
  Start({}, [](const HttpRequest& r, Respond respond) {
    HttpResponse res;
    res.compressible = true;
    res.gzipped = r.accepts_gzip;
    res.body = r.accepts_gzip ? std::string("\x1f\x8b-handler-made", 16) : std::string(5000, 'a');
    respond(std::move(res));
  });
  Client c(server->local_address());
  c.Send(Get("/m", "Accept-Encoding: gzip\r\nConnection: close\r\n"));
  std::string r = c.Receive();
  EXPECT_NE(r.find("Content-Encoding: gzip"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find("Vary: Accept-Encoding"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find("Content-Length: 16"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find("-handler-made"), std::string::npos) << "not compressed again";
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

// alice:s3cret, alice:block (the stand-in verifier holds it until released), alice:wrong.
constexpr const char* kAliceHash = "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6";
const std::string kGood = "Authorization: Basic YWxpY2U6czNjcmV0\r\n";
const std::string kBlock = "Authorization: Basic YWxpY2U6YmxvY2s=\r\n";
const std::string kWrong = "Authorization: Basic YWxpY2U6d3Jvbmc=\r\n";

// A password check that blocks on "block" until Release: a bcrypt that takes as long as the test
// wants. Before issue 13 bcrypt ran on the loop thread and every other client waited behind it.
struct BlockingVerifier {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  BasicAuth::Verifier Make() {
    return [this](const std::string& password, const std::string& hash) {
      if (password == "block") {
        entered.set_value();
        released.wait();
        return false;
      }
      return BcryptMatches(password, hash);
    };
  }
};

TEST_F(ServerTest, APasswordCheckInProgressDoesNotStallOtherClients) {
  BlockingVerifier v;
  ServerOptions o;
  o.web.basic_auth_users = {{"alice", kAliceHash}};
  o.verify_password = v.Make();
  Start(o, Hello());
  Client good(server->local_address());
  good.Send(Get("/a", kGood));
  ASSERT_NE(good.Receive("hello /a").find("200 OK"), std::string::npos);
  Client attacker(server->local_address());
  attacker.Send(Get("/x", kBlock));
  v.entered.get_future().wait();  // the check is running, on a worker thread
  good.Send(Get("/b", kGood));      // verified before: answered from the cache, at once
  EXPECT_NE(good.Receive("hello /b").find("200 OK"), std::string::npos);
  Client anonymous(server->local_address());
  anonymous.Send(Get("/c"));
  EXPECT_NE(anonymous.Receive("Unauthorized").find("401"), std::string::npos);
  v.release.set_value();
  EXPECT_NE(attacker.Receive("Unauthorized").find("401"), std::string::npos);
}

TEST_F(ServerTest, ChecksPerClientAddressAreBounded) {
  BlockingVerifier v;
  ServerOptions o;
  o.web.basic_auth_users = {{"alice", kAliceHash}};
  o.verify_password = v.Make();
  o.max_auth_checks_per_peer = 1;
  Start(o, Hello());
  Client first(server->local_address());
  first.Send(Get("/x", kBlock));
  v.entered.get_future().wait();
  Client second(server->local_address());
  second.Send(Get("/y", kWrong));
  std::string r = second.Receive();
  EXPECT_NE(r.find("429"), std::string::npos) << r;
  EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
  Client elsewhere(server->local_address(), "127.0.0.2");  // another address has its own budget
  elsewhere.Send(Get("/z", kGood));
  v.release.set_value();
  EXPECT_NE(elsewhere.Receive("hello /z").find("200 OK"), std::string::npos);
  EXPECT_GE(server->stats().auth_busy, 1u);
}

TEST_F(ServerTest, AnUnknownUserRunsTheSameCheckAsAWrongPassword) {
  std::mutex mu;
  std::vector<std::string> hashes;
  ServerOptions o;
  o.web.basic_auth_users = {{"alice", kAliceHash}};
  o.verify_password = [&](const std::string& password, const std::string& hash) {
    std::lock_guard lock(mu);
    hashes.push_back(hash);
    return BcryptMatches(password, hash);
  };
  Start(o, Hello());
  Client c(server->local_address());
  c.Send(Get("/a", kWrong));
  EXPECT_NE(c.Receive("Unauthorized").find("401"), std::string::npos);
  c.Send(Get("/b", "Authorization: Basic Ym9iOnMzY3JldA==\r\n"));  // bob:s3cret, no such user
  EXPECT_NE(c.Receive("Unauthorized").find("401"), std::string::npos);
  std::lock_guard lock(mu);
  ASSERT_EQ(hashes.size(), 2u) << "both cost one bcrypt";
  EXPECT_EQ(hashes[0], kAliceHash);
  EXPECT_EQ(hashes[1].substr(0, 7), "$2b$04$") << "a dummy hash of the configured cost";
}

TEST_F(ServerTest, AtTheLimitAConnectionThatNeverSentARequestMakesRoom) {
  ServerOptions o;
  o.max_connections = 2;
  Start(o, Hello());
  Client idle1(server->local_address()), idle2(server->local_address());
  Client scraper(server->local_address());  // over the limit: idle1, the oldest, goes
  scraper.Send(Get("/s"));
  EXPECT_NE(scraper.Receive("hello /s").find("hello /s"), std::string::npos);
  EXPECT_TRUE(idle1.ClosedByPeer());
  EXPECT_GE(server->stats().connections_evicted, 1u);
}

TEST_F(ServerTest, WrongPasswordsDoNotProveAConnection) {
  ServerOptions o;
  o.max_connections = 1;
  o.web.basic_auth_users = {{"alice", kAliceHash}};
  Start(o, Hello());
  Client attacker(server->local_address());
  attacker.Send(Get("/x", kWrong));
  EXPECT_NE(attacker.Receive("Unauthorized").find("401"), std::string::npos);
  Client scraper(server->local_address());
  scraper.Send(Get("/s", kGood));
  EXPECT_NE(scraper.Receive("hello /s").find("200 OK"), std::string::npos);
  EXPECT_TRUE(attacker.ClosedByPeer());
}

TEST_F(ServerTest, ConnectionsPerClientAddressAreLimited) {
  ServerOptions o;
  o.max_connections_per_peer = 2;
  Start(o, Hello());
  Client a(server->local_address()), b(server->local_address());
  a.Send(Get("/a"));
  ASSERT_NE(a.Receive("hello /a").find("hello /a"), std::string::npos);
  Client third(server->local_address());
  EXPECT_TRUE(third.ClosedByPeer());
  Client other(server->local_address(), "127.0.0.2");
  other.Send(Get("/o"));
  EXPECT_NE(other.Receive("hello /o").find("hello /o"), std::string::npos);
}

TEST_F(ServerTest, TheFirstRequestHasItsOwnDeadlineBelowTheIdleTimeout) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(60'000);  // longer than the client's 10 s wait
  o.first_request_timeout = std::chrono::milliseconds(200);
  Start(o, Hello());
  Client silent(server->local_address());
  EXPECT_TRUE(silent.ClosedByPeer());
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
