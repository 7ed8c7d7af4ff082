// What the server tests share: a blocking loopback HTTP client (raw bytes in, raw bytes out, every
// read bounded by a 10 s receive timeout so that a test can never hang) and a fixture that runs a
// Server on 127.0.0.1 on a thread of its own.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "net/server.h"

namespace gpulse::net::test_client {

// A blocking client socket with a receive timeout, so a test can never hang.
class Client {
 public:
  // `from`: the local address to connect from (any of 127.0.0.0/8 is loopback).
  explicit Client(const std::string& address, const char* from = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, from, &local.sin_addr);
      bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local);
    }
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

inline std::string Get(const std::string& path, const std::string& extra = "") {
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

}  // namespace gpulse::net::test_client
