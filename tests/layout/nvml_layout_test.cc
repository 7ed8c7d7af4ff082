// gpulse's hand-declared NVML structs (src/gpu/nvml/nvml_abi.h) must have NVIDIA's layout: the same
// size and alignment, and every field NVIDIA declares at the same offset with the same size. The
// reference is bindgen's translation of nvml.h shipped by Debian (librust-nvml-wrapper-sys-dev),
// turned back into C++ by rust_to_c.py at build time; nvml_layout_pairs.txt says which gpulse type
// is checked against which reference type. See README.md.
#include <gtest/gtest.h>

#include <cstddef>
#include <iostream>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/nvml/nvml_abi.h"
#include "nvml_ref_layout.h"  // generated: namespace gpulse_ref and the GPULSE_REF_* lists

namespace {

// Every member has a default so that the designated initializers below may leave any out.
struct FieldLayout {
  std::string name{};
  bool in_gpulse = false;
  std::size_t gpulse_offset = 0, ref_offset = 0;
  std::size_t gpulse_size = 0, ref_size = 0;
};

// A field gpulse declares and the reference lacks; `listed`: the pairs file names it on purpose.
struct GpulseOnlyField {
  std::string name{};
  bool listed = false;
  std::string note{};
};

// One gpulse type and its reference type, measured; or, if !in_reference, why there is none.
struct PairLayout {
  std::string gpulse_type{}, ref_type{}, ref_origin{};
  bool in_reference = true;
  std::string absent_note{};
  bool gpulse_standard_layout = false;
  std::size_t gpulse_size = 0, ref_size = 0;
  std::size_t gpulse_align = 0, ref_align = 0;
  std::vector<FieldLayout> fields{};
  std::vector<GpulseOnlyField> gpulse_only{};
};

void PrintTo(const PairLayout& pair, std::ostream* os) { *os << pair.gpulse_type; }

// The macro arguments are type and member names, which cannot be parenthesized, and some measured
// fields are pointers, whose sizeof is what is wanted.
// NOLINTBEGIN(bugprone-macro-parentheses,bugprone-sizeof-expression)

// Measures reference field `f` of R and, if gpulse's G has a field of that name, of G. The gpulse
// side is inside a template so that a missing field becomes a test failure naming it, not a compile
// error.
#define GPULSE_LAYOUT_FIELD(G, R, f)                                                         \
  [] {                                                                                       \
    FieldLayout row{                                                                         \
        .name = #f, .ref_offset = offsetof(R, f), .ref_size = sizeof(std::declval<R&>().f)}; \
    []<class T>(FieldLayout& out, std::type_identity<T>) {                                   \
      if constexpr (requires { &T::f; }) {                                                   \
        out.in_gpulse = true;                                                                \
        out.gpulse_offset = offsetof(T, f);                                                  \
        out.gpulse_size = sizeof(std::declval<T&>().f);                                      \
      }                                                                                      \
    }(row, std::type_identity<G>{});                                                         \
    return row;                                                                              \
  }(),

#define GPULSE_LAYOUT_GPULSE_ONLY(F, LISTED, NOTE) \
  GpulseOnlyField{.name = #F, .listed = LISTED, .note = NOTE},

#define GPULSE_LAYOUT_PAIR(G_TYPE, R_TYPE, ORIGIN, FIELDS, GPULSE_ONLY)      \
  PairLayout{                                                                \
      .gpulse_type = #G_TYPE,                                                \
      .ref_type = #R_TYPE,                                                   \
      .ref_origin = ORIGIN,                                                  \
      .gpulse_standard_layout = std::is_standard_layout_v<::G_TYPE>,         \
      .gpulse_size = sizeof(::G_TYPE),                                       \
      .ref_size = sizeof(gpulse_ref::R_TYPE),                                \
      .gpulse_align = alignof(::G_TYPE),                                     \
      .ref_align = alignof(gpulse_ref::R_TYPE),                              \
      .fields = {FIELDS(GPULSE_LAYOUT_FIELD, ::G_TYPE, gpulse_ref::R_TYPE)}, \
      .gpulse_only = {GPULSE_ONLY(GPULSE_LAYOUT_GPULSE_ONLY)},               \
  },

#define GPULSE_LAYOUT_ABSENT(G_TYPE, NOTE) \
  PairLayout{.gpulse_type = #G_TYPE, .in_reference = false, .absent_note = NOTE},

std::vector<PairLayout> AllPairs() {
  return {GPULSE_REF_FOR_EACH_PAIR(GPULSE_LAYOUT_PAIR)
              GPULSE_REF_FOR_EACH_ABSENT(GPULSE_LAYOUT_ABSENT)};
}
// NOLINTEND(bugprone-macro-parentheses,bugprone-sizeof-expression)

class NvmlAbiLayout : public testing::TestWithParam<PairLayout> {};

TEST_P(NvmlAbiLayout, MatchesNvmlHeader) {
  const PairLayout& p = GetParam();
  if (!p.in_reference) {
    GTEST_SKIP() << p.gpulse_type << " is NOT checked: " << GPULSE_REF_SOURCE
                 << " has no such type (" << p.absent_note << ")";
  }
  const std::string where = p.gpulse_type + " (src/gpu/nvml/nvml_abi.h) vs " + p.ref_origin;
  EXPECT_TRUE(p.gpulse_standard_layout)
      << where << ": gpulse's type is not standard-layout, so it is not C";
  EXPECT_FALSE(p.fields.empty()) << where
                                 << ": the reference has no fields, so nothing is compared";
  EXPECT_EQ(p.gpulse_size, p.ref_size) << where << ": sizeof differs";
  EXPECT_EQ(p.gpulse_align, p.ref_align) << where << ": alignof differs";
  for (const FieldLayout& f : p.fields) {
    if (!f.in_gpulse) {
      ADD_FAILURE() << where << ": gpulse has no field '" << f.name
                    << "', which the reference declares at offset " << f.ref_offset << " ("
                    << f.ref_size << " bytes)";
      continue;
    }
    EXPECT_EQ(f.gpulse_offset, f.ref_offset) << where << ": offsetof(" << f.name << ") differs";
    EXPECT_EQ(f.gpulse_size, f.ref_size) << where << ": sizeof(" << f.name << ") differs";
  }
  for (const GpulseOnlyField& f : p.gpulse_only) {
    if (!f.listed) {
      ADD_FAILURE() << where << ": gpulse declares field '" << f.name
                    << "', which the reference lacks, so its offset is unchecked; fix the name, or "
                       "list it as "
                       "extra= with a reason in tests/layout/nvml_layout_pairs.txt";
    } else {
      std::cout << "note: " << p.gpulse_type << "::" << f.name
                << " is not in the reference, only its effect on "
                << "size and alignment is checked: " << f.note << "\n";
    }
  }
  std::cout << where << ": size " << p.ref_size << ", align " << p.ref_align << ", "
            << p.fields.size() << " reference fields compared\n";
}

INSTANTIATE_TEST_SUITE_P(Nvml, NvmlAbiLayout, testing::ValuesIn(AllPairs()),
                         [](const testing::TestParamInfo<PairLayout>& info) {
                           return info.param.gpulse_type;
                         });

}  // namespace
