// The server's web config in force (server_impl.h): TLS contexts made from it, the basic-auth users
// and their bcrypt pool, and its reloads when a file it was loaded from changes (or on SIGHUP).
#include <openssl/ssl.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "net/basic_auth.h"
#include "net/server_impl.h"
#include "net/web_config.h"
#include "net/work_pool.h"

namespace gpulse::net {
namespace {

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

}  // namespace

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

}  // namespace gpulse::net
