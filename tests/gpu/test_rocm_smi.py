#!/usr/bin/python3
"""Debian's rocm-smi (5.2) reads the amdgpu fixture trees (tests/testdata/sysfs) as a /sys.

Each tree is bind-mounted over /sys in a private mount namespace (unshare -m, so the host's /sys
is untouched) and `rocm-smi --showuse --showpower --showmeminfo vram --showtemp --json` must report
the fixture's own values, converted to rocm-smi's units: %, W, bytes, °C, and agree with what `gpulse dmon
--sysfs-root TREE` reads from the same tree. That checks the
fixtures against an independent reader of the same kernel ABI. Skipped, with the reason, when not
root, without unshare or rocm-smi, or where mount namespaces are refused.

rocm-smi 5.2 predates MI300: its library aborts on gpu_metrics 1.4 and later ("Unexpected
conversion attempted") and reads power only from power1_average, which MI300X does not have. The
MI300X tree is therefore checked without its gpu_metrics file, and its power must read N/A there.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "testdata", "sysfs")
COMMAND = "rocm-smi --showuse --showpower --showmeminfo vram --showtemp --json"
GPULSE = os.environ.get("GPULSE_BIN", os.path.join(HERE, "..", "..", "build", "bin", "gpulse"))
FIELDS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED",
          "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"]


def gpulse(root):
    """gpulse's reading of card0 of the tree, as dmon prints it (DCGM units), read from the tree
    where it lies (gpulse takes a --sysfs-root; no mount needed)."""
    out = subprocess.run([GPULSE, "dmon", "--sysfs-root", root, "-c", "1", "-e", ",".join(FIELDS),
                          "--format", "csv"], capture_output=True, text=True, timeout=60, check=True)
    header, row = out.stdout.strip().splitlines()
    return dict(zip(header.split(","), row.split(",")))


def agree(test, card, mine, junction_is_gpu_temp=False):
    """rocm-smi's values (the independent reader) and gpulse's, on every reading both give."""
    test.assertEqual(int(card["GPU use (%)"]), int(mine["DCGM_FI_DEV_GPU_UTIL"]))
    test.assertEqual(int(card["VRAM Total Memory (B)"]) // 2**20, int(mine["DCGM_FI_DEV_FB_TOTAL"]))
    test.assertEqual(int(card["VRAM Total Used Memory (B)"]) // 2**20, int(mine["DCGM_FI_DEV_FB_USED"]))
    sensor = "junction" if junction_is_gpu_temp else "edge"
    test.assertEqual(float(card[f"Temperature (Sensor {sensor}) (C)"]), float(mine["DCGM_FI_DEV_GPU_TEMP"]))
    test.assertEqual(float(card["Temperature (Sensor memory) (C)"]), float(mine["DCGM_FI_DEV_MEMORY_TEMP"]))
    power = card["Average Graphics Package Power (W)"]
    if power != "N/A":
        test.assertEqual(float(power), float(mine["DCGM_FI_DEV_POWER_USAGE"]))


def skip_reason():
    if os.geteuid() != 0:
        return "needs root for a private mount namespace"
    for tool in ("unshare", "rocm-smi"):
        if shutil.which(tool) is None:
            return f"no {tool} (apt-get install rocm-smi util-linux)"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return "unshare -m refused: " + probe.stderr.decode(errors="replace").strip()
    return None


def rocm_smi(root):
    """rocm-smi's JSON for the tree at `root` mounted as /sys."""
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /sys && exec ' + COMMAND, root],
        capture_output=True, text=True, timeout=120)
    # rocm-smi exits non-zero whenever one reading is N/A (the HBM temperatures here), so the
    # JSON line is what counts; an abort leaves none.
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise AssertionError(f"rocm-smi failed ({out.returncode}): {out.stdout}{out.stderr}")
    return json.loads(lines[0])


def read(root, relative):
    with open(os.path.join(root, "class/drm/card0/device", relative)) as f:
        return f.read().strip()


def hwmon(root, name):
    return read(root, "hwmon/hwmon0/" + name)


@unittest.skipIf(skip_reason(), skip_reason())
class RocmSmiReadsTheFixtures(unittest.TestCase):
    def test_rx7900(self):
        root = os.path.join(FIXTURES, "rx7900")
        card = rocm_smi(root)["card0"]
        self.assertEqual(card["GPU use (%)"], read(root, "gpu_busy_percent"))
        self.assertEqual(float(card["Average Graphics Package Power (W)"]),
                         int(hwmon(root, "power1_average")) / 1e6)
        self.assertEqual(card["VRAM Total Memory (B)"], read(root, "mem_info_vram_total"))
        self.assertEqual(card["VRAM Total Used Memory (B)"], read(root, "mem_info_vram_used"))
        for sensor, n in (("edge", 1), ("junction", 2), ("memory", 3)):
            self.assertEqual(float(card[f"Temperature (Sensor {sensor}) (C)"]),
                             int(hwmon(root, f"temp{n}_input")) / 1000, sensor)
        agree(self, card, gpulse(root))

    def test_mi300x_without_gpu_metrics(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "sys")
            shutil.copytree(os.path.join(FIXTURES, "mi300x"), root, symlinks=True)
            os.remove(os.path.join(root, "class/drm/card0/device/gpu_metrics"))
            card = rocm_smi(root)["card0"]
            self.assertEqual(card["GPU use (%)"], read(root, "gpu_busy_percent"))
            self.assertEqual(card["VRAM Total Memory (B)"], read(root, "mem_info_vram_total"))
            self.assertEqual(card["VRAM Total Used Memory (B)"],
                             read(root, "mem_info_vram_used"))
            self.assertEqual(card["Temperature (Sensor edge) (C)"], "N/A")  # none on MI300X
            self.assertEqual(float(card["Temperature (Sensor junction) (C)"]),
                             int(hwmon(root, "temp2_input")) / 1000)
            self.assertEqual(float(card["Temperature (Sensor memory) (C)"]),
                             int(hwmon(root, "temp3_input")) / 1000)
            # power1_input only: rocm-smi 5.2 reads power1_average (gpulse reads power1_input).
            self.assertEqual(card["Average Graphics Package Power (W)"], "N/A")
            self.assertTrue(os.path.exists(
                os.path.join(root, "class/drm/card0/device/hwmon/hwmon0/power1_input")))
            agree(self, card, gpulse(root), junction_is_gpu_temp=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
