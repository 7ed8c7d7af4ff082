#include "net/http_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "net/asio.h"  // first of the Boost headers: see the comment there

namespace gpulse::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

struct EventLoop::Impl {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::map<uint64_t, std::unique_ptr<asio::steady_timer>> timers;
  uint64_t next_id = 1;
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}
EventLoop::~EventLoop() = default;

void EventLoop::Run() { impl_->io.run(); }
void EventLoop::Stop() { impl_->io.stop(); }
void EventLoop::Post(std::function<void()> fn) { asio::post(impl_->io, std::move(fn)); }

uint64_t EventLoop::At(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
  uint64_t id = impl_->next_id++;
  auto timer = std::make_unique<asio::steady_timer>(impl_->io, when);
  timer->async_wait([this, id, fn = std::move(fn)](const boost::system::error_code& ec) {
    impl_->timers.erase(id);
    if (!ec) fn();
  });
  impl_->timers.emplace(id, std::move(timer));
  return id;
}

void EventLoop::Cancel(uint64_t id) {
  auto it = impl_->timers.find(id);
  if (it != impl_->timers.end()) it->second->cancel();
}

Result<std::string> ResolveAddress(const std::string& host, std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  auto literal = asio::ip::make_address(host, ec);
  if (!ec) return literal.to_string();
  // getaddrinfo cannot be cancelled: run it on a thread of its own and stop waiting at the
  // deadline.
  auto promise = std::make_shared<std::promise<Result<std::string>>>();
  auto future = promise->get_future();
  std::thread([host, promise] {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
      promise->set_value(Unavailable("cannot resolve \"" + host + "\": " + gai_strerror(rc)));
      return;
    }
    char buf[NI_MAXHOST] = {};
    ::getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST);
    ::freeaddrinfo(res);
    promise->set_value(std::string(buf));
  }).detach();
  if (future.wait_for(timeout) != std::future_status::ready)
    return Unavailable("resolving \"" + host + "\" timed out");
  return future.get();
}

// A std::string body that grows by appending what arrives. Beast's string_body resizes first (a
// zero fill of every byte it then overwrites): at thousands of 50 kB expositions a second that fill
// was the collector's largest cost.
struct AppendBody {
  using value_type = std::string;
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, boost::system::error_code& ec) {
      if (length) body_.reserve(static_cast<std::size_t>(*length));
      ec = {};
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      std::size_t n = 0;
      for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
           ++it) {
        asio::const_buffer b(*it);
        body_.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }
    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

struct HttpTarget::Impl : std::enable_shared_from_this<HttpTarget::Impl> {
  static constexpr std::size_t kReadChunk = 64 * 1024;

  Impl(asio::io_context& io, tcp::endpoint ep, std::string path, std::size_t max_body)
      : io(io), ep(ep), timer(io), max_body(max_body) {
    req.method(http::verb::get);
    req.target(path);
    req.version(11);
    req.set(http::field::host, ep.address().to_string() + ":" + std::to_string(ep.port()));
    req.set(http::field::user_agent, "gpulse-collect");
    req.set(http::field::accept, "text/plain");
    req.keep_alive(true);
    std::ostringstream head;
    head << req;  // serialized once: every poll sends the same bytes
    wire = head.str();
  }

  asio::io_context& io;
  tcp::endpoint ep;
  asio::steady_timer timer;
  std::size_t max_body;
  http::request<http::empty_body> req;
  std::string wire;
  std::optional<tcp::socket> sock;
  beast::flat_buffer buf;
  std::optional<http::response_parser<AppendBody>> parser;
  std::function<void(FetchResult)> done;
  uint64_t gen = 0;
  bool reused = false, retried = false;

  bool Current(uint64_t g) const { return g == gen && done != nullptr; }

  void Close() {
    if (sock) {
      boost::system::error_code ignored;
      sock->close(ignored);
      sock.reset();
    }
    buf.clear();
  }

  void Finish(FetchResult r) {
    timer.cancel();
    if (!r.ok()) Close();
    auto d = std::move(done);
    done = nullptr;
    ++gen;
    if (d) d(std::move(r));
  }

  void Fail(const char* type, const boost::system::error_code& ec) {
    FetchResult r;
    r.error_type = type;
    r.error_message = ec.message();
    Finish(std::move(r));
  }

  // A new request until `deadline`; returns its generation.
  uint64_t Begin(std::chrono::steady_clock::time_point deadline,
                 std::function<void(FetchResult)> cb) {
    done = std::move(cb);
    uint64_t g = ++gen;
    retried = false;
    timer.expires_at(deadline);
    timer.async_wait([self = shared_from_this(), g](const boost::system::error_code& ec) {
      if (ec || !self->Current(g)) return;
      FetchResult r;
      r.error_type = "Timeout";
      r.error_message = "no complete response within the request timeout";
      self->Finish(std::move(r));
    });
    return g;
  }

  void StartWritten(std::chrono::steady_clock::time_point written_at,
                    std::chrono::milliseconds timeout, std::function<void(FetchResult)> cb) {
    uint64_t g = Begin(written_at + timeout, std::move(cb));
    if (!sock || !sock->is_open()) return Connect(g);  // nothing to await on: send it afresh
    reused = true;
    Read(g);
  }

