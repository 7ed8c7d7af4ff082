#include "cli/agent_client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/agent_reply.h"
#include "cli/subcommand.h"
#include "net/client_channel.h"
#include "net/http_util.h"
#include "sys/runtime_dir.h"

namespace gpulse::cli {
namespace {

constexpr std::size_t kMaxReplyBytes = 1u << 30;
constexpr int kTimeoutS = 120;

// A connected socket, closed on scope exit; movable, so it can travel in a Result.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&&) = delete;
  Socket(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives the descriptor up: this no longer closes it.
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// The TLS flags of the verb being run (one verb a process): AddHostOption binds them.
net::ClientTls& TlsFlags() {
  static net::ClientTls flags;
  return flags;
}

struct Where {
  bool unix_socket = false;
  bool tls = false;
  std::string path;  // unix
  std::string host;  // tcp
  std::string port;
};

Result<Where> ParseHost(const std::string& text) {
  Where w;
  if (text.rfind("unix://", 0) == 0) {
    w.unix_socket = true;
    w.path = text.substr(7);
    if (w.path.empty() || w.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return InvalidArgument("--host \"" + text + "\": the socket path is empty or too long");
    }
    return w;
  }
  std::string rest = text;
  if (text.rfind("https://", 0) == 0) {
    w.tls = true;
    rest = text.substr(8);
  } else if (text.rfind("http://", 0) == 0) {
    rest = text.substr(7);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  auto addr = net::ParseListenAddress(rest);
  if (!addr || addr->host.empty()) {
    return InvalidArgument("--host \"" + text +
                           "\" is not unix://PATH, HOST:PORT, http://HOST:PORT or https://HOST:PORT");
  }
  w.host = addr->host;
  w.port = std::to_string(addr->port);
  return w;
}

Result<Socket> Connect(const Where& w, const std::string& shown) {
  auto fail = [&](const std::string& why) -> Error {
    return Unavailable("cannot reach the agent at " + shown + ": " + why +
                       (w.unix_socket ? " (is `gpulse agent` running? --host names another)" : ""));
  };
  if (w.unix_socket) {
    Socket fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail(std::strerror(errno));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, w.path.c_str(), w.path.size());
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return fail(std::strerror(errno));
    return fd;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(w.host.c_str(), w.port.c_str(), &hints, &res); rc != 0) {
    return fail(gai_strerror(rc));
  }
  std::string last = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    Socket fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) continue;
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(res);
      return fd;
    }
    last = std::strerror(errno);
  }
  freeaddrinfo(res);
  return fail(last);
}

}  // namespace

std::string ResolveAgentHost(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("GPULSE_HOST"); env != nullptr && *env != '\0') return env;
  return "unix://" + sys::FindAgentSocket();
}

