// Differential: the exposition parser (src/prom/parser.h) fed one body three ways must give the
// same callbacks, in the same order, and the same verdict (error message included):
//   - whole, as ParseExposition does;
//   - cut into chunks at fuzzer-chosen points, as a body arrives from a socket (Parser::Feed takes
//     chunks split anywhere, even inside a line or between "\r" and "\n");
//   - one line (with its newline) per Feed, as the collector's scrape parser feeds it
//     (src/power/scrape_parse.cc).
// The cut points come from the end of the input (FuzzedDataProvider), so a real exposition file is
// a useful seed as it is.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "prom/parser.h"

using namespace gpulse;

namespace {

// Every callback as one string, values bit for bit.
struct Log {
  std::vector<std::string> events;
  prom::ParseCallbacks Callbacks() {
    prom::ParseCallbacks cb;
    cb.on_help = [this](std::string_view n, std::string_view h) {
      events.push_back("H" + std::string(n) + '\0' + std::string(h));
    };
    cb.on_type = [this](std::string_view n, std::string_view t) {
      events.push_back("T" + std::string(n) + '\0' + std::string(t));
    };
    cb.on_sample = [this](const prom::ParsedSample& s) {
      std::string e = "S" + std::string(s.name);
      for (const auto& l : s.labels) e += '\0' + l.name + '\0' + l.value;
      std::uint64_t bits = 0;
      double v = s.value != s.value ? __builtin_nan("") : s.value;  // one NaN
      std::memcpy(&bits, &v, sizeof bits);
      e += '\1' + std::to_string(bits) + '\1' +
           (s.timestamp_ms ? std::to_string(*s.timestamp_ms) : "-");
      events.push_back(std::move(e));
    };
    return cb;
  }
};

std::string Verdict(const Status& s) { return s.ok() ? "ok" : "error: " + s.error().message; }

// Feeds `pieces` in order and finishes; stops at the first error, and checks that the parser keeps
// returning it.
std::string FeedPieces(prom::Parser& p, const std::vector<std::string_view>& pieces) {
  for (std::string_view piece : pieces) {
    Status s = p.Feed(piece);
    if (!s.ok()) {
      FUZZ_CHECK(Verdict(p.Feed("x 1\n")) == Verdict(s));
      FUZZ_CHECK(Verdict(p.Finish()) == Verdict(s));
      return Verdict(s);
    }
  }
  return Verdict(p.Finish());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  std::vector<std::size_t> cuts;
  if (size > 0) {
    std::size_t n = fdp.ConsumeIntegralInRange<std::size_t>(0, 16);
    for (std::size_t i = 0; i < n && fdp.remaining_bytes() > 0; ++i)
      cuts.push_back(fdp.ConsumeIntegral<std::uint16_t>());
  }
  std::string body = fdp.ConsumeRemainingBytesAsString();
  for (std::size_t& c : cuts) c = body.empty() ? 0 : c % (body.size() + 1);
  std::sort(cuts.begin(), cuts.end());

  Log whole;
  std::string whole_verdict = Verdict(prom::ParseExposition(body, whole.Callbacks()));

  std::vector<std::string_view> chunks;
  std::size_t at = 0;
  for (std::size_t c : cuts) {
    chunks.push_back(std::string_view(body).substr(at, c - at));  // empty chunks too
    at = c;
  }
  chunks.push_back(std::string_view(body).substr(at));
  Log chunked;
  prom::Parser p(chunked.Callbacks());
  std::string chunked_verdict = FeedPieces(p, chunks);

  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < body.size();) {
    std::size_t nl = body.find('\n', start);
    std::size_t end = nl == std::string::npos ? body.size() : nl + 1;
    lines.push_back(std::string_view(body).substr(start, end - start));
    start = end;
  }
  Log by_line;
  prom::Parser q(by_line.Callbacks());
  std::string by_line_verdict = FeedPieces(q, lines);

  if (chunked_verdict != whole_verdict || by_line_verdict != whole_verdict)
    std::fprintf(stderr, "whole: %s\nchunked: %s\nby line: %s\n", whole_verdict.c_str(),
                 chunked_verdict.c_str(), by_line_verdict.c_str());
  FUZZ_CHECK(chunked_verdict == whole_verdict);
  FUZZ_CHECK(by_line_verdict == whole_verdict);
  FUZZ_CHECK(chunked.events == whole.events);
  FUZZ_CHECK(by_line.events == whole.events);
  FUZZ_CHECK(p.lines() == q.lines());
  return 0;
}