  void Start(std::chrono::milliseconds timeout, std::function<void(FetchResult)> cb) {
    uint64_t g = Begin(std::chrono::steady_clock::now() + timeout, std::move(cb));
    if (sock && sock->is_open()) {
      reused = true;
      Write(g);
    } else {
      Connect(g);
    }
  }

  void Connect(uint64_t g) {
    Close();
    reused = false;
    sock.emplace(io);
    buf.reserve(kReadChunk);  // one recv per typical exposition, not a 512-byte start
    // Close-on-exec from the start (Asio opens sockets without it): a child spawned meanwhile (the
    // benchmark of `gpulse collect`) must not inherit the connections.
    int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return Fail("ConnectionError",
                  boost::system::error_code(errno, boost::system::system_category()));
    boost::system::error_code assigned;
    sock->assign(ep.protocol(), fd, assigned);
    if (assigned) {
      ::close(fd);
      return Fail("ConnectionError", assigned);
    }
    sock->async_connect(ep, [self = shared_from_this(), g](const boost::system::error_code& ec) {
      if (!self->Current(g)) return;
      if (ec == asio::error::connection_refused) return self->Fail("ConnectionRefused", ec);
      if (ec) return self->Fail("ConnectionError", ec);
      boost::system::error_code ignored;
      self->sock->set_option(tcp::no_delay(true), ignored);
      self->Write(g);
    });
  }

  // A keep-alive connection the peer closed while idle fails at once: try one fresh connection.
  bool RetryFresh(uint64_t g) {
    if (!reused || retried) return false;
    retried = true;
    Connect(g);
    return true;
  }

  void Write(uint64_t g) {
    asio::async_write(*sock, asio::buffer(wire),
                      [self = shared_from_this(), g](const boost::system::error_code& ec, size_t) {
                        if (!self->Current(g)) return;
                        if (ec) {
                          if (!self->RetryFresh(g)) self->Fail("ConnectionError", ec);
                          return;
                        }
                        self->Read(g);
                      });
  }

  // The head first: a declared Content-Length over the limit is refused before any body is read
  // (Beast's body_limit alone did not stop a fixed-length body here); a chunked body is bounded by
  // body_limit and checked again once complete.
  void Read(uint64_t g) {
    parser.emplace();
    parser->body_limit(max_body);
    parser->header_limit(64 * 1024);
    http::async_read_header(
        *sock, buf, *parser,
        [self = shared_from_this(), g](const boost::system::error_code& ec, size_t bytes) {
          if (!self->Current(g)) return;
          if (ec == http::error::body_limit) return self->Fail("ResponseTooLarge", ec);
          if (ec) {
            if (bytes == 0 && self->RetryFresh(g)) return;
            return self->Fail("ConnectionError", ec);
          }
          auto length = self->parser->content_length();
          if (length && *length > self->max_body)
            return self->Fail("ResponseTooLarge", http::error::body_limit);
          self->ReadBody(g);
        });
  }

  void ReadBody(uint64_t g) {
    http::async_read(*sock, buf, *parser,
                     [self = shared_from_this(), g](const boost::system::error_code& ec, size_t) {
                       if (!self->Current(g)) return;
                       if (ec == http::error::body_limit) return self->Fail("ResponseTooLarge", ec);
                       if (ec) return self->Fail("ConnectionError", ec);
                       auto res = self->parser->release();
                       if (res.body().size() > self->max_body)
                         return self->Fail("ResponseTooLarge", http::error::body_limit);
                       if (!res.keep_alive()) self->Close();
                       FetchResult r;
                       r.http_status = static_cast<int>(res.result_int());
                       if (*r.http_status < 200 || *r.http_status > 299) {
                         r.error_type = "HTTPError";
                         r.error_message = "HTTP " + std::to_string(*r.http_status);
                         self->Close();
                       }
                       r.body = std::move(res.body());
                       self->Finish(std::move(r));
                     });
  }
};

HttpTarget::HttpTarget(EventLoop& loop, std::string address, uint16_t port, std::string path,
                       std::size_t max_body_bytes) {
  tcp::endpoint ep(asio::ip::make_address(address), port);
  impl_ = std::make_shared<Impl>(loop.impl().io, ep, std::move(path), max_body_bytes);
}

HttpTarget::~HttpTarget() {
  impl_->done = nullptr;
  ++impl_->gen;
  impl_->timer.cancel();
  impl_->Close();
}

bool HttpTarget::busy() const { return impl_->done != nullptr; }

int HttpTarget::IdleSocket() const {
  if (impl_->done || !impl_->sock || !impl_->sock->is_open()) return -1;
  return impl_->sock->native_handle();
}

std::string_view HttpTarget::RequestBytes() const { return impl_->wire; }

void HttpTarget::DropConnection() {
  if (!impl_->done) impl_->Close();
}

void HttpTarget::GetWritten(std::chrono::steady_clock::time_point written_at,
                            std::chrono::milliseconds timeout,
                            std::function<void(FetchResult)> done) {
  impl_->StartWritten(written_at, timeout, std::move(done));
}

void HttpTarget::Get(std::chrono::milliseconds timeout, std::function<void(FetchResult)> done) {
  impl_->Start(timeout, std::move(done));
}

void HttpTarget::Cancel() {
  if (!impl_->done) return;
  FetchResult r;
  r.error_type = "Cancelled";
  impl_->Finish(std::move(r));
}

}  // namespace gpulse::net
