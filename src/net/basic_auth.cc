#include "net/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

#include "net/http_util.h"

namespace gpulse::net {
namespace {

constexpr std::size_t kCacheLimit = 1024;

// "$2b$10$" + 53 characters, with a cost bcrypt accepts (4..31): a cost of 99 would make every
// login fail silently.
bool IsBcrypt(const std::string& hash) {
  if (hash.size() != 60 || !(hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$"))) {
    return false;
  }
  if (!std::isdigit(static_cast<unsigned char>(hash[4])) || !std::isdigit(static_cast<unsigned char>(hash[5])) ||
      hash[6] != '$') {
    return false;
  }
  int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  return cost >= 4 && cost <= 31;
}

// A user name or password with a NUL or another control character is refused outright: crypt
// would read a password only up to its first NUL, so "s3cret\0anything" would pass.
bool HasControl(std::string_view s) {
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) return true;
  }
  return false;
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

Result<BasicAuth> BasicAuth::Create(std::map<std::string, std::string> users, Verifier verify) {
  for (const auto& [user, hash] : users) {
    if (user.empty() || user.find(':') != std::string::npos || HasControl(user)) {
      return InvalidArgument("basic_auth_users: user name \"" + user +
                             "\" must be non-empty and without ':' or control characters");
    }
    if (!IsBcrypt(hash)) {
      return InvalidArgument("basic_auth_users: the hash of user \"" + user +
                             "\" is not a bcrypt hash ($2a$, $2b$ or $2y$, a cost of 04 to 31, 60 characters)");
    }
  }
  unsigned long cost = 0;
  for (const auto& [user, hash] : users) cost = std::max(cost, std::stoul(hash.substr(4, 2)));
  // A fresh salt of that cost and a checksum that matches nothing: checking a password against it
  // costs one bcrypt of that cost, and making it costs none (a cost-31 hash takes days to compute).
  std::string dummy;
  if (cost != 0) {
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof salt) == nullptr) {
      return InvalidArgument("basic_auth_users: cannot make a bcrypt salt of cost " + std::to_string(cost));
    }
    dummy = std::string(salt) + std::string(60 - std::strlen(salt), 'u');
  }
  auto s = std::make_shared<State>();
  s->users = std::move(users);
  s->dummy = std::move(dummy);
  s->verify = std::move(verify);
  return BasicAuth(std::move(s));
}

std::optional<Credentials> ParseBasicAuthorization(std::string_view authorization) {
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size() - 1; ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != "basic"[i]) return std::nullopt;
  }
  if (authorization[kScheme.size() - 1] != ' ') return std::nullopt;
  auto decoded = Base64Decode(authorization.substr(kScheme.size()));
  if (!decoded) return std::nullopt;
  std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  Credentials c{decoded->substr(0, colon), decoded->substr(colon + 1)};
  if (HasControl(c.user) || HasControl(c.password)) return std::nullopt;
  return c;
}

std::variant<BasicAuth::Verdict, BasicAuth::Pending> BasicAuth::Lookup(
    std::string_view authorization) const {
  auto creds = ParseBasicAuthorization(authorization);
  if (!creds) return Verdict::kReject;
  std::string key = creds->user + '\0' + Sha256(creds->password);
  {
    std::lock_guard lock(state_->mu);
    if (state_->good.contains(key)) return Verdict::kAccept;
    if (state_->bad.contains(key)) return Verdict::kReject;
  }
  return Pending{std::move(key), std::move(creds->user), std::move(creds->password)};
}

bool BasicAuth::Verify(const Pending& p) const {
  auto it = state_->users.find(p.user);
  bool known = it != state_->users.end();
  // An unknown user is checked against the dummy hash: the same work as a wrong password.
  bool ok = state_->verify(p.password, known ? it->second : state_->dummy) && known;
  std::lock_guard lock(state_->mu);
  ++state_->runs;
  auto& cache = ok ? state_->good : state_->bad;
  if (cache.size() >= kCacheLimit) cache.clear();
  cache.insert(p.key);
  return ok;
}

bool BasicAuth::Check(std::string_view authorization) const {
  auto v = Lookup(authorization);
  if (const Verdict* d = std::get_if<Verdict>(&v)) return *d == Verdict::kAccept;
  return Verify(std::get<Pending>(v));
}

std::size_t BasicAuth::cached() const {
  std::lock_guard lock(state_->mu);
  return state_->good.size() + state_->bad.size();
}

std::size_t BasicAuth::bcrypt_runs() const {
  std::lock_guard lock(state_->mu);
  return state_->runs;
}

}  // namespace gpulse::net
