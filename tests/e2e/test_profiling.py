"""The profiling fields (DCGM_FI_PROF_* through NVML GPM), violation time, fan speed, PCIe and NVLink
throughput and the XID labels, end to end through the simulator's NVML (issue 15). Each failure mode
has its own test: a GPU without GPM, a GPM call that starts failing, values out of range, and
profiling stuck at 0 while the GPU is busy. Run with Debian's /usr/bin/python3."""
import json
import os
import tempfile
import time
import unittest

from exporter_e2e import Exporter, golden_exposition, parse_families
from gpulse_e2e import GpulseTestCase, validate

FROZEN = {"GPULSE_SIM_CLOCK": "2"}  # simulator seconds: every GPM sample pair sees the same load

# One busy H100 at a constant load (util 90), for the failure-mode tests; each adds its faults.
ONE_H100 = """
name: one-h100
devices:
  - {name: NVIDIA H100 80GB HBM3, memory_total_mib: 81559, power_limit_w: 700, wobble: false,
     load: [{t: 0, util: 90, mem_util: 50, mem_used_mib: 1000, power_w: 500}]}
"""


def series(families, name, **labels):
    """The values of family `name` whose labels include `labels`."""
    return [v for (l, v) in families.get(name, []) if all(l.get(k) == str(x) for k, x in labels.items())]


def write_counters(directory, *names):
    path = os.path.join(directory, "counters.csv")
    with open(path, "w") as f:
        for n in names:
            f.write(f"{n}, gauge, {n}\n")
    return path


