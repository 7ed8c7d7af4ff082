// A blocking client connection over a connected socket, plain or TLS (OpenSSL), for the management
// CLI's requests to a node agent (cli/agent_client.h). With TLS the server's certificate is
// verified against a CA file (or the system's CAs) and the host name or IP address it was reached
// by, unless `insecure` says not to; a client certificate is presented when one is given (mutual
// TLS, for an agent whose web config asks for client certificates).
//
// Thread-compatible: one thread uses a channel at a time.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/result.h"

namespace gpulse::net {

struct ClientTls {
  std::string ca_file;    // "" = the system's trusted CAs
  std::string cert_file;  // with key_file: a client certificate
  std::string key_file;
  bool insecure = false;  // no verification of the server's certificate or name
};

class ClientChannel {
 public:
  // Takes ownership of `fd` (a connected stream socket).
  static ClientChannel Plain(int fd);
  // The TLS handshake over `fd`, for the server reached as `host` (a name or an IP literal).
  // Errors name what failed: a file that does not load, or the server's certificate, and why.
  static Result<ClientChannel> Tls(int fd, const std::string& host, const ClientTls& tls);

  ClientChannel(ClientChannel&&) noexcept;
  ClientChannel& operator=(ClientChannel&&) noexcept;
  ~ClientChannel();

  int fd() const;
  // As send(2) and recv(2): bytes moved, 0 at the end (Recv), -1 with errno on an error.
  ssize_t Send(const char* data, std::size_t len);
  ssize_t Recv(char* data, std::size_t len);
  // Bytes already decrypted and waiting (a poll on fd() would not see them).
  bool Pending() const;

  struct Impl;

 private:
  explicit ClientChannel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulse::net
