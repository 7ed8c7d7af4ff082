// The exporter-toolkit web config (src/net/web_config.h) through its text entry point,
// ParseWebConfig: hostile YAML must fail with a message naming the file, or give a config whose
// paths are absolute (resolved against the config's folder) and whose users BasicAuth accepts (the
// server builds its authenticator from them).
#include "net/web_config.h"

#include <string>

#include "fuzz/fuzz_util.h"
#include "net/basic_auth.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto w = net::ParseWebConfig(std::string(fuzz::Text(data, size)), "/etc/gpulse", "web.yml");
  if (!w.ok()) {
    FUZZ_CHECK(w.error().message.find("web.yml") != std::string::npos);
    return 0;
  }
  if (w->tls) {
    FUZZ_CHECK(w->tls->cert_file.starts_with('/') && w->tls->key_file.starts_with('/'));
    FUZZ_CHECK(w->tls->client_ca_file.empty() || w->tls->client_ca_file.starts_with('/'));
  }
  FUZZ_CHECK(net::BasicAuth::Create(w->basic_auth_users).ok());
  return 0;
}
