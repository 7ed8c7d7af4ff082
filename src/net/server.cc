#include "net/server.h"

#include <malloc.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <list>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "net/asio.h"  // first of the Boost headers: see the comment there
#include "net/basic_auth.h"
#include "net/event_stream.h"
#include "net/http_util.h"
#include "net/tls_socket.h"
#include "net/work_pool.h"

namespace gpulse::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;

int OpensslVersion(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10:
      return TLS1_VERSION;
    case TlsVersion::kTls11:
      return TLS1_1_VERSION;
    case TlsVersion::kTls12:
      return TLS1_2_VERSION;
    case TlsVersion::kTls13:
      return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

std::string_view View(boost::beast::string_view s) { return {s.data(), s.size()}; }

std::string FormatEndpoint(const tcp::endpoint& ep) {
  std::string host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}

Result<std::shared_ptr<asio::ssl::context>> MakeTlsContext(const TlsSettings& t) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::single_dh_use, ec);
  ctx->use_certificate_chain_file(t.cert_file, ec);
  if (ec)
    return InvalidArgument("TLS: cannot load cert_file \"" + t.cert_file + "\": " + ec.message());
  ctx->use_private_key_file(t.key_file, asio::ssl::context::pem, ec);
  if (ec)
    return InvalidArgument("TLS: cannot load key_file \"" + t.key_file + "\": " + ec.message());
  SSL_CTX* native = ctx->native_handle();
  if (SSL_CTX_check_private_key(native) != 1) {
    return InvalidArgument("TLS: key_file \"" + t.key_file + "\" does not match cert_file \"" +
                           t.cert_file + "\"");
  }
  // Idle connections give their 16 KiB read and write buffers back (tls_socket.h); a partial write
  // is retried from where it stopped.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                               SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Resumption by session tickets only, as Go's TLS (the exporter-toolkit) does: a server-side
  // cache would keep about 1 KB for every client that ever connected.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_min_proto_version(native, OpensslVersion(t.min_version));
  if (t.max_version) SSL_CTX_set_max_proto_version(native, OpensslVersion(*t.max_version));
  if (t.client_auth != ClientAuth::kNone) {
    ctx->load_verify_file(t.client_ca_file, ec);
    if (ec)
      return InvalidArgument("TLS: cannot load client_ca_file \"" + t.client_ca_file +
                             "\": " + ec.message());
    auto mode = asio::ssl::verify_peer;
    if (t.client_auth == ClientAuth::kRequireAndVerify)
      mode |= asio::ssl::verify_fail_if_no_peer_cert;
    ctx->set_verify_mode(mode);
  }
  return ctx;
}

// The bcrypt pool: one or two threads, below the loop (work_pool.h).
std::unique_ptr<WorkPool> MakeAuthPool(std::size_t queue) {
  std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency() / 2, 1, 2);
  return std::make_unique<WorkPool>(threads, queue);
}

// Lets a busy exporter hold as many sockets as it allows connections.
void RaiseFileLimit(std::size_t wanted) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= wanted) return;
  r.rlim_cur = std::min<rlim_t>(r.rlim_max, wanted);
  setrlimit(RLIMIT_NOFILE, &r);
}

}  // namespace

class SessionBase;

struct Server::Impl {
  // Members session destructors touch come first: they outlive the io_context, whose destruction
  // destroys the sessions still referenced by pending handlers.
  std::unordered_set<SessionBase*> sessions;
  // Connections that have passed a request and are between requests (or reading one), least
  // recently active first: at the limit, the front makes room after the unproven ones.
  std::list<SessionBase*> lru;
  std::unordered_map<std::string, std::size_t> per_peer;        // open connections by address
  std::unordered_map<std::string, std::size_t> auth_in_flight;  // bcrypt checks by address
  std::size_t unproven = 0;  // sessions that have not yet passed a request (TLS, auth included)
  std::size_t in_flight = 0;  // requests handed to the handler and not yet answered
  std::uint64_t next_seq = 0;
  bool draining = false;
  bool destroying = false;
  std::atomic<std::uint64_t> accepted{0}, rejected{0}, requests{0}, open{0}, evicted{0},
      evicted_idle{0}, auth_busy{0}, refused_header{0}, refused_body{0}, refused_malformed{0},
      refused_busy{0}, handshakes_refused{0}, handshakes_failed{0}, reloads{0},
      reload_failures{0};
  std::atomic<bool> web_ok{true};
  std::atomic<std::int64_t> web_loaded_unix_s{0};
  // Shared: a connection keeps the context it began with (a reference on its SSL_CTX) across a
  // reload that puts a new one in force.
  std::shared_ptr<asio::ssl::context> ssl;
  WebConfigFiles web_files;  // what the web config in force was loaded from

  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  unix_stream::acceptor unix_acceptor{ioc};
  std::string unix_path;  // "" when there is no unix socket
  ino_t unix_inode = 0;   // ours, so the destructor removes only the file it made
  std::atomic<std::uint64_t> unix_refused{0};
  asio::signal_set signals{ioc};
  asio::steady_timer drain_timer{ioc};
  asio::steady_timer accept_retry{ioc};
  asio::steady_timer periodic_trim{ioc};
  std::map<int, std::function<void()>> on_signal;

