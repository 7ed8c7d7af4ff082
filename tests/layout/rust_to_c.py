#!/usr/bin/python3
"""Translates bindgen's #[repr(C)] NVML structs (bindings.rs) into C++ declarations for a layout check.

bindgen turned NVIDIA's nvml.h into Rust for the nvml-wrapper-sys crate, which Debian ships as source in
librust-nvml-wrapper-sys-dev. This script reads that file, translates the structs and unions named in a
pairs file (and everything they hold by value) back into C++ inside `namespace gpulse_ref`, and writes, for
each pair, the list of reference fields. tests/layout/nvml_layout_test.cc then compares sizeof, alignof and
every field's offset and size with gpulse's own declarations in src/gpu/nvml/nvml_abi.h.

The translation is mechanical and deliberately narrow: Rust's C scalar types, fixed arrays, raw pointers,
type aliases (`pub type`, `pub use self::X as Y`), structs and unions marked exactly `#[repr(C)]`, and
bindgen's opaque-struct idiom (`_unused: [u8; 0]`). Anything else that a requested type reaches (packed or
aligned reprs, bitfields, function pointers, generics, ...) stops the script with the file and line, so
that nothing is ever guessed.

It also reads gpulse's header, only for field names, so that a field gpulse declares but the reference
lacks (whose offset nothing here checks) is reported unless the pairs file lists it on purpose.

Standard library only; run with /usr/bin/python3. See tests/layout/README.md.
"""

import argparse
import dataclasses
import os
import re
import sys


class TranslateError(Exception):
    """A construct the script does not understand, with the place it was found."""


# Rust's C types under the ctypes prefix bindgen was given (`--ctypes-prefix raw`) or its default path.
C_TYPES = {
    "c_char": "char",
    "c_schar": "signed char",
    "c_uchar": "unsigned char",
    "c_short": "short",
    "c_ushort": "unsigned short",
    "c_int": "int",
    "c_uint": "unsigned int",
    "c_long": "long",
    "c_ulong": "unsigned long",
    "c_longlong": "long long",
    "c_ulonglong": "unsigned long long",
    "c_float": "float",
    "c_double": "double",
    "c_void": "void",
}
C_TYPE_PREFIXES = ("raw::", "std::os::raw::", "::std::os::raw::")

# Rust's own fixed-size scalars. u128/i128 are left out on purpose: their alignment has differed between
# Rust and C on x86-64, so a mechanical translation could be wrong.
RUST_SCALARS = {
    "u8": "std::uint8_t",
    "u16": "std::uint16_t",
    "u32": "std::uint32_t",
    "u64": "std::uint64_t",
    "i8": "std::int8_t",
    "i16": "std::int16_t",
    "i32": "std::int32_t",
    "i64": "std::int64_t",
    "f32": "float",
    "f64": "double",
    "bool": "bool",
    "usize": "std::size_t",
    "isize": "std::ptrdiff_t",
}


# ---------------------------------------------------------------------------------------------------------
# Types: ("scalar", c_name) | ("named", rust_name) | ("pointer", inner, is_const) | ("array", inner, length)

_TYPE_TOKEN = re.compile(
    r"\s*(?:(?P<ptr>\*(?:mut|const)\b)|(?P<punct>[\[\];])"
    r"|(?P<int>\d+(?:usize)?(?![\w]))|(?P<path>(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*))"
)


