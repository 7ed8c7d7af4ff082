// Field lists (src/core/fields.h): ParseFieldList, the parser of `dmon -e` and `record --fields`,
// and FindField, over hostile text. An accepted list names catalogue fields, none twice, and
// written back by the catalogue's names it parses to the same list; a field found by any spelling
// is found again by its DCGM name and by its numeric id.
#include <set>
#include <string>

#include "core/fields.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::Text(data, size);
  if (auto list = ParseFieldList(text); list.ok()) {
    std::set<FieldIndex> seen;
    std::string names;
    for (FieldIndex i : *list) {
      FUZZ_CHECK(i < AllFields().size());
      FUZZ_CHECK(seen.insert(i).second);
      if (!names.empty()) names += ',';
      names += FieldAt(i).name;
    }
    auto again = ParseFieldList(names);
    FUZZ_CHECK(again.ok() && *again == *list);
  } else {
    FUZZ_CHECK(!list.error().message.empty());
  }
  if (auto i = FindField(text)) {
    FUZZ_CHECK(*i < AllFields().size());
    FUZZ_CHECK(FindField(FieldAt(*i).name) == i);
    FUZZ_CHECK(FindField(std::to_string(static_cast<unsigned>(FieldAt(*i).id))) == i);
  }
  return 0;
}
