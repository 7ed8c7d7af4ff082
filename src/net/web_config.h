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
//     headers: {X-Frame-Options: deny}
//   basic_auth_users:
//     alice: $2y$10$...            # bcrypt
//
// Every key is checked: an unknown key, or one gpulse does not implement (cipher_suites,
// curve_preferences, ...), is an error naming the file and the key rather than being ignored.
#pragma once

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
// Parses YAML text; `base_dir` resolves relative paths, `origin` names the source in errors.
Result<WebConfig> ParseWebConfig(const std::string& yaml, const std::string& base_dir,
                                 const std::string& origin);

}  // namespace gpulse::net
