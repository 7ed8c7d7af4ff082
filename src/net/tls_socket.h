// A TLS server stream for the event loop that keeps next to nothing per idle connection: OpenSSL
// reads and writes the non-blocking socket itself (through the BIO below) with
// SSL_MODE_RELEASE_BUFFERS, and the loop only waits for readiness. asio::ssl::stream keeps two 17 KiB buffers and a BIO pair per
// connection for its whole life (about 110 KB each with OpenSSL's own), which made 2,048 idle TLS
// connections cost 228 MB (issue 13). An AsyncReadStream and AsyncWriteStream, so Beast's HTTP
// reads and writes run over it unchanged.
//
// The handshake's OpenSSL calls (the expensive part of a connection: a signature, a key exchange)
// run on a handshake thread when a pool is given (ADR 0024): the loop only waits for the socket
// and hands each step over, so a flood of handshakes cannot delay a scrape on a connection already
// established. While a step is away, offloaded() is true and the loop must not touch the SSL or
// close the socket (shutdown(2) is safe: it ends the step early).
//
// Internal to the server (server_accept.cc, server_session.cc; it pulls in the Boost headers).
// Thread-compatible: one loop thread, and the handshake thread during a step.
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "net/asio.h"
#include "net/work_pool.h"

namespace gpulse::net {

// OpenSSL's socket BIO writes with write(2): a peer that resets the connection while a response is
// being written would raise SIGPIPE and kill the exporter (found by bench/exporter/hostile.py). This
// BIO sends with MSG_NOSIGNAL, as Asio does, and otherwise behaves as the socket BIO.
inline BIO_METHOD* NoSigpipeSocketBio() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "gpulse socket");
    BIO_meth_set_write(m, [](BIO* b, const char* data, int len) -> int {
      BIO_clear_retry_flags(b);
      ssize_t n = ::send(static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))), data,
                         static_cast<std::size_t>(len), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
      return static_cast<int>(n);
    });
    BIO_meth_set_read(m, [](BIO* b, char* data, int len) -> int {
      BIO_clear_retry_flags(b);
      ssize_t n = ::recv(static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))), data,
                         static_cast<std::size_t>(len), 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
      return static_cast<int>(n);
    });
    BIO_meth_set_ctrl(m, [](BIO*, int cmd, long, void*) -> long { return cmd == BIO_CTRL_FLUSH ? 1 : 0; });
    BIO_meth_set_create(m, [](BIO* b) -> int {
      BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

class TlsSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // The handshake failed because the client spoke plain HTTP (its first byte is a letter).
  static inline const boost::system::error_code kPlainHttp =
      boost::asio::error::make_error_code(boost::asio::error::invalid_argument);

  // Holds a reference on `ctx` (a reload may replace the server's). `pool`: where handshake steps
  // run (nullptr: on the loop); it must outlive this object. No OpenSSL state exists until the
  // handshake starts. A full pool fails the handshake with no_buffer_space.
  TlsSocket(boost::asio::ip::tcp::socket socket, SSL_CTX* ctx, WorkPool* pool = nullptr)
      : socket_(std::move(socket)), ctx_(ctx), pool_(pool) {
    SSL_CTX_up_ref(ctx_.get());
    boost::system::error_code ignored;
    socket_.non_blocking(true, ignored);
  }

  executor_type get_executor() { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  // Whether OpenSSL holds decrypted bytes not read yet (a pipelined request).
  bool pending() const { return ssl_ && SSL_has_pending(ssl_.get()) == 1; }
  // A handshake step is running on the pool's thread.
  bool offloaded() const { return offloaded_; }

  // Waits until the client's first bytes arrive and only then makes the OpenSSL connection: a
  // client that connects and sends nothing costs no TLS state (OpenSSL would otherwise hold a
  // 16 KiB read buffer for it until its ClientHello).
  template <class Handler>
  auto async_handshake(Handler&& handler) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code)>(
        HandshakeOp{this}, handler, socket_);
  }

  template <class Buffers, class Handler>
  auto async_read_some(const Buffers& buffers, Handler&& handler) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code, std::size_t)>(
        IoOp<boost::asio::mutable_buffer, true>{this, First<boost::asio::mutable_buffer>(buffers)},
        handler, socket_);
  }

  template <class Buffers, class Handler>
  auto async_write_some(const Buffers& buffers, Handler&& handler) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code, std::size_t)>(
        IoOp<boost::asio::const_buffer, false>{this, First<boost::asio::const_buffer>(buffers)},
        handler, socket_);
  }

  // A close_notify, best effort and without waiting: the socket is closed right after.
  void ShutdownNow() {
    if (ssl_ && SSL_is_init_finished(ssl_.get())) {
      ERR_clear_error();
      SSL_shutdown(ssl_.get());
    }
  }

 private:
  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  struct CtxFree {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };

  template <class Buffer, class Buffers>
  static Buffer First(const Buffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      Buffer b(*it);
      if (b.size() != 0) return b;
    }
    return Buffer();
  }

  // What an OpenSSL call that did not finish wants: wait for the socket, or fail.
  enum class Want { kDone, kRead, kWrite, kEof, kFail };
  Want Classify(int ret) {
    switch (SSL_get_error(ssl_.get(), ret)) {
      case SSL_ERROR_WANT_READ:
        return Want::kRead;
      case SSL_ERROR_WANT_WRITE:
        return Want::kWrite;
      case SSL_ERROR_ZERO_RETURN:
        return Want::kEof;
      default:
        return Want::kFail;
    }
  }

  // Whether the first bytes waiting are an HTTP request rather than a TLS record (0x16).
  bool PlainHttpWaiting() {
    unsigned char first = 0;
    ssize_t n = ::recv(socket_.native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 1 && first >= 'A' && first <= 'Z';
  }

  // One handshake step: the SSL made on the first, then SSL_do_handshake. On the thread that
  // calls SSL_get_error after it (OpenSSL's error queue is per thread).
  Want HandshakeStep() {
    if (!ssl_) {
      ssl_.reset(SSL_new(ctx_.get()));
      BIO* bio = ssl_ ? BIO_new(NoSigpipeSocketBio()) : nullptr;
      if (bio == nullptr) return Want::kFail;
      BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(socket_.native_handle())));
      SSL_set_bio(ssl_.get(), bio, bio);  // the SSL owns it; the socket stays Asio's
      SSL_set_accept_state(ssl_.get());
    }
    ERR_clear_error();
    int r = SSL_do_handshake(ssl_.get());
    Want w = r == 1 ? Want::kDone : Classify(r);
    ERR_clear_error();
    return w;
  }

  // Waits for the socket, or completes. `Self` is async_compose's intermediate handler; the first
  // pass runs inside the initiating call, so its completion is posted, never invoked inline.
  template <class Self, class... Args>
  void Continue(Self& self, bool first, Want want, Args... args) {
    namespace asio = boost::asio;
    if (want == Want::kRead) return socket_.async_wait(asio::socket_base::wait_read, std::move(self));
    if (want == Want::kWrite) return socket_.async_wait(asio::socket_base::wait_write, std::move(self));
    boost::system::error_code ec;
    if (want == Want::kEof) ec = asio::error::eof;
    if (want == Want::kFail) ec = asio::error::connection_reset;
    if (!first) return self.complete(ec, args...);
    asio::post(socket_.get_executor(), [self = std::move(self), ec, args...]() mutable {
      self.complete(ec, args...);
    });
  }

  struct HandshakeOp {
    TlsSocket* s;
    bool started = false;
    template <class Self>
    void operator()(Self& self, boost::system::error_code ec = {}) {
      bool first = !started;
      started = true;
      if (ec) return self.complete(ec);
      if (first) return s->Continue(self, first, Want::kRead);  // the ClientHello, first
      if (!s->ssl_ && s->PlainHttpWaiting()) return self.complete(kPlainHttp);
      if (s->pool_ == nullptr) return s->Continue(self, false, s->HandshakeStep());
      // The step on the handshake thread; its outcome comes back to the loop. The op is moved
      // into shared ownership because the pool's jobs must be copyable.
      auto held = std::make_shared<Self>(std::move(self));
      s->offloaded_ = true;
      TlsSocket* sock = s;
      bool queued = s->pool_->TrySubmit([sock, held] {
        Want w = sock->HandshakeStep();
        boost::asio::post(sock->socket_.get_executor(), [sock, held, w] {
          sock->offloaded_ = false;
          Self op = std::move(*held);
          sock->Continue(op, false, w);
        });
      });
      if (!queued) {
        s->offloaded_ = false;
        Self op = std::move(*held);
        op.complete(boost::asio::error::no_buffer_space);
      }
    }
  };

  template <class Buffer, bool kRead>
  struct IoOp {
    TlsSocket* s;
    Buffer buffer;
    bool started = false;
    template <class Self>
    void operator()(Self& self, boost::system::error_code ec = {}) {
      bool first = !started;
      started = true;
      if (ec) return self.complete(ec, std::size_t{0});
      if (buffer.size() == 0) return s->Continue(self, first, Want::kDone, std::size_t{0});
      if (!s->ssl_) return s->Continue(self, first, Want::kFail, std::size_t{0});
      ERR_clear_error();
      std::size_t n = 0;
      int r;
      if constexpr (kRead) {
        r = SSL_read_ex(s->ssl_.get(), buffer.data(), buffer.size(), &n);
      } else {
        r = SSL_write_ex(s->ssl_.get(), buffer.data(), buffer.size(), &n);
      }
      if (r == 1) return s->Continue(self, first, Want::kDone, n);
      s->Continue(self, first, s->Classify(r), std::size_t{0});
    }
  };

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<SSL_CTX, CtxFree> ctx_;
  WorkPool* pool_ = nullptr;
  bool offloaded_ = false;
  std::unique_ptr<SSL, SslFree> ssl_;
};

}  // namespace gpulse::net
