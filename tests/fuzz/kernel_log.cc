// The kernel log's records and lines (src/faults/): ParseKmsgRecord over each line of the input, and
// ParseXidLine, ParseSxidLine, RecoveryActionOf154 and RootCauseXid over each message, then the
// whole input through a GpuFaults. A record's message is the text after its first ';'; an Xid line's
// PCI address is in range and its text is a suffix of the message; counting never goes back and the
// recommended action is one gpulse knows.
#include <string>

#include "core/xid_catalogue.h"
#include "faults/gpu_faults.h"
#include "faults/kmsg.h"
#include "faults/xid_line.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;
using namespace gpulse::faults;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  GpuFaults g;
  std::uint64_t total = 0;
  std::int64_t t = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    std::string_view message = line;
    if (auto r = ParseKmsgRecord(line)) {
      FUZZ_CHECK(r->usec >= 0);
      FUZZ_CHECK(line.substr(line.find(';') + 1) == r->message);
      message = line.substr(line.find(';') + 1);
    }
    if (auto x = ParseXidLine(message)) {
      FUZZ_CHECK(x->pci.bus <= 0xff && x->pci.device <= 0x1f && x->pci.function <= 7);
      FUZZ_CHECK(message.size() >= x->text.size());
      (void)RecoveryActionOf154(x->text);
      (void)RootCauseXid(x->text);
      g.FromKernelLog({x->xid, t += 1'000'000'000, x->pid, false, x->text}, (t & 2) != 0);
      if ((t & 7) == 0) g.FromNvml(x->xid, t);
      if ((t & 31) == 0) g.NoteReset();
    }
    if (auto s = ParseSxidLine(message)) {
      FUZZ_CHECK(s->pci.bus <= 0xff && s->pci.device <= 0x1f);
    }
    std::uint64_t now = 0;
    for (const XidCount& c : g.Counts()) now += c.count;
    FUZZ_CHECK(now >= total);
    total = now;
    const XidAction a = g.Recommended();
    FUZZ_CHECK(a.action == "NONE" || FindAction(a.action) != nullptr);
  }
  return 0;
}
