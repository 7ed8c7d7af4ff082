// /proc/PID/cgroup and cgroup paths (src/identity/cgroup.h): ParseProcCgroup over hostile text,
// then Place over the lines it accepts, and ClassifyPath over the text as one path. A container id
// found is 64 hex digits, a pod uid 32 hex digits or 8-4-4-4-12, and Place picks one of the lines.
#include "identity/cgroup.h"

#include <algorithm>
#include <string>

#include "fuzz/fuzz_util.h"

using namespace gpulse;
using namespace gpulse::identity;

namespace {

bool Hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void CheckPlacement(const CgroupPlacement& p) {
  FUZZ_CHECK(p.version == 1 || p.version == 2);
  if (p.container) {
    FUZZ_CHECK(p.container->id.size() == 64);
    FUZZ_CHECK(std::all_of(p.container->id.begin(), p.container->id.end(), Hex));
    (void)RuntimeName(p.container->runtime);
  }
  if (p.pod) {
    const std::string& u = p.pod->uid;
    FUZZ_CHECK(u.size() == 32 || u.size() == 36);
    for (std::size_t i = 0; i < u.size(); ++i)
      FUZZ_CHECK(u.size() == 36 && (i == 8 || i == 13 || i == 18 || i == 23) ? u[i] == '-'
                                                                             : Hex(u[i]));
    (void)QosName(p.pod->qos);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  if (auto lines = ParseProcCgroup(text); lines.ok()) {
    for (const CgroupLine& l : *lines) FUZZ_CHECK(l.path.find('\n') == std::string::npos);
    CgroupPlacement p = Place(*lines);
    CheckPlacement(p);
    if (!lines->empty()) {
      bool from_a_line = std::any_of(lines->begin(), lines->end(),
                                     [&](const CgroupLine& l) { return l.path == p.path; });
      FUZZ_CHECK(from_a_line);
    }
  } else {
    FUZZ_CHECK(lines.error().message.find("line ") != std::string::npos);
  }
  CheckPlacement(ClassifyPath(text));
  return 0;
}
