// HTTP basic authentication against bcrypt hashes, as in the Prometheus exporter-toolkit web config
// (`basic_auth_users: {name: $2y$...}`). Hashes are checked with libcrypt's crypt_r, which knows
// bcrypt ($2a$, $2b$, $2y$).
//
// bcrypt is deliberately slow (tens of milliseconds at cost 10), so the server splits a check in
// two: Lookup, cheap and on the event loop, answers from a cache of recently verified credentials
// (keyed by the user and a SHA-256 of the password, never the password) or says a bcrypt is
// needed; Verify runs that bcrypt on a worker thread (work_pool.h). Successes and failures are
// remembered in separate bounded caches, so a flood of wrong passwords can never push a real
// scraper's verified credentials out. An unknown user costs one bcrypt against a dummy hash of the
// highest configured cost, like a wrong password, so user names do not leak by timing.
//
// Thread-safety: every member is safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>

#include "core/result.h"

namespace gpulse::net {

// The user and password of an Authorization header value ("Basic base64(user:password)"), or
// nullopt when it is missing, malformed, or either part holds a NUL or another control character.
struct Credentials {
  std::string user;
  std::string password;
};
std::optional<Credentials> ParseBasicAuthorization(std::string_view authorization);

// Whether `password` matches the bcrypt `hash` (crypt_r). Exposed for tests.
bool BcryptMatches(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  // How a password is checked against a hash: BcryptMatches, or a stand-in in tests.
  using Verifier = std::function<bool(const std::string& password, const std::string& hash)>;

  // Fails when a hash is not a bcrypt hash (or its cost is outside 04..31), naming the user.
  static Result<BasicAuth> Create(std::map<std::string, std::string> users,
                                  Verifier verify = BcryptMatches);

  // A check that needs a bcrypt: what Verify takes.
  struct Pending {
    std::string key;  // user '\0' sha256(password)
    std::string user;
    std::string password;
  };
  enum class Verdict { kAccept, kReject };
  // The cheap part: a verdict from the header alone or the caches, or the Pending check to run.
  // Missing, malformed and control-character headers are kReject.
  std::variant<Verdict, Pending> Lookup(std::string_view authorization) const;
  // The slow part (one bcrypt, or one against the dummy hash for an unknown user); remembers the
  // answer.
  bool Verify(const Pending& p) const;
  // Lookup then Verify on the calling thread.
  bool Check(std::string_view authorization) const;

  std::size_t cached() const;  // verified credentials remembered (successes and failures)
  std::size_t bcrypt_runs() const;  // Verify calls that ran the verifier

  // The hash an unknown user's password is checked against, made at Create with the highest cost
  // among the configured hashes (a fresh salt and a checksum that matches nothing).
  const std::string& dummy_hash() const { return state_->dummy; }

 private:
  struct State {
    std::map<std::string, std::string> users;
    std::string dummy;
    Verifier verify;
    mutable std::mutex mu;
    std::unordered_set<std::string> good, bad;  // keys, each bounded
    std::size_t runs = 0;
  };
  explicit BasicAuth(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

}  // namespace gpulse::net
