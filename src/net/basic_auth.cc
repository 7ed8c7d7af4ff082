#include "net/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <memory>

#include "net/http_util.h"

namespace gpulse::net {
namespace {

constexpr std::size_t kCacheLimit = 1024;

bool IsBcrypt(const std::string& hash) {
  return hash.size() == 60 &&
         (hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$"));
}

std::string Sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), len);
}

}  // namespace

bool BcryptMatches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // large (~32 KiB): not on the stack
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (out == nullptr || out[0] == '*') return false;  // libxcrypt's failure tokens start with '*'
  std::string_view computed(out);
  return computed.size() == hash.size() &&
         CRYPTO_memcmp(computed.data(), hash.data(), hash.size()) == 0;
}

Result<BasicAuth> BasicAuth::Create(std::map<std::string, std::string> users) {
  for (const auto& [user, hash] : users) {
    if (user.empty() || user.find(':') != std::string::npos) {
      return InvalidArgument("basic_auth_users: user name \"" + user +
                             "\" must be non-empty and without ':'");
    }
    if (!IsBcrypt(hash)) {
      return InvalidArgument("basic_auth_users: the hash of user \"" + user +
                             "\" is not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)");
    }
  }
  return BasicAuth(std::move(users));
}

bool BasicAuth::Verify(const std::string& user, const std::string& password) const {
  auto it = users_.find(user);
  if (it == users_.end()) return false;
  return BcryptMatches(password, it->second);
}

bool BasicAuth::Check(std::string_view authorization) {
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() <= kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size() - 1; ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != "basic"[i]) return false;
  }
  if (authorization[kScheme.size() - 1] != ' ') return false;
  auto decoded = Base64Decode(authorization.substr(kScheme.size()));
  if (!decoded) return false;
  std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  std::string user = decoded->substr(0, colon);
  std::string password = decoded->substr(colon + 1);
  std::string key = user + '\0' + Sha256(password);
  if (auto hit = cache_.find(key); hit != cache_.end()) return hit->second;
  bool ok = Verify(user, password);
  if (cache_.size() >= kCacheLimit) cache_.clear();
  cache_.emplace(std::move(key), ok);
  return ok;
}

}  // namespace gpulse::net
