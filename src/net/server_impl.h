// The inside of the server (server.h is its face), shared by its files: server.cc (creating,
// running, draining, the periodic trim), server_accept.cc (the listeners, admission, making room at
// the limit), server_session.cc (a connection: reading, authenticating, dispatching, writing,
// streaming) and server_web_config.cc (TLS contexts, the web config in force and its reloads).
// Internal to src/net: it pulls in the Boost headers.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "net/asio.h"  // first of the Boost headers: see the comment there
#include "net/basic_auth.h"
#include "net/server.h"
#include "net/work_pool.h"

namespace gpulse::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;

// "127.0.0.1:9400", "[::1]:9400" (server_accept.cc).
std::string FormatEndpoint(const tcp::endpoint& ep);

// A server TLS context from the web config's settings; fails naming the file that does not load
// (server_web_config.cc).
Result<std::shared_ptr<asio::ssl::context>> MakeTlsContext(const TlsSettings& t);
// The bcrypt pool: one or two threads, below the loop (work_pool.h).
std::unique_ptr<WorkPool> MakeAuthPool(std::size_t queue);

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
  std::size_t unproven = 0;   // sessions that have not yet passed a request (TLS, auth included)
  std::size_t in_flight = 0;  // requests handed to the handler and not yet answered
  std::uint64_t next_seq = 0;
  bool draining = false;
  bool destroying = false;
  std::atomic<std::uint64_t> accepted{0}, rejected{0}, requests{0}, open{0}, evicted{0},
      evicted_idle{0}, auth_busy{0}, refused_header{0}, refused_body{0}, refused_malformed{0},
      refused_busy{0}, handshakes_refused{0}, handshakes_failed{0}, reloads{0}, reload_failures{0};
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

// Makes the session of an accepted connection and starts it (server_session.cc): from then on it
// lives as long as the handlers it queues.
template <class Stream>
void StartSession(Server::Impl& srv, Stream&& stream, std::string peer, std::string remote,
                  std::optional<PeerCredentials> credentials = std::nullopt);

}  // namespace gpulse::net