  ServerOptions opt;
  Handler handler;
  std::optional<BasicAuth> auth;
  std::string local;
  // After ioc: destroyed first, so a check finishing during destruction can still post to ioc.
  std::unique_ptr<WorkPool> auth_pool;
  std::unique_ptr<WorkPool> handshake_pool;

  ~Impl() {
    destroying = true;
    RemoveUnixSocket();
  }

  void Reserve();
  void DoAccept();
  void OnAccept(boost::system::error_code ec, tcp::socket socket);
  void DoAcceptUnix();
  void OnAcceptUnix(boost::system::error_code ec, unix_stream::socket socket);
  bool Admits(const PeerCredentials& c) const;
  Status ListenUnix();
  void RemoveUnixSocket();
  bool MakeRoom();
  Status ApplyWebConfig(WebConfig web);
  void CheckWebConfig(bool force);
  void Say(const std::string& what) const;
  void WaitSignal();
  void BeginShutdown();
  void SessionGone();
  void ArmPeriodicTrim();
};

class SessionBase {
 public:
  SessionBase(Server::Impl& srv, std::string peer)
      : srv_(srv),
        peer_(std::move(peer)),
        born_(std::chrono::steady_clock::now()),
        seq_(srv.next_seq++) {
    srv_.sessions.insert(this);
    ++srv_.per_peer[peer_];
    ++srv_.unproven;
    ++srv_.open;
  }
  virtual ~SessionBase() { Deregister(); }
  SessionBase(const SessionBase&) = delete;
  SessionBase& operator=(const SessionBase&) = delete;
  virtual void CloseIfIdle() = 0;
  virtual void CloseNow() = 0;
  bool proven() const { return proven_; }
  std::uint64_t seq() const { return seq_; }
  std::chrono::steady_clock::time_point born() const { return born_; }

 protected:
  // The connection has passed a request (its TLS handshake and authentication included): it now
  // counts against the limit for good, instead of being the first to go when the server is full.
  void Prove() {
    if (proven_ || !registered_) return;
    proven_ = true;
    --srv_.unproven;
  }

  // A proven connection between requests, or reading one, goes to the back of the LRU list (the
  // most recently active); one whose request is complete leaves it until it waits again.
  void Touch() {
    if (!proven_ || !registered_) return;
    if (in_lru_) {
      srv_.lru.splice(srv_.lru.end(), srv_.lru, lru_pos_);
    } else {
      lru_pos_ = srv_.lru.insert(srv_.lru.end(), this);
      in_lru_ = true;
    }
  }
  void LeaveLru() {
    if (!in_lru_) return;
    srv_.lru.erase(lru_pos_);
    in_lru_ = false;
  }
  // A request handed to the handler counts until its answer comes (or the connection goes).
  void BeginInFlight() {
    in_flight_ = true;
    ++srv_.in_flight;
  }
  void EndInFlight() {
    if (!in_flight_) return;
    in_flight_ = false;
    --srv_.in_flight;
  }
  bool registered() const { return registered_; }

  // Called when the socket closes (a Respond callback may keep the object alive longer): the
  // connection no longer counts against the limits or holds up a drain.
  void Deregister() {
    if (!registered_) return;
    LeaveLru();
    EndInFlight();
    registered_ = false;
    srv_.sessions.erase(this);
    if (auto it = srv_.per_peer.find(peer_); it != srv_.per_peer.end() && --it->second == 0)
      srv_.per_peer.erase(it);
    if (!proven_) --srv_.unproven;
    --srv_.open;
    srv_.SessionGone();
  }

  Server::Impl& srv_;
  const std::string peer_;  // the client's address without the port
  const std::chrono::steady_clock::time_point born_;

