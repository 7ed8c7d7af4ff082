// The server's management-API features: POST/PUT/DELETE with bodies when writes are allowed, and
// the unix socket (mode, peer credentials, a stale socket file replaced, a live one or a non-socket
// refused, basic auth left to the socket's permissions). Every wait is bounded by a socket timeout.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "net/server.h"

namespace gpulse::net {
namespace {

std::string TempDir() {
  std::string t = "/tmp/gpulse-unix-XXXXXX";
  EXPECT_NE(mkdtemp(t.data()), nullptr);
  return t;
}

// Sends `request` over the unix socket at `path` and reads until the server closes.
std::string Ask(const std::string& path, const std::string& request) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  std::string got;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    (void)!write(fd, request.data(), request.size());
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
      got.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return got;
}

class UnixServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions o) {
    o.address = "127.0.0.1:0";
    auto s = Server::Create(std::move(o), [this](const HttpRequest& r, Respond respond) {
      seen = r;
      HttpResponse res;
      res.body = r.method + " " + r.path + " [" + r.body + "]" +
                 (r.peer ? " uid=" + std::to_string(r.peer->uid) : " tcp");
      respond(std::move(res));
    });
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
  std::unique_ptr<Server> server;
  std::thread loop;
  HttpRequest seen;
};

TEST_F(UnixServerTest, ServesOnTheSocketWithCredentialsAndWrites) {
  std::string dir = TempDir();
  ServerOptions o;
  o.unix_socket_path = dir + "/api.sock";
  o.unix_socket_mode = 0640;
  o.allow_writes = true;
  Start(o);
  EXPECT_EQ(server->unix_socket_path(), dir + "/api.sock");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/api.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  std::string r =
      Ask(dir + "/api.sock",
          "POST /api/v1/groups HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
          "Content-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"name\":\"g\"}");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find("POST /api/v1/groups [{\"name\":\"g\"}] uid=" + std::to_string(geteuid())),
            std::string::npos)
      << r;
  EXPECT_EQ(seen.content_type, "application/json");
  ASSERT_TRUE(seen.peer.has_value());
  EXPECT_EQ(seen.peer->pid, static_cast<std::uint32_t>(getpid()));
  std::string del = Ask(dir + "/api.sock",
                        "DELETE /api/v1/groups/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(del.find("DELETE /api/v1/groups/2 []"), std::string::npos) << del;
}

TEST_F(UnixServerTest, WritesAreRefusedUnlessAllowed) {
  std::string dir = TempDir();
  ServerOptions o;
  o.unix_socket_path = dir + "/api.sock";
  Start(o);
  std::string r =
      Ask(dir + "/api.sock",
          "POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD"), std::string::npos) << r;
}

TEST_F(UnixServerTest, BasicAuthIsLeftToTheSocketsPermissions) {
  std::string dir = TempDir();
  ServerOptions o;
  o.unix_socket_path = dir + "/api.sock";
  o.web.basic_auth_users = {
      {"alice", "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6"}};
  Start(o);
  std::string r = Ask(dir + "/api.sock", "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find(" uid="), std::string::npos) << r;
}

TEST_F(UnixServerTest, AStaleSocketFileIsReplaced) {
  std::string dir = TempDir();
  std::string path = dir + "/api.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);  // bound, never listening, closed: what a crash leaves
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  close(fd);
  ServerOptions o;
  o.unix_socket_path = path;
  Start(o);
  EXPECT_EQ(
      Ask(path, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").rfind("HTTP/1.1 200", 0),
      0u);
}

TEST(UnixServer, ALiveSocketOrAFileIsRefused) {
  std::string dir = TempDir();
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.unix_socket_path = dir + "/api.sock";
  auto first = Server::Create(o, [](const HttpRequest&, Respond r) { r(HttpResponse{}); });
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = Server::Create(o, [](const HttpRequest&, Respond r) { r(HttpResponse{}); });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("another server listens"), std::string::npos)
      << second.error().message;
  std::ofstream(dir + "/file") << "not a socket";
  o.unix_socket_path = dir + "/file";
  auto third = Server::Create(o, [](const HttpRequest&, Respond r) { r(HttpResponse{}); });
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("is not a socket"), std::string::npos)
      << third.error().message;
  std::ifstream in(dir + "/file");
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "not a socket");
}

TEST(UnixServer, TheSocketGoesWithTheServer) {
  std::string dir = TempDir();
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.unix_socket_path = dir + "/api.sock";
  {
    auto s = Server::Create(o, [](const HttpRequest&, Respond r) { r(HttpResponse{}); });
    ASSERT_TRUE(s.ok());
  }
  struct stat st {};
  EXPECT_NE(stat((dir + "/api.sock").c_str(), &st), 0) << "the socket file is removed";
}

}  // namespace
}  // namespace gpulse::net
