// The node agent's management API request bodies (src/agent/request_body.cc): whatever a client
// POSTs or PUTs. An accepted body is a JSON object with no key repeated in any object, and what it
// becomes when written back is accepted again and equal.
#include "agent/request_body.h"

#include <string>

#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto body = agent::ParseRequestBody(fuzz::Text(data, size));
  if (!body) {
    FUZZ_CHECK(!body.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(body->is_object());
  auto again = agent::ParseRequestBody(body->dump());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *body);
  return 0;
}