 private:
  const std::uint64_t seq_;
  bool registered_ = true;
  bool proven_ = false;
  bool in_lru_ = false;
  bool in_flight_ = false;
  std::list<SessionBase*>::iterator lru_pos_;
};

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Server::Impl& srv, Stream stream, std::string peer, std::string remote,
          std::optional<PeerCredentials> credentials = std::nullopt)
      : SessionBase(srv, std::move(peer)),
        stream_(std::move(stream)),
        remote_(std::move(remote)),
        credentials_(credentials),
        deadline_(srv.ioc) {
    // Whatever a client sends sits here only until it is parsed, and never more than this: a
    // line longer (a chunk-size line with a 100 MB extension) fails the read with buffer_overflow
    // instead of growing the buffer.
    buffer_.max_size(ReadBufferLimit(srv.opt));
  }

  // A session the io_context drops without Close (abandoned at the drain timeout) lets its stream
  // go too: no waker may point at this server afterwards.
  ~Session() override {
    if (events_) events_->Detach();
  }

  void Start() {
    if constexpr (kTls) {
      idle_ = true;
      // A client that connects and sends nothing, or stalls its handshake, is gone long before the
      // idle timeout: it holds a slot no real scraper can use.
      ArmAt(born_ + std::min({srv_.opt.handshake_timeout, srv_.opt.first_request_timeout,
                              srv_.opt.read_timeout}));
      stream_.async_handshake([self = this->shared_from_this()](boost::system::error_code ec) {
        self->idle_ = false;
        self->OnHandshake(ec);
      });
    } else {
      WaitRequest();
    }
  }

  // A stream waiting for its next frame counts as idle: a drain ends it.
  void CloseIfIdle() override {
    if (idle_ || events_) Close();
  }
  void CloseNow() override { Close(); }

 private:
  static constexpr bool kTls = std::is_same_v<Stream, TlsSocket>;

  void OnHandshake(boost::system::error_code ec) {
    if (!ec && registered()) return WaitRequest();
    if (ec == asio::error::no_buffer_space) {
      ++srv_.handshakes_refused;
    } else if (ec == TlsSocket::kPlainHttp) {
      // As Go's TLS servers (node_exporter, Prometheus) answer an HTTP request sent to them.
      ++srv_.refused_malformed;
      static constexpr std::string_view kAnswer =
          "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
      ::send(Lowest().native_handle(), kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    } else if (ec) {
      ++srv_.handshakes_failed;
    }
    Close();
  }

  auto& Lowest() {
    if constexpr (kTls) {
      return stream_.socket();
    } else {
      return stream_;
    }
  }

  // A deadline handler already queued when the deadline is re-armed or disarmed still runs without
  // an error: the generation tells it that it is stale.
  void ArmAt(std::chrono::steady_clock::time_point when) {
    ++deadline_gen_;
    deadline_.expires_at(when);
    deadline_.async_wait(
        [self = this->shared_from_this(), gen = deadline_gen_](boost::system::error_code ec) {
          if (!ec && gen == self->deadline_gen_) self->Close();
        });
  }
  void Disarm() {
    ++deadline_gen_;
    deadline_.cancel();
  }
  void Arm(std::chrono::milliseconds d) { ArmAt(std::chrono::steady_clock::now() + d); }

  void Close() {
    if (!Lowest().is_open()) return Deregister();
    boost::system::error_code ec;
    if constexpr (kTls) {
      // A handshake step running on the handshake thread uses the socket and its SSL: wake it by
      // shutting the socket down, and close for good when its completion comes back to the loop.
      if (stream_.offloaded()) {
        ::shutdown(Lowest().native_handle(), SHUT_RDWR);
        Disarm();
        return Deregister();
      }
      stream_.ShutdownNow();
    }
    Lowest().shutdown(asio::socket_base::shutdown_both, ec);
    Lowest().close(ec);
    Disarm();
    if (events_) events_->Detach();
    Deregister();
  }

  // Between requests a connection holds no parser and no buffer: it waits for the socket to become
  // readable and only then reads. The first request must arrive within first_request_timeout of
  // the connect; later ones within read_timeout of the previous response.
  void WaitRequest() {
    if (srv_.draining) return Close();
    idle_ = true;
    Touch();
    if (proven()) {
      Arm(srv_.opt.read_timeout);
    } else {
      ArmAt(born_ + std::min(srv_.opt.first_request_timeout, srv_.opt.read_timeout));
    }
    bool buffered = buffer_.size() != 0;
    if constexpr (kTls) buffered = buffered || stream_.pending();
    if (buffered) return DoRead();  // a pipelined request is already here
    Lowest().async_wait(asio::socket_base::wait_read,
                        [self = this->shared_from_this()](boost::system::error_code ec) {
                          if (ec) return self->Close();
                          self->DoRead();
                        });
  }

  void DoRead() {
    if (srv_.draining) return Close();
    Touch();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.opt.max_header_bytes));
    parser_->body_limit(srv_.opt.max_body_bytes);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](boost::system::error_code ec, std::size_t) {
                       self->OnRead(ec);
                     });
  }

  void OnRead(boost::system::error_code ec) {
    idle_ = false;
    LeaveLru();
    Disarm();  // the request is here: the handler takes the time it takes, as before
    if (ec) return OnReadError(ec);
    ++srv_.requests;
    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive() && !srv_.draining;
    head_ = req.method() == http::verb::head;
    // Authentication first: an unauthenticated client learns nothing, not even which methods exist.
    // A unix-socket client was admitted by the socket's permissions and its credentials instead.
    if (!credentials_) srv_.CheckWebConfig(false);  // a rotated password applies from now
    if (!srv_.auth || credentials_) return Dispatch();
    auto v = srv_.auth->Lookup(View(req[http::field::authorization]));
    if (auto* d = std::get_if<BasicAuth::Verdict>(&v)) {
      return *d == BasicAuth::Verdict::kAccept ? Dispatch() : Unauthorized();
    }
    VerifyOffLoop(std::move(std::get<BasicAuth::Pending>(v)));
  }

  // Over a limit, or unparseable: an answer that says which (as Go's net/http gives), then the
  // connection closes. The end of the stream, a reset or our own deadline closes it silently.
  void OnReadError(boost::system::error_code ec) {
    if (ec == http::error::header_limit) {
      ++srv_.refused_header;
      return Reject(431, "request header too large");
    }
    if (ec == http::error::body_limit) {
      ++srv_.refused_body;
      return Reject(413, "request body too large");
    }
    if (ec == http::error::buffer_overflow) {
      const bool in_header = !parser_ || !parser_->is_header_done();
      ++(in_header ? srv_.refused_header : srv_.refused_malformed);
      return in_header ? Reject(431, "request line or header line too long")
                       : Reject(400, "chunk-size line or trailer too long");
    }
    const bool truncated = ec == http::error::end_of_stream || ec == http::error::partial_message;
    if (ec.category() == http::make_error_code(http::error::bad_method).category() && !truncated &&
        Lowest().is_open()) {
      ++srv_.refused_malformed;
      return Reject(400, "malformed request: " + ec.message());
    }
    Close();
  }

  // bcrypt on the auth pool; the loop serves everyone else meanwhile. A peer may have only a few
  // checks in flight, and the pool's queue is bounded: past either, the answer is "busy" at once.
  void VerifyOffLoop(BasicAuth::Pending p) {
    std::size_t& mine = srv_.auth_in_flight[peer_];
    if (mine >= srv_.opt.max_auth_checks_per_peer) return Busy(429);
    ++mine;
    Arm(srv_.opt.write_timeout);  // a check never outlives its connection's budget
    Server::Impl* srv = &srv_;
    // The users in force now: a reload meanwhile does not change this check's.
    bool queued = srv_.auth_pool->TrySubmit(
        [self = this->shared_from_this(), srv, auth = *srv_.auth, p = std::move(p)]() mutable {
          bool ok = auth.Verify(p);
          asio::post(srv->ioc, [self = std::move(self), ok] { self->AfterCheck(ok); });
        });
    if (!queued) {
      DoneChecking();
      Busy(503);
    }
  }

  void DoneChecking() {
    if (auto it = srv_.auth_in_flight.find(peer_);
        it != srv_.auth_in_flight.end() && --it->second == 0)
      srv_.auth_in_flight.erase(it);
  }

  void AfterCheck(bool ok) {
    DoneChecking();
    if (!Lowest().is_open()) return;
    ok ? Dispatch() : Unauthorized();
  }

  void Unauthorized() {
    HttpResponse r = TextResponse(401, "Unauthorized");
    r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"gpulse\"");
    Write(std::move(r));
  }

  void Busy(int status) {
    ++srv_.auth_busy;
    HttpResponse r = TextResponse(status, "too many authentication checks in progress; retry");
    r.headers.emplace_back("Retry-After", "1");
    keep_alive_ = false;
    Write(std::move(r));
  }

  void Dispatch() {
    Prove();
    const auto& req = parser_->get();
    if (srv_.in_flight >= srv_.opt.max_requests_in_flight) {
      ++srv_.refused_busy;
      HttpResponse r = TextResponse(503, "too many requests in progress; retry");
      r.headers.emplace_back("Retry-After", "1");
      return Write(std::move(r));
    }
    const bool write = req.method() == http::verb::post || req.method() == http::verb::put ||
                       req.method() == http::verb::delete_;
    if (req.method() != http::verb::get && !head_ && !(write && srv_.opt.allow_writes)) {
      const char* allow = srv_.opt.allow_writes ? "GET, HEAD, POST, PUT, DELETE" : "GET, HEAD";
      HttpResponse r = TextResponse(405, std::string("only ") + allow + " are served");
      r.headers.emplace_back("Allow", allow);
      return Write(std::move(r));
    }
    HttpRequest hr;
    hr.method = std::string(req.method_string());
    if (write) hr.body = req.body();
    hr.content_type = std::string(View(req[http::field::content_type]));
    hr.peer = credentials_;
    hr.target = std::string(req.target());
    hr.path = hr.target.substr(0, hr.target.find('?'));
    hr.accepts_gzip = AcceptsGzip(View(req[http::field::accept_encoding]));
    hr.remote = remote_;
    accepts_gzip_ = hr.accepts_gzip;
    Server::Impl* srv = &srv_;
    BeginInFlight();
    Respond respond = [self = this->shared_from_this(), srv](HttpResponse r) {
      asio::post(srv->ioc, [self, r = std::move(r)]() mutable { self->Write(std::move(r)); });
    };
    srv_.handler(hr, std::move(respond));
  }

  void Reject(int status, std::string why) {
    keep_alive_ = false;
    head_ = false;
    Write(TextResponse(status, std::move(why)));
  }

  void Write(HttpResponse r) {
    EndInFlight();
    if (!Lowest().is_open()) {
      if (r.stream) r.stream->Detach();
      return;
    }
    if (r.stream) return StartStream(std::move(r));
    res_ = {};
    res_.version(11);
    res_.result(static_cast<unsigned>(r.status));
    res_.set(http::field::server, "gpulse");
    res_.set(http::field::content_type, r.content_type);
    res_.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : srv_.opt.web.headers) res_.set(k, v);
    for (const auto& [k, v] : r.headers) res_.set(k, v);
    if (r.compressible || r.gzipped) res_.set(http::field::vary, "Accept-Encoding");
    if (r.gzipped) {
      res_.set(http::field::content_encoding, "gzip");
    } else if (r.compressible && accepts_gzip_ && r.body.size() >= 256) {
      if (auto z = Gzip(r.body, srv_.opt.gzip_level)) {
        r.body = std::move(z).value();
        res_.set(http::field::content_encoding, "gzip");
      }
    }
    keep_alive_ = keep_alive_ && !srv_.draining;
    res_.keep_alive(keep_alive_);
    std::size_t length = r.body.size();
    if (!head_) res_.body() = std::move(r.body);
    res_.content_length(length);
    Arm(srv_.opt.write_timeout);
    http::async_write(stream_, res_,
                      [self = this->shared_from_this()](boost::system::error_code ec, std::size_t) {
                        self->OnWrite(ec);
                      });
  }

  void OnWrite(boost::system::error_code ec) {
    // A large answer (an agent's history) leaves its freed pages with malloc, which keeps them:
    // give them back once it is written, as after a burst of connections.
    const bool large = res_.body().capacity() > kLargeResponseBytes;
    if (ec || !keep_alive_) {
      Close();
      res_ = {};
      if (large) malloc_trim(0);
      return;
    }
    // Nothing of this request stays with an idle connection.
    res_ = {};
    parser_.reset();
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
    if (large) malloc_trim(0);
    WaitRequest();
  }

  // A streamed answer: the head (chunked), then each frame as a chunk when it arrives, until the
  // stream closes (a last chunk, then the connection closes) or the client goes (detected by the
  // socket turning readable: a stream's client sends nothing more). No read deadline while waiting
  // for frames; each write has the write timeout.
  void StartStream(HttpResponse r) {
    events_ = std::move(r.stream);
    keep_alive_ = false;
    // Chunks need HTTP/1.1; an HTTP/1.0 client (a proxy's default) gets the frames as they are, the
    // end of the answer being the end of the connection.
    chunked_ = parser_ && parser_->get().version() >= 11;
    if (srv_.draining) events_->Close();  // began as the drain did: the head, then the end
    stream_head_.emplace();
    auto& head = *stream_head_;
    head.version(11);
    head.result(static_cast<unsigned>(r.status));
    head.set(http::field::server, "gpulse");
    head.set(http::field::content_type, r.content_type);
    head.set("X-Content-Type-Options", "nosniff");
    head.set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : srv_.opt.web.headers) head.set(k, v);
    for (const auto& [k, v] : r.headers) head.set(k, v);
    head.keep_alive(false);
    head.chunked(chunked_);
    stream_serializer_.emplace(head);
    Arm(srv_.opt.write_timeout);
    http::async_write_header(
        stream_, *stream_serializer_,
        [self = this->shared_from_this()](boost::system::error_code ec, std::size_t) {
          self->Disarm();
          if (ec || self->head_) return self->Close();
          self->WatchStreamClient();
          std::weak_ptr<Session> weak = self;
          Server::Impl* srv = &self->srv_;
          self->events_->SetWaker([weak, srv] {
            asio::post(srv->ioc, [weak] {
              if (auto s = weak.lock()) s->StreamNext();
            });
          });
          self->StreamNext();
        });
  }

  void WatchStreamClient() {
    Lowest().async_wait(asio::socket_base::wait_read,
                        [self = this->shared_from_this()](boost::system::error_code) {
                          self->Close();  // EOF, a reset, or bytes a stream's client never sends
                        });
  }

  void StreamNext() {
    if (writing_chunk_ || !events_ || !Lowest().is_open()) return;
    bool done = false;
    EventStream::Frame frame = events_->Pop(&done);
    if (done && !chunked_) return Close();
    if (done) {
      writing_chunk_ = true;
      Arm(srv_.opt.write_timeout);
      return asio::async_write(stream_, http::make_chunk_last(),
                               [self = this->shared_from_this()](boost::system::error_code,
                                                                 std::size_t) { self->Close(); });
    }
    if (!frame || frame->empty()) return;  // the waker calls again when one arrives
    writing_chunk_ = true;
    Arm(srv_.opt.write_timeout);
    auto written = [self = this->shared_from_this(), frame](boost::system::error_code ec,
                                                            std::size_t) {
      self->writing_chunk_ = false;
      self->Disarm();
      if (ec) return self->Close();
      self->StreamNext();
    };
    if (chunked_) {
      asio::async_write(stream_, http::make_chunk(asio::buffer(*frame)), std::move(written));
    } else {
      asio::async_write(stream_, asio::buffer(*frame), std::move(written));
    }
  }

  static constexpr std::size_t kLargeResponseBytes = 4u << 20;

  std::shared_ptr<EventStream> events_;
  std::optional<http::response<http::empty_body>> stream_head_;
  std::optional<http::response_serializer<http::empty_body>> stream_serializer_;
  bool writing_chunk_ = false;
  bool chunked_ = true;

  Stream stream_;
  std::string remote_;
  std::optional<PeerCredentials> credentials_;  // unix-socket clients
  asio::steady_timer deadline_;
  std::uint64_t deadline_gen_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  bool idle_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  bool accepts_gzip_ = false;
};

