"""Upstream compatibility of power packages, checked both ways.

gpulse → upstream: real `gpulse collect` runs against real `gpulse exporter --simulate` processes
on loopback (one of them behind tests/collect/late_server.py, which answers late exactly once)
write packages that tests/collect/upstream_v1.py, an independent statement of the upstream V1
validator's documented rules, must accept; packages gpulse rejects it must reject too, for the same
disk-derived reasons. upstream → gpulse: packages laid out by tests/collect/upstream_writer.py, the
upstream's documented writer behaviour, must get the upstream rules' verdict from `gpulse
validate-power`. Every package built here gets the same verdict from both. Run with Debian's
/usr/bin/python3."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from gpulse_e2e import GPULSE, SOURCE_DIR, validate  # noqa: E402
from exporter_e2e import Exporter  # noqa: E402
import upstream_v1  # noqa: E402
import upstream_writer  # noqa: E402

# gpulse's findings beyond the upstream's V1 enum: never in the upstream's `reason_codes`.
GPULSE_ONLY = {"sample_loss_exceeded", "sample_schedule_overrun", "clock_sync_unverified"}
# Failures that mean the two disagree about the evidence, not about the package.
DISAGREEMENT = ("does not match", "reason_codes mismatch", "unknown v1")


def is_disagreement(failure):
    return any(d in failure for d in DISAGREEMENT) or failure.startswith("publication_valid is ")


# --- helpers (the style of tests/collect/test_collect.py) ---------------------------------------

def config_text(endpoints, workers, concurrencies=(4, 8), required=True, worker_process="0"):
    """A collect config: 200 ms cadence, clock-sync check on (a fake timedatectl vouches)."""
    lines = ["job_id: compat-job", "run_name: upstream-compat", "telemetry:", "  enabled: true",
             "  collect_interval_ms: 200", "  storage_subdir: power", f"  required: {str(required).lower()}",
             "  startup_timeout_seconds: 15", "  request_timeout_seconds: 1", "  dcgm_exporter:",
             "    container_image: gpulse", "    port: 9400", '    command: "gpulse exporter -a :{port}"',
             "endpoints:"]
    lines += [f"  - {{hostname: {h}, address: 127.0.0.1, port: {port}, path: /metrics}}" for h, port in endpoints]
    lines.append("workers:")
    lines += [f"  - {{hostname: {h}, gpus: {list(gpus)}, worker_role: {role}, worker_index: 0, "
              f"worker_process: {worker_process}, het_group: {het}}}" for h, gpus, role, het in workers]
    lines += ["benchmark:", "  type: sa-bench", f"  concurrencies: {list(concurrencies)}"]
    return "\n".join(lines) + "\n"


def window_cmd(concurrency, body="sleep 2", status=0):
    """`gpulse window run` around BODY, which then writes the result file (and exits STATUS)."""
    result = f"$GPULSE_RESULT_ROOT/results/sa-bench-c{concurrency}.json"
    return (f"{GPULSE} window run --type sa-bench --concurrency {concurrency} --result {result} -- "
            f"sh -c '{body}; echo \"{{\\\"concurrency\\\": {concurrency}}}\" > {result}; exit {status}'")


def two_gpu_scenario(directory, name):
    """4xA40-tp2 cut to its two busy GPUs, under NAME (the simulator derives UUIDs from it)."""
    with open(os.path.join(SOURCE_DIR, "sim", "scenarios", "4xA40-tp2.yaml"), encoding="utf-8") as f:
        text = f.read()
    cut = text.index("  # Idle.\n")
    text = text[:cut].replace("name: 4xA40-tp2", f"name: {name}", 1)
    path = os.path.join(directory, name + ".yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def gpulse_validate(power_dir, result_root):
    """(exit code, the --json report) of gpulse validate-power."""
    p = subprocess.run([GPULSE, "validate-power", "--power-dir", power_dir, "--result-root", result_root, "--json"],
                       capture_output=True, text=True, timeout=60)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"failures": [p.stdout + p.stderr], "recomputed_reason_codes": []}


def scoped(failures):
    """Failure lines without gpulse's trailing detail (`<reason> (scope): detail` → `<reason> (scope)`)."""
    return {f.split("): ", 1)[0] + ")" if "): " in f else f for f in failures}


