"""The install tree (cmake/install.cmake): `cmake --install BUILD --prefix P` into a temporary
directory, then gpulse run from P alone: stripped, the simulator found in P/lib/gpulse, the default
counters file in P/etc/gpulse, the systemd units naming exactly those paths (and passing
`systemd-analyze verify`), and a man page for gpulse and every subcommand that names every flag its
`--help` lists and renders without a warning, and a bash completion offering exactly those."""
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from gpulse_e2e import DEVICE_SELECTION_VARS, GPULSE, SOURCE_DIR

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(GPULSE)))


def env_without_simulator_hints():
    return {k: v for k, v in os.environ.items()
            if k not in DEVICE_SELECTION_VARS and k not in ("GPULSE_SIM_LIBRARY", "GPULSE_NVML_LIBRARY")}


class InstallTreeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpulse-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        p = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", cls.prefix],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise AssertionError("cmake --install failed:\n" + p.stdout + p.stderr)
        cls.bin = os.path.join(cls.prefix, "bin", "gpulse")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_binary_is_stripped_and_the_build_trees_is_not(self):
        sections = subprocess.run(["readelf", "-S", "-W", self.bin], capture_output=True, text=True).stdout
        self.assertNotIn(".symtab", sections)
        self.assertNotIn(".debug_info", sections)
        self.assertLess(os.path.getsize(self.bin), os.path.getsize(GPULSE))

    def test_simulate_works_from_the_install_alone(self):
        p = subprocess.run([self.bin, "devices", "--simulate", "1xH200"], capture_output=True, text=True,
                           timeout=60, env=env_without_simulator_hints(), cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(os.path.join(self.prefix, "lib", "gpulse", "libgpulse-nvml-sim.so"), p.stdout)
        self.assertIn("GPU 0: NVIDIA H200", p.stdout)

    def test_the_counters_file_is_the_default_set_and_loads(self):
        installed = os.path.join(self.prefix, "etc", "gpulse", "default-counters.csv")
        with open(installed, encoding="utf-8") as a, \
                open(os.path.join(SOURCE_DIR, "deploy", "default-counters.csv"), encoding="utf-8") as b:
            self.assertEqual(a.read(), b.read())
        p = subprocess.run([self.bin, "exporter", "--simulate", "1xH200", "--once", "-f", installed],
                           capture_output=True, text=True, timeout=60, env=env_without_simulator_hints())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("DCGM_FI_DEV_POWER_USAGE{", p.stdout)

    def test_the_web_config_example_configures_nothing_and_loads(self):
        example = os.path.join(self.prefix, "etc", "gpulse", "web.yml")
        with open(example, encoding="utf-8") as f:
            self.assertFalse([l for l in f if l.strip() and not l.lstrip().startswith("#")], "comments only")
        p = subprocess.run([self.bin, "exporter", "--simulate", "1xH200", "--once", "--web-config-file", example],
                           capture_output=True, text=True, timeout=60, env=env_without_simulator_hints())
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_the_units_name_the_installed_binary_and_counters_file(self):
        unit_dir = os.path.join(self.prefix, "lib", "systemd", "system")
        for unit in ("gpulse-exporter.service", "gpulse-agent.service"):
            with open(os.path.join(unit_dir, unit), encoding="utf-8") as f:
                text = f.read()
            exec_start = re.search(r"^ExecStart=(\S+) .*?-f (\S+)", text, re.M)
            self.assertIsNotNone(exec_start, unit)
            self.assertEqual(exec_start.group(1), self.bin, unit)
            self.assertTrue(os.path.isfile(exec_start.group(2)), f"{unit}: {exec_start.group(2)}")
            self.assertNotIn("/usr/local/bin", text, unit)

    def subcommand_paths(self):
        """Every subcommand as `gpulse --help` and its subcommands' --help list them."""
        def subs(words):
            text = subprocess.run([self.bin, *words, "--help"], capture_output=True, text=True).stdout
            block = text.split("Subcommands:", 1)[1] if "Subcommands:" in text else ""
            return re.findall(r"^  ([a-z][\w-]*)\s", block, re.M)
        out = []
        for s in subs([]):
            out.append([s])
            out += [[s, t] for t in subs([s])]
        return out

    def page(self, words):
        return os.path.join(self.prefix, "share", "man", "man1", "-".join(["gpulse", *words]) + ".1.gz")

    def test_every_subcommand_has_a_page_naming_every_flag_of_its_help(self):
        paths = self.subcommand_paths()
        self.assertGreater(len(paths), 20)
        for words in [[]] + paths:
            with self.subTest(command=" ".join(["gpulse", *words])):
                with gzip.open(self.page(words), "rt", encoding="utf-8") as f:
                    page = f.read().replace("\\-", "-")
                help_text = subprocess.run([self.bin, *words, "--help"], capture_output=True, text=True).stdout
                for flag in set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text)):
                    self.assertIn(flag, page)

    def test_the_pages_render_without_warnings(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed")
        pages = sorted(os.listdir(os.path.join(self.prefix, "share", "man", "man1")))
        self.assertIn("gpulse.1.gz", pages)
        for name in pages:
            self.assertTrue(name.endswith(".1.gz"), name + ": installed compressed, as Debian's policy asks")
            with gzip.open(os.path.join(self.prefix, "share", "man", "man1", name), "rb") as f:
                source = f.read()
            p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=source.decode(),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((p.returncode, p.stderr), (0, ""), name)
            if shutil.which("man"):  # what a reader runs: `man -l PAGE`
                shown = subprocess.run(["man", "-l", os.path.join(self.prefix, "share", "man", "man1", name)],
                                       capture_output=True, text=True, timeout=60,
                                       env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
                self.assertEqual(shown.returncode, 0, name + ": " + shown.stderr)
                self.assertIn("NAME", shown.stdout, name)
                self.assertIn("SYNOPSIS", shown.stdout, name)

    def complete(self, *words):
        """What the installed bash completion offers for the command line WORDS (the last one being
        completed)."""
        script = os.path.join(self.prefix, "share", "bash-completion", "completions", "gpulse")
        quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
        p = subprocess.run(["bash", "-c", f"source '{script}'; COMP_WORDS=(gpulse {quoted}); "
                            "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpulse; printf '%s\\n' \"${COMPREPLY[@]}\""],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return sorted(p.stdout.split())

    def test_bash_completion_offers_the_subcommands_and_each_ones_flags(self):
        paths = self.subcommand_paths()
        self.assertEqual(self.complete(""), sorted([w[0] for w in paths if len(w) == 1] + ["-h", "--help", "--version"]))
        self.assertEqual(self.complete("window", ""), sorted(["run", "begin", "end", "-h", "--help"]))
        for words in paths:
            with self.subTest(command=" ".join(["gpulse", *words])):
                help_text = subprocess.run([self.bin, *words, "--help"], capture_output=True, text=True).stdout
                options = help_text.split("Options:", 1)[1].split("Subcommands:")[0]
                flags = {n for m in re.findall(r"^  (-\S+)", options, re.M) for n in m.split(",")}
                offered = set(self.complete(*words, "-"))
                self.assertEqual(offered, flags)

    def test_systemd_analyze_verify_passes_on_the_installed_units(self):
        if not shutil.which("systemd-analyze") or not shutil.which("man"):
            self.skipTest("systemd-analyze or man is not installed")
        unit_dir = os.path.join(self.prefix, "lib", "systemd", "system")
        env = dict(os.environ, MANPATH=os.path.join(self.prefix, "share", "man"))
        p = subprocess.run(["systemd-analyze", "verify", os.path.join(unit_dir, "gpulse-exporter.service"),
                            os.path.join(unit_dir, "gpulse-agent.service")],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
