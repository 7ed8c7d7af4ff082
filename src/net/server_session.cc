// One connection of the server (server_impl.h): waiting for a request and reading it within the
// limits, authenticating it (bcrypt off the loop), dispatching it to the handler, writing the
// answer (gzip, keep-alive) or streaming an event stream's frames, each step under its deadline.
#include <malloc.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "net/basic_auth.h"
#include "net/event_stream.h"
#include "net/http_util.h"
#include "net/server_impl.h"
#include "net/tls_socket.h"

namespace gpulse::net {
namespace {

std::string_view View(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

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

template <class Stream>
void StartSession(Server::Impl& srv, Stream&& stream, std::string peer, std::string remote,
                  std::optional<PeerCredentials> credentials) {
  std::make_shared<Session<Stream>>(srv, std::move(stream), std::move(peer), std::move(remote),
                                    credentials)
      ->Start();
}

template void StartSession<TlsSocket>(Server::Impl&, TlsSocket&&, std::string, std::string,
                                      std::optional<PeerCredentials>);
template void StartSession<tcp::socket>(Server::Impl&, tcp::socket&&, std::string, std::string,
                                        std::optional<PeerCredentials>);
template void StartSession<unix_stream::socket>(Server::Impl&, unix_stream::socket&&, std::string,
                                                std::string, std::optional<PeerCredentials>);

}  // namespace gpulse::net
