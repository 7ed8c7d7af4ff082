"""bench/RESULTS.md stays a results page (issue 42): one table per capability with the nine columns,
every row filled to them, every command naming an area bench/run.sh has or a file that exists, and no
dated log of runs (history is in git)."""
import os
import re
import unittest

ROOT = os.environ.get("GPULSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = "| figure | value | anchor | anchor value | ratio | target | command | date | machine |"


def cells(row):
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


class ResultsPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), encoding="utf-8") as f:
            cls.text = f.read()
        with open(os.path.join(ROOT, "bench", "run.sh"), encoding="utf-8") as f:
            m = re.search(r"^areas=\(([^)]*)\)", f.read(), re.M)
        cls.areas = m.group(1).split()

    def sections(self):
        return re.split(r"(?m)^## ", self.text)[1:]

    def test_each_section_is_one_table_with_the_columns(self):
        for section in self.sections():
            title = section.splitlines()[0]
            with self.subTest(section=title):
                self.assertEqual(section.count(HEADER), 1, "one table with the nine columns")
                self.assertNotRegex(title, r"\b20\d\d-\d\d-\d\d\b", "no dated sections: history is in git")

    def test_every_row_has_nine_cells_and_a_command(self):
        rows = [l for l in self.text.splitlines() if l.startswith("| ") and l != HEADER]
        self.assertGreater(len(rows), 50)
        for row in rows:
            with self.subTest(row=row[:80]):
                c = cells(row)
                self.assertEqual(len(c), 9, row)
                self.assertTrue(c[0] and c[1], "a figure and its value")
                self.assertTrue(c[6], "a command (or 'as above')")
                self.assertRegex(c[7], r"^(20\d\d-\d\d-\d\d|as above)", "a date")

    def test_commands_name_real_areas_and_files(self):
        for area in re.findall(r"bench/run\.sh ([a-z]+)", self.text):
            self.assertIn(area, self.areas, f"bench/run.sh has no area {area!r}")
        for path in set(re.findall(r"\b(bench/[\w/.-]+\.(?:py|sh|cc))\b", self.text)):
            self.assertTrue(os.path.exists(os.path.join(ROOT, path)), f"{path} is named but does not exist")


if __name__ == "__main__":
    unittest.main()
