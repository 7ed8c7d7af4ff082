// gpulse's HTTP/1.1 server (server.h): creating it (the listening socket, TLS, basic auth), running
// its event loop, signals, the drain on Shutdown, the heap trimmed every second, and its counters.
// Connections are accepted in server_accept.cc, served in server_session.cc, and the web config
// is kept in server_web_config.cc.
#include "net/server.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/http_util.h"
#include "net/server_impl.h"
#include "net/work_pool.h"

namespace gpulse::net {
namespace {

// Lets a busy exporter hold as many sockets as it allows connections.
void RaiseFileLimit(std::size_t wanted) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= wanted) return;
  r.rlim_cur = std::min<rlim_t>(r.rlim_max, wanted);
  setrlimit(RLIMIT_NOFILE, &r);
}

}  // namespace

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
    impl->handshake_pool =
        std::make_unique<WorkPool>(1, std::max<std::size_t>(1, options.max_handshakes_queued));
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
