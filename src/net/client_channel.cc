#include "net/client_channel.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpulse::net {
namespace {

std::string OpensslError(const std::string& fallback) {
  unsigned long e = ERR_get_error();
  if (e == 0) return fallback;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

Result<std::unique_ptr<SSL_CTX, CtxFree>> MakeContext(const ClientTls& tls) {
  std::unique_ptr<SSL_CTX, CtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Unavailable("TLS: " + OpensslError("cannot make a context"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (!tls.insecure) {
    const bool loaded = tls.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx.get()) == 1
                                            : SSL_CTX_load_verify_locations(
                                                  ctx.get(), tls.ca_file.c_str(), nullptr) == 1;
    if (!loaded) {
      return InvalidArgument("--ca-file \"" + tls.ca_file +
                             "\": cannot load: " + OpensslError("no certificate in it"));
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return InvalidArgument("--cert-file and --key-file go together: give both or neither");
  }
  if (!tls.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file.c_str()) != 1) {
      return InvalidArgument("--cert-file \"" + tls.cert_file +
                             "\": cannot load: " + OpensslError("not a certificate"));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return InvalidArgument("--key-file \"" + tls.key_file +
                             "\": cannot load: " + OpensslError("not a private key"));
    }
    if (SSL_CTX_check_private_key(ctx.get()) != 1) {
      return InvalidArgument("--key-file \"" + tls.key_file + "\" does not match --cert-file \"" +
                             tls.cert_file + "\"");
    }
  }
  return ctx;
}

}  // namespace

struct ClientChannel::Impl {
  int fd = -1;
  std::unique_ptr<SSL_CTX, CtxFree> ctx;
  std::unique_ptr<SSL, SslFree> ssl;
  ~Impl() {
    if (ssl) SSL_shutdown(ssl.get());
    if (fd >= 0) close(fd);
  }
};

ClientChannel::ClientChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientChannel::ClientChannel(ClientChannel&&) noexcept = default;
ClientChannel& ClientChannel::operator=(ClientChannel&&) noexcept = default;
ClientChannel::~ClientChannel() = default;

ClientChannel ClientChannel::Plain(int fd) {
  auto impl = std::make_unique<Impl>();
  impl->fd = fd;
  return ClientChannel(std::move(impl));
}

Result<ClientChannel> ClientChannel::Tls(int fd, const std::string& host, const ClientTls& tls) {
  auto impl = std::make_unique<Impl>();
  impl->fd = fd;
  auto ctx = MakeContext(tls);
  if (!ctx) return ctx.error();
  impl->ctx = std::move(ctx).value();
  impl->ssl.reset(SSL_new(impl->ctx.get()));
  SSL* ssl = impl->ssl.get();
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    return Unavailable("TLS: " + OpensslError("cannot make a connection"));
  }
  if (!IsIpLiteral(host)) SSL_set_tlsext_host_name(ssl, host.c_str());  // SNI takes names only
  if (!tls.insecure) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int set = IsIpLiteral(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                                      : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    if (set != 1) return InvalidArgument("TLS: cannot check the server's name \"" + host + "\"");
  }
  ERR_clear_error();
  if (SSL_connect(ssl) != 1) {
    const long verdict = SSL_get_verify_result(ssl);
    if (!tls.insecure && verdict != X509_V_OK) {
      return Unavailable("TLS: the server's certificate is not trusted: " +
                         std::string(X509_verify_cert_error_string(verdict)) +
                         " (--ca-file names the CA that signed it; --insecure skips the check)");
    }
    return Unavailable("TLS handshake failed: " +
                       OpensslError(errno != 0 ? std::string(std::strerror(errno))
                                               : "the server closed the connection"));
  }
  return ClientChannel(std::move(impl));
}

int ClientChannel::fd() const { return impl_->fd; }

ssize_t ClientChannel::Send(const char* data, std::size_t len) {
  if (!impl_->ssl) return ::send(impl_->fd, data, len, MSG_NOSIGNAL);
  std::size_t n = 0;
  ERR_clear_error();
  if (SSL_write_ex(impl_->ssl.get(), data, len, &n) == 1) return static_cast<ssize_t>(n);
  if (errno == 0) errno = ECONNRESET;
  return -1;
}

ssize_t ClientChannel::Recv(char* data, std::size_t len) {
  if (!impl_->ssl) return ::recv(impl_->fd, data, len, 0);
  std::size_t n = 0;
  ERR_clear_error();
  errno = 0;
  int r = SSL_read_ex(impl_->ssl.get(), data, len, &n);
  if (r == 1) return static_cast<ssize_t>(n);
  int why = SSL_get_error(impl_->ssl.get(), r);
  if (why == SSL_ERROR_ZERO_RETURN) return 0;
  // A server that closes without close_notify (Connection: close) ends the answer as plain TCP
  // does.
  if (why == SSL_ERROR_SYSCALL && errno == 0) return 0;
  if (why == SSL_ERROR_SSL &&
      ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return 0;
  }
  if (errno == 0) errno = ECONNRESET;
  return -1;
}

bool ClientChannel::Pending() const { return impl_->ssl && SSL_pending(impl_->ssl.get()) > 0; }

}  // namespace gpulse::net
