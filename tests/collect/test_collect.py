"""End-to-end tests of `gpulse collect` and `gpulse window`: real `gpulse exporter --simulate`
processes on loopback as endpoints, a misbehaving local HTTP server, and the package checked by
`gpulse validate-power` and the JSON Schema. Run with Debian's /usr/bin/python3."""
import csv
import hashlib
import io
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from gpulse_e2e import GPULSE, SOURCE_DIR, validate  # noqa: E402
from exporter_e2e import Exporter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w"


def config_text(endpoints, workers, interval_ms=200, required=True, startup=15, concurrencies=(4, 8),
                request_timeout=1, clock_sync=False, launch=None, command="gpulse exporter -a :{port}",
                exporter_port=9400):
    """A collect config. clock_sync=False turns the clock check off (this machine's clock is not
    NTP-verified); tests of the check put fake timedatectl/chronyc/ntpq first on PATH instead."""
    lines = ["job_id: test-job", "run_name: e2e", "telemetry:", "  enabled: true",
             f"  collect_interval_ms: {interval_ms}", "  storage_subdir: power", f"  required: {str(required).lower()}",
             f"  startup_timeout_seconds: {startup}", f"  request_timeout_seconds: {request_timeout}",
             *([] if clock_sync else ["  clock_sync_check: false"]),
             "  dcgm_exporter:", "    container_image: gpulse", f"    port: {exporter_port}",
             f"    command: {json.dumps(command)}", *([f"    launch: {launch}"] if launch else []), "endpoints:"]
    for host, port, path in endpoints:
        lines.append(f"  - {{hostname: {host}, address: 127.0.0.1, port: {port}, path: {path}}}")
    lines.append("workers:")
    for host, gpus, role, index, het in workers:
        lines.append(f"  - {{hostname: {host}, gpus: {list(gpus)}, worker_role: {role}, worker_index: {index}, "
                     f"worker_process: 0, het_group: {het}}}")
    lines += ["benchmark:", "  type: sa-bench", f"  concurrencies: {list(concurrencies)}"]
    return "\n".join(lines) + "\n"


def window_cmd(concurrency, seconds):
    result = f"$GPULSE_RESULT_ROOT/results/sa-bench-c{concurrency}.json"
    return (f"{GPULSE} window run --type sa-bench --concurrency {concurrency} --result {result} -- "
            f"sh -c 'sleep {seconds}; echo \"{{\\\"concurrency\\\": {concurrency}}}\" > {result}'")


class CollectTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        os.makedirs(os.path.join(self.dir, "logs", "results"))
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.tmp.cleanup()

    def write_config(self, text):
        path = os.path.join(self.dir, "collect.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def collect(self, config, *bench, extra=(), timeout=120, preexec=None, env=None):
        return subprocess.run([GPULSE, "collect", "--config", config, "--log-dir", self.logs, *extra,
                               *(["--", *bench] if bench else [])], capture_output=True, text=True,
                              timeout=timeout, preexec_fn=preexec, env=env)

    def scenario(self, name):
        """1xH200 under another name: the simulator derives UUIDs from it, so every node differs."""
        with open(os.path.join(SOURCE_DIR, "sim", "scenarios", "1xH200.yaml")) as f:
            text = f.read().replace("name: 1xH200", f"name: {name}", 1)
        path = os.path.join(self.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_collect_in_a_window(self, cfg, bench=None, **popen):
        """Starts `gpulse collect` with a benchmark that opens window sa-bench/4 and stays in it; returns
        once the window file exists: (process, window path)."""
        proc = subprocess.Popen([GPULSE, "collect", "--config", cfg, "--log-dir", self.logs, "--", "sh", "-c",
                                 bench or window_cmd(4, 30)], stderr=subprocess.PIPE, text=True, **popen)
        self.procs.append(proc)
        wpath = os.path.join(self.power, "windows", "sa-bench-c4.json")
        deadline = time.monotonic() + 30
        while not os.path.exists(wpath) and time.monotonic() < deadline:
            time.sleep(0.1)
        return proc, wpath

    def fake_tools(self, **tools):
        """An environment whose PATH starts with fake tools (name -> sh script body): stand-ins for
        timedatectl, chronyc, ntpq and srun, whose real answers this machine cannot give."""
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        for name, body in tools.items():
            path = os.path.join(bindir, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(path, 0o755)
        return dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])

    def synced_clock(self):
        return self.fake_tools(timedatectl="echo yes")

    @property
    def logs(self):
        return os.path.join(self.dir, "logs")

    @property
    def power(self):
        return os.path.join(self.logs, "power")

    def manifest(self):
        with open(os.path.join(self.power, "manifest.json")) as f:
            return json.load(f)

    def validate_power(self, *extra):
        return subprocess.run([GPULSE, "validate-power", "--power-dir", self.power, "--result-root", self.logs,
                               *extra], capture_output=True, text=True, timeout=60)

    def start_bad_server(self, **env):
        port_file = os.path.join(self.dir, f"port{len(self.procs)}")
        p = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "misbehaving_server.py"), port_file],
                             env=dict(os.environ, **{k: str(v) for k, v in env.items()}))
        self.procs.append(p)
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or p.poll() is not None:
                self.fail("misbehaving server did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            return int(f.read())


class PublishableRun(CollectTestCase):
    def test_four_exporters_two_roles_two_het_groups_two_windows(self):
        exporters = [Exporter("--simulate", self.scenario(f"node{i}"), "--hostname", f"lies{i}") for i in range(4)]
        try:
            eps = [(f"node{i}", e.port, "/metrics") for i, e in enumerate(exporters)]
            workers = [("node0", [0], "prefill", 0, 0), ("node1", [0], "prefill", 1, 0),
                       ("node2", [0], "decode", 0, 1), ("node3", [0], "decode", 1, 1)]
            image = os.path.join(self.dir, "exporter.sqsh")
            with open(image, "wb") as f:
                f.write(os.urandom(1 << 20))
            cfg = self.write_config(config_text(eps, workers, clock_sync=True).replace(
                "container_image: gpulse", f"container_image: {image}"))
            bench = f"{window_cmd(4, 4)} && {window_cmd(8, 4)}"
            p = self.collect(cfg, "sh", "-c", bench, env=self.synced_clock())
        finally:
            for e in exporters:
                e.stop()
        self.assertEqual(p.returncode, 0, p.stderr)
        m = self.manifest()
        self.assertEqual(m["status"], "complete", p.stderr)
        self.assertTrue(m["publication_valid"], json.dumps(m["window_validations"], indent=1) + p.stderr)
        self.assertEqual(sorted(d["hostname"] for d in m["observed_devices"]), ["node0", "node1", "node2", "node3"])
        self.assertEqual(m["clock_sync_failures"], [], "the check is on by default and the clock is verified")
        with open(image, "rb") as f:
            self.assertEqual(m["dcgm_exporter"]["container_image_sha256"], hashlib.sha256(f.read()).hexdigest(),
                             "a local image file is hashed (on its own thread, off the start path)")
        head = subprocess.run(["git", "-C", SOURCE_DIR, "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            self.assertEqual(m["producer_git_commit"], head.stdout.strip(), "the full commit of the build")
        self.assertEqual(m["gpulse_reason_codes"], [])
        self.assertEqual(m["gpulse_window_findings"], [])
        self.assertIn("clock_sync_check: ", p.stderr)
        self.assertIn(" OK (timedatectl: NTPSynchronized=yes)", p.stderr)
        validate(m, "power-manifest.schema.json")
        v = self.validate_power("--expect-role", "prefill=2", "--expect-role", "decode=2",
                                "--require-distinct-het-groups")
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        with open(os.path.join(self.power, "samples.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(rows[0], HEADER)
        keys = [tuple(r.split(",")[2:5]) for r in rows[1:]]
        self.assertEqual(len(keys), len(set(keys)), "(scrape_seq, hostname, gpu_index) must be unique")
        self.assertNotIn("lies", "".join(rows), "hostname comes from the endpoint map")
        for name in ("sa-bench-c4", "sa-bench-c8"):
            with open(os.path.join(self.power, "windows", name + ".json")) as f:
                w = json.load(f)
            with open(os.path.join(self.logs, "results", name + ".json")) as f:
                r = json.load(f)
            self.assertEqual(w["status"], "completed")
            self.assertEqual(w["result_path"], f"results/{name}.json")
            for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"):
                self.assertEqual(w[k], r[k])
            validate(w, "power-window.schema.json")
        self.check_timings(m)

    def check_timings(self, m):
        with open(os.path.join(self.power, "scrape-timings.jsonl")) as f:
            records = [json.loads(l) for l in f]
        self.assertEqual(records[-1], {"event": "diagnostic_summary", "dropped_records": 0})
        scrapes = [r for r in records if r["event"] == "scrape"]
        cycles = [r for r in records if r["event"] == "cycle_write"]
        self.assertEqual(len(cycles), m["scrape_count"])
        self.assertIsNone(cycles[-1]["scheduled_at_unix"], "the final bracketing scrape has no slot")
        self.assertIsNone([s for s in scrapes if s["scrape_seq"] == cycles[-1]["scrape_seq"]][0]["schedule_lag_seconds"])
        for r in records:
            validate(r, "scrape-timings-record.schema.json")
        with open(os.path.join(self.power, "samples.csv")) as f:
            rows = [r.split(",") for r in f.read().splitlines()[1:]]
        stamps = {(r[3], int(r[2])): float(r[1]) for r in rows}
        for s in scrapes:
            if s["row_count"]:
                self.assertEqual(stamps[(s["hostname"], s["scrape_seq"])], s["sample_timestamp_unix"])


class Misbehaving(CollectTestCase):
    PATHS = ["ok", "http500", "garbage", "dup", "mig", "nan", "noindex", "nouuid", "nometric", "slow", "flaky"]

    def test_every_scrape_reason_is_recorded_and_best_effort_keeps_the_benchmark_code(self):
        port = self.start_bad_server(SLOW_SECONDS=2.5, FLAKY_FAILURES=2)
        eps = [(p, port, "/" + p) for p in self.PATHS]
        workers = [(p, [0], "agg", i, None) for i, p in enumerate(self.PATHS)]
        cfg = self.write_config(config_text(eps, workers, interval_ms=500, required=False, startup=2,
                                            request_timeout=1).replace("het_group: None", "het_group: null"))
        p = self.collect(cfg, "sh", "-c", "sleep 2; exit 3")
        self.assertEqual(p.returncode, 3, "best effort keeps the benchmark's exit code: " + p.stderr)
        m = self.manifest()
        for code in ["endpoint_http_error", "endpoint_parse_error", "duplicate_power_metric",
                     "mig_instance_unsupported", "invalid_power_value", "gpu_index_missing", "gpu_uuid_missing",
                     "power_metric_missing", "endpoint_timeout", "exporter_startup_timeout",
                     "measurement_window_missing", "expected_device_missing"]:
            self.assertIn(code, m["reason_codes"], p.stderr)
        self.assertEqual(m["gpulse_reason_codes"], ["sample_schedule_overrun"],
                         "gpulse's own code stays out of the upstream's reason_codes (ADR 0016)")
        self.assertNotIn("sample_schedule_overrun", m["reason_codes"])
        # One line when an endpoint starts failing, naming host, address, reason and status.
        failing = [l for l in p.stderr.splitlines() if l.startswith("gpulse collect: endpoint http500 (")]
        self.assertEqual(len(failing), 1, p.stderr)
        self.assertRegex(failing[0], rf"endpoint http500 \(127\.0\.0\.1:{port}/http500\) failing from scrape 0: "
                                     r"endpoint_http_error \(HTTP 500\)")
        self.assertRegex(p.stderr, r"endpoint flaky \(127\.0\.0\.1:\d+/flaky\) failing from scrape 0: ")
        self.assertRegex(p.stderr, r"endpoint flaky answering again at scrape \d+ after \d+ failed scrape\(s\)")
        self.assertRegex(p.stderr, r"endpoint slow \(\S+\) failing from scrape \d+: endpoint_timeout \(Timeout")
        self.assertEqual(m["status"], "complete", "best effort survives a startup timeout")
        self.assertFalse(m["publication_valid"])
        hosts = {d["hostname"] for d in m["observed_devices"]}
        self.assertEqual(hosts, {"ok", "flaky"}, "an endpoint recovers on a later cycle; a timeout never reuses stale power")
        validate(m, "power-manifest.schema.json")
        self.assertEqual(self.validate_power().returncode, 1)
        # The one output convention (issue 42): --format json is --json; CSV is a row per failure.
        as_json = self.validate_power("--format", "json")
        self.assertEqual(as_json.returncode, 1)
        doc = json.loads(as_json.stdout)
        validate(doc, "validate-power.schema.json")
        self.assertEqual(json.loads(self.validate_power("--json").stdout), doc)
        rows = list(csv.DictReader(io.StringIO(self.validate_power("--format", "csv").stdout)))
        self.assertEqual(len(rows), len(doc["failures"]))
        self.assertGreater(len(rows), 0)

    def good_endpoints(self, n, **config):
        """n endpoints h0..h(n-1) of one misbehaving server, each with one good GPU whose UUID is
        GPU-<host>, and a best-effort config of them: (hosts, config path)."""
        port = self.start_bad_server()
        hosts = [f"h{i}" for i in range(n)]
        eps = [(h, port, f"/ok/{h}") for h in hosts]
        workers = [(h, [0], "agg", i, "null") for i, h in enumerate(hosts)]
        return hosts, self.write_config(config_text(eps, workers, required=False, **config))

    def test_a_cycle_of_many_endpoints_is_written_by_several_threads_each_answer_to_its_endpoint(self):
        # 80 endpoints: on a machine with two CPUs or more, each cycle's requests are written by the
        # loop thread and a writer thread, 40 each (docs/power-contract.md, "How collection works"),
        # through io_uring where the kernel allows it.
        hosts, cfg = self.good_endpoints(80, interval_ms=500, startup=20, request_timeout=2)
        p = self.collect(cfg, "sh", "-c", "sleep 2")
        self.assert_each_endpoint_answered_for_itself(p, hosts)

    def test_requests_are_written_with_send_when_io_uring_is_turned_off_and_a_bad_value_is_refused(self):
        hosts, cfg = self.good_endpoints(80, interval_ms=500, startup=20, request_timeout=2)
        bad = self.collect(cfg, "sh", "-c", "true", env=dict(os.environ, GPULSE_COLLECT_IO_URING="yes"))
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("GPULSE_COLLECT_IO_URING=yes: expected 0", bad.stderr)
        self.assertFalse(os.path.exists(self.power), "nothing is started or written")
        p = self.collect(cfg, "sh", "-c", "sleep 2", env=dict(os.environ, GPULSE_COLLECT_IO_URING="0"))
        self.assertNotIn("not io_uring", p.stderr, "turned off is not a fallback to report")
        self.assert_each_endpoint_answered_for_itself(p, hosts)

    def assert_each_endpoint_answered_for_itself(self, p, hosts):
        self.assertEqual(p.returncode, 0, p.stderr)
        m = self.manifest()
        for code in ["endpoint_http_error", "endpoint_timeout", "endpoint_parse_error", "gpu_uuid_changed",
                     "exporter_startup_timeout", "expected_device_missing"]:
            self.assertNotIn(code, m["reason_codes"], p.stderr)
        self.assertIn("schedule lag p50", p.stderr)
        with open(os.path.join(self.power, "samples.csv")) as f:
            rows = list(csv.DictReader(f))
        seen = {}
        for r in rows:
            seen.setdefault(r["hostname"], set()).add(r["gpu_uuid"])
        self.assertEqual(set(seen), set(hosts), "every endpoint answered")
        for h in hosts:
            self.assertEqual(seen[h], {f"GPU-{h}"}, f"{h}'s rows carry {h}'s answer, never another endpoint's")
        scrapes = [r for r in rows if r["hostname"] == "h0"]
        self.assertGreaterEqual(len({r["scrape_seq"] for r in scrapes}), 3, "several cycles ran")

    def test_no_file_descriptor_left_for_any_socket_fails_each_request_without_a_crash(self):
        # The lowest open-file limit gpulse collect starts under leaves it no descriptor for a socket:
        # every request then fails inside the call that starts it. Before the fix its cycle settled
        # and was freed under the loop that was still starting requests (a crash, SIGSEGV).
        hosts, cfg = self.good_endpoints(8, interval_ms=300, startup=1, request_timeout=1)
        for limit in range(4, 64):
            shutil.rmtree(self.logs)
            os.makedirs(os.path.join(self.logs, "results"))
            p = self.collect(cfg, "sh", "-c", "sleep 1",
                             preexec=lambda n=limit: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)))
            self.assertGreaterEqual(p.returncode, 0, f"killed by signal {-p.returncode} at limit {limit}: {p.stderr}")
            if "gpulse collect: status" in p.stderr:
                break
        self.assertIn("Too many open files", p.stderr, f"limit {limit}: {p.stderr}")
        m = self.manifest()
        self.assertIn("endpoint_http_error", m["reason_codes"])
        self.assertEqual(m["status"], "complete", p.stderr)
        per_cycle = {}
        with open(os.path.join(self.power, "scrape-timings.jsonl")) as f:
            for line in f:
                d = json.loads(line)
                if d.get("event", "scrape") == "scrape":
                    per_cycle.setdefault(d["scrape_seq"], set()).add(d["hostname"])
        self.assertTrue(per_cycle, "cycles ran")
        for seq, seen in per_cycle.items():
            self.assertEqual(seen, set(hosts), f"cycle {seq} records every endpoint's failed request")

    def test_required_startup_failure_blocks_the_benchmark(self):
        port = self.start_bad_server()
        cfg = self.write_config(config_text([("a", port, "/http500")], [("a", [0], "agg", 0, 0)],
                                            required=True, startup=1))
        marker = os.path.join(self.dir, "ran")
        t0 = time.monotonic()
        p = self.collect(cfg, "touch", marker)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(os.path.exists(marker), "required telemetry that never got ready blocks the benchmark")
        m = self.manifest()
        self.assertEqual(m["status"], "failed")
        self.assertIn("exporter_startup_timeout", m["reason_codes"])
        self.assertFalse(m["publication_valid"])

    def test_unresolvable_endpoint(self):
        cfg = self.write_config(config_text([("a", 9, "/metrics")], [("a", [0], "agg", 0, 0)], startup=1)
                                .replace("address: 127.0.0.1", "address: no-such-host.invalid"))
        p = self.collect(cfg, "true")
        self.assertNotEqual(p.returncode, 0)
        m = self.manifest()
        self.assertIn("endpoint_resolution_failed", m["reason_codes"])
        self.assertEqual(m["status"], "failed")


class AmdNode(CollectTestCase):
    """collect on a node with an AMD GPU (issue 19): the exporter reads the MI300X sysfs fixture next
    to a simulated H200 (GPU 0 NVIDIA at 18:00.0, GPU 1 AMD at C1:00.0); a worker on both GPUs gets
    a publishable package whose AMD samples are the fixture's power."""

    def test_a_worker_on_an_amd_gpu(self):
        mi300x = os.path.join(SOURCE_DIR, "tests", "testdata", "sysfs", "mi300x")
        hwmon = os.path.join(os.path.realpath(os.path.join(mi300x, "class", "drm", "card0", "device")),
                             "hwmon", "hwmon0")
        with open(os.path.join(hwmon, "power1_input")) as f:
            watts = int(f.read()) / 1e6
        with open(os.path.join(mi300x, "class", "drm", "card0", "device", "unique_id")) as f:
            uuid = "GPU-" + f.read().strip().upper()
        with Exporter("--simulate", "1xH200", "--sysfs-root", mi300x) as e:
            cfg = self.write_config(config_text([("node0", e.port, "/metrics")],
                                                [("node0", [0, 1], "prefill", 0, 0)], concurrencies=(4,)))
            p = self.collect(cfg, "sh", "-c", window_cmd(4, 2))
        self.assertEqual(p.returncode, 0, p.stderr)
        m = self.manifest()
        self.assertEqual(m["status"], "complete", p.stderr)
        self.assertTrue(m["publication_valid"], json.dumps(m["window_validations"], indent=1))
        with open(os.path.join(self.power, "samples.csv")) as f:
            rows = [r.split(",") for r in f.read().splitlines()[1:]]
        amd = [r for r in rows if r[4] == "1"]
        self.assertTrue(amd)
        self.assertEqual({(r[5], float(r[6])) for r in amd}, {(uuid, watts)})
        v = self.validate_power("--expect-role", "prefill=2")
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)


class Lifecycle(CollectTestCase):
    def one_exporter_config(self, exporter, **kw):
        return self.write_config(config_text([("node0", exporter.port, "/metrics")],
                                             [("node0", [0], "prefill", 0, 0)], concurrencies=(4,), **kw))

    def test_exporter_dies_mid_window(self):
        e = Exporter("--simulate", "1xH200")
        cfg = self.one_exporter_config(e, required=False)
        killer = f"sleep 1.5; kill {e.proc.pid}"
        p = self.collect(cfg, "sh", "-c", f"{window_cmd(4, 3)} & {killer}; wait")
        e.stop()
        m = self.manifest()
        self.assertIn("exporter_exited", m["reason_codes"], p.stderr)
        self.assertEqual(m["status"], "incomplete")
        self.assertFalse(m["publication_valid"])
        self.assertEqual(p.returncode, 0, "best effort: the benchmark's own exit code")

    def test_a_worker_that_ignores_sigterm_is_stopped_and_reaped_before_finalization(self):
        """The benchmark's shell exits at once on SIGTERM; its worker ignores SIGTERM and would write
        its result after the package was finalized. collect stops the benchmark's whole process group
        (SIGKILL after the grace period) and reaps it before the terminal manifest."""
        late = os.path.join(self.logs, "late-result")
        pidfile = os.path.join(self.dir, "worker.pid")
        worker = f"sh -c 'trap \"\" TERM; echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; sleep 29; touch {late}' & wait"
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.one_exporter_config(e, required=False)
            proc = subprocess.Popen([GPULSE, "collect", "--config", cfg, "--log-dir", self.logs, "--", "sh", "-c",
                                     worker], stderr=subprocess.PIPE, text=True)
            self.procs.append(proc)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not os.path.exists(pidfile):
                time.sleep(0.1)
            with open(pidfile) as f:
                pid = int(f.read())
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        self.assertFalse(os.path.exists(f"/proc/{pid}"), "nothing the benchmark started outlives collect")
        self.assertIn("left processes running in its process group; they were stopped and reaped", err)
        m = self.manifest()
        self.assertNotIn("benchmark_child_reap_timeout", m["reason_codes"], err)
        self.assertIn("collector_interrupted", m["reason_codes"])
        time.sleep(0.5)
        self.assertFalse(os.path.exists(late), "no worker writes after the package was finalized")

    def test_sigterm_during_a_window(self):
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.one_exporter_config(e)
            proc, wpath = self.start_collect_in_a_window(cfg)
            time.sleep(1)
            rows_before = open(os.path.join(self.power, "samples.csv")).read().count("\n")
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=60)[1]
        self.assertNotEqual(proc.returncode, 0)
        m = self.manifest()
        self.assertIn("collector_interrupted", m["reason_codes"], err)
        self.assertEqual(m["status"], "incomplete")
        self.assertFalse(m["publication_valid"])
        self.assertGreaterEqual(m["sample_row_count"], rows_before - 1, "rows already written stay")
        with open(wpath) as f:
            w = json.load(f)
        self.assertEqual(w["status"], "interrupted", "a reaped child's running window is converted")
        self.assertEqual(w["reason"], "benchmark did not reach a formal end boundary")

    def test_full_disk_is_a_sample_write_error_without_a_partial_row(self):
        """A file size limit (RLIMIT_FSIZE, as a full disk would) makes a samples.csv append fail.
        The limit applies to scrape-timings.jsonl too, so samples.csv must reach it first for the
        failing cycle's cycle_write record to land: a long hostname (in every sample row, but once
        per scrape record) makes samples.csv grow about twice as fast as the diagnostics."""
        limit = 16 * 1024
        host = "node0-" + "x" * 120

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        with Exporter("--simulate", "8xH100") as e:
            cfg = self.write_config(config_text([(host, e.port, "/metrics")],
                                                [(host, list(range(8)), "agg", 0, 0)], interval_ms=100,
                                                required=True, concurrencies=(4,)))
            p = self.collect(cfg, extra=("--duration", "4"), preexec=small_files)
        self.assertNotEqual(p.returncode, 0)
        m = self.manifest()
        self.assertIn("collector_exception", m["reason_codes"], p.stderr)
        self.assertEqual(m["status"], "incomplete")
        self.assertIn("samples.csv: EFBIG", p.stderr)
        with open(os.path.join(self.power, "samples.csv"), "rb") as f:
            data = f.read()
        self.assertTrue(data.endswith(b"\n"), "no partial row")
        self.assertEqual(m["sample_row_count"], data.count(b"\n") - 1)
        self.assertEqual(m["sample_row_count"] % 8, 0, "whole cycles only")
        with open(os.path.join(self.power, "scrape-timings.jsonl"), "rb") as f:
            lines = f.read().split(b"\n")
        cycles = [json.loads(l) for l in lines if b'"cycle_write"' in l and l.endswith(b"}")]
        failed = [c for c in cycles if not c["sample_write_completed"]]
        self.assertTrue(failed, "the failing cycle's cycle_write record is in scrape-timings.jsonl")
        self.assertEqual(failed[0]["sample_write_error"], "EFBIG")
        self.assertEqual(sum(c["row_count"] for c in cycles if c["sample_write_completed"]),
                         m["sample_row_count"], "every completed cycle's rows, and only those, are in samples.csv")

    def window_begin_cmd(self, concurrency):
        result = f"$GPULSE_RESULT_ROOT/results/sa-bench-c{concurrency}.json"
        return f"{GPULSE} window begin --type sa-bench --concurrency {concurrency} --result {result}"

    def test_collector_join_timeout_fails_in_best_effort_mode(self):
        """The loop thread stuck past collector_join_timeout_seconds (injected: a stuck write or
        parse cannot be provoked from outside) is abandoned; the package is finalized anyway."""
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.one_exporter_config(e, required=False)
            with open(cfg) as f:
                text = f.read().replace("request_timeout_seconds: 1",
                                        "request_timeout_seconds: 1\n  collector_join_timeout_seconds: 6.5")
            with open(cfg, "w") as f:
                f.write(text)
            # Stuck for 600 s: the run's 60 s timeout proves finalization does not wait for it.
            env = dict(os.environ, GPULSE_COLLECT_TEST_FAULT="stall_loop_at_stop=600")
            p = subprocess.run([GPULSE, "collect", "--config", cfg, "--log-dir", self.logs, "--", "sh", "-c",
                                window_cmd(4, 1)], capture_output=True, text=True, timeout=60, env=env)
        self.assertNotEqual(p.returncode, 0, "an operational failure fails even best effort: " + p.stderr)
        m = self.manifest()
        self.assertIn("collector_join_timeout", m["reason_codes"], p.stderr)
        self.assertEqual(m["status"], "incomplete")
        self.assertFalse(m["publication_valid"])
        self.assertGreater(m["sample_row_count"], 0, "rows already written stay")
        self.assertIsNotNone(m["samples_sha256"])
        validate(m, "power-manifest.schema.json")

    def test_unreaped_child_leaves_running_windows_alone(self):
        """A benchmark that ignores SIGTERM is force-killed after the grace period; when it cannot
        be proven reaped (injected: an unkillable child needs root) its running window is not
        converted and the run fails in either mode."""
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.one_exporter_config(e, required=False)
            env = dict(os.environ, GPULSE_COLLECT_TEST_FAULT="unreapable_child")
            bench = f"trap '' TERM; {self.window_begin_cmd(4)}; sleep 60"
            proc, wpath = self.start_collect_in_a_window(cfg, bench, env=env)
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=60)[1]
        self.assertNotEqual(proc.returncode, 0)
        m = self.manifest()
        self.assertIn("benchmark_child_reap_timeout", m["reason_codes"], err)
        self.assertIn("collector_interrupted", m["reason_codes"])
        self.assertEqual(m["status"], "incomplete")
        with open(wpath) as f:
            self.assertEqual(json.load(f)["status"], "running", "only a reaped child's windows are converted")

    def test_unreadable_samples_file_has_no_digest(self):
        """samples.csv replaced by a directory under the running collector: the digest cannot be
        computed at finalization."""
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.one_exporter_config(e, required=False)
            proc = subprocess.Popen([GPULSE, "collect", "--config", cfg, "--log-dir", self.logs, "--duration", "3"],
                                    stderr=subprocess.PIPE, text=True)
            self.procs.append(proc)
            csv = os.path.join(self.power, "samples.csv")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if os.path.exists(csv):
                    with open(csv) as f:
                        if f.read().count("\n") > 1:
                            break
                time.sleep(0.05)
            os.rename(csv, csv + ".moved")
            os.mkdir(csv)
            err = proc.communicate(timeout=60)[1]
        m = self.manifest()
        self.assertIn("samples_digest_unavailable", m["reason_codes"], err)
        self.assertIsNone(m["samples_sha256"])
        self.assertFalse(m["publication_valid"])
        validate(m, "power-manifest.schema.json")

    def test_blocked_diagnostics_never_cost_a_sample(self):
        """The scrape-timings.jsonl writer thread blocks before its first write, as a write to a hung
        file system would (fault stall_diagnostics): its queue fills (128) and every further record
        is dropped; samples.csv is unaffected. (A FIFO planted there is refused: HostileFiles.)"""
        with Exporter("--simulate", "8xH100") as e:
            cfg = self.write_config(config_text([("node0", e.port, "/metrics")],
                                                [("node0", list(range(8)), "agg", 0, 0)], interval_ms=100,
                                                required=False, concurrencies=(4,)))
            p = self.collect(cfg, extra=("--duration", "8"),
                             env=dict(os.environ, GPULSE_COLLECT_TEST_FAULT="stall_diagnostics"))
        m = self.manifest()
        self.assertGreater(m["scrape_count"], 64, "more records (two a cycle) than the queue holds: " + p.stderr)
        self.assertNotIn("endpoint_timeout", m["reason_codes"], p.stderr)
        self.assertEqual(m["sample_row_count"], 8 * (m["scrape_count"] - m["missed_sample_count"]),
                         "every cycle's rows are written")
        for code in ("collector_exception", "collector_join_timeout"):
            self.assertNotIn(code, m["reason_codes"])
        self.assertIsNotNone(m["samples_sha256"])
        with open(os.path.join(self.power, "scrape-timings.jsonl")) as f:
            self.assertEqual(f.read(), "", "the stalled writer wrote nothing, and nobody waited for it")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_closed(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# A stand-in for SLURM's srun: logs its arguments, drops its options and runs the command here.
FAKE_SRUN = '''echo "$*" >> "$SRUN_LOG"
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
exec "$@"'''


class LaunchAndClocks(CollectTestCase):
    """telemetry.dcgm_exporter.launch (gpulse collect starts and watches the exporters) and
    telemetry.clock_sync_check (timedatectl, chronyc, ntpq must vouch for each reachable clock)."""

    def local_config(self, hosts, command, **kw):
        eps = [(h, free_port(), "/metrics") for h in hosts]
        workers = [(h, [0], "prefill" if i % 2 == 0 else "decode", i // 2, i % 2) for i, h in enumerate(hosts)]
        for h in hosts:
            self.scenario(h)
        return self.write_config(config_text(eps, workers, concurrencies=(4,), launch="local", command=command,
                                             **kw)), [port for _, port, _ in eps]

    def exporter_command(self):
        return f"{GPULSE} exporter --simulate {self.dir}/{{hostname}}.yaml --hostname lies -a 127.0.0.1:{{port}}"

    def test_launched_exporters_and_a_verified_clock_make_a_publishable_package(self):
        cfg, ports = self.local_config(["node0", "node1"], self.exporter_command(), clock_sync=True)
        fds = os.path.join(self.dir, "fds")
        p = self.collect(cfg, "sh", "-c", f"ls -l /proc/$$/fd > {fds}; {window_cmd(4, 3)}", env=self.synced_clock())
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(fds) as f:
            inherited = f.read()
        for leak in ("socket:", "samples.csv", "scrape-timings.jsonl"):
            self.assertNotIn(leak, inherited, "the benchmark inherits none of collect's descriptors")
        m = self.manifest()
        self.assertTrue(m["publication_valid"], p.stderr)
        self.assertEqual(m["clock_sync_failures"], [])
        for code in ("exporter_launch_failed", "exporter_exited"):
            self.assertNotIn(code, m["reason_codes"])
        self.assertNotIn("clock_sync_unverified", m["gpulse_reason_codes"])
        self.assertEqual(m["dcgm_exporter"]["command"], self.exporter_command().replace("{port}", "9400"))
        validate(m, "power-manifest.schema.json")
        self.assertEqual(self.validate_power().returncode, 0)
        self.assertEqual(m["clock_sync_checked"], [socket.gethostname()])
        for host, port in zip(["node0", "node1"], ports):
            with open(os.path.join(self.logs, f"telemetry_dcgm_exporter.{host}.out")) as f:
                log = f.read()
            self.assertIn(f"http://127.0.0.1:{port}/metrics", log, "each exporter's output is kept")
            self.assertIn("SIGTERM: draining connections", log,
                          "stopped by SIGTERM (children do not inherit collect's blocked signals)")
            self.assertTrue(port_is_closed(port), "collect stops the exporters it launched")
            self.assertRegex(p.stderr, rf"launched exporter {host} \(pid \d+\): \S+gpulse exporter --simulate "
                                       rf"\S+/{host}.yaml --hostname lies -a 127.0.0.1:{port}; output in ")
        probes = [n for n in os.listdir(self.logs) if n.startswith("clock_sync_")]
        self.assertEqual(len(probes), 1, "this host's clock, the only one reachable without srun")
        with open(os.path.join(self.logs, probes[0])) as f:
            self.assertIn("$ timedatectl show --property=NTPSynchronized --value\nyes\n", f.read())

    def test_launch_failure_blocks_required_telemetry_and_taints_best_effort(self):
        marker = os.path.join(self.dir, "ran")
        cfg, _ = self.local_config(["node0"], "/nonexistent/dcgm-exporter --address :{port}")
        t0 = time.monotonic()
        p = self.collect(cfg, "touch", marker)
        self.assertLess(time.monotonic() - t0, 10, "a launch failure does not wait out the startup timeout")
        self.assertEqual(p.returncode, 1)
        self.assertIn('exporter node0: cannot run "/nonexistent/dcgm-exporter"', p.stderr)
        self.assertFalse(os.path.exists(marker), "a launch failure blocks the benchmark")
        m = self.manifest()
        self.assertIn("exporter_launch_failed", m["reason_codes"])
        self.assertEqual(m["status"], "failed")
        validate(m, "power-manifest.schema.json")

        self.tmp.cleanup()
        os.makedirs(os.path.join(self.logs, "results"))
        cfg, _ = self.local_config(["node0"], "/nonexistent/dcgm-exporter --address :{port}", required=False,
                                   startup=1)
        p = self.collect(cfg, "sh", "-c", f"touch {marker}; exit 3")
        self.assertEqual(p.returncode, 3, "best effort keeps the benchmark's exit code: " + p.stderr)
        self.assertTrue(os.path.exists(marker))
        m = self.manifest()
        self.assertIn("exporter_launch_failed", m["reason_codes"])
        self.assertEqual(m["status"], "complete")
        self.assertFalse(m["publication_valid"], "a launch failure is never recoverable")
        self.assertEqual(self.validate_power().returncode, 1)

    def test_a_launched_exporter_that_ends_is_exporter_exited(self):
        pidfile = os.path.join(self.dir, "{hostname}.pid")
        cfg, _ = self.local_config(["node0"], f'sh -c "echo \\$\\$ > {pidfile}; exec {self.exporter_command()}"',
                                   required=False)
        real_pid = pidfile.replace("{hostname}", "node0")
        p = self.collect(cfg, "sh", "-c", f"{window_cmd(4, 3)} & sleep 1; kill -9 $(cat {real_pid}); wait")
        m = self.manifest()
        self.assertIn("exporter_exited", m["reason_codes"], p.stderr)
        self.assertRegex(p.stderr, r"exporter node0 \(pid \d+\) ended with signal 9 at unix [\d.]+ while the collector ran")
        self.assertEqual(m["status"], "incomplete")
        self.assertFalse(m["publication_valid"])

    def test_ctrl_c_reaches_the_benchmark_not_the_launched_exporters(self):
        """A terminal's SIGINT goes to collect's process group; launched exporters have their own, so
        the final bracketing scrape still reaches them: collector_interrupted, not exporter_exited."""
        cfg, ports = self.local_config(["node0"], self.exporter_command(), required=False)
        proc, wpath = self.start_collect_in_a_window(cfg, start_new_session=True)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
        m = self.manifest()
        self.assertIn("collector_interrupted", m["reason_codes"], err)
        self.assertNotIn("exporter_exited", m["reason_codes"], err)
        with open(wpath) as f:
            self.assertEqual(json.load(f)["status"], "interrupted")
        self.assertTrue(port_is_closed(ports[0]), "the exporter is stopped after the final scrape")

    def test_srun_launch_one_step_per_het_group_and_node_clock_probes(self):
        port = free_port()
        self.scenario("node0")
        text = config_text([("node0", port, "/metrics")], [("node0", [0], "decode", 0, 1)], concurrencies=(4,),
                           launch="srun", exporter_port=port, clock_sync=True,
                           command=f"{GPULSE} exporter --simulate {self.dir}/node0.yaml -a 127.0.0.1:{{port}}")
        cfg = self.write_config(text.replace("    launch: srun", "    launch: srun\n    srun_args: [--gpus-per-node=0]"))
        srun_log = os.path.join(self.dir, "srun.log")
        env = self.fake_tools(srun=FAKE_SRUN, timedatectl="echo yes")
        env.update(SRUN_LOG=srun_log, GPULSE_SRUN=os.path.join(self.dir, "bin", "srun"))
        p = self.collect(cfg, "sh", "-c", window_cmd(4, 2), env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(self.manifest()["publication_valid"], p.stderr)
        with open(srun_log) as f:
            calls = f.read().splitlines()
        prefix = "--overlap --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist=node0 --het-group=1 "
        self.assertIn(prefix + "timedatectl show --property=NTPSynchronized --value", calls,
                      "the node's clock is probed through srun")
        self.assertEqual(self.manifest()["clock_sync_checked"], [socket.gethostname(), "node0"])
        self.assertIn(prefix + f"--kill-on-bad-exit=1 --gpus-per-node=0 {GPULSE} exporter --simulate {self.dir}/node0.yaml "
                      f"-a 127.0.0.1:{port}", calls, "srun_args go to the exporter step, not to the clock probe")
        self.assertTrue(os.path.exists(os.path.join(self.logs, "clock_sync_node0.out")))
        with open(os.path.join(self.logs, "telemetry_dcgm_exporter.g1.out")) as f:
            self.assertIn("serving 1 GPU", f.read())
        self.assertTrue(port_is_closed(port))

    def test_an_unverified_clock_taints_best_effort_and_aborts_required(self):
        env = self.fake_tools(
            timedatectl="echo no",
            chronyc="echo '506 Cannot talk to daemon'; exit 1",
            ntpq="echo '     remote  refid  st t when poll reach delay offset jitter'; "
                 "echo '====='; echo ' 10.0.0.1  .INIT.  16 u - 64 0 0.0 0.0 0.0'; echo '***Request timed out'")
        with Exporter("--simulate", "1xH200") as e:
            cfg = self.write_config(config_text([("node0", e.port, "/metrics")], [("node0", [0], "agg", 0, 0)],
                                                concurrencies=(4,), required=False, clock_sync=True))
            p = self.collect(cfg, "sh", "-c", window_cmd(4, 2), env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = self.manifest()
            self.assertIn("clock_sync_unverified", m["gpulse_reason_codes"])
            self.assertNotIn("clock_sync_unverified", m["reason_codes"])
            self.assertFalse(m["publication_valid"])
            self.assertEqual(m["status"], "complete")
            [failure] = m["clock_sync_failures"]
            self.assertEqual(failure["detail"], "timedatectl: NTPSynchronized=no; chronyc: exit code 1: 506 Cannot "
                                                "talk to daemon; ntpq: no system peer (no line starting with '*' or "
                                                "'o')")
            self.assertEqual(m["clock_sync_checked"], [failure["hostname"]])
            self.assertIn(f"clock_sync_check: {failure['hostname']} UNVERIFIED", p.stderr)
            validate(m, "power-manifest.schema.json")
            v = self.validate_power()
            self.assertEqual(v.returncode, 1, "never publishable")

            self.tmp.cleanup()
            os.makedirs(os.path.join(self.logs, "results"))
            env = self.fake_tools(timedatectl="echo no")
            marker = os.path.join(self.dir, "ran")
            cfg = self.write_config(config_text([("node0", e.port, "/metrics")], [("node0", [0], "agg", 0, 0)],
                                                concurrencies=(4,), required=True, clock_sync=True))
            p = self.collect(cfg, "touch", marker, env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn("NTP synchronisation could not be verified", p.stderr)
        self.assertIn("nothing was started", p.stderr)
        self.assertFalse(os.path.exists(marker), "required telemetry aborts before the benchmark")
        self.assertFalse(os.path.exists(self.power), "and before the package")


class Config(CollectTestCase):
    def test_invalid_values_are_rejected_before_anything_starts(self):
        base = config_text([("a", 9400, "/metrics")], [("a", [0], "agg", 0, 0)])
        cases = [  # (text in the base config, its bad replacement, the message)
            ("collect_interval_ms: 200", "collect_interval_ms: 3500", "exceeds the 3000 ms max sample gap"),
            ("storage_subdir: power", "storage_subdir: ../power", "safe relative path"),
            ("request_timeout_seconds: 1", "request_timeout_seconds: 1\n  collector_join_timeout_seconds: 6",
                                           "greater than two full collector cycles"),
            ("port: 9400\n", "port: 70000\n", "port must be in 1..65535"),
            ("container_image: gpulse", "container_image: ''", "container_image must be non-empty"),
            ("worker_role: agg", "worker_role: boss", "worker_role must be one of"),
            ("concurrencies: [4, 8]", "concurrencies: [4, 4]", "unique positive benchmark.concurrencies"),
            ("startup_timeout_seconds: 15", "startup_timeout_seconds: -1", "must be finite, positive and at most 86400"),
            ("request_timeout_seconds: 1", "request_timeout_seconds: 2.4e77", "must be finite, positive and at most 86400"),
            ("enabled: true", "enabled: true\n  bogus: 1", "unknown key telemetry.bogus"),
            ('command: "gpulse exporter -a :{port}"', 'command: "gpulse exporter -a :{port}"\n    launch: docker',
                                                       "launch must be one of none, local, srun"),
            ("clock_sync_check: false", "clock_sync_check: maybe", "telemetry.clock_sync_check must be true or false"),
        ]
        for old, new, message in cases:
            with self.subTest(new=new):
                self.assertIn(old, base)
                cfg = self.write_config(base.replace(old, new, 1))
                p = self.collect(cfg, "true")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message, p.stderr)
                self.assertFalse(os.path.exists(self.power), "nothing starts on a bad config")


class WindowCommands(CollectTestCase):
    def env(self):
        windows = os.path.join(self.power, "windows")
        os.makedirs(windows, exist_ok=True)
        return dict(os.environ, GPULSE_MEASUREMENT_WINDOW_DIR=windows, GPULSE_RESULT_ROOT=self.logs)

    def test_begin_end_and_failed_run(self):
        env = self.env()
        result = os.path.join(self.logs, "results", "r1.json")
        with open(result, "w") as f:
            f.write('{"x": 1}')
        run = lambda *a: subprocess.run([GPULSE, "window", *a], capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(run("begin", "--concurrency", "2", "--result", result).returncode, 0)
        with open(os.path.join(self.power, "windows", "r1.json")) as f:
            self.assertEqual(json.load(f)["status"], "running")
        time.sleep(0.2)
        p = run("end", "--result", result)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.power, "windows", "r1.json")) as f:
            w = json.load(f)
        with open(result) as f:
            r = json.load(f)
        self.assertEqual(w["status"], "completed")
        self.assertGreater(w["duration"], 0.15)
        self.assertEqual((w["benchmark_start_time_unix"], w["benchmark_end_time_unix"], w["duration"]),
                         (r["benchmark_start_time_unix"], r["benchmark_end_time_unix"], r["duration"]))
        self.assertEqual(r["x"], 1)
        failed = os.path.join(self.logs, "results", "r2.json")
        p = run("run", "--concurrency", "3", "--result", failed, "--", "sh", "-c", "exit 5")
        self.assertEqual(p.returncode, 5)
        with open(os.path.join(self.power, "windows", "r2.json")) as f:
            w = json.load(f)
        self.assertEqual(w["status"], "failed")
        self.assertIn("status 5", w["reason"])
        validate(w, "power-window.schema.json")
        outside = run("run", "--concurrency", "3", "--result", "/tmp/elsewhere.json", "--", "true")
        self.assertEqual(outside.returncode, 2)
        self.assertIn("outside the result root", outside.stderr)
        # Right flags, missing windows directory: a failure (1) naming it, not a usage error (2).
        missing = os.path.join(self.dir, "no-such-windows")
        p = run("run", "--concurrency", "3", "--result", failed, "--windows-dir", missing, "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(missing, p.stderr)
        # Every file of a package has one mode: windows like samples.csv (mkstemp made them 0600).
        self.assertEqual(os.stat(os.path.join(self.power, "windows", "r2.json")).st_mode & 0o777, 0o644)

    def test_python_module(self):
        env = self.env()
        env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "contrib")
        code = ("import gpulse_window, json, os, time\n"
                "res = os.path.join(os.environ['GPULSE_RESULT_ROOT'], 'results', 'py.json')\n"
                "json.dump({'ok': True}, open(res, 'w'))\n"
                "with gpulse_window.MeasurementWindow('sa-bench', 16, res) as w:\n"
                "    time.sleep(0.1)\n"
                "assert gpulse_window.MeasurementWindow.create('sa-bench', 16, None) is None\n")
        p = subprocess.run(["/usr/bin/python3", "-c", code], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.power, "windows", "py.json")) as f:
            w = json.load(f)
        with open(os.path.join(self.logs, "results", "py.json")) as f:
            r = json.load(f)
        self.assertEqual(w["status"], "completed")
        self.assertEqual(w["duration"], r["duration"])
        validate(w, "power-window.schema.json")

    def test_two_results_with_one_file_name_are_refused_before_the_second_runs(self):
        """A window file is named after its result's stem: results/a/x.json and results/b/x.json would
        share windows/x.json, the second silently replacing the first. The second is refused (exit 2,
        both paths named) before its command runs; the first window stays as it was."""
        env = self.env()
        run = lambda *a: subprocess.run([GPULSE, "window", *a], capture_output=True, text=True, env=env, timeout=30)
        first, second = (os.path.join(self.logs, "results", d, "x.json") for d in ("a", "b"))
        for r in (first, second):
            os.makedirs(os.path.dirname(r))
        p = run("run", "--concurrency", "4", "--result", first, "--", "sh", "-c", f"echo '{{}}' > {first}")
        self.assertEqual(p.returncode, 0, p.stderr)
        wpath = os.path.join(self.power, "windows", "x.json")
        with open(wpath) as f:
            before = f.read()
        marker = os.path.join(self.dir, "second-ran")
        for verb in (("run", "--concurrency", "8", "--result", second, "--", "touch", marker),
                     ("begin", "--concurrency", "8", "--result", second)):
            p = run(*verb)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("results/a/x.json", p.stderr)
            self.assertIn("results/b/x.json has the same file name", p.stderr)
        self.assertFalse(os.path.exists(marker), "refused before the command starts")
        with open(wpath) as f:
            self.assertEqual(f.read(), before)
        # The same result again (a rerun, or `end` after `begin`) is that result's own window.
        p = run("run", "--concurrency", "4", "--result", first, "--", "sh", "-c", f"echo '{{}}' > {first}")
        self.assertEqual(p.returncode, 0, p.stderr)
        env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "contrib")
        code = ("import gpulse_window, json, sys\n"
                "json.dump({}, open(sys.argv[1], 'w'))\n"
                "with gpulse_window.MeasurementWindow('sa-bench', 8, sys.argv[1]):\n"
                "    open(sys.argv[2], 'w').close()\n")
        p = subprocess.run(["/usr/bin/python3", "-c", code, second, marker], env=env, capture_output=True,
                           text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("has the same file name", p.stderr)
        self.assertFalse(os.path.exists(marker), "the module refuses before the measured phase")

    def test_python_module_writes_0644_and_refuses_a_symlinked_windows_directory(self):
        # Issue 13: the module made window files with mkstemp (0600) and wrote through a windows/
        # that had become a link. Now the one mode, and the link refused with its path.
        env = self.env()
        env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "contrib")
        code = ("import gpulse_window, json, os, sys\n"
                "os.umask(0o077)\n"
                "res = os.path.join(os.environ['GPULSE_RESULT_ROOT'], 'results', 'm.json')\n"
                "json.dump({'ok': True}, open(res, 'w'))\n"
                "with gpulse_window.MeasurementWindow('sa-bench', 1, res, windows_dir=sys.argv[1]):\n"
                "    pass\n")
        windows = os.path.join(self.power, "windows")
        p = subprocess.run(["/usr/bin/python3", "-c", code, windows], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.stat(os.path.join(windows, "m.json")).st_mode & 0o777, 0o644)
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.makedirs(elsewhere)
        link = os.path.join(self.power, "windows-link")
        os.symlink(elsewhere, link)
        p = subprocess.run(["/usr/bin/python3", "-c", code, link], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"{link} is a symbolic link: refused", p.stderr)
        self.assertEqual(os.listdir(elsewhere), [], "nothing written through the link")


class HostileFiles(CollectTestCase):
    """Issue 13: gpulse collect and gpulse window write the package, the log directory and the window
    state only through real directories and files. A planted symbolic link (or FIFO) is refused with
    its path and a non-zero exit before anything starts, what it points at stays as it was, nothing
    already recorded is overwritten, and every artifact file is 0644 whatever the umask."""

    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.dir, "outside")
        os.makedirs(self.outside)
        self.precious = os.path.join(self.outside, "precious.txt")
        with open(self.precious, "w") as f:
            f.write("precious\n")
        self.marker = os.path.join(self.dir, "ran")

    def assert_untouched(self):
        with open(self.precious) as f:
            self.assertEqual(f.read(), "precious\n", "the link's target is unchanged")
        self.assertEqual(os.listdir(self.outside), ["precious.txt"], "nothing is created through a link")

    def assert_refused(self, p, path, problem="is a symbolic link"):
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"{path} {problem}", p.stderr)
        self.assert_untouched()
        self.assertFalse(os.path.exists(self.marker), "nothing starts")

    def config(self, subdir="power"):
        """Refused before any endpoint is polled: the port need not answer."""
        text = config_text([("node0", free_port(), "/metrics")], [("node0", [0], "agg", 0, 0)], concurrencies=(4,),
                           required=False, startup=1)
        return self.write_config(text.replace("storage_subdir: power", f"storage_subdir: {subdir}"))

    def fresh_logs(self):
        shutil.rmtree(self.logs)
        os.makedirs(os.path.join(self.logs, "results"))

    def test_planted_links_in_the_package_are_refused_and_their_targets_unchanged(self):
        cfg = self.config()
        for name in ("samples.csv", "scrape-timings.jsonl", "manifest.json", "windows"):
            with self.subTest(name=name):
                self.fresh_logs()
                os.makedirs(self.power)
                link = os.path.join(self.power, name)
                os.symlink(self.outside if name == "windows" else self.precious, link)
                p = self.collect(cfg, "touch", self.marker)
                self.assert_refused(p, link)
                self.assertTrue(os.path.islink(link), "the link itself is left for the operator to see")
                if name != "manifest.json":
                    self.assertFalse(os.path.exists(os.path.join(self.power, "manifest.json")), "no package starts")

    def test_a_fifo_or_a_previous_run_in_the_package_is_refused_at_once(self):
        cfg = self.config()
        self.fresh_logs()
        os.makedirs(self.power)
        os.mkfifo(os.path.join(self.power, "scrape-timings.jsonl"))
        t0 = time.monotonic()
        p = self.collect(cfg, "touch", self.marker, timeout=30)
        self.assertLess(time.monotonic() - t0, 10, "a FIFO is refused, not waited on")
        self.assert_refused(p, os.path.join(self.power, "scrape-timings.jsonl"), "is not a regular file")
        self.fresh_logs()
        os.makedirs(self.power)
        with open(os.path.join(self.power, "samples.csv"), "w") as f:
            f.write(HEADER + "\n1,1000.0,0,node0,0,GPU-a,100.0\n")
        p = self.collect(cfg, "touch", self.marker)
        self.assert_refused(p, os.path.join(self.power, "samples.csv"), "already exists")
        with open(os.path.join(self.power, "samples.csv")) as f:
            self.assertIn("GPU-a,100.0", f.read(), "rows already recorded are never truncated")

    def test_a_symlinked_storage_subdir_is_refused(self):
        for subdir, link in (("power", "power"), ("nest/power", "nest")):
            with self.subTest(subdir=subdir):
                self.fresh_logs()
                os.symlink(self.outside, os.path.join(self.logs, link))
                p = self.collect(self.config(subdir), "touch", self.marker)
                self.assert_refused(p, os.path.join(self.logs, link))

    def test_planted_links_in_the_log_directory_are_refused(self):
        cfg = self.config()
        for name in ("telemetry_dcgm_exporter.node0.out", f"clock_sync_{socket.gethostname()}.out"):
            with self.subTest(name=name):
                self.fresh_logs()
                link = os.path.join(self.logs, name)
                os.symlink(self.precious, link)
                p = self.collect(cfg, "touch", self.marker)
                self.assert_refused(p, link)
                self.assertFalse(os.path.exists(self.power), "no package is started")

    def window(self, *args, preexec=None):
        env = dict(os.environ, GPULSE_MEASUREMENT_WINDOW_DIR=os.path.join(self.power, "windows"),
                   GPULSE_RESULT_ROOT=self.logs)
        return subprocess.run([GPULSE, "window", *args], capture_output=True, text=True, env=env, timeout=30,
                              preexec_fn=preexec)

    def test_gpulse_window_refuses_a_symlinked_windows_directory_state_directory_or_window_file(self):
        result = os.path.join(self.logs, "results", "r1.json")
        with open(result, "w") as f:
            f.write('{"x": 1}')
        begin = ("begin", "--concurrency", "2", "--result", result)
        run = ("run", "--concurrency", "2", "--result", result, "--", "touch", self.marker)
        cases = {"windows": self.outside, ".gpulse-window-state": self.outside,
                 os.path.join("windows", "r1.json"): self.precious}
        for name, target in cases.items():
            for args in (begin, run):
                if name == ".gpulse-window-state" and args is run:
                    continue  # `run` keeps no state
                with self.subTest(link=name, command=args[0]):
                    shutil.rmtree(self.power, ignore_errors=True)
                    os.makedirs(os.path.join(self.power, "windows"))
                    link = os.path.join(self.power, name)
                    if os.path.isdir(link):
                        os.rmdir(link)
                    os.symlink(target, link)
                    p = self.window(*args)
                    self.assert_refused(p, link)
        # end: the windows directory is opened before the result file is stamped.
        shutil.rmtree(self.power)
        os.makedirs(os.path.join(self.power, "windows"))
        self.assertEqual(self.window(*begin, preexec=lambda: os.umask(0o077)).returncode, 0)
        for f in (os.path.join(self.power, ".gpulse-window-state", "r1.json"),
                  os.path.join(self.power, "windows", "r1.json")):
            self.assertEqual(oct(os.stat(f).st_mode & 0o777), "0o644", f)
        os.rename(os.path.join(self.power, "windows"), os.path.join(self.power, "windows.real"))
        os.symlink(self.outside, os.path.join(self.power, "windows"))
        p = self.window("end", "--result", result)
        self.assert_refused(p, os.path.join(self.power, "windows"))
        with open(result) as f:
            self.assertEqual(json.load(f), {"x": 1}, "the result file is not stamped for a refused window")

    def test_a_symlinked_result_file_is_not_stamped_through(self):
        os.makedirs(os.path.join(self.power, "windows"))
        real = os.path.join(self.logs, "results", "real.json")
        with open(real, "w") as f:
            f.write('{"x": 1}')
        link = os.path.join(self.logs, "results", "r1.json")
        os.symlink(real, link)
        p = self.window("run", "--concurrency", "2", "--result", link, "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(real) as f:
            self.assertEqual(json.load(f), {"x": 1})
        self.assertTrue(os.path.islink(link))
        [name] = os.listdir(os.path.join(self.power, "windows"))
        with open(os.path.join(self.power, "windows", name)) as f:
            w = json.load(f)
        self.assertEqual(w["status"], "failed")
        self.assertIn(f"{link} is a symbolic link", w["reason"])

    def test_every_artifact_file_is_0644_under_a_strict_umask(self):
        self.scenario("node0")
        command = f"{GPULSE} exporter --simulate {self.dir}/{{hostname}}.yaml -a 127.0.0.1:{{port}}"
        cfg = self.write_config(config_text([("node0", free_port(), "/metrics")], [("node0", [0], "agg", 0, 0)],
                                            concurrencies=(4,), launch="local", command=command, clock_sync=True))
        p = self.collect(cfg, "sh", "-c", window_cmd(4, 2), env=self.synced_clock(), preexec=lambda: os.umask(0o077))
        self.assertEqual(p.returncode, 0, p.stderr)
        files = [os.path.join(root, n) for root, _, names in os.walk(self.power) for n in names]
        files += [os.path.join(self.logs, n) for n in os.listdir(self.logs) if n.endswith(".out")]
        files.append(os.path.join(self.logs, "results", "sa-bench-c4.json"))  # stamped by gpulse window
        names = sorted(os.path.relpath(f, self.logs) for f in files)
        for expected in ("power/manifest.json", "power/samples.csv", "power/scrape-timings.jsonl",
                         "power/windows/sa-bench-c4.json", "telemetry_dcgm_exporter.node0.out"):
            self.assertIn(expected, names)
        self.assertTrue(any(n.startswith("clock_sync_") for n in names), names)
        modes = {os.path.relpath(f, self.logs): oct(os.stat(f).st_mode & 0o777) for f in files}
        self.assertEqual(modes, {n: "0o644" for n in modes})


if __name__ == "__main__":
    unittest.main()
