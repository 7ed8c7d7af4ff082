// The agent's history query parameters (src/agent/history_query.h) and the API's %-decoding, over
// hostile text: the input is "fields\nsince\nuntil\nformat". An accepted request has fields, a
// format it names, and a range that does not run backwards; a time spec it accepts is at most
// 100 years before now.
#include <string>

#include "agent/history_query.h"
#include "fuzz/fuzz_util.h"
#include "net/http_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(fuzz::Text(data, size));
  std::string part[4];
  for (int i = 0, at = 0; i < 4; ++i) {
    std::size_t end = text.find('\n', at);
    part[i] = text.substr(std::min<std::size_t>(at, text.size()),
                          end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? static_cast<int>(text.size()) : static_cast<int>(end) + 1;
  }
  const std::int64_t now = 1'767'225'600'000;
  if (auto r = agent::ParseHistoryRequest(part[0], part[1], part[2], part[3], now); r.ok()) {
    FUZZ_CHECK(!r->fields.empty());
    FUZZ_CHECK(r->from_ms <= r->until_ms);
    FUZZ_CHECK(r->format == "json" || r->format == "rows" || r->format == "csv");
  } else {
    FUZZ_CHECK(!r.error().message.empty());
  }
  if (auto t = agent::ParseTimeSpec(part[1], now); t.ok()) {
    FUZZ_CHECK(*t >= now - 100LL * 365 * 86'400'000 ||
               part[1].find_first_not_of("0123456789.") == std::string::npos);
  }
  for (bool plus : {true, false}) {
    if (auto d = net::PercentDecode(text, plus)) {
      FUZZ_CHECK(d->size() <= text.size());
      // A %00 is refused: a NUL comes out only if one went in.
      FUZZ_CHECK(d->find('\0') == std::string::npos || text.find('\0') != std::string::npos);
    }
  }
  return 0;
}
