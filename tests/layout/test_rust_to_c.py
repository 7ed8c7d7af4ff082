#!/usr/bin/python3
"""Self-test of rust_to_c.py on small bindgen-style snippets. Run: /usr/bin/python3 test_rust_to_c.py

The tests that compile the emitted C++ use $GPULSE_CXX (ctest sets it to the project's compiler), else `c++`.
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rust_to_c  # noqa: E402
from rust_to_c import TranslateError  # noqa: E402

CXX = os.environ.get("GPULSE_CXX") or shutil.which("c++")


def bindings(rust):
    return rust_to_c.Bindings(textwrap.dedent(rust).lstrip("\n"), "snippet.rs")


def translate(rust, *roots):
    tr = rust_to_c.Translator(bindings(rust))
    for root in roots:
        tr.require(root, True, "test")
    return tr.namespace_text("ref")


def lines(text):
    return [line.strip() for line in text.split("\n")]


SCALARS = """
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct scalars_st {
    pub a: raw::c_uint,
    pub b: raw::c_int,
    pub c: raw::c_char,
    pub d: raw::c_ulonglong,
    pub e: raw::c_longlong,
    pub f: raw::c_ulong,
    pub g: raw::c_long,
    pub h: raw::c_ushort,
    pub i: raw::c_uchar,
    pub j: f64,
    pub k: f32,
    pub l: u8,
    pub m: u16,
    pub n: u32,
    pub o: u64,
    pub p: i8,
    pub q: i16,
    pub r: i32,
    pub s: i64,
    pub t: ::std::os::raw::c_short,
}
"""

# Arrays, pointers, aliases, a union, an opaque handle and a nested struct, shaped like bindgen's NVML output.
MIXED = """
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dev_st {
    _unused: [u8; 0],
}
pub type dev_t = *mut dev_st;
pub type kind_enum = raw::c_uint;
pub use self::kind_enum as kind_t;
#[repr(C)]
#[derive(Copy, Clone)]
pub union value_st {
    pub d: f64,
    pub u: raw::c_uint,
    pub ull: raw::c_ulonglong,
}
pub type value_t = value_st;
#[repr(C)]
#[derive(Copy, Clone)]
pub struct inner_st {
    pub tag: raw::c_char,
    pub v: value_t,
}
#[repr(C)]
#[derive(Copy, Clone)]
pub struct outer_st {
    pub name: [raw::c_char; 16usize],
    pub grid: [[u8; 2usize]; 3usize],
    pub device: dev_t,
    pub text: *const raw::c_char,
    pub argv: *mut *const raw::c_char,
    pub row: *mut [u32; 4usize],
    pub any: *mut raw::c_void,
    pub next: *mut outer_st,
    pub kind: kind_t,
    pub inner: [inner_st; 2usize],
}
pub type outer_t = outer_st;
"""


class TranslatesMechanically(unittest.TestCase):
    def test_scalars_become_their_c_types(self):
        out = lines(translate(SCALARS, "scalars_st"))
        for decl in ["unsigned int a;", "int b;", "char c;", "unsigned long long d;", "long long e;",
                     "unsigned long f;", "long g;", "unsigned short h;", "unsigned char i;", "double j;",
                     "float k;", "std::uint8_t l;", "std::uint16_t m;", "std::uint32_t n;", "std::uint64_t o;",
                     "std::int8_t p;", "std::int16_t q;", "std::int32_t r;", "std::int64_t s;", "short t;"]:
            self.assertIn(decl, out)

    def test_arrays_keep_their_extents(self):
        out = lines(translate(MIXED, "outer_st"))
        self.assertIn("char name[16];", out)
        self.assertIn("std::uint8_t grid[3][2];", out)
        self.assertIn("inner_st inner[2];", out)

    def test_pointers_and_opaque_handles(self):
        out = lines(translate(MIXED, "outer_st"))
        self.assertIn("struct dev_st;", out)  # bindgen's `_unused: [u8; 0]` is an incomplete type
        self.assertNotIn("struct dev_st {", out)
        self.assertIn("using dev_t = dev_st *;  // snippet.rs:6", out)
        self.assertIn("dev_t device;", out)
        self.assertIn("char const *text;", out)
        self.assertIn("char const **argv;", out)
        self.assertIn("std::uint32_t (*row)[4];", out)
        self.assertIn("void *any;", out)
        self.assertIn("outer_st *next;", out)

    def test_aliases_and_pub_use(self):
        out = lines(translate(MIXED, "outer_t"))
        self.assertIn("using kind_enum = unsigned int;  // snippet.rs:7", out)
        self.assertIn("using kind_t = kind_enum;  // snippet.rs:8", out)
        self.assertIn("kind_t kind;", out)
        self.assertIn("using outer_t = outer_st;  // snippet.rs:37", out)

    def test_unions_stay_unions(self):
        out = lines(translate(MIXED, "value_t"))
        self.assertIn("union value_st;", out)
        self.assertIn("union value_st {", out)

    def test_dependencies_are_defined_before_use(self):
        out = lines(translate(MIXED, "outer_t"))
        order = [out.index(x) for x in ["union value_st {", "using value_t = value_st;  // snippet.rs:16",
                                         "struct inner_st {", "struct outer_st {",
                                         "using outer_t = outer_st;  // snippet.rs:37"]]
        self.assertEqual(order, sorted(order))
        self.assertEqual(out.count("struct outer_st {"), 1)

    @unittest.skipUnless(CXX, "no C++ compiler: set GPULSE_CXX")
    def test_emitted_header_compiles_with_c_layout(self):
        code = ("#include <cstddef>\n#include <cstdint>\n" + translate(MIXED, "outer_t") + textwrap.dedent("""
            static_assert(sizeof(ref::value_t) == 8 && alignof(ref::value_t) == 8);
            static_assert(sizeof(ref::inner_st) == 16 && offsetof(ref::inner_st, v) == 8);
            static_assert(offsetof(ref::outer_st, name) == 0 && offsetof(ref::outer_st, grid) == 16);
            static_assert(offsetof(ref::outer_st, device) == 24 && offsetof(ref::outer_st, kind) == 72);
            static_assert(offsetof(ref::outer_st, inner) == 80 && sizeof(ref::outer_st) == 112);
            """))
        self.assertCompiles(code)

    def assertCompiles(self, code):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "t.cc")
            with open(src, "w") as f:
                f.write(code)
            run = subprocess.run([CXX, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", src],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr + "\n" + code)


class RejectsWhatItDoesNotKnow(unittest.TestCase):
    """Every unsupported construct stops the translation with the file and line; nothing is guessed."""

    def assertRejected(self, rust, root, *fragments):
        with self.assertRaises(TranslateError) as caught:
            translate(rust, root)
        for fragment in fragments:
            self.assertIn(fragment, str(caught.exception))

    @staticmethod
    def struct(field, attrs="#[repr(C)]\n#[derive(Copy, Clone)]"):
        return f"{attrs}\npub struct s_st {{\n    pub ok: raw::c_uint,\n    {field}\n}}\n"

    def test_function_pointer(self):
        self.assertRejected(self.struct('pub cb: Option<unsafe extern "C" fn(x: raw::c_int)>,'), "s_st",
                            "snippet.rs:5", "Option")

    def test_bitfield(self):
        self.assertRejected(self.struct("pub _bitfield_1: __BindgenBitfieldUnit<[u8; 1usize]>,"), "s_st",
                            "snippet.rs:5", "_bitfield_1")

    def test_bindgen_padding(self):
        self.assertRejected(self.struct("pub __bindgen_padding_0: [u8; 4usize],"), "s_st", "snippet.rs:5")

    def test_packed_repr(self):
        self.assertRejected(self.struct("pub x: u8,", attrs="#[repr(C, packed)]"), "s_st",
                            "snippet.rs:1", "repr(C, packed)")

    def test_aligned_repr(self):
        self.assertRejected(self.struct("pub x: u8,", attrs="#[repr(C)]\n#[repr(align(16))]"), "s_st",
                            "snippet.rs:2", "align(16)")

    def test_missing_repr_c(self):
        self.assertRejected(self.struct("pub x: u8,", attrs="#[derive(Copy, Clone)]"), "s_st",
                            "snippet.rs:2", "not #[repr(C)]")

    def test_u128(self):
        self.assertRejected(self.struct("pub x: u128,"), "s_st", "snippet.rs:5", "u128")

    def test_array_length_not_a_literal(self):
        self.assertRejected(self.struct("pub x: [u8; N],"), "s_st", "snippet.rs:5", "integer literal")

    def test_generic_path(self):
        self.assertRejected(self.struct("pub x: ::std::mem::ManuallyDrop<u32>,"), "s_st", "snippet.rs:5")

    def test_unknown_type_name(self):
        self.assertRejected(self.struct("pub x: nvmlMissing_t,"), "s_st", "snippet.rs:5", "nvmlMissing_t")

    def test_zero_length_array_that_is_not_the_opaque_idiom(self):
        self.assertRejected(self.struct("pub tail: [raw::c_uint; 0usize],"), "s_st", "snippet.rs:5",
                            "zero-length")

    def test_unknown_line_in_body(self):
        self.assertRejected(self.struct("// a comment bindgen does not write"), "s_st", "snippet.rs:5")

    def test_opaque_by_value(self):
        rust = "#[repr(C)]\npub struct h_st {\n    _unused: [u8; 0],\n}\n" + self.struct("pub h: h_st,")
        self.assertRejected(rust, "s_st", "snippet.rs:9", "opaque")

    def test_tuple_struct(self):
        self.assertRejected("#[repr(C)]\npub struct t_st(pub u32);\n", "t_st", "snippet.rs:2")

    def test_rust_enum(self):
        self.assertRejected("#[repr(u32)]\npub enum e_t {\n    A = 0,\n}\n" + self.struct("pub e: e_t,"),
                            "s_st", "snippet.rs:2", "e_t")

    def test_duplicate_definition(self):
        self.assertRejected("pub type d_t = u32;\npub type d_t = u64;\n" + self.struct("pub d: d_t,"),
                            "s_st", "lines 1, 2")

    def test_self_containing_struct(self):
        self.assertRejected(self.struct("pub me: s_st,"), "s_st", "contains itself")

    def test_command_line_fails_naming_the_line_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = {name: os.path.join(tmp, name) for name in ("b.rs", "pairs.txt", "abi.h", "out.h")}
            with open(paths["b.rs"], "w") as f:
                f.write(self.struct("pub x: u128,"))
            with open(paths["pairs.txt"], "w") as f:
                f.write("s_t s_st\n")
            with open(paths["abi.h"], "w") as f:
                f.write("typedef struct { unsigned ok; unsigned x; } s_t;\n")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = rust_to_c.main(["--bindings", paths["b.rs"], "--pairs", paths["pairs.txt"],
                                     "--gpulse-header", paths["abi.h"], "--output", paths["out.h"]])
            self.assertEqual(rc, 1)
            self.assertIn(paths["b.rs"] + ":5", err.getvalue())
            self.assertFalse(os.path.exists(paths["out.h"]))


PAIR_RUST = """
#[repr(C)]
pub struct a_st {
    pub x: raw::c_uint,
    pub y: raw::c_ulonglong,
}
pub type a_t = a_st;
"""
PAIR_HEADER = """
typedef struct a_st {
  unsigned int x;      // comment
  unsigned long long y; /* comment */
  char more[4];
} a_t;
"""


class EmitsFieldListsPerPair(unittest.TestCase):
    def generate(self, pairs, header=PAIR_HEADER):
        return rust_to_c.generate(bindings(PAIR_RUST), rust_to_c.parse_pairs(pairs, "pairs.txt"),
                                  textwrap.dedent(header), "abi.h", "pairs.txt")

    def test_every_reference_field_in_order(self):
        out = self.generate("a_t a_t extra=more  # why\n")
        self.assertIn("#define GPULSE_REF_FIELDS_a_t(FIELD, G, R) FIELD(G, R, x) FIELD(G, R, y)\n", out)
        self.assertIn('EXTRA(more, true, "why")', out)
        self.assertIn('PAIR(a_t, a_t, "snippet.rs:2 pub struct a_st (via alias a_t at line 6)"', out)

    def test_unlisted_gpulse_only_field_is_passed_on_as_unlisted(self):
        out = self.generate("a_t a_t\n")
        self.assertIn('EXTRA(more, false, "")', out)

    def test_absent_reference_type_is_reported_with_its_note(self):
        out = self.generate("a_t a_t extra=more  # why\nb_t -  # not in this header\n")
        self.assertIn('ABSENT(b_t, "not in this header")', out)

    def test_absent_without_note_is_rejected(self):
        with self.assertRaisesRegex(TranslateError, "pairs.txt:1"):
            rust_to_c.parse_pairs("b_t -\n", "pairs.txt")

    def test_absent_but_present_is_rejected(self):
        with self.assertRaisesRegex(TranslateError, "defines it"):
            self.generate("a_st -  # wrong\n")

    def test_stale_extra_is_rejected(self):
        with self.assertRaisesRegex(TranslateError, "extra=x but the reference"):
            self.generate("a_t a_t extra=x  # x is in the reference\n")

    def test_duplicate_pair_is_rejected(self):
        with self.assertRaisesRegex(TranslateError, "paired twice"):
            rust_to_c.parse_pairs("a_t a_t\na_t a_t\n", "pairs.txt")

    def test_gpulse_header_constructs_it_cannot_read_are_rejected(self):
        for body, message in [("unsigned int x, y;", "abi.h:2"), ("unsigned x : 3;", "abi.h:2"),
                              ("struct { int z; } n;", "nested")]:
            with self.subTest(body=body):
                with self.assertRaisesRegex(TranslateError, message):
                    self.generate("a_t a_t\n", header="typedef struct a_st {\n  %s\n} a_t;\n" % body)


if __name__ == "__main__":
    unittest.main(verbosity=2)