// Allocates, once and side by side, what lives as long as the server for every socket it ever
// held: the reactor's per-descriptor state (Asio pools it and never frees it) and the session
// table. Allocated one by one among the sessions of a burst instead, each pinned a page of freed
// session memory that malloc_trim could not return (2 MiB and more after 2,048 connections). Like
// nginx's connection array, this costs its few hundred KiB up front.
void Server::Impl::Reserve() {
  sessions.reserve(opt.max_connections);
  std::vector<tcp::socket> warm;
  warm.reserve(std::min<std::size_t>(opt.max_connections, 8192));
  for (std::size_t i = 0; i < warm.capacity(); ++i) {
    boost::system::error_code ec;
    tcp::socket s(ioc);
    s.open(tcp::v4(), ec);
    if (ec) break;  // out of descriptors: what was reserved is enough
    warm.push_back(std::move(s));
  }
}

void Server::Impl::DoAccept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

// At the limit, the oldest connection that has not passed a request within unproven_grace of its
// connect (an idle TCP connection, a stalled handshake, a client that only sends wrong passwords)
// makes room for the new one: connections that never prove themselves cannot lock real scrapers
// out. Failing that, the keep-alive connection idle the longest (or slowest in sending its request)
// goes: a crowd of clients, from however many addresses, holds only connections a new scraper can
// take over, and its reconnections push out one another's idle connections, not a new scraper
// still in its handshake. Failing that, the oldest unproven connection however young. False when
// every open connection is busy with a request.
bool Server::Impl::MakeRoom() {
  SessionBase* oldest_unproven = nullptr;
  if (unproven != 0) {
    for (SessionBase* s : sessions) {
      if (!s->proven() && (oldest_unproven == nullptr || s->seq() < oldest_unproven->seq())) {
        oldest_unproven = s;
      }
    }
  }
  const bool stalled = oldest_unproven != nullptr &&
                       std::chrono::steady_clock::now() - oldest_unproven->born() >= opt.unproven_grace;
  SessionBase* victim = nullptr;
  if (stalled || (oldest_unproven != nullptr && lru.empty())) {
    victim = oldest_unproven;
    ++evicted;
  } else if (!lru.empty()) {
    victim = lru.front();
    ++evicted_idle;
  } else {
    return false;
  }
  victim->CloseNow();
  return true;
}