namespace {

// The connection, with TLS for https:// (the server's certificate checked as TlsFlags say).
Result<net::ClientChannel> Open(const Where& where, const std::string& host) {
  auto fd = Connect(where, host);
  if (!fd) return fd.error();
  timeval tv{kTimeoutS, 0};
  setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd->get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int raw = fd->Release();  // the channel's from here: it closes it, also on failure
  if (!where.tls) return net::ClientChannel::Plain(raw);
  auto channel = net::ClientChannel::Tls(raw, where.host, TlsFlags());
  if (!channel) {
    const Error& e = channel.error();
    return Error{e.code, "the agent at " + host + ": " + e.message};
  }
  return channel;
}

// Connects and sends one request (Connection: close); the answer is the caller's to read.
Result<net::ClientChannel> SendRequest(const std::string& host, const std::string& method,
                                       const std::string& target, const std::string& body,
                                       const char* accept) {
  auto where = ParseHost(host);
  if (!where) return where.error();
  auto fd = Open(*where, host);
  if (!fd) return fd.error();
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: " +
                    (where->unix_socket ? std::string("localhost") : where->host) +
                    "\r\nConnection: close\r\nAccept: " + accept + "\r\n";
  const char* user = std::getenv("GPULSE_AGENT_USER");
  const char* pass = std::getenv("GPULSE_AGENT_PASSWORD");
  if (user != nullptr && *user != '\0') {
    req += "Authorization: Basic " +
           net::Base64Encode(std::string(user) + ":" + (pass ? pass : "")) + "\r\n";
  }
  if (!body.empty() || method == "POST" || method == "PUT") {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  for (std::size_t sent = 0; sent < req.size();) {
    ssize_t n = fd->Send(req.data() + sent, req.size() - sent);
    if (n <= 0)
      return Unavailable("the agent at " + host +
                         " closed the connection: " + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  return fd;
}

// Reads what the connection has within `timeout`: >0 bytes, 0 at the end, -1 on timeout (errno 0)
// or an error (errno set).
ssize_t RecvWithin(net::ClientChannel& fd, char* buf, std::size_t len,
                   std::chrono::milliseconds timeout) {
  if (fd.Pending()) return fd.Recv(buf, len);  // decrypted already: poll would not see it
  // A signal (Ctrl-C in `top`) ends the wait at once, as a timeout: the caller checks its flag.
  pollfd p{fd.fd(), POLLIN, 0};
  int ready = poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready == 0 || (ready < 0 && errno == EINTR)) {
    errno = 0;
    return -1;
  }
  if (ready < 0) return -1;
  ssize_t n = 0;
  do {
    n = fd.Recv(buf, len);
  } while (n < 0 && errno == EINTR);
  return n;
}

class SocketStream final : public AgentStream {
 public:
  SocketStream(net::ClientChannel fd, std::string host, std::string pending, bool chunked)
      : fd_(std::move(fd)), host_(std::move(host)), raw_(std::move(pending)), body_(chunked) {}

  Result<bool> Read(std::string& out, std::chrono::milliseconds timeout) override {
    bool got = body_.Decode(raw_, out);
    if (got) return true;
    char buf[65536];
    ssize_t n = RecvWithin(fd_, buf, sizeof buf, timeout);
    if (n < 0 && errno == 0) return false;
    if (n < 0) return Unavailable("reading the stream from " + host_ + ": " + std::strerror(errno));
    if (n == 0 || body_.ended()) return Unavailable("the server at " + host_ + " ended the stream");
    raw_.append(buf, static_cast<std::size_t>(n));
    return body_.Decode(raw_, out);
  }

 private:
  net::ClientChannel fd_;
  std::string host_;
  std::string raw_;  // bytes received, not yet decoded
  StreamBody body_;
};

}  // namespace

Result<AgentReply> CallAgent(const std::string& host, const std::string& method,
                             const std::string& target, const std::string& body) {
  auto fd = SendRequest(host, method, target, body, "application/json");
  if (!fd) return fd.error();
  std::string raw;
  char buf[65536];
  for (;;) {
    ssize_t n = fd->Recv(buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Unavailable("reading the agent's answer from " + host + ": " + std::strerror(errno));
    }
    raw.append(buf, static_cast<std::size_t>(n));
    if (raw.size() > kMaxReplyBytes) return Unavailable("the agent's answer is over 1 GiB");
  }
  return ParseReply(raw, host);
}

Result<std::unique_ptr<AgentStream>> OpenAgentStream(const std::string& host,
                                                     const std::string& target, bool* reached) {
  if (reached != nullptr) *reached = false;
  auto fd = SendRequest(host, "GET", target, "", "text/event-stream");
  if (!fd) return fd.error();
  if (reached != nullptr) *reached = true;
  std::string raw;
  char buf[16384];
  constexpr std::chrono::milliseconds kHeadTimeout{5'000};
  std::size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    ssize_t n = RecvWithin(*fd, buf, sizeof buf, kHeadTimeout);
    if (n <= 0)
      return Unavailable("the server at " + host + " sent no answer to " + target + " within 5 s");
    raw.append(buf, static_cast<std::size_t>(n));
    head_end = raw.find("\r\n\r\n");
    if (head_end == std::string::npos && raw.size() > 64 * 1024)
      return Unavailable("the server at " + host + " sent no HTTP head");
  }
  std::string lower = raw.substr(0, head_end);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t te = lower.find("\r\ntransfer-encoding:");
  const bool chunked =
      te != std::string::npos &&
      lower.substr(te, lower.find("\r\n", te + 2) - te).find("chunked") != std::string::npos;
  auto head = ParseReply(raw.substr(0, head_end + 4), host);
  if (!head) return head.error();
  if (head->status != 200) {
    // The refusal's text (e.g. the viewer limit) is short: read what comes within a moment.
    for (int i = 0; i < 20 && raw.size() < 64 * 1024; ++i) {
      ssize_t n = RecvWithin(*fd, buf, sizeof buf, std::chrono::milliseconds(100));
      if (n <= 0) break;
      raw.append(buf, static_cast<std::size_t>(n));
    }
    auto whole = ParseReply(raw, host);
    return Unavailable("the server at " + host + " refused " + target + ": " +
                       ReplyError(whole ? *whole : *head));
  }
  return std::unique_ptr<AgentStream>(
      new SocketStream(std::move(fd).value(), host, raw.substr(head_end + 4), chunked));
}

std::string ReplyError(const AgentReply& r) {
  if (r.json.is_object() && r.json.contains("error") && r.json["error"].is_string()) {
    return r.json["error"].get<std::string>();
  }
  std::string body = r.body;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return "HTTP " + std::to_string(r.status) + (body.empty() ? "" : ": " + body);
}

void AddHostOption(CLI::App& app, std::string& host) {
  app.add_option("--host", host,
                 "The agent: unix://PATH, HOST:PORT, http://HOST:PORT or https://HOST:PORT "
                 "(default: $GPULSE_HOST, else unix:///run/gpulse/agent.sock, else the per-user socket "
                 "an agent started without root made)");
  net::ClientTls& tls = TlsFlags();
  app.add_option("--ca-file", tls.ca_file,
                 "With https://: the CA that signed the agent's certificate (default: the "
                 "system's trusted CAs)")
      ->check(CLI::ExistingFile);
  app.add_option("--cert-file", tls.cert_file,
                 "With https://: a client certificate, for an agent that asks for one")
      ->check(CLI::ExistingFile);
  app.add_option("--key-file", tls.key_file, "With https://: the client certificate's key")
      ->check(CLI::ExistingFile);
  app.add_flag("--insecure", tls.insecure,
               "With https://: do not verify the agent's certificate or name (insecure: anyone on "
               "the path can read the password and the answers)");
}

std::optional<nlohmann::json> CallForVerb(const std::string& verb, const std::string& host,
                                          const std::string& method, const std::string& target,
                                          const nlohmann::json& body, int want, int* code) {
  auto r = CallAgent(ResolveAgentHost(host), method, target, body.is_null() ? "" : body.dump());
  if (!r) {
    fmt::print(stderr, "gpulse {}: {}\n", verb, r.error().message);
    *code = kExitFailure;
    return std::nullopt;
  }
  if (r->status != want) {
    fmt::print(stderr, "gpulse {}: {}\n", verb, ReplyError(*r));
    // A request the agent cannot serve as asked (bad value, unknown group, a level it refuses).
    *code = r->status == 400 || r->status == 404 || r->status == 501 ? kExitUsage : kExitFailure;
    return std::nullopt;
  }
  return r->json;
}

}  // namespace gpulse::cli
