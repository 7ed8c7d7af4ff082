"""AMD and Intel GPUs end to end (issue 19): the real binary reading the sysfs fixture trees of
tests/testdata/sysfs (made by make_fixtures.py for AMD, by hand for Intel), alone and next to a
simulated NVIDIA GPU on one "mixed" host (`--simulate 1xH200 --sysfs-root <AMD tree>`). Every
reading is compared with the fixture file it comes from, converted; HIP/ROCm masks are resolved
through `gpulse devices --visible` as docs/identity.md's table says."""
import json
import os
import shutil
import tempfile
import threading
import time
import unittest

from exporter_e2e import Exporter, parse_families
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, validate

SYSFS = os.path.join(SOURCE_DIR, "tests", "testdata", "sysfs")
MI300X = os.path.join(SYSFS, "mi300x")
RX7900 = os.path.join(SYSFS, "rx7900")
AMD2 = os.path.join(SYSFS, "amd-2gpu")
I915 = os.path.join(SYSFS, "intel-i915-a770")
XE = os.path.join(SYSFS, "intel-xe-b580")
MIB = 2**20


def setUpModule():
    for var in ("GPULSE_SYSFS_ROOT", "GPULSE_PROCFS_ROOT", "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR",
                "ZE_ENABLE_PCI_ID_DEVICE_ORDER"):
        os.environ.pop(var, None)


def card_dir(root, card=0):
    """The PCI device directory behind class/drm/cardN."""
    return os.path.realpath(os.path.join(root, "class", "drm", f"card{card}", "device"))


def hwmon_dir(root, card=0):
    base = os.path.join(card_dir(root, card), "hwmon")
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name, "name"), encoding="utf-8") as f:
            if f.read().strip() in ("amdgpu", "i915", "xe"):
                return os.path.join(base, name)
    raise AssertionError(f"no hwmon under {base}")


def number(path):
    with open(path, encoding="utf-8") as f:
        return int(f.read().split()[0], 0)


def temp_by_label(hwmon, label):
    for name in os.listdir(hwmon):
        if name.endswith("_label") and name.startswith("temp"):
            with open(os.path.join(hwmon, name), encoding="utf-8") as f:
                if f.read().strip() == label:
                    return number(os.path.join(hwmon, name.replace("_label", "_input"))) / 1000
    return None


def amd_expected(root, card=0):
    """What gpulse must report for an AMD fixture GPU, from its files (DCGM units)."""
    dev, hw = card_dir(root, card), hwmon_dir(root, card)
    power = "power1_average" if os.path.exists(os.path.join(hw, "power1_average")) else "power1_input"
    gpu_temp = temp_by_label(hw, "edge")
    return {
        "DCGM_FI_DEV_POWER_USAGE": number(os.path.join(hw, power)) / 1e6,
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": number(os.path.join(hw, "power1_cap")) / 1e6,
        "DCGM_FI_DEV_GPU_UTIL": number(os.path.join(dev, "gpu_busy_percent")),
        "DCGM_FI_DEV_FB_USED": number(os.path.join(dev, "mem_info_vram_used")) // MIB,
        "DCGM_FI_DEV_FB_TOTAL": number(os.path.join(dev, "mem_info_vram_total")) // MIB,
        "DCGM_FI_DEV_GPU_TEMP": gpu_temp if gpu_temp is not None else temp_by_label(hw, "junction"),
        "DCGM_FI_DEV_MEMORY_TEMP": temp_by_label(hw, "mem"),
        "DCGM_FI_DEV_SM_CLOCK": number(os.path.join(hw, "freq1_input")) // 10**6,
        "DCGM_FI_DEV_MEM_CLOCK": number(os.path.join(hw, "freq2_input")) // 10**6,
    }


def rocm_uuid(root, card=0):
    with open(os.path.join(card_dir(root, card), "unique_id"), encoding="utf-8") as f:
        return "GPU-" + f.read().strip().upper()


def product_name(root, card=0):
    with open(os.path.join(card_dir(root, card), "product_name"), encoding="utf-8") as f:
        return f.read().strip()


def gpu_samples(families, family, gpu):
    return [v for labels, v in families.get(family, []) if labels.get("gpu") == str(gpu)]