void Server::Impl::OnAccept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || draining) return;
  if (ec) {  // e.g. out of file descriptors: back off instead of spinning
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](boost::system::error_code e) {
      if (!e && !draining) DoAccept();
    });
    return;
  }
  ++accepted;
  boost::system::error_code ignored;
  std::string peer, remote;
  if (auto ep = socket.remote_endpoint(ignored); !ignored) {
    peer = ep.address().to_string();
    remote = FormatEndpoint(ep);
  }
  auto it = per_peer.find(peer);
  bool peer_full = it != per_peer.end() && it->second >= opt.max_connections_per_peer;
  if (peer_full || (sessions.size() >= opt.max_connections && !MakeRoom())) {
    ++rejected;
    socket.close(ignored);
    return DoAccept();
  }
  socket.set_option(tcp::no_delay(true), ignored);
  CheckWebConfig(false);
  if (ssl) {
    std::make_shared<Session<TlsSocket>>(
        *this, TlsSocket(std::move(socket), ssl->native_handle(), handshake_pool.get()),
        std::move(peer), std::move(remote))
        ->Start();
  } else {
    std::make_shared<Session<tcp::socket>>(*this, std::move(socket), std::move(peer),
                                           std::move(remote))
        ->Start();
  }
  DoAccept();
}