def parse_type(text, where):
    """Parses one Rust type expression; raises TranslateError naming `where` on anything unsupported."""
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TYPE_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise TranslateError(f"{where}: unsupported type syntax at {text[pos:].strip()!r} in {text!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1

    def unexpected(i):
        got = tokens[i][1] if i < len(tokens) else "end of type"
        return TranslateError(f"{where}: unexpected {got!r} in type {text!r}")

    def parse(i):
        if i >= len(tokens):
            raise unexpected(i)
        kind, value = tokens[i]
        if kind == "ptr":
            inner, i = parse(i + 1)
            return ("pointer", inner, value == "*const"), i
        if kind == "punct" and value == "[":
            inner, i = parse(i + 1)
            if i >= len(tokens) or tokens[i] != ("punct", ";"):
                raise unexpected(i)
            if i + 1 >= len(tokens) or tokens[i + 1][0] != "int":
                raise TranslateError(f"{where}: array length is not an integer literal in {text!r}")
            length = int(tokens[i + 1][1].removesuffix("usize"))
            if i + 2 >= len(tokens) or tokens[i + 2] != ("punct", "]"):
                raise unexpected(i + 2)
            return ("array", inner, length), i + 3
        if kind == "path":
            if "::" in value:
                for prefix in C_TYPE_PREFIXES:
                    rest = value[len(prefix):]
                    if value.startswith(prefix) and rest in C_TYPES:
                        return ("scalar", C_TYPES[rest]), i + 1
                raise TranslateError(f"{where}: unknown type path {value!r} in {text!r}")
            if value in RUST_SCALARS:
                return ("scalar", RUST_SCALARS[value]), i + 1
            if value in ("u128", "i128", "char", "str", "Option", "Box", "Vec"):
                raise TranslateError(f"{where}: Rust type {value!r} has no mechanical C equivalent in {text!r}")
            return ("named", value), i + 1
        raise unexpected(i)

    if not tokens:
        raise TranslateError(f"{where}: empty type")
    result, end = parse(0)
    if end != len(tokens):
        raise unexpected(end)
    return result


def declare(ctype, declarator):
    """Renders a C++ declaration of `declarator` with type `ctype` (declarator may be empty for a type-id)."""
    kind = ctype[0]
    if kind == "scalar" or kind == "named":
        return f"{ctype[1]} {declarator}".rstrip()
    if kind == "pointer":
        inner = ctype[1]
        star = "const *" if ctype[2] else "*"
        inner_decl = star + declarator
        if inner[0] == "array":
            inner_decl = f"({inner_decl})"
        return declare(inner, inner_decl)
    if kind == "array":
        return declare(ctype[1], f"{declarator}[{ctype[2]}]")
    raise AssertionError(ctype)


# ---------------------------------------------------------------------------------------------------------
# bindings.rs items


@dataclasses.dataclass
class Item:
    kind: str  # "struct", "union", "alias" or "unsupported"
    name: str
    line: int
    attrs: list = dataclasses.field(default_factory=list)  # [(line, text)]
    body: list = dataclasses.field(default_factory=list)  # [(line, text)]
    target: str = ""  # alias target type text
    text: str = ""  # the declaring line, for messages


_STRUCT_START = re.compile(r"^pub (struct|union) ([A-Za-z_]\w*) \{$")
_ANY_STRUCT = re.compile(r"^pub (struct|union|enum) ([A-Za-z_]\w*)")
_TYPE_ALIAS = re.compile(r"^pub type ([A-Za-z_]\w*) = (.+);$")
_ANY_TYPE_ALIAS = re.compile(r"^pub type ([A-Za-z_]\w*)")
_USE_ALIAS = re.compile(r"^pub use self::([A-Za-z_]\w*) as ([A-Za-z_]\w*);$")
_ANY_USE = re.compile(r"^pub use .*\b([A-Za-z_]\w*);$")
_FIELD = re.compile(r"^\s*(?:pub\s+)?([A-Za-z_]\w*)\s*:\s*(.+?),\s*$")


class Bindings:
    """The top-level type items of one bindings.rs, indexed by name."""

    def __init__(self, text, path):
        self.path = path
        self.short = "/".join(path.replace("\\", "/").split("/")[-3:])
        self.items = {}
        self._duplicates = {}
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            lineno = i + 1
            m = _STRUCT_START.match(line)
            if m:
                item = Item(m.group(1), m.group(2), lineno, text=line)
                j = i - 1
                while j >= 0 and lines[j].startswith("#["):
                    item.attrs.insert(0, (j + 1, lines[j]))
                    j -= 1
                i += 1
                while i < len(lines) and lines[i] != "}":
                    item.body.append((i + 1, lines[i]))
                    i += 1
                if i >= len(lines):
                    raise TranslateError(f"{self.where(lineno)}: no closing '}}' for {line!r}")
                self._add(item)
            elif _ANY_STRUCT.match(line):
                m = _ANY_STRUCT.match(line)
                self._add(Item("unsupported", m.group(2), lineno, text=line))
            elif _TYPE_ALIAS.match(line):
                m = _TYPE_ALIAS.match(line)
                self._add(Item("alias", m.group(1), lineno, target=m.group(2), text=line))
            elif _ANY_TYPE_ALIAS.match(line):
                m = _ANY_TYPE_ALIAS.match(line)
                self._add(Item("unsupported", m.group(1), lineno, text=line))
            elif _USE_ALIAS.match(line):
                m = _USE_ALIAS.match(line)
                self._add(Item("alias", m.group(2), lineno, target=m.group(1), text=line))
            elif _ANY_USE.match(line):
                m = _ANY_USE.match(line)
                self._add(Item("unsupported", m.group(1), lineno, text=line))
            i += 1

    def _add(self, item):
        if item.name in self.items:
            self._duplicates.setdefault(item.name, [self.items[item.name].line]).append(item.line)
        else:
            self.items[item.name] = item

    def where(self, line):
        return f"{self.path}:{line}"

    def origin(self, item):
        return f"{self.short}:{item.line} pub {item.kind} {item.name}"

    def lookup(self, name, used_at):
        if name in self._duplicates:
            lines = ", ".join(str(n) for n in self._duplicates[name])
            raise TranslateError(f"{used_at}: {name!r} is defined more than once in {self.path} (lines {lines})")
        item = self.items.get(name)
        if item is None:
            raise TranslateError(f"{used_at}: no top-level struct, union or type alias {name!r} in {self.path}")
        if item.kind == "unsupported":
            raise TranslateError(f"{self.where(item.line)}: unsupported definition of {name!r}: {item.text.strip()!r}")
        return item


@dataclasses.dataclass
class Record:
    """A parsed struct or union: fields as [(name, ctype, line)], or opaque (bindgen's `_unused: [u8; 0]`)."""

    item: Item
    fields: list
    opaque: bool


def parse_record(bindings, item):
    for line, attr in item.attrs:
        if attr == "#[repr(C)]" or re.fullmatch(r"#\[derive\([\w, ]*\)\]", attr):
            continue
        raise TranslateError(f"{bindings.where(line)}: unsupported attribute {attr!r} on {item.kind} {item.name}")
    if "#[repr(C)]" not in (a for _, a in item.attrs):
        raise TranslateError(f"{bindings.where(item.line)}: {item.kind} {item.name} is not #[repr(C)]")
    fields = []
    for line, text in item.body:
        if re.match(r"^\s*///", text):
            continue
        m = _FIELD.match(text)
        if not m:
            raise TranslateError(f"{bindings.where(line)}: unsupported line in {item.kind} {item.name}: {text!r}")
        name, type_text = m.group(1), m.group(2)
        if name.startswith("__bindgen") or name.startswith("_bitfield"):
            raise TranslateError(f"{bindings.where(line)}: bindgen artefact field {name!r} (padding or bitfield) "
                                 f"in {item.name} is not supported")
        fields.append((name, parse_type(type_text, bindings.where(line)), line))
    if [(n, t) for n, t, _ in fields] == [("_unused", ("array", ("scalar", "std::uint8_t"), 0))]:
        return Record(item, [], True)
    if not fields:
        raise TranslateError(f"{bindings.where(item.line)}: {item.kind} {item.name} has no fields")
    for name, ctype, line in fields:
        t = ctype
        while t[0] == "array":
            if t[2] == 0:
                raise TranslateError(f"{bindings.where(line)}: zero-length array {name!r} in {item.name}")
            t = t[1]
        if ctype == ("scalar", "void"):
            raise TranslateError(f"{bindings.where(line)}: field {name!r} of type c_void")
    return Record(item, fields, False)


class Translator:
    """Emits C++ for requested types, each after what it holds by value; pointees are only forward-declared."""

    def __init__(self, bindings):
        self.b = bindings
        self.forward = {}  # name -> "struct"/"union", in first-use order
        self.blocks = []  # emitted definitions, in dependency order
        self.defined = set()  # records and aliases emitted
        self.alias_by_value = set()  # aliases whose targets are complete
        self.active = []  # records being defined, to catch by-value cycles

    def require(self, name, by_value, used_at):
        item = self.b.lookup(name, used_at)
        if item.kind == "alias":
            self._require_alias(item, by_value)
            return
        rec = parse_record(self.b, item)
        self.forward.setdefault(item.name, item.kind)
        if not by_value:
            return
        if rec.opaque:
            raise TranslateError(f"{used_at}: opaque {item.kind} {item.name} ({self.b.where(item.line)}) "
                                 "is used by value")
        if item.name in self.defined:
            return
        if item.name in self.active:
            chain = " -> ".join(self.active + [item.name])
            raise TranslateError(f"{used_at}: {item.kind} {item.name} contains itself by value ({chain})")
        self.active.append(item.name)
        for fname, ctype, line in rec.fields:
            self._require_type(ctype, True, self.b.where(line))
        self.active.pop()
        body = "".join(f"  {declare(ctype, fname)};\n" for fname, ctype, _ in rec.fields)
        self.blocks.append(f"// {self.b.origin(item)}\n{item.kind} {item.name} {{\n{body}}};\n")
        self.defined.add(item.name)

    def _require_alias(self, item, by_value):
        where = self.b.where(item.line)
        if item.name in self.active:
            raise TranslateError(f"{where}: alias cycle through {item.name}")
        target = parse_type(item.target, where)
        if item.name in self.defined and (not by_value or item.name in self.alias_by_value):
            return
        self.active.append(item.name)
        self._require_type(target, by_value, where)
        self.active.pop()
        if by_value:
            self.alias_by_value.add(item.name)
        if item.name not in self.defined:
            self.blocks.append(f"using {item.name} = {declare(target, '')};  // {self.b.short}:{item.line}\n")
            self.defined.add(item.name)

    def _require_type(self, ctype, by_value, where):
        kind = ctype[0]
        if kind == "scalar":
            if ctype[1] == "void" and by_value:
                raise TranslateError(f"{where}: c_void used by value")
        elif kind == "named":
            self.require(ctype[1], by_value, where)
        elif kind == "pointer":
            inner = ctype[1]
            if not (inner[0] == "scalar" and inner[1] == "void"):
                self._require_type(inner, False, where)
        elif kind == "array":
            self._require_type(ctype[1], by_value, where)

    def resolve_record(self, name, used_at):
        """Follows aliases from `name` to the struct or union it names; returns (Record, [alias items])."""
        chain = []
        while True:
            item = self.b.lookup(name, used_at)
            if item.kind != "alias":
                break
            if len(chain) > 32:
                raise TranslateError(f"{used_at}: alias chain from {chain[0].name!r} does not end")
            chain.append(item)
            target = parse_type(item.target, self.b.where(item.line))
            if target[0] != "named":
                raise TranslateError(f"{used_at}: {chain[0].name!r} is not a struct or union "
                                     f"({self.b.where(item.line)}: {item.text.strip()!r})")
            name = target[1]
        rec = parse_record(self.b, item)
        if rec.opaque:
            raise TranslateError(f"{used_at}: {item.name} is opaque in {self.b.where(item.line)}; it has no layout")
        return rec, chain

    def namespace_text(self, namespace):
        out = [f"namespace {namespace} {{\n\n"]
        for name, kind in self.forward.items():
            out.append(f"{kind} {name};\n")
        out.append("\n")
        out.append("\n".join(self.blocks))
        out.append(f"\n}}  // namespace {namespace}\n")
        return "".join(out)


# ---------------------------------------------------------------------------------------------------------
# Pairs file and gpulse's header


@dataclasses.dataclass
class Pair:
    gpulse: str
    ref: str  # None when the reference lacks the type
    extras: list
    note: str
    line: int


def parse_pairs(text, path):
    pairs = []
    seen = set()
    for lineno, raw_line in enumerate(text.split("\n"), 1):
        code, _, note = raw_line.partition("#")
        note = note.strip()
        words = code.split()
        if not words:
            continue
        where = f"{path}:{lineno}"
        if len(words) not in (2, 3) or not re.fullmatch(r"[A-Za-z_]\w*", words[0]):
            raise TranslateError(f"{where}: expected '<gpulse type> <reference type|-> [extra=a,b] [# note]', "
                                 f"got {raw_line!r}")
        gpulse, ref = words[0], words[1]
        if ref != "-" and not re.fullmatch(r"[A-Za-z_]\w*", ref):
            raise TranslateError(f"{where}: bad reference type name {ref!r}")
        extras = []
        if len(words) == 3:
            m = re.fullmatch(r"extra=([A-Za-z_]\w*(?:,[A-Za-z_]\w*)*)", words[2])
            if not m:
                raise TranslateError(f"{where}: expected extra=<field>,<field>, got {words[2]!r}")
            extras = m.group(1).split(",")
            if ref == "-":
                raise TranslateError(f"{where}: extra= makes no sense for a type the reference lacks")
        if (ref == "-" or extras) and not note:
            raise TranslateError(f"{where}: '-' and extra= need a '# note' saying why")
        if gpulse in seen:
            raise TranslateError(f"{where}: {gpulse} is paired twice")
        seen.add(gpulse)
        pairs.append(Pair(gpulse, None if ref == "-" else ref, extras, note, lineno))
    if not pairs:
        raise TranslateError(f"{path}: no pairs")
    return pairs


_C_DECL = re.compile(r"^(?:[A-Za-z_]\w*\s+)*[A-Za-z_]\w*[\s*]+([A-Za-z_]\w*)\s*(?:\[[^\]\[]+\]\s*)*$")


def gpulse_fields(header_text, type_name, path):
    """Field names of `type_name` in gpulse's header (a typedef'd or tagged struct/union); names only."""
    stripped = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), header_text, flags=re.S)
    stripped = re.sub(r"//[^\n]*", "", stripped)
    found = None
    for m in re.finditer(r"\b(struct|union)\s*([A-Za-z_]\w*)?\s*\{", stripped):
        depth, end = 0, m.end() - 1
        while end < len(stripped):
            depth += {"{": 1, "}": -1}.get(stripped[end], 0)
            if depth == 0:
                break
            end += 1
        after = re.match(r"\s*([A-Za-z_]\w*)?\s*;", stripped[end + 1:])
        if type_name in (m.group(2), after and after.group(1)):
            found = (m.end(), end)
            break
    if not found:
        raise TranslateError(f"{path}: no struct or union {type_name!r} (typedef or tag) found")
    body = stripped[found[0]:found[1]]
    body_start_line = stripped.count("\n", 0, found[0]) + 1
    if "{" in body:
        raise TranslateError(f"{path}:{body_start_line}: {type_name} has a nested struct or union; only plain "
                             "fields are read")
    names = []
    offset = 0
    for decl in body.split(";")[:-1]:
        text = " ".join(decl.split())
        line = body_start_line + body.count("\n", 0, offset + len(decl) - len(decl.lstrip()))
        offset += len(decl) + 1
        m = _C_DECL.match(text)
        if not m or "," in text or ":" in text:
            raise TranslateError(f"{path}:{line}: cannot read a field name from {text!r} in {type_name}")
        names.append(m.group(1))
    if body.split(";")[-1].strip():
        raise TranslateError(f"{path}: unterminated declaration in {type_name}: {body.split(';')[-1].strip()!r}")
    if not names:
        raise TranslateError(f"{path}: {type_name} has no fields")
    return names


