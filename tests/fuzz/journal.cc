// The run journal read back (src/report/journal.h) as `gpulse report DIR` does it after a crash:
// RecoverRun, then Derive, the text and HTML reports and the JSON writer. Whatever it accepts is
// re-rendered without a crash and marked complete exactly when it ended with an end record; an error
// names the journal.
#include "report/journal.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "report/derive.h"
#include "report/render.h"
#include "report/run_json.h"

using namespace gpulse;
using namespace gpulse::report;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  auto run = RecoverRun(text, "run.journal");
  if (!run.ok()) {
    FUZZ_CHECK(run.error().message.find("run.journal") != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(run->info.complete || run->info.incomplete_reason.has_value());
  Report rep = Derive(*run);
  (void)RenderText(*run, rep);
  (void)RenderHtml(*run, rep);
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  FUZZ_CHECK(f != nullptr);
  FUZZ_CHECK(WriteRunJson(*run, rep, f).ok());
  std::fclose(f);
  auto again = ParseRunJson(std::string_view(buf, len), "written");
  std::free(buf);
  FUZZ_CHECK(again.ok());
  return 0;
}
