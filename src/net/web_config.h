// The web configuration file of the Prometheus exporter toolkit (`--web-config-file`), the YAML
// that node_exporter and dcgm-exporter read:
//
//   tls_server_config:
//     cert_file: server.crt        # paths relative to this file's folder
//     key_file: server.key
//     min_version: TLS12           # TLS10, TLS11, TLS12 (default), TLS13
//     max_version: TLS13
//     client_auth_type: NoClientCert   # or RequireAndVerifyClientCert, VerifyClientCertIfGiven
//     client_ca_file: ca.crt
//   http_server_config:
//     headers: {X-Frame-Options: deny}   # only exporter-toolkit's five security headers
//   basic_auth_users:
//     alice: $2y$10$...            # bcrypt
//
// Every key is checked: an unknown key, or one gpulse does not implement (cipher_suites,
// curve_preferences, ...), is an error naming the file and the key rather than being ignored.
// Headers are exporter-toolkit's allow-list, names as written there: Strict-Transport-Security,
// X-Content-Type-Options (nosniff), X-Frame-Options (deny or sameorigin), X-XSS-Protection and
// Content-Security-Policy; any other (Content-Type, Set-Cookie, ...) is refused.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpulse::net {

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };
enum class ClientAuth { kNone, kVerifyIfGiven, kRequireAndVerify };

struct TlsSettings {
  std::string cert_file;  // absolute after loading
  std::string key_file;
  TlsVersion min_version = TlsVersion::kTls12;
  std::optional<TlsVersion> max_version;
  ClientAuth client_auth = ClientAuth::kNone;
  std::string client_ca_file;
};

struct WebConfig {
  std::optional<TlsSettings> tls;
  std::map<std::string, std::string> basic_auth_users;  // name -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;
};

Result<WebConfig> LoadWebConfig(const std::string& path);

// A web config file and the files it names (certificate, key, client CA) as stat(2) saw them, so a
// server can tell cheaply whether any changed: a rotated certificate keeps its path, and a
// Kubernetes secret is swapped behind a symbolic link (stat follows it).
class WebConfigFiles {
 public:
  WebConfigFiles() = default;
  // True when a file appeared, went, or differs in device, inode, size or modification time.
  bool Changed() const;

 private:
  friend WebConfigFiles StampWebConfig(const std::string& path, const WebConfig& web);
  struct Stamp {
    std::string path;
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec mtime{};
    bool operator==(const Stamp& o) const;
  };
  static Stamp Take(const std::string& path);
  std::vector<Stamp> files_;
};
WebConfigFiles StampWebConfig(const std::string& path, const WebConfig& web);
// Parses YAML text; `base_dir` resolves relative paths, `origin` names the source in errors.
Result<WebConfig> ParseWebConfig(const std::string& yaml, const std::string& base_dir,
                                 const std::string& origin);

}  // namespace gpulse::net
