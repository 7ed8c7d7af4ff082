"""The install tree (cmake/install.cmake): `cmake --install BUILD --prefix P` into a temporary
directory, then gpulse run from P alone: stripped, the simulator found in P/lib/gpulse, the default
counters file in P/etc/gpulse, and the systemd units naming exactly those paths."""
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


if __name__ == "__main__":
    unittest.main()
