#include "net/web_config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "net/basic_auth.h"
#include "sys/regular_file.h"
#include "sys/strict_yaml.h"

namespace gpulse::net {
namespace {

namespace fs = std::filesystem;

class Checker {
 public:
  Checker(std::string origin, std::string base_dir)
      : origin_(std::move(origin)), base_(std::move(base_dir)) {}

  Error Bad(const YAML::Node& node, const std::string& what) const {
    std::string where = origin_;
    if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    return InvalidArgument(where + ": " + what);
  }

  // Fails on keys outside `allowed`, and names the ones gpulse knows but does not implement.
  Status Keys(const YAML::Node& map, const std::string& section,
              const std::set<std::string>& allowed,
              const std::set<std::string>& unsupported = {}) const {
    if (!map.IsMap()) return Bad(map, section + ": expected a map");
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      if (unsupported.count(key) != 0) {
        return Bad(kv.first, section + "." + key + " is not supported by gpulse");
      }
      if (allowed.count(key) == 0) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return Bad(kv.first, section + ": unknown key \"" + key + "\" (allowed: " + list + ")");
      }
    }
    return Status::Ok();
  }

  Result<std::string> Scalar(const YAML::Node& node, const std::string& name) const {
    if (!node.IsScalar()) return Bad(node, name + ": expected a string");
    return node.as<std::string>();
  }

  Result<std::string> Path(const YAML::Node& node, const std::string& name) const {
    auto s = Scalar(node, name);
    if (!s) return s;
    if (s->empty()) return Bad(node, name + ": empty path");
    fs::path p(*s);
    if (p.is_relative()) p = fs::path(base_) / p;
    return p.lexically_normal().string();
  }

  Result<TlsVersion> Version(const YAML::Node& node, const std::string& name) const {
    auto s = Scalar(node, name);
    if (!s) return s.error();
    if (*s == "TLS10") return TlsVersion::kTls10;
    if (*s == "TLS11") return TlsVersion::kTls11;
    if (*s == "TLS12") return TlsVersion::kTls12;
    if (*s == "TLS13") return TlsVersion::kTls13;
    return Bad(node, name + ": \"" + *s + "\" is not one of TLS10, TLS11, TLS12, TLS13");
  }

 private:
  std::string origin_;
  std::string base_;
};

// RFC 9110 token characters.
bool IsHeaderName(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char ch : s) {
    bool ok = std::isalnum(ch) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(ch)) !=
                                           std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Visible characters, spaces and tabs; no other control character.
bool IsHeaderValue(const std::string& s) {
  for (unsigned char ch : s) {
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return false;
  }
  return true;
}

// exporter-toolkit's allow-list (web/handler.go's extraHTTPHeaders): the name exactly as written,
// and for two of them the values it allows; the others take any value.
Status CheckAllowedHeader(const std::string& name, const std::string& value) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kAllowed = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  auto it = kAllowed.find(name);
  if (it == kAllowed.end()) {
    return InvalidArgument("http_server_config.headers: \"" + name +
                           "\" can not be configured (allowed: Content-Security-Policy, "
                           "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, "
                           "X-XSS-Protection)");
  }
  if (it->second.empty()) return Status::Ok();
  for (const auto& v : it->second)
    if (v == value) return Status::Ok();
  std::string list;
  for (const auto& v : it->second) list += (list.empty() ? "" : ", ") + v;
  return InvalidArgument("http_server_config.headers." + name + ": \"" + value +
                         "\" is not one of " + list);
}

Result<TlsSettings> ParseTls(const Checker& c, const YAML::Node& n) {
  Status keys = c.Keys(
      n, "tls_server_config",
      {"cert_file", "key_file", "min_version", "max_version", "client_auth_type", "client_ca_file"},
      {"cert", "key", "client_ca", "cipher_suites", "curve_preferences",
       "prefer_server_cipher_suites", "client_allowed_sans"});
  if (!keys) return keys.error();
  TlsSettings t;
  if (!n["cert_file"] || !n["key_file"])
    return c.Bad(n, "tls_server_config: cert_file and key_file are both required");
  auto cert = c.Path(n["cert_file"], "tls_server_config.cert_file");
  if (!cert) return cert.error();
  auto key = c.Path(n["key_file"], "tls_server_config.key_file");
  if (!key) return key.error();
  t.cert_file = *cert;
  t.key_file = *key;
  if (n["min_version"]) {
    auto v = c.Version(n["min_version"], "tls_server_config.min_version");
    if (!v) return v.error();
    t.min_version = *v;
  }
  if (n["max_version"]) {
    auto v = c.Version(n["max_version"], "tls_server_config.max_version");
    if (!v) return v.error();
    t.max_version = *v;
    if (*t.max_version < t.min_version)
      return c.Bad(n["max_version"], "tls_server_config: max_version is below min_version");
  }
  if (n["client_auth_type"]) {
    auto a = c.Scalar(n["client_auth_type"], "tls_server_config.client_auth_type");
    if (!a) return a.error();
    if (*a == "NoClientCert") {
      t.client_auth = ClientAuth::kNone;
    } else if (*a == "VerifyClientCertIfGiven") {
      t.client_auth = ClientAuth::kVerifyIfGiven;
    } else if (*a == "RequireAndVerifyClientCert") {
      t.client_auth = ClientAuth::kRequireAndVerify;
    } else {
      return c.Bad(n["client_auth_type"],
                   "tls_server_config.client_auth_type: \"" + *a +
                       "\" is not supported (NoClientCert, VerifyClientCertIfGiven, "
                       "RequireAndVerifyClientCert)");
    }
  }
  if (n["client_ca_file"]) {
    auto ca = c.Path(n["client_ca_file"], "tls_server_config.client_ca_file");
    if (!ca) return ca.error();
    t.client_ca_file = *ca;
  }
  if (t.client_auth != ClientAuth::kNone && t.client_ca_file.empty()) {
    return c.Bad(n, "tls_server_config: client_auth_type needs client_ca_file");
  }
  return t;
}

