"""The rooms of src/ respect docs/architecture.md (issue 42): every `#include "room/..."` in a room's
files names a room its row of the page's table allows, every room has a row, each row uses only rooms
above it (so the graph has no cycle), and sim/ uses only what the page allows it."""
import os
import re
import unittest

ROOT = os.path.abspath(os.environ.get("GPULSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_]+)/([^"]+)"', re.M)
SIM_ALLOWED = {"core", "sys", "gpu/nvml/nvml_abi.h"}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def table():
    """[(room, {rooms it may use})] in the page's order."""
    text = read(os.path.join(ROOT, "docs", "architecture.md"))
    section = text.split("## The rooms and what each may use", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("room", "") or set(cells[0]) <= {"-"}:
            continue
        uses = {u.strip() for u in cells[2].split(",") if u.strip()}
        rows.append((cells[0], uses))
    return rows


def sources(directory):
    for dirpath, _, files in os.walk(directory):
        for f in files:
            if f.endswith((".cc", ".h")):
                yield os.path.join(dirpath, f)


def violations(allowed, room, path, text):
    """The includes of one file of `room` that its row does not allow."""
    bad = []
    for m in INCLUDE.finditer(text):
        used = m.group(1)
        if used == room or not os.path.isdir(os.path.join(ROOT, "src", used)):
            continue
        if used not in allowed[room]:
            bad.append(f"{path}: {room} includes {used}/{m.group(2)}")
    return bad


class Layers(unittest.TestCase):
    def setUp(self):
        self.rows = table()
        self.allowed = dict(self.rows)

    def test_the_table_lists_every_room_once_in_an_order_without_cycles(self):
        names = [r for r, _ in self.rows]
        self.assertEqual(len(names), len(set(names)))
        rooms = sorted(d for d in os.listdir(os.path.join(ROOT, "src"))
                       if os.path.isdir(os.path.join(ROOT, "src", d)))
        self.assertEqual(sorted(names), rooms, "every directory of src/ is a room of the table")
        seen = set()
        for room, uses in self.rows:
            self.assertLessEqual(uses, seen, f"{room} may use only rooms above it")
            seen.add(room)
        self.assertGreater(len(names), 10)

    def test_every_include_names_a_room_its_row_allows(self):
        bad, checked = [], 0
        for room in self.allowed:
            for path in sources(os.path.join(ROOT, "src", room)):
                text = read(path)
                checked += len(INCLUDE.findall(text))
                bad += violations(self.allowed, room, os.path.relpath(path, ROOT), text)
        self.assertEqual(bad, [], "includes the architecture page does not allow (docs/architecture.md)")
        self.assertGreater(checked, 300, "the scan found the includes")

    def test_the_simulator_uses_only_the_abi_it_implements(self):
        bad = []
        for path in sources(os.path.join(ROOT, "sim")):
            for m in INCLUDE.finditer(read(path)):
                name = f"{m.group(1)}/{m.group(2)}"
                if m.group(1) in ("core", "sys") or name in SIM_ALLOWED:
                    continue
                if os.path.isdir(os.path.join(ROOT, "src", m.group(1))):
                    bad.append(f"{os.path.relpath(path, ROOT)}: {name}")
        self.assertEqual(bad, [])

    def test_a_forbidden_include_is_caught(self):
        # The check itself, on made-up files: a layer reaching up is reported, its own and lower ones not.
        text = '#include "core/fields.h"\n#include "gpu/backend.h"\n  #  include "cli/commands.h"\n#include <map>\n'
        self.assertEqual(violations(self.allowed, "core", "src/core/x.cc", text),
                         ["src/core/x.cc: core includes gpu/backend.h", "src/core/x.cc: core includes cli/commands.h"])
        self.assertEqual(violations(self.allowed, "exporter", "src/exporter/x.cc", text),
                         ["src/exporter/x.cc: exporter includes cli/commands.h"])
        self.assertEqual(violations(self.allowed, "cli", "src/cli/x.cc", text), [])


if __name__ == "__main__":
    unittest.main()
