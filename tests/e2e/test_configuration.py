"""docs/configuration.md (issue 41): the configuration reference is what `gpulse-docgen
--configuration` writes from the CLI's own definitions, it names every flag every subcommand's --help
lists (in that subcommand's section), and every environment variable the source reads."""
import glob
import os
import re
import subprocess
import unittest

from gpulse_e2e import GPULSE, SOURCE_DIR

ROOT = os.path.abspath(SOURCE_DIR)
DOCGEN = os.path.join(os.path.dirname(os.path.abspath(GPULSE)), "gpulse-docgen")
PAGE = os.path.join(ROOT, "docs", "configuration.md")

# Where the source reads a variable: getenv("X"), CLI11's envname("X"), an Environment's Get("X"),
# Env("X"), a constant named k...Env... = "X", and the identity module's per-runtime lists
# (kCudaVars = {"A", "B"}).
READS = [
    re.compile(r'\b(?:getenv|envname|Get|Env)\(\s*"([A-Z][A-Z0-9_]+)"'),
    re.compile(r'\bk\w*Env\w*\s*=\s*"([A-Z][A-Z0-9_]+)"'),
    re.compile(r'\bk\w*(?:Var|Vars)\s*=\s*"([A-Z][A-Z0-9_]+)"'),
]
LISTS = re.compile(r"\bk\w*Vars\s*=\s*\{([^}]*)\}")


def help_text(words):
    p = subprocess.run([GPULSE, *words, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (words, p.stderr)
    return p.stdout


def subcommands(words):
    text = help_text(words)
    block = text.split("Subcommands:", 1)[1] if "Subcommands:" in text else ""
    return re.findall(r"^  ([a-z][\w-]*)\s", block, re.M)


def subcommand_paths():
    """Every subcommand and nested subcommand, as words: [["devices"], ..., ["window", "run"], ...]."""
    paths = []
    for s in subcommands([]):
        paths.append([s])
        paths += [[s, t] for t in subcommands([s])]
    return paths


def listed_flags(text):
    """The flags an --help lists in its first column (not those its descriptions mention)."""
    flags = set()
    for m in re.finditer(r"^  (-[\w-]+(?:,-[\w-]+)*)", text, re.M):
        flags.update(m.group(1).split(","))
    return flags - {"-h", "--help"}


def variables_read():
    names = set()
    files = glob.glob(os.path.join(ROOT, "src", "**", "*.cc"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "sim", "**", "*.cc"), recursive=True)
    for path in files:
        if path.endswith(("_test.cc", "_fuzz.cc")):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for pattern in READS:
            names.update(pattern.findall(text))
        for m in LISTS.finditer(text):
            names.update(re.findall(r'"([A-Z][A-Z0-9_]+)"', m.group(1)))
    return names


class ConfigurationReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(PAGE, encoding="utf-8") as f:
            cls.page = f.read()

    def section(self, command):
        start = self.page.index(f"\n## {command}\n")
        end = self.page.find("\n## ", start + 1)
        return self.page[start:end if end >= 0 else len(self.page)]

    def test_the_page_is_what_the_cli_definitions_generate(self):
        p = subprocess.run([DOCGEN, "--configuration"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.page, p.stdout,
                         "regenerate docs/configuration.md with `build/bin/gpulse-docgen --configuration`")

    def test_every_flag_of_every_subcommand_is_in_its_section(self):
        paths = subcommand_paths()
        self.assertGreater(len(paths), 20)
        checked = 0
        for words in paths:
            command = " ".join(["gpulse", *words])
            with self.subTest(command=command):
                section = self.section(command)
                for flag in listed_flags(help_text(words)):
                    self.assertIn(f"`{flag}`", section, f"{command} takes {flag}")
                    checked += 1
        self.assertGreater(checked, 150)

    def test_every_variable_the_source_reads_is_on_the_page(self):
        names = variables_read()
        # The extraction itself must find what is known to be read, in each of its forms.
        for known in ("GPULSE_NVML_LIBRARY", "GPULSE_SYSFS_ROOT", "ZE_AFFINITY_MASK",
                      "GPULSE_MEASUREMENT_WINDOW_DIR", "NVIDIA_VISIBLE_DEVICES", "GPULSE_SIM_SCENARIO"):
            self.assertIn(known, names)
        self.assertGreater(len(names), 25)  # dcgm-exporter's are checked from --help below
        missing = sorted(n for n in names if f"`{n}`" not in self.page)
        self.assertEqual(missing, [], "read by gpulse but not in docs/configuration.md")

    def test_a_short_flag_means_one_thing_across_gpulses_own_subcommands(self):
        """Issue 42: where two subcommands give a letter different meanings, the page lists both
        with the tool each copies; among gpulse's own subcommands a letter has one meaning."""
        uses = {}
        for words in subcommand_paths():
            for m in re.finditer(r"^  (-[\w-]+(?:,-[\w-]+)*)", help_text(words), re.M):
                names = m.group(1).split(",")
                longs = [n for n in names if n.startswith("--")]
                for short in (n for n in names if re.fullmatch(r"-\w", n)):
                    if short == "-h":
                        continue
                    uses.setdefault(short, set()).add((" ".join(words), longs[0] if longs else ""))
        section = self.page.split("## Short flags across subcommands", 1)[1].split("\n## ", 1)[0]
        rows = set(re.findall(r"^\| `(-\w)` \| `gpulse ([^`]+)` \| `([^`]*)` \| (.+?) \|$", section, re.M))
        conflicting = {f: u for f, u in uses.items() if len({l for _, l in u}) > 1}
        self.assertIn("-d", conflicting)
        listed = {(f, c, l) for f, c, l, _ in rows}
        for flag, u in conflicting.items():
            for command, long_name in u:
                self.assertIn((flag, command, long_name), listed, f"{flag} of gpulse {command}")
        own = {}
        for flag, command, long_name, convention in rows:
            if convention == "gpulse":
                own.setdefault(flag, set()).add(long_name)
        self.assertEqual({f: m for f, m in own.items() if len(m) > 1}, {},
                         "a letter with two meanings among gpulse's own subcommands")

    def test_every_variable_a_help_names_as_bound_is_on_the_page(self):
        for words in subcommand_paths():
            for name in re.findall(r"\(Env:([A-Z0-9_]+)\)", help_text(words)):
                self.assertIn(f"| `{name}` |", self.page, f"gpulse {' '.join(words)} binds {name}")


if __name__ == "__main__":
    unittest.main()