Result<WebConfig> ParseRoot(const Checker& c, const YAML::Node& root) {
  WebConfig w;
  if (root.IsNull()) return w;  // an empty file: plain HTTP, no auth
  Status keys =
      c.Keys(root, "web config", {"tls_server_config", "http_server_config", "basic_auth_users"});
  if (!keys) return keys.error();
  if (const YAML::Node tls = root["tls_server_config"]; tls && !tls.IsNull()) {
    auto t = ParseTls(c, tls);
    if (!t) return t.error();
    w.tls = *t;
  }
  if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
    Status k = c.Keys(http, "http_server_config", {"headers", "http2"});
    if (!k) return k.error();
    // http2: accepted and ignored; gpulse serves HTTP/1.1 (documented in docs/exporter.md).
    if (const YAML::Node h = http["headers"]; h && !h.IsNull()) {
      if (!h.IsMap()) return c.Bad(h, "http_server_config.headers: expected a map");
      for (const auto& kv : h) {
        const std::string name = kv.first.as<std::string>();
        auto v = c.Scalar(kv.second, "http_server_config.headers." + name);
        if (!v) return v.error();
        // Sent verbatim on every response: a CR or LF would inject headers of its own.
        if (!IsHeaderName(name)) {
          return c.Bad(kv.first, "http_server_config.headers: \"" + name + "\" is not a valid header name");
        }
        if (!IsHeaderValue(*v)) {
          return c.Bad(kv.second, "http_server_config.headers." + name +
                                      ": control characters (CR, LF, NUL, ...) are not allowed in a header value");
        }
        if (Status allowed = CheckAllowedHeader(name, *v); !allowed) {
          return c.Bad(kv.first, allowed.error().message);
        }
        w.headers.emplace_back(name, *v);
      }
    }
  }
  if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap())
      return c.Bad(users, "basic_auth_users: expected a map of user: bcrypt hash");
    for (const auto& kv : users) {
      auto hash = c.Scalar(kv.second, "basic_auth_users." + kv.first.as<std::string>());
      if (!hash) return hash.error();
      w.basic_auth_users[kv.first.as<std::string>()] = *hash;
    }
    auto check = BasicAuth::Create(w.basic_auth_users);
    if (!check) return c.Bad(users, check.error().message);
  }
  return w;
}

}  // namespace

Result<WebConfig> ParseWebConfig(const std::string& yaml, const std::string& base_dir,
                                 const std::string& origin) {
  Checker c(origin, base_dir);
  try {
    if (auto shape = yaml::CheckShape(yaml)) {
      return InvalidArgument(origin + ":" + std::to_string(shape->line) + ": " + shape->what + ": refused");
    }
    YAML::Node root = YAML::Load(yaml);
    if (auto dup = yaml::FindDuplicateKey(root)) {
      return InvalidArgument(origin + ":" + std::to_string(dup->line) + ": " + yaml::Describe(*dup));
    }
    return ParseRoot(c, root);
  } catch (const YAML::Exception& e) {  // yaml-cpp reports by exception; it stops here
    std::string where = origin;
    if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1);
    return InvalidArgument(where + ": " + e.msg);
  }
}

Result<WebConfig> LoadWebConfig(const std::string& path) {
  auto text = sys::ReadRegularFile(path);  // a FIFO or /dev/zero is refused, never waited on
  if (!text) return Error{text.error().code, "--web-config-file: " + text.error().message};
  fs::path base = fs::absolute(fs::path(path)).parent_path();
  return ParseWebConfig(*text, base.string(), path);
}

bool WebConfigFiles::Stamp::operator==(const Stamp& o) const {
  return path == o.path && exists == o.exists && dev == o.dev && ino == o.ino && size == o.size &&
         mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
}

WebConfigFiles::Stamp WebConfigFiles::Take(const std::string& path) {
  Stamp s;
  s.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.size = st.st_size;
  s.mtime = st.st_mtim;
  return s;
}

bool WebConfigFiles::Changed() const {
  for (const Stamp& s : files_)
    if (!(Take(s.path) == s)) return true;
  return false;
}

WebConfigFiles StampWebConfig(const std::string& path, const WebConfig& web) {
  WebConfigFiles f;
  f.files_.push_back(WebConfigFiles::Take(path));
  if (web.tls) {
    f.files_.push_back(WebConfigFiles::Take(web.tls->cert_file));
    f.files_.push_back(WebConfigFiles::Take(web.tls->key_file));
    if (!web.tls->client_ca_file.empty())
      f.files_.push_back(WebConfigFiles::Take(web.tls->client_ca_file));
  }
  return f;
}

}  // namespace gpulse::net