def copy_package(src_logs, dst_logs):
    shutil.copytree(src_logs, dst_logs, symlinks=True)
    return os.path.join(dst_logs, "power"), dst_logs


class CompatTestCase(unittest.TestCase):
    def assert_same_verdict(self, power_dir, result_root, label=""):
        """The upstream rules and gpulse validate-power agree on pass/fail; returns both reports."""
        oracle = upstream_v1.audit(power_dir, result_root)
        rc, report = gpulse_validate(power_dir, result_root)
        self.assertIn(rc, (0, 1), f"{label}: gpulse validate-power: {report}")
        self.assertEqual(rc == 0, oracle.ok, f"{label}: upstream rules say {oracle.failures or 'pass'}, "
                                             f"gpulse says {report['failures'] or 'pass'}")
        return oracle, report


def make_temp(test):
    tmp = tempfile.TemporaryDirectory()
    test.addCleanup(tmp.cleanup)
    return tmp.name


# --- gpulse → upstream --------------------------------------------------------------------------

class Loopback:
    """Two nodes, each a real `gpulse exporter --simulate` serving two GPUs; node0 optionally behind
    late_server.py. Runs `gpulse collect` with a benchmark and returns the package."""

    NODES = (("node0", "prefill", 0), ("node1", "decode", 1))

    def __init__(self, directory):
        self.dir = directory
        self.procs, self.exporters = [], []

    def start(self):
        for host, _, _ in self.NODES:
            self.exporters.append(Exporter("--simulate", two_gpu_scenario(self.dir, host), "--hostname", "lies"))
        return self

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for e in self.exporters:
            e.stop()

    def start_late_server(self, exporter, trigger):
        port_file = os.path.join(self.dir, f"late-port{len(self.procs)}")
        p = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "late_server.py"), port_file,
                              exporter.url + "/metrics", trigger])
        self.procs.append(p)
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or p.poll() is not None:
                raise AssertionError("late_server.py did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            return int(f.read())

    def fake_timedatectl(self):
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        with open(os.path.join(bindir, "timedatectl"), "w") as f:
            f.write("#!/bin/sh\necho yes\n")
        os.chmod(os.path.join(bindir, "timedatectl"), 0o755)
        return dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])

    def collect(self, name, bench, ports=None, workers=None, concurrencies=(4, 8), required=True, **config):
        """(power dir, log dir, manifest, collect's stderr) of one run under DIR/NAME; the manifest is
        None when collect refused the config (exit 2)."""
        logs = os.path.join(self.dir, name, "logs")
        os.makedirs(os.path.join(logs, "results"))
        ports = ports or [e.port for e in self.exporters]
        workers = workers or [(h, [0, 1], role, het) for h, role, het in self.NODES]
        cfg = os.path.join(self.dir, name, "collect.yaml")
        with open(cfg, "w") as f:
            f.write(config_text([(h, port) for (h, _, _), port in zip(self.NODES, ports)], workers, concurrencies,
                                required, **config))
        p = subprocess.run([GPULSE, "collect", "--config", cfg, "--log-dir", logs, "--", "sh", "-c", bench],
                           capture_output=True, text=True, timeout=120, env=self.fake_timedatectl())
        power = os.path.join(logs, "power")
        if p.returncode == 2:
            return power, logs, None, p.stderr
        with open(os.path.join(power, "manifest.json")) as f:
            return power, logs, json.load(f), p.stderr