# ---------------------------------------------------------------------------------------------------------
# The generated header


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate(bindings, pairs, header_text, header_path, pairs_path):
    tr = Translator(bindings)
    pair_lines = []
    field_macros = []
    absent_lines = []
    for p in pairs:
        where = f"{pairs_path}:{p.line}"
        if p.ref is None:
            if p.gpulse in bindings.items:
                raise TranslateError(f"{where}: {p.gpulse} is marked '-' (absent) but {bindings.path} defines it "
                                     f"at line {bindings.items[p.gpulse].line}; pair it")
            absent_lines.append(f"  ABSENT({p.gpulse}, {c_string(p.note)})")
            continue
        rec, chain = tr.resolve_record(p.ref, where)
        tr.require(p.ref, True, where)
        ref_fields = [name for name, _, _ in rec.fields]
        origin = bindings.origin(rec.item)
        if chain:
            origin += " (via " + ", ".join(f"alias {a.name} at line {a.line}" for a in chain) + ")"
        ours = gpulse_fields(header_text, p.gpulse, header_path)
        only_ours = [f for f in ours if f not in ref_fields]
        for extra in p.extras:
            if extra not in ours:
                raise TranslateError(f"{where}: extra={extra} but {p.gpulse} in {header_path} has no such field")
            if extra in ref_fields:
                raise TranslateError(f"{where}: extra={extra} but the reference {origin} has it; drop it from extra=")
        suffix = p.gpulse
        fields = " ".join(f"FIELD(G, R, {f})" for f in ref_fields)
        extras = " ".join(f"EXTRA({f}, {'true' if f in p.extras else 'false'}, "
                          f"{c_string(p.note if f in p.extras else '')})" for f in only_ours)
        field_macros.append(f"#define GPULSE_REF_FIELDS_{suffix}(FIELD, G, R) {fields}\n"
                            + f"#define GPULSE_REF_GPULSE_ONLY_{suffix}(EXTRA) {extras}".rstrip() + "\n")
        pair_lines.append(f"  PAIR({p.gpulse}, {p.ref}, {c_string(origin)}, GPULSE_REF_FIELDS_{suffix}, "
                          f"GPULSE_REF_GPULSE_ONLY_{suffix})")

    def listing(lines):
        return "".join(" \\\n" + line for line in lines) + "\n"

    return (
        "// Generated by tests/layout/rust_to_c.py; do not edit. The build regenerates it when these change:\n"
        f"//   reference: {bindings.path}\n"
        f"//   pairs:     {pairs_path}\n"
        f"//   gpulse:    {header_path} (field names only)\n"
        "#pragma once\n\n#include <cstddef>\n#include <cstdint>\n\n"
        f"#define GPULSE_REF_SOURCE {c_string(bindings.path)}\n\n"
        + tr.namespace_text("gpulse_ref")
        + "\n// One PAIR(gpulse type, reference type, origin, reference fields, gpulse-only fields) per pair.\n"
        "// Reference fields: FIELD(G, R, name) for every field of the reference type, in order.\n"
        "// gpulse-only fields: EXTRA(name, listed in the pairs file, note).\n"
        + "".join(field_macros)
        + "#define GPULSE_REF_FOR_EACH_PAIR(PAIR)" + listing(pair_lines)
        + "// ABSENT(gpulse type, note) for each type the reference lacks.\n"
        + "#define GPULSE_REF_FOR_EACH_ABSENT(ABSENT)" + listing(absent_lines)
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--bindings", required=True, help="bindgen's bindings.rs")
    ap.add_argument("--pairs", required=True, help="gpulse type / reference type pairs")
    ap.add_argument("--gpulse-header", required=True, help="gpulse's hand-declared ABI header")
    ap.add_argument("--output", required=True, help="generated C++ header")
    args = ap.parse_args(argv)
    try:
        with open(args.bindings, encoding="utf-8") as f:
            bindings = Bindings(f.read(), args.bindings)
        with open(args.pairs, encoding="utf-8") as f:
            pairs = parse_pairs(f.read(), args.pairs)
        with open(args.gpulse_header, encoding="utf-8") as f:
            header_text = f.read()
        text = generate(bindings, pairs, header_text, args.gpulse_header, args.pairs)
    except (TranslateError, OSError) as e:
        print(f"rust_to_c.py: error: {e}", file=sys.stderr)
        return 1
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
