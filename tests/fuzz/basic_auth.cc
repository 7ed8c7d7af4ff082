// The Basic authentication header and the user table of the web config (src/net/basic_auth.h),
// without bcrypt (tens of milliseconds a check):
//   - ParseBasicAuthorization over the whole input: accepted credentials hold no control character
//     and no ':' in the user, and encoded again they parse back to themselves;
//   - BasicAuth::Create over "user:hash" lines of the input: a table it accepts has only
//   bcrypt-shaped
//     hashes and a dummy hash of the same shape; a header that does not parse is refused by Check
//     before any bcrypt is run.
#include "net/basic_auth.h"

#include <algorithm>
#include <map>
#include <string>

#include "fuzz/fuzz_util.h"

using namespace gpulse;

namespace {

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

bool BcryptShaped(const std::string& h) {
  return h.size() == 60 &&
         (h.starts_with("$2a$") || h.starts_with("$2b$") || h.starts_with("$2y$"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  auto creds = net::ParseBasicAuthorization(text);
  if (creds) {
    FUZZ_CHECK(!HasControl(creds->user) && !HasControl(creds->password));
    FUZZ_CHECK(creds->user.find(':') == std::string::npos);
    auto again =
        net::ParseBasicAuthorization("Basic " + fuzz::Base64Encode(creds->user + ":" + creds->password));
    FUZZ_CHECK(again && again->user == creds->user && again->password == creds->password);
  }

  std::map<std::string, std::string> users;
  for (std::string_view rest = text; !rest.empty();) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    users[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 1));
  }
  auto auth = net::BasicAuth::Create(users);
  if (auth.ok()) {
    for (const auto& [user, hash] : users) FUZZ_CHECK(BcryptShaped(hash));
    FUZZ_CHECK(users.empty() ? auth->dummy_hash().empty() : BcryptShaped(auth->dummy_hash()));
    if (!creds) {
      FUZZ_CHECK(!auth->Check(text));  // refused before bcrypt
      FUZZ_CHECK(auth->cached() == 0);
    }
  }
  return 0;
}