void Server::Impl::DoAcceptUnix() {
  unix_acceptor.async_accept([this](boost::system::error_code ec, unix_stream::socket socket) {
    OnAcceptUnix(ec, std::move(socket));
  });
}

namespace {

// The supplementary groups of a process, from /proc/PID/status (empty when it is gone).
std::vector<unsigned> SupplementaryGroups(std::uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  std::vector<unsigned> groups;
  while (std::getline(in, line)) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    unsigned g = 0;
    while (fields >> g) groups.push_back(g);
  }
  return groups;
}

}  // namespace

// The socket's permissions already keep other users out; this second check also holds when the
// socket's mode was widened by hand, and tells the log who was refused.
bool Server::Impl::Admits(const PeerCredentials& c) const {
  if (c.uid == 0 || c.uid == geteuid()) return true;
  const unsigned group = opt.unix_socket_gid.value_or(getegid());
  if (c.gid == group) return true;
  for (unsigned g : SupplementaryGroups(c.pid))
    if (g == group) return true;
  return false;
}

void Server::Impl::OnAcceptUnix(boost::system::error_code ec, unix_stream::socket socket) {
  if (ec == asio::error::operation_aborted || draining) return;
  if (ec) {
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](boost::system::error_code e) {
      if (!e && !draining) DoAcceptUnix();
    });
    return;
  }
  ++accepted;
  boost::system::error_code ignored;
  ucred cred{};
  socklen_t len = sizeof cred;
  PeerCredentials who;
  bool known = getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
  if (known) who = {static_cast<std::uint32_t>(cred.pid), cred.uid, cred.gid};
  if (!known || !Admits(who)) {
    ++unix_refused;
    ++rejected;
    socket.close(ignored);
    return DoAcceptUnix();
  }
  std::string peer = "unix:" + std::to_string(who.uid);
  auto it = per_peer.find(peer);
  bool peer_full = it != per_peer.end() && it->second >= opt.max_connections_per_peer;
  if (peer_full || (sessions.size() >= opt.max_connections && !MakeRoom())) {
    ++rejected;
    socket.close(ignored);
    return DoAcceptUnix();
  }
  std::make_shared<Session<unix_stream::socket>>(*this, std::move(socket), std::move(peer), "unix",
                                                 who)
      ->Start();
  DoAcceptUnix();
}

