// HTTP basic authentication against bcrypt hashes, as in the Prometheus exporter-toolkit web config
// (`basic_auth_users: {name: $2y$...}`). Hashes are checked with libcrypt's crypt_r, which knows
// bcrypt ($2a$, $2b$, $2y$).
//
// bcrypt is deliberately slow (tens of milliseconds at cost 10), so an answer is remembered for a
// user and a SHA-256 of the password (never the password) in a bounded cache: a scraper that sends
// the same credentials every few seconds pays for one check. Not thread-safe (the server calls it
// from its loop thread only).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.h"

namespace gpulse::net {

class BasicAuth {
 public:
  // Fails when a hash is not a bcrypt hash, naming the user.
  static Result<BasicAuth> Create(std::map<std::string, std::string> users);

  // Whether an Authorization header value ("Basic base64(user:password)") names a user whose hash
  // matches. Missing or malformed headers are simply false.
  bool Check(std::string_view authorization);

  std::size_t cached() const { return cache_.size(); }

  // The hash an unknown user's password is checked against, so that rejecting a name that does not
  // exist costs what rejecting a wrong password does and user names do not leak by timing. Made at
  // Create with the highest cost among the configured hashes.
  const std::string& dummy_hash() const { return dummy_; }

 private:
  BasicAuth(std::map<std::string, std::string> users, std::string dummy)
      : users_(std::move(users)), dummy_(std::move(dummy)) {}
  bool Verify(const std::string& user, const std::string& password) const;

  std::map<std::string, std::string> users_;
  std::string dummy_;
  std::unordered_map<std::string, bool> cache_;  // user '\0' sha256(password) -> verdict
};

// Whether `password` matches the bcrypt `hash` (crypt_r). Exposed for tests.
bool BcryptMatches(const std::string& password, const std::string& hash);

}  // namespace gpulse::net
