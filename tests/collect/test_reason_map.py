"""docs/power-upstream-test-map.md, "Every reason code → the test that produces it", stays complete:
every reason code of src/power/contract.h has exactly one row, and every e2e test the table names
(Class.test_method, in tests/collect/test_collect.py) exists. Run with Debian's /usr/bin/python3."""
import ast
import os
import re
import unittest

ROOT = os.environ.get("GPULSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


class ReasonMap(unittest.TestCase):
    def setUp(self):
        contract = read("src", "power", "readers", "contract.h")
        block = contract[contract.index("namespace reason {"):contract.index("}  // namespace reason")]
        self.codes = re.findall(r'"([a-z_]+)"', block)
        doc = read("docs", "power-upstream-test-map.md")
        self.table = doc[doc.index("## Every reason code"):]
        self.rows = [l for l in self.table.splitlines() if l.startswith("| `")]

    def test_every_code_has_exactly_one_row(self):
        self.assertGreater(len(self.codes), 40)
        listed = []
        for row in self.rows:
            first = row.split("|")[1]
            listed += re.findall(r"`([a-z_]+)`", first)
        for code in self.codes:
            self.assertEqual(listed.count(code), 1, f"{code}: rows in the reason-code table")
        self.assertEqual(sorted(set(listed) - set(self.codes)), [], "rows for codes the contract lacks")

    def test_no_code_is_marked_never_produced(self):
        self.assertNotIn("never produced", self.table)

    def test_named_e2e_tests_exist(self):
        tree = ast.parse(read("tests", "collect", "test_collect.py"))
        methods = {f"{c.name}.{f.name}" for c in tree.body if isinstance(c, ast.ClassDef)
                   for f in c.body if isinstance(f, ast.FunctionDef)}
        named = set(re.findall(r"`([A-Z][A-Za-z]+\.test_[a-z_]+)", self.table))
        self.assertGreater(len(named), 10)
        for name in named:
            if name.endswith("_"):
                continue  # "test_every_scrape_reason_…" abbreviations are prefixes
            self.assertIn(name, methods, "the reason-code table names a test that does not exist")
        prefixes = set(re.findall(r"`([A-Z][A-Za-z]+\.test_[a-z_]+)…", self.table))
        for prefix in prefixes:
            self.assertTrue(any(m.startswith(prefix) for m in methods), prefix)


if __name__ == "__main__":
    unittest.main()