class MixedHostTest(GpulseTestCase):
    """One simulated NVIDIA H200 (PCI 18:00.0) and the MI300X fixture (PCI C1:00.0)."""

    MIXED = ("--simulate", "1xH200", "--sysfs-root", MI300X)

    def test_devices_lists_both_vendors_in_pci_bus_order(self):
        doc = json.loads(self.run_ok("devices", "--json", *self.MIXED).stdout)
        validate(doc, "devices.schema.json")
        self.assertEqual(doc["backend"], "nvml+amdgpu")
        got = [(d["index"], d["vendor"], d["backend"], d["backend_index"], d["pci_bus_id"])
               for d in doc["devices"]]
        self.assertEqual(got, [(0, "nvidia", "nvml", 0, "00000000:18:00.0"),
                               (1, "amd", "amdgpu", 0, "00000000:C1:00.0")])
        amd = doc["devices"][1]
        self.assertEqual(amd["uuid"], rocm_uuid(MI300X))
        self.assertEqual(amd["name"], product_name(MI300X))
        self.assertEqual(amd["memory_total_bytes"], number(os.path.join(card_dir(MI300X), "mem_info_vram_total")))
        self.assertEqual(amd["power_limit_watts"], number(os.path.join(hwmon_dir(MI300X), "power1_cap")) / 1e6)
        text = self.run_ok("devices", *self.MIXED).stdout
        self.assertIn(f"GPU 1: {product_name(MI300X)} [amdgpu card0]", text)

    def test_dmon_reads_both_with_the_amd_values_of_the_fixture_files(self):
        names = ["DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
                 "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
                 "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"]
        p = self.run_ok("dmon", *self.MIXED, "-e", ",".join(names), "-c", "1", "--format", "csv")
        rows = [dict(zip(p.stdout.splitlines()[0].split(","), line.split(",")))
                for line in p.stdout.strip().splitlines()[1:]]
        self.assertEqual([r["gpu"] for r in rows], ["0", "1"], p.stdout)
        self.assertEqual(rows[1]["uuid"], rocm_uuid(MI300X))
        want = amd_expected(MI300X)
        for name in names:
            self.assertAlmostEqual(float(rows[1][name]), want[name], places=2, msg=f"{name}: {p.stdout}")
            self.assertNotEqual(rows[0][name], "N/A", name)  # the NVIDIA GPU keeps its readings

    def test_exporter_exports_both_under_the_dcgm_families_with_dcgm_labels(self):
        with Exporter(*self.MIXED) as e:
            status, _, body = e.get("/metrics")
            self.assertEqual(status, 200)
            fams = parse_families(body.decode())
        want = amd_expected(MI300X)
        exported = [f for f in want if f in fams]  # dcgm-exporter's default counters
        self.assertGreaterEqual(len(exported), 6, sorted(fams))
        for family in exported:
            value = want[family]
            got = gpu_samples(fams, family, 1)
            self.assertEqual(len(got), 1, family)
            self.assertAlmostEqual(got[0], value, places=2, msg=family)
            self.assertEqual(len(gpu_samples(fams, family, 0)), 1, f"{family}: NVIDIA GPU 0 missing")
        labels = [lab for lab, _ in fams["DCGM_FI_DEV_POWER_USAGE"] if lab["gpu"] == "1"][0]
        self.assertEqual((labels["UUID"], labels["pci_bus_id"], labels["device"], labels["modelName"]),
                         (rocm_uuid(MI300X), "00000000:C1:00.0", "card0", product_name(MI300X)))
        nv = [lab for lab, _ in fams["DCGM_FI_DEV_POWER_USAGE"] if lab["gpu"] == "0"][0]
        self.assertEqual(nv["device"], "nvidia0")
        # The driver version label is NVIDIA's: the AMD GPU's series go without rather than carry it.
        self.assertIn("DCGM_FI_DRIVER_VERSION", nv)
        self.assertNotIn("DCGM_FI_DRIVER_VERSION", labels)
        # MI300X has no fan and no edge sensor: absent, never 0.
        self.assertEqual(gpu_samples(fams, "DCGM_FI_DEV_FAN_SPEED", 1), [])

    def test_record_samples_both_gpus(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "out")
        p = run("record", *self.MIXED, "-o", out, "--", "sleep", "1.5")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        validate(doc, "run.schema.json")
        self.assertEqual(doc["gpu"]["device_count"], 2)
        per = {d["device_index"]: d for d in doc["gpu"]["per_device"]}
        self.assertEqual(sorted(per), [0, 1])
        want = amd_expected(MI300X)
        amd = per[1]
        self.assertEqual(amd["uuid"], rocm_uuid(MI300X))
        self.assertAlmostEqual(amd["power_mean_milliwatts"], want["DCGM_FI_DEV_POWER_USAGE"] * 1000, delta=1)
        self.assertAlmostEqual(amd["utilization_mean_percent"], want["DCGM_FI_DEV_GPU_UTIL"], places=3)
        self.assertEqual(amd["memory_used_max_bytes"] // MIB, want["DCGM_FI_DEV_FB_USED"])
        self.assertGreater(per[0]["power_mean_milliwatts"], 0)

    def test_live_values_follow_the_files_and_a_failing_amd_gpu_leaves_nvidia_flowing(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "sys")
        shutil.copytree(MI300X, root, symlinks=True)
        dev, hw = card_dir(root), hwmon_dir(root)
        with Exporter("--simulate", "1xH200", "--sysfs-root", root) as e:
            fams = parse_families(e.get("/metrics")[2].decode())
            self.assertAlmostEqual(gpu_samples(fams, "DCGM_FI_DEV_POWER_USAGE", 1)[0],
                                   number(os.path.join(hw, "power1_input")) / 1e6, places=2)
            for name, value in (("gpu_busy_percent", "42\n"),):
                with open(os.path.join(dev, name), "w", encoding="utf-8") as f:
                    f.write(value)
            with open(os.path.join(hw, "power1_input"), "w", encoding="utf-8") as f:
                f.write("456789000\n")
            fams = self.scrape_until(e, lambda f: gpu_samples(f, "DCGM_FI_DEV_GPU_UTIL", 1) == [42.0])
            self.assertAlmostEqual(gpu_samples(fams, "DCGM_FI_DEV_POWER_USAGE", 1)[0], 456.789, places=3)
            # The AMD GPU's files turn to garbage: its readings go absent, the NVIDIA GPU's stay.
            for path in (os.path.join(hw, "power1_input"), os.path.join(dev, "gpu_busy_percent")):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("garbage\n")
            fams = self.scrape_until(e, lambda f: gpu_samples(f, "DCGM_FI_DEV_POWER_USAGE", 1) == [])
            self.assertEqual(gpu_samples(fams, "DCGM_FI_DEV_GPU_UTIL", 1), [])
            self.assertEqual(len(gpu_samples(fams, "DCGM_FI_DEV_POWER_USAGE", 0)), 1)
            self.assertEqual(len(gpu_samples(fams, "DCGM_FI_DEV_FB_USED", 1)), 1)  # other files still read

    def scrape_until(self, exporter, predicate, attempts=50):
        fams = None
        for _ in range(attempts):
            fams = parse_families(exporter.get("/metrics")[2].decode())
            if predicate(fams):
                return fams
            time.sleep(0.1)
        self.fail(f"the exposition never matched: {sorted(fams)[:5]}")

    def test_ps_lists_a_process_on_the_amd_gpu_from_its_drm_fdinfo(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        proc = os.path.join(tmp, "proc")
        pid = os.path.join(proc, "5151")
        os.makedirs(os.path.join(pid, "fd"))
        os.makedirs(os.path.join(pid, "fdinfo"))
        os.symlink("/dev/dri/renderD128", os.path.join(pid, "fd", "7"))
        files = {
            "fdinfo/7": "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:c1:00.0\n"
                        "drm-client-id:\t12\ndrm-memory-vram:\t4194304 KiB\ndrm-engine-gfx:\t123456789 ns\n",
            "comm": "train.py\n", "status": "Name:\ttrain.py\nUid:\t0\t0\t0\t0\n",
            "cgroup": "0::/user.slice/user-0.slice/session-3.scope\n", "cmdline": "python3\0train.py\0"}
        for name, text in files.items():
            with open(os.path.join(pid, name), "w", encoding="utf-8") as f:
                f.write(text)
        # The GPU works while ps looks: the busy time grows 5 ms every 10 ms (issue 40: ps took one
        # scan, so SM% was always N/A; it now takes two, 200 ms apart, as nvtop sees a change).
        stop = threading.Event()

        def busy():
            busy_ns = 123456789
            while not stop.wait(0.01):
                busy_ns += 5_000_000
                text = files["fdinfo/7"].replace("123456789 ns", f"{busy_ns} ns")
                tmp_path = os.path.join(pid, "fdinfo", ".7")
                with open(tmp_path, "w", encoding="utf-8") as f:
                    f.write(text)
                os.rename(tmp_path, os.path.join(pid, "fdinfo", "7"))

        writer = threading.Thread(target=busy)
        writer.start()
        try:
            doc = json.loads(self.run_ok("ps", "--json", *self.MIXED, "--procfs-root", proc).stdout)
        finally:
            stop.set()
            writer.join()
        validate(doc, "ps.schema.json")
        amd = [p for p in doc["processes"] if p["gpu"]["index"] == 1]
        self.assertEqual([(p["pid"], p["name"], p["used_memory_bytes"]) for p in amd],
                         [(5151, "train.py", 4194304 * 1024)])
        self.assertEqual(amd[0]["gpu"]["uuid"], rocm_uuid(MI300X))
        self.assertIsNotNone(amd[0]["sm_util"])
        self.assertGreater(amd[0]["sm_util"], 0)
        self.assertLessEqual(amd[0]["sm_util"], 100)
        self.assertTrue([p for p in doc["processes"] if p["gpu"]["index"] == 0], "the H200's processes")

    def test_a_cuda_mask_selects_among_nvidia_gpus_only(self):
        doc = json.loads(self.run_ok("devices", "--visible", "--json", *self.MIXED,
                                     env={"CUDA_VISIBLE_DEVICES": "0"}).stdout)
        validate(doc, "visible-devices.schema.json")
        self.assertEqual(doc["runtime"], "cuda")
        self.assertEqual([o["index"] for o in doc["ordinals"]], [0])
        self.assertIn("this host also has amd GPUs: --runtime hip numbers them", doc["notes"])


class AmdMaskTest(GpulseTestCase):
    """docs/identity.md's ROCm table, row by row, through `gpulse devices --visible` on the two-GPU
    AMD fixture (card0 = RX 7900 at 03:00.0, card1 = MI300X at C1:00.0)."""

    def visible(self, env, *extra, expect=0):
        p = run("devices", "--visible", "--json", "--sysfs-root", AMD2, *extra, env=env)
        self.assertEqual(p.returncode, expect, p.stderr + p.stdout)
        doc = json.loads(p.stdout)
        validate(doc, "visible-devices.schema.json")
        return doc

    def indices(self, env, *extra, expect=0):
        doc = self.visible(env, *extra, expect=expect)
        return [o["index"] for o in doc["ordinals"]], doc

    def test_hip_visible_devices_1_is_the_mi300x(self):
        doc = self.visible({"HIP_VISIBLE_DEVICES": "1"})
        self.assertEqual(doc["runtime"], "hip")
        self.assertEqual(len(doc["ordinals"]), 1)
        o = doc["ordinals"][0]
        self.assertEqual((o["index"], o["pci_bus_id"], o["uuid"]), (1, "00000000:C1:00.0", rocm_uuid(AMD2, 1)))
        text = run("devices", "--visible", "--sysfs-root", AMD2, env={"HIP_VISIBLE_DEVICES": "1"}).stdout
        self.assertIn("HIP device numbering", text)
        self.assertIn("AMD Instinct MI300X", text)

    def test_rocr_first_then_hip_counts_the_survivors(self):
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": "1,0", "HIP_VISIBLE_DEVICES": "1"})[0], [0])
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": "1"})[0], [1])

    def test_rocr_integers_as_strtol_reads_them_and_uuid_prefixes(self):
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": "0x1"})[0], [1])
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": rocm_uuid(AMD2, 1)[:8].lower()})[0], [1])

    def test_rocr_invalid_or_duplicate_token_ends_the_list_and_empty_hides_all(self):
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": "1,7,0"})[0], [1])
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": "1,1,0"})[0], [1])
        self.assertEqual(self.indices({"ROCR_VISIBLE_DEVICES": ""})[0], [])

    def test_hip_falls_back_to_cuda_visible_devices_when_unset_or_empty(self):
        self.assertEqual(self.indices({"CUDA_VISIBLE_DEVICES": "1"})[0], [1])
        self.assertEqual(self.indices({"HIP_VISIBLE_DEVICES": "", "CUDA_VISIBLE_DEVICES": "1"})[0], [1])

    def test_hip_uuid_substring_duplicates_skipped_invalid_ends(self):
        uuid = rocm_uuid(AMD2, 1)
        self.assertEqual(self.indices({"HIP_VISIBLE_DEVICES": uuid})[0], [1])
        self.assertEqual(self.indices({"HIP_VISIBLE_DEVICES": "1,1,0"})[0], [1, 0])
        self.assertEqual(self.indices({"HIP_VISIBLE_DEVICES": "1,9,0"})[0], [1])

    def test_opencl_uses_gpu_device_ordinal_and_hip_ignores_it(self):
        self.assertEqual(self.indices({"GPU_DEVICE_ORDINAL": "1"}, "--runtime", "opencl")[0], [1])
        idx, doc = self.indices({"GPU_DEVICE_ORDINAL": "1"})
        self.assertEqual(idx, [0, 1])
        self.assertEqual(doc["runtime"], "hip")

    def test_refusals(self):
        for env in ({"ROCR_VISIBLE_DEVICES": "1abc"}, {"HIP_VISIBLE_DEVICES": " 1"},
                    {"HIP_VISIBLE_DEVICES": "0x1"}, {"HIP_VISIBLE_DEVICES": "GPU-"}):
            with self.subTest(env=env):
                doc = self.visible(env, expect=1)
                self.assertIsNotNone(doc["refusal"], doc)
                self.assertTrue(doc["refusal"]["reason"])

    def test_record_keeps_the_gpus_the_hip_mask_selects(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "out")
        p = run("record", "--sysfs-root", AMD2, "-o", out, "--", "sleep", "1", env={"HIP_VISIBLE_DEVICES": "1"})
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual([d["device_index"] for d in doc["gpu"]["per_device"]], [1])
        self.assertEqual(doc["run"]["device_selection"], "visible: physical GPU 1")


def intel_energy_file(hw):
    """The hwmon energy file gpulse reads: the channel labelled "card" (xe), else energy1_input."""
    for name in sorted(os.listdir(hw)):
        if name.startswith("energy") and name.endswith("_label"):
            with open(os.path.join(hw, name), encoding="utf-8") as f:
                if f.read().strip() == "card":
                    return os.path.join(hw, name.replace("_label", "_input"))
    return os.path.join(hw, "energy1_input")


def intel_clock_file(root, card):
    dev = card_dir(root, card)
    xe = os.path.join(dev, "tile0", "gt0", "freq0", "act_freq")
    return xe if os.path.exists(xe) else os.path.join(root, "class", "drm", f"card{card}", "gt_act_freq_mhz")


class IntelTest(GpulseTestCase):
    FIELDS = ["DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_SM_CLOCK",
              "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED",
              "DCGM_FI_DEV_MEM_CLOCK"]

    def dmon_row(self, root):
        p = self.run_ok("dmon", "--sysfs-root", root, "-c", "1", "-e", ",".join(self.FIELDS), "--format", "csv")
        lines = p.stdout.strip().splitlines()
        self.assertEqual(len(lines), 2, p.stdout)
        return dict(zip(lines[0].split(","), lines[1].split(",")))

    def test_devices_and_readings_on_each_intel_fixture(self):
        for root, backend in ((I915, "i915"), (XE, "xe")):
            with self.subTest(backend=backend):
                doc = json.loads(self.run_ok("devices", "--json", "--sysfs-root", root).stdout)
                validate(doc, "devices.schema.json")
                self.assertEqual([(d["vendor"], d["backend"], d["uuid"]) for d in doc["devices"]],
                                 [("intel", backend, "")])
                # Numbered from 0 whatever its DRM card (the xe fixture's card0 is a BMC display;
                # issue 40: it was "GPU 1" and -i 0 failed); the card is its backend_index.
                self.assertEqual(doc["devices"][0]["index"], 0)
                card = doc["devices"][0]["backend_index"]
                self.assertEqual(card, 1 if backend == "xe" else 0)
                hw = hwmon_dir(root, card)
                row = self.dmon_row(root)
                self.assertEqual(row["gpu"], "0")
                self.assertEqual(float(row["DCGM_FI_DEV_ENFORCED_POWER_LIMIT"]),
                                 number(os.path.join(hw, "power1_max")) / 1e6)
                self.assertEqual(int(row["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]),
                                 number(intel_energy_file(hw)) // 1000)
                self.assertEqual(int(row["DCGM_FI_DEV_SM_CLOCK"]), number(intel_clock_file(root, card)))
                # Not exposed by either driver: absent, never 0.
                self.assertEqual(row["DCGM_FI_DEV_FB_USED"], "N/A")
                self.assertEqual(row["DCGM_FI_DEV_MEM_CLOCK"], "N/A")
                if backend == "xe":
                    self.assertEqual(float(row["DCGM_FI_DEV_GPU_TEMP"]), temp_by_label(hw, "pkg"))
                    self.assertEqual(float(row["DCGM_FI_DEV_MEMORY_TEMP"]), temp_by_label(hw, "vram"))
                    vram = number(os.path.join(card_dir(root, card), "tile0", "physical_vram_size_bytes"))
                    self.assertEqual(int(row["DCGM_FI_DEV_FB_TOTAL"]), vram // MIB)
                else:  # i915's hwmon has no temperature and no memory size
                    self.assertEqual(row["DCGM_FI_DEV_GPU_TEMP"], "N/A")
                    self.assertEqual(row["DCGM_FI_DEV_FB_TOTAL"], "N/A")

    def test_record_on_the_xe_fixture(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "out")
        p = run("record", "--sysfs-root", XE, "-o", out, "--", "sleep", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        validate(doc, "run.schema.json")
        (dev,) = doc["gpu"]["per_device"]
        hw = hwmon_dir(XE, 1)
        self.assertEqual((dev["device_index"], dev["uuid"]), (0, ""))  # GPU 0 on DRM card1
        self.assertEqual(dev["memory_total_bytes"],
                         number(os.path.join(card_dir(XE, 1), "tile0", "physical_vram_size_bytes")))
        self.assertEqual(dev["temperature_max_celsius"], temp_by_label(hw, "pkg"))
        self.assertIsNone(dev["memory_used_max_bytes"])  # xe does not say: absent, never 0
        # The fixture's energy counter does not move: 0 W and 0 mJ are what its files say.
        self.assertEqual((dev["power_mean_milliwatts"], dev["energy_counter_millijoules"]), (0, 0))

    def test_power_follows_the_energy_counter(self):
        tmp = tempfile.mkdtemp(prefix="gpulse-vendors-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "sys")
        shutil.copytree(XE, root, symlinks=True)
        energy = intel_energy_file(hwmon_dir(root, 1))
        with Exporter("--sysfs-root", root) as e:
            first = parse_families(e.get("/metrics")[2].decode())
            self.assertEqual(gpu_samples(first, "DCGM_FI_DEV_POWER_USAGE", 0), [])  # no difference yet
            start = number(energy)
            for step in range(1, 6):
                time.sleep(0.2)
                with open(energy, "w", encoding="utf-8") as f:
                    f.write(f"{start + step * 50_000_000}\n")  # 50 J per step
                fams = parse_families(e.get("/metrics")[2].decode())
            power = gpu_samples(fams, "DCGM_FI_DEV_POWER_USAGE", 0)
            self.assertEqual(len(power), 1)
            self.assertGreater(power[0], 0)
            self.assertEqual(gpu_samples(fams, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0),
                             [(start + 5 * 50_000_000) // 1000])

    def test_a_level_zero_mask_on_one_gpu(self):
        p = run("devices", "--visible", "--json", "--sysfs-root", XE, env={"ZE_AFFINITY_MASK": "0"})
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        validate(doc, "visible-devices.schema.json")
        self.assertEqual(doc["runtime"], "level_zero")
        self.assertEqual(len(doc["ordinals"]), 1)
        p = run("devices", "--visible", "--json", "--sysfs-root", XE, env={"ZE_AFFINITY_MASK": "0.1"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("sub-device", json.loads(p.stdout)["refusal"]["reason"])


if __name__ == "__main__":
    unittest.main()