Status Server::Impl::ListenUnix() {
  const std::string& path = opt.unix_socket_path;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return InvalidArgument("unix socket \"" + path + "\": the path exists and is not a socket");
    }
    unix_stream::socket probe(ioc);
    boost::system::error_code ec;
    probe.connect(unix_stream::endpoint(path), ec);
    if (!ec) return Unavailable("unix socket \"" + path + "\": another server listens on it");
    // Only "refused" proves nobody listens; a full backlog or a permission error does not.
    if (ec != boost::asio::error::connection_refused) {
      return Unavailable("unix socket \"" + path +
                         "\": cannot tell whether a server listens on it (" + ec.message() +
                         "); remove it if none does");
    }
    unlink(path.c_str());  // left by a server that is gone
  }
  boost::system::error_code ec;
  unix_acceptor.open(unix_stream(), ec);
  // Created owner-only, widened by chmod below: never connectable by others in between.
  const mode_t old_umask = umask(0177);
  if (!ec) unix_acceptor.bind(unix_stream::endpoint(path), ec);
  umask(old_umask);
  if (ec) return Unavailable("unix socket \"" + path + "\": cannot bind: " + ec.message());
  unix_acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("unix socket \"" + path + "\": cannot listen: " + ec.message());
  unix_path = path;  // ours from here on: removed with the server, also when the steps below fail
  if (lstat(path.c_str(), &st) == 0) unix_inode = st.st_ino;
  if (opt.unix_socket_gid &&
      chown(path.c_str(), static_cast<uid_t>(-1), *opt.unix_socket_gid) != 0) {
    return Status(
        Error{ErrorCode::kNoPermission,
              "unix socket \"" + path + "\": cannot set its group: " + std::strerror(errno)});
  }
  if (chmod(path.c_str(), opt.unix_socket_mode) != 0) {
    return Status(
        Error{ErrorCode::kNoPermission,
              "unix socket \"" + path + "\": cannot set its mode: " + std::strerror(errno)});
  }
  return Status::Ok();
}