class DmonProfiling(GpulseTestCase):
    def test_dmon_prints_the_simulated_activity(self):
        p = self.run_ok("dmon", "--simulate", "8xH100", "-e", "1001,1002,1004,1005,1009", "-c", "1",
                        env=FROZEN)
        lines = [l for l in p.stdout.splitlines() if l.startswith("GPU ")]
        self.assertEqual(len(lines), 8, p.stdout)
        header = [l for l in p.stdout.splitlines() if l.startswith("#Entity")][0]
        for short in ("GRACT", "SMACT", "TENSO", "DRAMA", "PCITX"):
            self.assertIn(short, header)
        for line in lines:
            cols = line.split()
            gract, smact, tenso, drama, pcitx = cols[-5:]
            for ratio in (gract, smact, tenso, drama):
                self.assertTrue(0.0 <= float(ratio) <= 1.0, line)
            self.assertGreater(float(gract), 0.0, line)  # 8xH100 is busy at t = 2
            self.assertGreater(int(pcitx), 0, line)

    def test_fields_lists_the_profiling_fields_with_dcgm_names(self):
        p = self.run_ok("fields", "--format", "json")
        rows = {r["id"]: r for r in json.loads(p.stdout)}
        self.assertEqual(rows[1001]["name"], "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        self.assertEqual(rows[1001]["short_name"], "GRACT")
        self.assertEqual(rows[1004]["short_name"], "TENSO")
        self.assertEqual(rows[1040]["name"], "DCGM_FI_PROF_NVLINK_L0_TX_BYTES")
        for fid in (191, 200, 201, 240, 245, 409, 449, 1013, 1016, 1033, 1075):
            self.assertIn(fid, rows)

    def test_a_gpu_without_gpm_has_the_fields_unsupported_with_the_reason(self):
        p = self.run_ok("devices", "--simulate", "profiling-faults", "--json")
        report = json.loads(p.stdout)
        validate(report, "devices.schema.json")
        devices = report["devices"]
        self.assertTrue(devices[0]["profiling"])
        self.assertIsNone(devices[0]["profiling_unsupported_reason"])
        self.assertFalse(devices[1]["profiling"])
        self.assertIn("GPM", devices[1]["profiling_unsupported_reason"])
        p = self.run_ok("devices", "--simulate", "4xA40-tp2")
        self.assertIn("profiling fields: unsupported", p.stdout)


class ExporterProfiling(unittest.TestCase):
    def test_default_output_has_dcgm_exporters_five_profiling_families(self):
        families = parse_families(golden_exposition("8xH100"))
        for name in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
                     "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"):
            self.assertIn(name, families)
        self.assertEqual(len(families["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]), 8)
        for labels, value in families["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]:
            self.assertTrue(0.0 <= value <= 1.0, (labels, value))

    def test_mig_instances_have_their_own_profiling_series(self):
        families = parse_families(golden_exposition("mig-h100"))
        by_instance = {l["GPU_I_ID"]: v for (l, v) in families["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]}
        # The instances' own activity (mig-h100: util 80, 40 and 5), not copies of the parent's.
        self.assertEqual(by_instance, {"2": 0.8, "3": 0.4, "9": 0.05})
        # PCIe is a GPU-level reading: one series, the parent's.
        self.assertEqual(len(families["DCGM_FI_PROF_PCIE_TX_BYTES"]), 1)
        self.assertNotIn("GPU_I_ID", families["DCGM_FI_PROF_PCIE_TX_BYTES"][0][0])

    def test_xid_gauge_has_err_code_and_err_msg(self):
        # faults: XID 94 on GPU 0 at t = 1.0 (the real clock runs).
        with Exporter("--simulate", "faults", "--min-refresh-ms", "150") as e:
            families = self.scrape_until(e, lambda f: "DCGM_FI_DEV_XID_ERRORS" in f, "an XID")
        rows = families["DCGM_FI_DEV_XID_ERRORS"]
        codes = {l["err_code"]: l["err_msg"] for (l, v) in rows}
        self.assertEqual(codes.get("94"), "Contained ECC error", rows)
        for labels, value in rows:
            self.assertEqual(int(labels["err_code"]), int(value))

    def test_violation_timer_fan_and_throughput(self):
        with tempfile.TemporaryDirectory() as d:
            counters = write_counters(d, "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION",
                                      "DCGM_FI_DEV_FAN_SPEED", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
                                      "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
            families = parse_families(golden_exposition("profiling-faults", "-f", counters))
        # profiling-faults: device 0 is power capped from t = 0.5 to 1.5; the clock reads 5.
        self.assertEqual(series(families, "DCGM_FI_DEV_POWER_VIOLATION", gpu=0), [1e9])
        self.assertEqual(series(families, "DCGM_FI_DEV_POWER_VIOLATION", gpu=1), [0])
        self.assertEqual(series(families, "DCGM_FI_DEV_THERMAL_VIOLATION", gpu=0), [0])
        # Only device 0 has a fan.
        self.assertEqual(len(families["DCGM_FI_DEV_FAN_SPEED"]), 1)
        self.assertGreater(series(families, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", gpu=0)[0], 0)
        self.assertEqual(len(families["DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"]), 4)

    def scrape_until(self, exporter, predicate, what):
        deadline = time.monotonic() + 30
        families = {}
        while time.monotonic() < deadline:
            status, _, body = exporter.get("/metrics")
            self.assertEqual(status, 200)
            families = parse_families(body.decode())
            if predicate(families):
                return families
            time.sleep(0.2)
        self.fail(f"never saw {what}; last scrape: {sorted(families)}")

    def test_nvlink_bandwidth_is_a_rate_from_the_second_read_on(self):
        # A rate needs two counter readings: none at the first read, one series per GPU after it.
        families = parse_families(golden_exposition("8xH100"))
        self.assertNotIn("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", families)
        with Exporter("--simulate", "8xH100", "--min-refresh-ms", "150") as e:
            families = self.scrape_until(e, lambda f: len(f.get("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", [])) == 8,
                                         "eight NVLink bandwidth series")
        for labels, value in families["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]:
            self.assertGreater(value, 0, labels)  # 8xH100 moves data over NVLink in every phase

    def scenario(self, directory, faults):
        path = os.path.join(directory, "s.yaml")
        with open(path, "w") as f:
            f.write(ONE_H100 + faults)
        return path

    def test_failing_gpm_is_absent_and_counted_never_zero(self):
        # nvmlGpmMetricsGet fails from t = 2 s on (the real clock runs): the series is there before,
        # gone after, counted, and never 0 in between.
        with tempfile.TemporaryDirectory() as d:
            path = self.scenario(d, "faults:\n  - {at: 2.0, device: 0, kind: gpm, mode: fail}\n")
            seen = []

            def record(f):
                seen.extend(series(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=0))
                return f
            with Exporter("--simulate", path, "--min-refresh-ms", "150") as e:
                self.scrape_until(e, lambda f: series(record(f), "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=0),
                                  "a profiling value before the failure")
                families = self.scrape_until(
                    e, lambda f: not series(record(f), "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=0) and
                    f.get("gpulse_profiling_failed_calls", [({}, 0)])[0][1] > 0, "the series gone and counted")
                self.assertNotEqual(e.get("/health")[0], 200, "a failing read fails /health")
        self.assertTrue(seen)
        self.assertNotIn(0.0, seen, "a failed read is never exported as 0")
        self.assertEqual(set(seen), {0.9})
        self.assertEqual(series(families, "gpulse_profiling_stuck", gpu=0), [0])

    def test_a_gpu_without_gpm_has_no_profiling_series(self):
        families = parse_families(golden_exposition("profiling-faults"))
        self.assertEqual(series(families, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=1), [])
        self.assertEqual(series(families, "gpulse_profiling_stuck", gpu=1), [], "no GPM: no verdict")
        self.assertEqual(len(series(families, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=0)), 1)

    def test_stuck_at_zero_is_reported_by_a_self_metric_and_health(self):
        # GPM answers 0 for everything while utilization is 90 %: after 3 such reads, stuck.
        with tempfile.TemporaryDirectory() as d:
            path = self.scenario(d, "faults:\n  - {at: 0, device: 0, kind: gpm, mode: zero}\n")
            with Exporter("--simulate", path, "--min-refresh-ms", "150") as e:
                self.scrape_until(e, lambda f: series(f, "gpulse_profiling_stuck", gpu=0) == [1], "stuck = 1")
                status, _, body = e.get("/health")
        self.assertNotEqual(status, 200)
        self.assertIn("stuck", body.decode())

    def test_values_out_of_range_are_dropped_and_counted(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.scenario(d, "faults:\n  - {at: 0, device: 0, kind: gpm, mode: out_of_range}\n")
            families = parse_families(golden_exposition(path))
        self.assertNotIn("DCGM_FI_PROF_GR_ENGINE_ACTIVE", families)
        self.assertNotIn("DCGM_FI_PROF_PCIE_TX_BYTES", families)
        self.assertGreater(families["gpulse_profiling_rejected_values"][0][1], 0)


if __name__ == "__main__":
    unittest.main()
