"""`gpulse dmon` end to end against every built-in scenario."""
import csv
import io
import json
import signal
import subprocess
import tempfile
import unittest

from gpulse_e2e import NO_DRIVER_NVML, BUILTIN_SCENARIOS, GPULSE, GpulseTestCase, run, validate

UTIL = "DCGM_FI_DEV_GPU_UTIL"


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


class DmonTest(GpulseTestCase):
    def test_4xa40_tp2_csv_has_20_rows_busy_and_idle(self):
        p = self.run_ok("dmon", "--simulate", "4xA40-tp2", "-c", "5", "-d", "200", "--format", "csv")
        lines = p.stdout.strip().splitlines()
        self.assertEqual(len(lines), 21, "one header and 4 devices x 5 ticks")
        rows = csv_rows(p.stdout)
        self.assertEqual(len(rows), 20)
        self.assertEqual([r["gpu"] for r in rows[:4]], ["0", "1", "2", "3"])
        for r in rows:
            util = int(r[UTIL])
            power = float(r["DCGM_FI_DEV_POWER_USAGE"])
            if r["gpu"] in ("0", "1"):
                self.assertGreaterEqual(util, 50, r)
                self.assertGreater(power, 100, r)
            else:
                self.assertLessEqual(util, 5, r)
                self.assertLess(power, 60, r)
        for tick in range(5):
            self.assertEqual([r["gpu"] for r in rows[4 * tick:4 * tick + 4]], ["0", "1", "2", "3"])
        stamps = [float(r["timestamp_unix"]) for r in rows]
        self.assertEqual(stamps, sorted(stamps), "rows come out in reading order")

    def test_a40_has_no_memory_temperature_and_says_na(self):
        p = self.run_ok("dmon", "--simulate", "4xA40-tp2", "-c", "1", "-d", "10", "--format", "csv")
        for r in csv_rows(p.stdout):
            self.assertEqual(r["DCGM_FI_DEV_MEMORY_TEMP"], "N/A", "GDDR6 has no memory sensor")

    def test_every_scenario_json_rows_validate(self):
        for scenario in BUILTIN_SCENARIOS:
            with self.subTest(scenario=scenario):
                p = self.run_ok("dmon", "--simulate", scenario, "-c", "2", "-d", "20", "--format", "json",
                                "-e", "100,101,112,140,150,155,156,157,164,190,202,203,204,206,207,230,"
                                      "250,251,252,253,310,311,312,313,390,391,392,393,394,395")
                records = [json.loads(line) for line in p.stdout.strip().splitlines()]
                self.assertGreater(len(records), 0)
                for rec in records:
                    validate(rec, "dmon-record.schema.json")
                    self.assertTrue(rec["simulated"])
                    self.assertEqual(len(rec["fields"]), 30)

    def test_table_format_prints_header_and_na(self):
        p = self.run_ok("dmon", "--simulate", "4xA40-tp2", "-c", "1", "-d", "10", "-e", "POWER,MMTMP")
        lines = p.stdout.splitlines()
        self.assertTrue(any(l.startswith("#Entity") and "POWER" in l and "MMTMP" in l for l in lines))
        gpu_lines = [l for l in lines if l.startswith("GPU ")]
        self.assertEqual(len(gpu_lines), 4)
        self.assertTrue(all(l.split()[-1] == "N/A" for l in gpu_lines))

    def test_faults_show_na_or_lost_never_zero_and_never_crash(self):
        p = self.run_ok("dmon", "--simulate", "faults", "-c", "5", "-d", "500", "--format", "json",
                        "-e", "155,157,150,140,203,206,252,230,310,112")
        records = [json.loads(line) for line in p.stdout.strip().splitlines()]
        by_gpu = {}
        for rec in records:
            validate(rec, "dmon-record.schema.json")
            by_gpu.setdefault(rec["gpu"], []).append(rec)
        states = {g: [r["state"] for r in recs] for g, recs in by_gpu.items()}
        lost = [g for g, s in states.items() if "lost" in s]
        self.assertEqual(len(lost), 1, states)
        lost_recs = by_gpu[lost[0]]
        first_lost = [r["state"] for r in lost_recs].index("lost")
        self.assertGreater(first_lost, 0, "the GPU is readable before it is lost")
        for r in lost_recs[first_lost:]:
            self.assertEqual(r["state"], "lost", "a lost GPU stays lost")
            # Nothing is read any more; only the XID it raised as it fell off stays (issue 40: the
            # lost row showed XIDER N/A), and the row says when the loss was seen.
            self.assertTrue(all(v is None for k, v in r["fields"].items() if k != "DCGM_FI_DEV_XID_ERRORS"), r)
            self.assertEqual(r["fields"]["DCGM_FI_DEV_XID_ERRORS"], 79, r)
            self.assertLessEqual(r["lost_unix"], r["timestamp_unix"])
        nulls = [(r["gpu"], k) for r in records if r["state"] == "ok" for k, v in r["fields"].items() if v is None]
        self.assertTrue(nulls, "some fields are unsupported in the faults scenario")
        xids = [r["fields"]["DCGM_FI_DEV_XID_ERRORS"] for r in records if r["fields"]["DCGM_FI_DEV_XID_ERRORS"]]
        self.assertTrue(xids, "an XID was injected")
        self.assertIn("skipped", p.stderr)

    def test_clock_power_limit_and_pcie_link_fields(self):
        # Issue 46: fields 110-115, 160-163 and 235-238. 8xH100 is H100 SXM: 1980/2619 MHz, video
        # 1755 MHz, a 700 W limit settable from 200 to 700 W, PCIe gen 5 x16.
        p = self.run_ok("dmon", "--simulate", "8xH100", "-e", "110,113,160,161,162,163,235,236,237,238",
                        "-c", "1")
        lines = p.stdout.splitlines()
        header = [l for l in lines if l.startswith("#Entity")][0].split()
        self.assertEqual(header[1:], ["SACLK", "SMMAX", "PMLMT", "PMMIN", "PMMAX", "PMDEF",
                                      "PCIMG", "PCIMW", "PCILG", "PCILW"], "dcgmi dmon's tags")
        gpu_lines = [l for l in lines if l.startswith("GPU ")]
        self.assertEqual(len(gpu_lines), 8, p.stdout)
        for line in gpu_lines:
            self.assertEqual([float(v) for v in line.split()[2:]],
                             [1980, 1980, 700, 200, 700, 700, 5, 16, 5, 16], line)

        names = {110: "DCGM_FI_DEV_APP_SM_CLOCK", 111: "DCGM_FI_DEV_APP_MEM_CLOCK",
                 113: "DCGM_FI_DEV_MAX_SM_CLOCK", 114: "DCGM_FI_DEV_MAX_MEM_CLOCK",
                 115: "DCGM_FI_DEV_MAX_VIDEO_CLOCK", 160: "DCGM_FI_DEV_POWER_MGMT_LIMIT",
                 161: "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", 162: "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX",
                 163: "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", 235: "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
                 236: "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 237: "DCGM_FI_DEV_PCIE_LINK_GEN",
                 238: "DCGM_FI_DEV_PCIE_LINK_WIDTH"}
        every = ",".join(str(i) for i in names)
        p = self.run_ok("dmon", "--simulate", "mig-a100", "-e", every, "-c", "1", "--format", "json")
        records = [json.loads(line) for line in p.stdout.strip().splitlines()]
        a100 = {names[i]: v for i, v in zip(names, [1410, 1215, 1410, 1215, 1290, 400, 100, 400, 400,
                                                     4, 16, 4, 16])}
        for rec in records:
            validate(rec, "dmon-record.schema.json")
            if rec.get("gpu_instance_id") is None:
                self.assertEqual(rec["fields"], a100, rec)
            else:  # GPU-level readings: never copied to the MIG instances
                self.assertEqual(set(rec["fields"].values()), {None}, rec)

        # sensorless' GPU 3: the hypervisor hides the power management limit, its range and the
        # PCIe link (N/A, never 0); its clocks still answer. GPU 0 (an L40S) has every reading.
        p = self.run_ok("dmon", "--simulate", "sensorless", "-e", every, "-c", "1", "--format", "csv")
        rows = {r["gpu"]: r for r in csv_rows(p.stdout)}
        hidden = [names[i] for i in (160, 161, 162, 163, 235, 236, 237, 238)]
        for name in names.values():
            self.assertNotEqual(rows["0"][name], "N/A", name)
            self.assertEqual(rows["3"][name] == "N/A", name in hidden, (name, rows["3"][name]))
        self.assertEqual(float(rows["0"]["DCGM_FI_DEV_POWER_MGMT_LIMIT"]), 350)
        self.assertEqual(int(rows["0"]["DCGM_FI_DEV_PCIE_LINK_GEN"]), 4)
        p = self.run_ok("dmon", "--simulate", "sensorless", "-i", "3", "-e", "PMLMT,PCILG,SMMAX", "-c", "1")
        gpu_lines = [l for l in p.stdout.splitlines() if l.startswith("GPU ")]
        self.assertEqual(len(gpu_lines), 1, p.stdout)
        self.assertEqual(gpu_lines[0].split()[2:], ["N/A", "N/A", "2520"])

    def test_unknown_field_is_exit_2_naming_it(self):
        p = run("dmon", "--simulate", "1xH200", "-c", "1", "-e", "155,DCGM_FI_DEV_BOGUS")
        self.assertEqual(p.returncode, 2)
        self.assertIn("DCGM_FI_DEV_BOGUS", p.stderr)
        self.assertEqual(p.stdout, "", "nothing is sampled after a usage error")

    def test_device_selection(self):
        p = self.run_ok("dmon", "--simulate", "4xA40-tp2", "-c", "2", "-d", "10", "-i", "2", "--format", "csv")
        self.assertEqual({r["gpu"] for r in csv_rows(p.stdout)}, {"2"})
        p = run("dmon", "--simulate", "4xA40-tp2", "-c", "1", "-i", "7")
        self.assertEqual(p.returncode, 2)
        self.assertIn('"7"', p.stderr)

    def test_bad_flags_are_usage_errors(self):
        for args in (["-d", "0"], ["-c", "-1"], ["--format", "xml"], ["--bogus"]):
            with self.subTest(args=args):
                p = run("dmon", "--simulate", "1xH200", *args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)

    def test_procfs_root_is_taken_and_checked(self):
        # Issue 40: dmon (and record) refused the --procfs-root that docs/vendors.md documents.
        with tempfile.TemporaryDirectory() as d:
            p = run("dmon", "--simulate", "1xH200", "--procfs-root", d, "-c", "1", "-e", "POWER")
            self.assertEqual(p.returncode, 0, p.stderr)
        p = run("dmon", "--simulate", "1xH200", "--procfs-root", "/nonexistent/procfs", "-c", "1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--procfs-root", p.stderr)
        self.assertIn("/nonexistent/procfs", p.stderr)

    def test_no_driver_is_a_failure_with_reason(self):
        p = run("dmon", "--nvml-lib", NO_DRIVER_NVML, "-c", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("NVIDIA driver not loaded", p.stderr)

    def test_sigint_ends_cleanly(self):
        proc = subprocess.Popen([GPULSE, "dmon", "--simulate", "1xH200", "-d", "100", "--format", "csv"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            header = proc.stdout.readline()
            first = proc.stdout.readline()
            self.assertTrue(header.startswith("timestamp_unix,"))
            self.assertTrue(first.split(",")[1] == "0")
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 0, err)
        for line in rest.strip().splitlines():
            self.assertEqual(len(line.split(",")), len(header.split(",")), "no torn line at exit")


class DmonTimestampsTest(GpulseTestCase):
    """-o D|T|DT (issue 42): nvidia-smi dmon's date and time columns before each table row."""

    def test_each_row_leads_with_its_local_date_and_time(self):
        import re
        import time
        before = time.time()
        out = self.run_ok("dmon", "--simulate", "4xA40-tp2", "-c", "2", "-d", "10", "-e", "POWER", "-o", "DT").stdout
        after = time.time()
        lines = out.splitlines()
        self.assertRegex(lines[1], r"^#Date      Time      Entity\s+POWER$")
        self.assertRegex(lines[2], r"^ YYYYMMDD  HH:MM:SS  ID\s+W$")
        rows = [l for l in lines[3:] if l.strip()]
        self.assertEqual(len(rows), 8)
        allowed = {time.strftime("%Y%m%d %H:%M:%S", time.localtime(t)) for t in range(int(before), int(after) + 2)}
        for row in rows:
            m = re.match(r"^ (\d{8})  (\d\d:\d\d:\d\d)  GPU \d", row)
            self.assertIsNotNone(m, row)
            self.assertIn(m.group(1) + " " + m.group(2), allowed)

    def test_time_alone_and_a_bad_value(self):
        out = self.run_ok("dmon", "--simulate", "1xH200", "-c", "1", "-e", "POWER", "-o", "T").stdout
        self.assertRegex(out.splitlines()[1], r"^#Time      Entity")
        p = run("dmon", "--simulate", "1xH200", "-c", "1", "-o", "X")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--timestamps", p.stderr)
        plain = self.run_ok("dmon", "--simulate", "1xH200", "-c", "1", "-e", "POWER").stdout
        self.assertRegex(plain.splitlines()[1], r"^#Entity")


class FieldsCommandTest(GpulseTestCase):
    def test_docs_metrics_md_is_the_generated_catalogue(self):
        import os
        from gpulse_e2e import SOURCE_DIR
        p = self.run_ok("fields", "--format", "markdown")
        with open(os.path.join(SOURCE_DIR, "docs", "metrics.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), p.stdout, "regenerate docs/metrics.md with `gpulse fields --format markdown`")

    def test_json_lists_power_usage(self):
        p = self.run_ok("fields", "--format", "json")
        fields = json.loads(p.stdout)
        self.assertIn({"id": 155, "name": "DCGM_FI_DEV_POWER_USAGE"},
                      [{"id": f["id"], "name": f["name"]} for f in fields])


if __name__ == "__main__":
    unittest.main()