void Server::Impl::RemoveUnixSocket() {
  if (unix_path.empty()) return;
  struct stat st {};
  if (lstat(unix_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == unix_inode) {
    unlink(unix_path.c_str());
  }
  unix_path.clear();
}

void Server::Impl::Say(const std::string& what) const {
  if (opt.log) {
    opt.log(what);
  } else {
    std::fprintf(stderr, "%s\n", what.c_str());
  }
}

// Everything of the new config is loaded before any of it is put in force: a certificate that does
// not load leaves the old users too. Connections already open keep their TLS context; the users
// and headers apply from the next request.
Status Server::Impl::ApplyWebConfig(WebConfig web) {
  if (web.tls.has_value() != (ssl != nullptr)) {
    return InvalidArgument(std::string("it would switch the listener ") +
                           (ssl ? "from TLS to plain HTTP" : "from plain HTTP to TLS") +
                           ", which needs a restart");
  }
  std::shared_ptr<asio::ssl::context> ctx;
  if (web.tls) {
    auto made = MakeTlsContext(*web.tls);
    if (!made) return made.error();
    ctx = std::move(made).value();
  }
  std::optional<BasicAuth> users;
  if (!web.basic_auth_users.empty()) {
    auto made = BasicAuth::Create(web.basic_auth_users, opt.verify_password);
    if (!made) return made.error();
    users.emplace(std::move(made).value());
  }
  if (ctx) ssl = std::move(ctx);
  auth = std::move(users);
  if (auth && !auth_pool) auth_pool = MakeAuthPool(opt.max_auth_queue);
  opt.web = std::move(web);
  return Status::Ok();
}

// exporter-toolkit reads its web config for every request and its certificate for every
// handshake; this stats the files for every connection and request and reads them only when one
// changed (or when forced). A file that does not load keeps the config in force, said once per
// change, and counted.
void Server::Impl::CheckWebConfig(bool force) {
  if (opt.web_config_file.empty() || (!force && !web_files.Changed())) return;
  auto loaded = LoadWebConfig(opt.web_config_file);
  // What was seen is stamped either way: a broken file is reported once, not at every connection.
  WebConfigFiles seen = StampWebConfig(opt.web_config_file, loaded ? *loaded : opt.web);
  Status applied = loaded ? ApplyWebConfig(*loaded) : Status(loaded.error());
  web_files = std::move(seen);
  if (applied.ok()) {
    ++reloads;
    web_ok = true;
    web_loaded_unix_s = static_cast<std::int64_t>(std::time(nullptr));
    Say("web config " + opt.web_config_file + ": reloaded");
  } else {
    ++reload_failures;
    web_ok = false;
    Say("web config " + opt.web_config_file +
        ": not reloaded, the previous one stays in force: " + applied.error().message);
  }
}

void Server::Impl::WaitSignal() {
  signals.async_wait([this](boost::system::error_code ec, int signo) {
    if (ec) return;
    if (auto it = on_signal.find(signo); it != on_signal.end() && it->second) it->second();
    if (!draining) WaitSignal();
  });
}

void Server::Impl::BeginShutdown() {
  if (draining) return;
  draining = true;
  boost::system::error_code ignored;
  acceptor.close(ignored);
  unix_acceptor.close(ignored);
  accept_retry.cancel();
  periodic_trim.cancel();
  signals.cancel(ignored);
  std::vector<SessionBase*> now(sessions.begin(), sessions.end());
  for (SessionBase* s : now) s->CloseIfIdle();
  drain_timer.expires_after(opt.drain_timeout);
  drain_timer.async_wait([this](boost::system::error_code ec) {
    if (!ec) ioc.stop();  // responses still in flight after the drain timeout are abandoned
  });
  SessionGone();
}

void Server::Impl::SessionGone() {
  if (destroying) return;
  if (draining && sessions.empty()) drain_timer.cancel();
}

// Every second the heap's free pages go back to the system: after a burst of connections closes
// (an exporter that once held 2,048 would otherwise hold their memory for good) and while scrapes
// come. The exporter keeps up to 16 MiB of
// freed heap for the next scrape's body (sys::KeepFreedMemory), and which pages those are depends
// on what the last seconds allocated (pods come and go, clients send what they send), so without
// this the RSS of a long run wanders by that much (bench/RESULTS.md, issue 39's soak); a trim a
// second costs the page faults of one scrape's body a second, not one per scrape. It runs when no
// request came too: the kubelet's answers, the device reads and the agent's work go on between
// scrapes, and trimming only after requests left their freed pages held until the next scrape
// (the soak's RSS rose 1.8 MiB in the 3 s after its load stopped).
void Server::Impl::ArmPeriodicTrim() {
  periodic_trim.expires_after(std::chrono::seconds(1));
  periodic_trim.async_wait([this](boost::system::error_code ec) {
    if (ec || draining) return;
    malloc_trim(0);
    ArmPeriodicTrim();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Create(ServerOptions options, Handler handler) {
  auto where = ParseListenAddress(options.address);
  if (!where) return where.error();
  auto impl = std::make_unique<Impl>();
  if (options.web.tls) {
    auto ctx = MakeTlsContext(*options.web.tls);
    if (!ctx) return ctx.error();
    impl->ssl = std::move(ctx).value();
    // One thread: handshakes wait their turn there, never on the loop (ADR 0024).
    impl->handshake_pool = std::make_unique<WorkPool>(1, std::max<std::size_t>(1, options.max_handshakes_queued));
  }
  if (!options.web.basic_auth_users.empty()) {
    auto auth = BasicAuth::Create(options.web.basic_auth_users, options.verify_password);
    if (!auth) return auth.error();
    impl->auth.emplace(std::move(auth).value());
    impl->auth_pool = MakeAuthPool(options.max_auth_queue);
  }
  if (!options.web_config_file.empty()) {
    impl->web_files = StampWebConfig(options.web_config_file, options.web);
  }
  boost::system::error_code ec;
  tcp::resolver resolver(impl->ioc);
  tcp::endpoint ep;
  if (where->host.empty()) {
    ep = tcp::endpoint(tcp::v6(), where->port);  // dual-stack: IPv4 and IPv6
  } else {
    auto results = resolver.resolve(where->host, std::to_string(where->port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return InvalidArgument("address \"" + options.address + "\": cannot resolve host \"" +
                             where->host + "\"");
    }
    ep = results.begin()->endpoint();
  }
  auto& acc = impl->acceptor;
  acc.open(ep.protocol(), ec);
  if (ec && where->host.empty()) {  // no IPv6 on this host: all IPv4 interfaces
    ep = tcp::endpoint(tcp::v4(), where->port);
    ec.clear();
    acc.open(ep.protocol(), ec);
  }
  if (ec)
    return Unavailable("address \"" + options.address +
                       "\": cannot open a socket: " + ec.message());
  acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (ep.address().is_v6() && where->host.empty()) acc.set_option(asio::ip::v6_only(false), ec);
  acc.bind(ep, ec);
  if (ec) return Unavailable("address \"" + options.address + "\": cannot bind: " + ec.message());
  acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("address \"" + options.address + "\": cannot listen: " + ec.message());
  impl->local = FormatEndpoint(acc.local_endpoint());
  RaiseFileLimit(options.max_connections + 64);
  impl->opt = std::move(options);
  impl->handler = std::move(handler);
  if (!impl->opt.unix_socket_path.empty()) {
    if (Status s = impl->ListenUnix(); !s.ok()) return s.error();
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

std::string Server::local_address() const { return impl_->local; }
std::string Server::unix_socket_path() const { return impl_->unix_path; }
bool Server::tls() const { return impl_->ssl != nullptr; }

void Server::Run() {
  impl_->Reserve();
  impl_->DoAccept();
  if (!impl_->unix_path.empty()) impl_->DoAcceptUnix();
  if (!impl_->on_signal.empty()) impl_->WaitSignal();
  impl_->ArmPeriodicTrim();
  impl_->ioc.run();
}

void Server::Shutdown() {
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->BeginShutdown(); });
}

void Server::Post(std::function<void()> fn) { asio::post(impl_->ioc, std::move(fn)); }

void Server::OnSignal(int signo, std::function<void()> fn) {
  boost::system::error_code ec;
  impl_->signals.add(signo, ec);
  impl_->on_signal[signo] = std::move(fn);
}

ServerStats Server::stats() const {
  ServerStats s;
  s.connections_open = impl_->open.load();
  s.connections_accepted = impl_->accepted.load();
  s.connections_rejected = impl_->rejected.load();
  s.requests = impl_->requests.load();
  s.connections_evicted = impl_->evicted.load();
  s.auth_busy = impl_->auth_busy.load();
  s.unix_refused = impl_->unix_refused.load();
  s.connections_evicted_idle = impl_->evicted_idle.load();
  s.refused_header = impl_->refused_header.load();
  s.refused_body = impl_->refused_body.load();
  s.refused_malformed = impl_->refused_malformed.load();
  s.refused_busy = impl_->refused_busy.load();
  s.handshakes_refused = impl_->handshakes_refused.load();
  s.handshakes_failed = impl_->handshakes_failed.load();
  s.web_config_reloads = impl_->reloads.load();
  s.web_config_reload_failures = impl_->reload_failures.load();
  s.web_config_ok = impl_->web_ok.load();
  s.web_config_loaded_unix_s = impl_->web_loaded_unix_s.load();
  return s;
}

void Server::ReloadWebConfig() {
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->CheckWebConfig(true); });
}

}  // namespace gpulse::net