class GpulseToUpstream(CompatTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.net = Loopback(cls.tmp.name)
        try:
            cls.net.start()
            cls.clean = cls.net.collect("clean", f"{window_cmd(4)} && {window_cmd(8)}")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.net.stop()
        cls.tmp.cleanup()

    def test_a_clean_publishable_run_revalidates_under_the_upstream_rules(self):
        power, logs, m, err = self.clean
        self.assertTrue(m["publication_valid"], err)
        self.assertEqual(len(m["observed_devices"]), 4)
        validate(m, "power-manifest.schema.json")
        self.assertEqual(upstream_v1.check(power, logs), [])
        self.assert_same_verdict(power, logs, "clean")

    def test_a_run_with_one_late_answer_stays_publishable_and_revalidates_under_the_upstream_rules(self):
        trigger = os.path.join(self.tmp.name, "late-trigger")
        port = self.net.start_late_server(self.net.exporters[0], trigger)
        bench = f"{window_cmd(4, f'sleep 1; touch {trigger}; sleep 9')} && {window_cmd(8, 'sleep 1')}"  # 50 intervals: 2 missed are 4%
        power, logs, m, err = self.net.collect("late", bench, ports=[port, self.net.exporters[1].port])
        self.assertTrue(os.path.exists(trigger + ".answered"), "the late answer was sent")
        with open(trigger + ".answered") as f:
            answered = float(f.read())
        with open(os.path.join(power, "windows", "sa-bench-c4.json")) as f:
            w = json.load(f)
        self.assertLess(w["benchmark_start_time_unix"], answered, "the late answer falls inside window sa-bench/4")
        self.assertLess(answered, w["benchmark_end_time_unix"])
        self.assertGreaterEqual(m["missed_sample_count"], 1, err)
        # node0's late answer is recorded; a loaded machine may also make node1 miss a slot.
        self.assertIn("node0", {r["hostname"] for r in m["missed_sample_ranges"]})
        self.assertIn("sample_schedule_overrun", m["reason_codes"] + m.get("gpulse_reason_codes", []))
        self.assertTrue(m["publication_valid"], "a missed slot alone keeps the package publishable: " + err)
        rc, report = gpulse_validate(power, logs)
        self.assertEqual(rc, 0, report["failures"])
        self.assertNotIn("sample_schedule_overrun", m["reason_codes"], "not a V1 reason code")
        self.assertEqual(upstream_v1.check(power, logs), [])
        self.assert_same_verdict(power, logs, "late answer")

    def assert_rejected_by_both_for_the_same_reasons(self, power, logs, m, expected_disk):
        self.assertFalse(m["publication_valid"])
        oracle, report = self.assert_same_verdict(power, logs)
        self.assertNotEqual(oracle.failures, [], "the upstream rules reject it too")
        self.assertEqual(oracle.disk_reasons, expected_disk)
        self.assertEqual(set(m["reason_codes"]) & upstream_v1.DISK_DERIVED, oracle.disk_reasons,
                         "the manifest's disk-derived reasons are the upstream's recomputation")
        self.assertEqual(set(report["recomputed_reason_codes"]) - GPULSE_ONLY, oracle.disk_reasons)
        disagreements = [f for f in oracle.failures if is_disagreement(f)]
        self.assertEqual(disagreements, [], "rejected for its reasons only, never for gpulse's evidence")
        self.assertIn("stored publication_valid is false", oracle.failures)
        return oracle, report

    def test_a_run_missing_a_window_is_rejected_by_both_for_the_same_disk_derived_reasons(self):
        power, logs, m, err = self.net.collect("missing", window_cmd(4, "sleep 1.5"), required=False)
        oracle, report = self.assert_rejected_by_both_for_the_same_reasons(power, logs, m,
                                                                           {"measurement_window_missing"})
        self.assertEqual(set(oracle.failures), {"measurement_window_missing (window sa-bench/8)",
                                                "stored publication_valid is false"})
        self.assertEqual(scoped(report["failures"]), set(oracle.failures))

    def test_a_failed_window_and_an_unexpected_device_are_rejected_by_both_for_the_same_reasons(self):
        workers = [("node0", [0, 1], "prefill", 0), ("node1", [0], "decode", 1)]
        bench = f"{window_cmd(4, 'sleep 1')}; {window_cmd(8, 'sleep 1', status=3)}"
        power, logs, m, err = self.net.collect("failed", bench, workers=workers, required=False)
        oracle, report = self.assert_rejected_by_both_for_the_same_reasons(
            power, logs, m, {"unexpected_device", "measurement_window_incomplete"})
        self.assertEqual(scoped(report["failures"]), set(oracle.failures))

    def test_a_worker_without_a_worker_process_is_refused_before_anything_starts(self):
        """V1 parses every assignment's worker_process as an integer >= 0: a manifest with a null one
        is `manifest malformed`. gpulse must refuse such a config, or write a package the upstream
        rules accept."""
        power, logs, m, err = self.net.collect("null-process", window_cmd(4, "sleep 1"), concurrencies=(4,),
                                               worker_process="null")
        self.assertIsNone(m, "refused before anything started")
        self.assertIn("worker_process is required", err)
        self.assertFalse(os.path.exists(power))

    def test_damaged_copies_of_a_gpulse_package_get_the_same_verdict_from_both(self):
        _, logs, _, _ = self.clean
        damages = {
            "undamaged": lambda power, root: None,
            "result_timings_changed": lambda power, root: edit_json(
                os.path.join(root, "results", "sa-bench-c8.json"), duration=1.0),
            "result_path_escapes": lambda power, root: edit_json(
                os.path.join(power, "windows", "sa-bench-c8.json"), result_path="../elsewhere/sa-bench-c8.json"),
            "window_removed": lambda power, root: os.remove(os.path.join(power, "windows", "sa-bench-c8.json")),
            "row_appended": lambda power, root: append_line(os.path.join(power, "samples.csv"),
                                                            "1,1.0,0,node9,0,GPU-x,1.0"),
            "stray_window_file": lambda power, root: append_line(os.path.join(power, "windows", "notes.txt"), "x"),
        }
        scratch = make_temp(self)
        for name, damage in damages.items():
            with self.subTest(damage=name):
                power, root = copy_package(logs, os.path.join(scratch, name))
                damage(power, root)
                oracle, _ = self.assert_same_verdict(power, root, name)
                self.assertEqual(oracle.ok, name == "undamaged", oracle.failures)


def edit_json(path, **changes):
    with open(path) as f:
        doc = json.load(f)
    doc.update(changes)
    with open(path, "w") as f:
        json.dump(doc, f)


def append_line(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


# --- upstream → gpulse --------------------------------------------------------------------------

class UpstreamToGpulse(CompatTestCase):
    def package(self, variant):
        return upstream_writer.write_package(os.path.join(make_temp(self), variant), variant)

    def test_the_oracle_knows_the_v1_enum_only(self):
        self.assertEqual(len(upstream_v1.V1_REASONS), 40)
        self.assertEqual(upstream_v1.DISK_DERIVED & upstream_v1.RUNTIME_ONLY, frozenset())
        self.assertEqual(GPULSE_ONLY & upstream_v1.V1_REASONS, set())

    def test_the_writer_variants_get_their_documented_verdict_from_the_upstream_rules(self):
        for variant, (_, _, accepted) in upstream_writer.VARIANTS.items():
            with self.subTest(variant=variant):
                self.assertEqual(upstream_v1.check(*self.package(variant)) == [], accepted)

    def test_the_upstream_writers_clean_package_validates_in_gpulse(self):
        power, root = self.package("clean")
        with open(os.path.join(power, "samples.csv"), "rb") as f:
            self.assertIn(b"\r\n", f.read(), "rows as Python's csv writer writes them")
        self.assertEqual(upstream_v1.check(power, root), [])
        rc, report = gpulse_validate(power, root)
        self.assertEqual(rc, 0, report["failures"])
        self.assertEqual(report["recomputed_reason_codes"], [])

    def test_every_package_the_upstream_rules_accept_gpulse_accepts(self):
        for variant, (_, _, accepted) in upstream_writer.VARIANTS.items():
            if accepted:
                with self.subTest(variant=variant):
                    power, root = self.package(variant)
                    rc, report = gpulse_validate(power, root)
                    self.assertEqual(rc, 0, report["failures"])

    def test_every_package_the_upstream_rules_reject_gpulse_rejects(self):
        for variant, (_, _, accepted) in upstream_writer.VARIANTS.items():
            if not accepted:
                with self.subTest(variant=variant):
                    power, root = self.package(variant)
                    self.assertNotEqual(upstream_v1.check(power, root), [])
                    rc, report = gpulse_validate(power, root)
                    self.assertEqual(rc, 1, "gpulse must reject it too")

    def test_honest_upstream_packages_get_the_upstream_s_reasons_from_gpulse(self):
        """A package the upstream collector finalized itself (no damage afterwards): gpulse finds
        exactly the failures the upstream rules find, plus at most its own named rules."""
        for variant, (_, damage, _) in upstream_writer.VARIANTS.items():
            if damage is None:
                with self.subTest(variant=variant):
                    power, root = self.package(variant)
                    oracle, report = self.assert_same_verdict(power, root, variant)
                    gpulse_only = {f for f in scoped(report["failures"]) - set(oracle.failures)
                                   if f.split(" ")[0] not in GPULSE_ONLY}
                    self.assertEqual(gpulse_only, set(), "gpulse-only failures")
                    self.assertEqual(set(oracle.failures) - scoped(report["failures"]), set())

    def test_a_result_timing_mismatch_is_result_mismatch_only_and_no_clock_check_runs(self):
        power, root = self.package("result_timing_mismatch")
        rc, report = gpulse_validate(power, root)
        self.assertEqual(rc, 1)
        self.assertIn("measurement_window_result_mismatch (window sa-bench/8)", report["failures"])
        self.assertNotIn("measurement_window_clock_mismatch (window sa-bench/8)", report["failures"],
                         "the window's own clock is off too, but V1 does not check it once the result differs")
        self.assertNotIn("measurement_window_clock_mismatch", report["recomputed_reason_codes"])
        self.assertNotIn("window_validations does not match the recomputed window coverage", report["failures"])
        self.assert_same_verdict(power, root)

    def test_a_uuid_change_outside_every_window_fails_every_window_without_a_gap_figure(self):
        power, root = self.package("uuid_change_outside_windows")
        with open(os.path.join(power, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual([w["reason_codes"] for w in m["window_validations"]], [["gpu_uuid_changed"]] * 2)
        self.assertEqual([len(w["per_device_max_sample_gap_seconds"]) for w in m["window_validations"]], [3, 3],
                         "no gap figure for the device with two UUIDs")
        rc, report = gpulse_validate(power, root)
        self.assertEqual(rc, 1)
        for window in ("sa-bench/4", "sa-bench/8"):
            self.assertIn(f"gpu_uuid_changed (window {window})", report["failures"])
        self.assertNotIn("window_validations does not match the recomputed window coverage", report["failures"],
                         "gpulse recomputes the same rows: gpu_uuid_changed and no gap figure for that device")
        self.assert_same_verdict(power, root)

    def test_an_invalid_result_path_is_an_artifact_error_and_its_window_is_missing(self):
        for variant in ("result_path_escapes", "result_path_other_stem"):
            with self.subTest(variant=variant):
                power, root = self.package(variant)
                rc, report = gpulse_validate(power, root)
                self.assertEqual(rc, 1)
                name = upstream_writer.result_name(upstream_writer.BASE, 8)
                self.assertIn(f"measurement_window_result_path_invalid (windows/{name})", report["failures"])
                self.assertIn("measurement_window_missing (window sa-bench/8)", report["failures"])
                for evidence in ("window_validations", "artifact_errors"):
                    self.assertFalse([f for f in report["failures"] if f.startswith(evidence)], report["failures"])
                self.assert_same_verdict(power, root)

    def test_a_verdict_difference_is_only_ever_gpulse_s_own_named_rule(self):
        """One endpoint timing out once inside a 10 s window at a 1 s cadence: the V1 rules accept it
        (a 2 s gap); gpulse may reject it, but only by its own cumulative-loss rule."""
        plan = replace(upstream_writer.BASE, silent=frozenset({(7, "gpu-node-01")}))
        power, root = upstream_writer.write_plan(make_temp(self), plan)
        self.assertEqual(upstream_v1.check(power, root), [])
        rc, report = gpulse_validate(power, root)
        if rc != 0:
            self.assertEqual(scoped(report["failures"]), {"sample_loss_exceeded (window sa-bench/4)",
                                                          "publication_valid is True, recomputed False"})


if __name__ == "__main__":
    unittest.main()
