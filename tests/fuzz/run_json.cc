// run.json read back (src/report/run_json.h) as `gpulse report RUN.json` does it: ParseRunJson (the
// text entry point of ReadRunJsonFile), then Derive, then the text and HTML renderers and the JSON
// writer. Whatever it accepts is re-rendered without a crash, and what the JSON writer writes reads
// back and writes again to the same bytes (write(read(x)) is a fixed point).
// regressions/run_json/float-schema-version: an integer field given as a float out of range was
// converted with get<int>() (undefined behaviour); the reader now refuses it by name.
#include "report/run_json.h"

#include <cstdio>
#include <string>

#include "fuzz/fuzz_util.h"
#include "report/derive.h"
#include "report/render.h"

using namespace gpulse;
using namespace gpulse::report;

namespace {

std::string Write(const Run& run, const Report& rep) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  FUZZ_CHECK(f != nullptr);
  FUZZ_CHECK(WriteRunJson(run, rep, f).ok());
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  auto run = ParseRunJson(text, "run.json");
  if (!run.ok()) {
    FUZZ_CHECK(run.error().message.find("run.json") != std::string::npos);
    return 0;
  }
  Report rep = Derive(*run);
  (void)RenderText(*run, rep);
  (void)RenderHtml(*run, rep);
  std::string once = Write(*run, rep);
  auto again = ParseRunJson(once, "written");
  if (!again.ok()) std::fprintf(stderr, "%s\n", again.error().message.c_str());
  FUZZ_CHECK(again.ok());
  std::string twice = Write(*again, Derive(*again));
  FUZZ_CHECK(twice == once);
  return 0;
}
