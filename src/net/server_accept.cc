// The server's listeners (server_impl.h): the TCP and unix-socket acceptors, who a unix-socket
// client is and whether it is admitted, the limits on connections in all and per client address,
// and which connection makes room for a new one at the limit.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "net/server_impl.h"
#include "net/tls_socket.h"

namespace gpulse::net {

std::string FormatEndpoint(const tcp::endpoint& ep) {
  std::string host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}

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
  const bool stalled =
      oldest_unproven != nullptr &&
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
    StartSession(*this, TlsSocket(std::move(socket), ssl->native_handle(), handshake_pool.get()),
                 std::move(peer), std::move(remote));
  } else {
    StartSession(*this, std::move(socket), std::move(peer), std::move(remote));
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
  StartSession(*this, std::move(socket), std::move(peer), "unix", who);
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

}  // namespace gpulse::net
