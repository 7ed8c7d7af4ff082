// The management CLI's reader of an agent's answers (src/cli/agent_reply.cc): a whole response
// (ParseReply) and a streamed body's chunks (StreamBody), as a hostile or broken server could send
// them. Differential: the stream fed in two pieces cut at a fuzzer-chosen point gives the same body
// bytes as fed whole; decoding never invents bytes (the body is never longer than the input).
//
// Input: byte 0 picks the reader (even: ParseReply, odd: a chunked stream) and the cut point.
#include <string>

#include "cli/agent_reply.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string text(fuzz::Text(data + 1, size - 1));
  if (data[0] % 2 == 0) {
    auto r = cli::ParseReply(text, "fuzz");
    if (r) FUZZ_CHECK(r->body.size() <= text.size());
    return 0;
  }
  cli::StreamBody whole(true);
  std::string raw = text, all;
  whole.Decode(raw, all);
  FUZZ_CHECK(all.size() <= text.size());
  cli::StreamBody pieces(true);
  const std::size_t cut = text.empty() ? 0 : data[0] % (text.size() + 1);
  std::string part = text.substr(0, cut), got;
  pieces.Decode(part, got);
  part += text.substr(cut);
  pieces.Decode(part, got);
  FUZZ_CHECK(got == all);
  FUZZ_CHECK(pieces.ended() == whole.ended());
  return 0;
}
