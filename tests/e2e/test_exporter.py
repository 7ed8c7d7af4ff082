"""`gpulse exporter` end to end: golden expositions per scenario (checked by promtool and parsed by
python3-prometheus-client), the live endpoints, lost GPUs and XID counters, reload, signals, bad
input. The Prometheus, TLS and basic-auth tests are in test_exporter_prometheus.py and
test_exporter_security.py."""
import gzip
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from exporter_e2e import GOLDEN_DIR, Exporter, golden_exposition, mask, parse_families
from gpulse_e2e import BUILTIN_SCENARIOS, SOURCE_DIR, GpulseTestCase, run, validate

DEFAULT_FAMILIES = [
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    # Commented out in dcgm-exporter's file; in gpulse's for the shipped alerts (issue 40).
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
]  # DCGM_FI_DEV_XID_ERRORS is absent until a GPU raises an XID (missing is not zero); the retired
# pages (DCGM_FI_DEV_RETIRED_*) are pre-Ampere: H100s remap rows instead and have no such series
DCGM_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"]

# promtool lints dcgm-exporter's own conventions, which a drop-in replacement must keep: camelCase
# label names (UUID, modelName, Hostname) and counters without _total. Anything else it says fails.
PROMTOOL_ALLOWED = [
    re.compile(r"^(DCGM_FI_\w+|gpulse_device_info|gpulse_xid_errors_total|gpulse_gpu_recommended_action) label names should be written in "
               r"'snake_case' not 'camelCase'$"),
    re.compile(r"^DCGM_FI_\w+ counter metrics should have \"_total\" suffix$"),
    re.compile(r"^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$"),
]


def golden_path(scenario):
    return os.path.join(GOLDEN_DIR, scenario + ".prom")


def sample_lines(text, family):
    return [l for l in text.splitlines() if l.startswith(family + "{") or l.startswith(family + " ")]


class GoldenTest(GpulseTestCase):
    def test_golden_files_match_every_scenario(self):
        """Regenerate with GPULSE_UPDATE_GOLDEN=1 after a deliberate change, and review the diff."""
        for scenario in BUILTIN_SCENARIOS:
            with self.subTest(scenario=scenario):
                got = mask(golden_exposition(scenario))
                if os.environ.get("GPULSE_UPDATE_GOLDEN") == "1":
                    with open(golden_path(scenario), "w", encoding="utf-8") as f:
                        f.write(got)
                with open(golden_path(scenario), encoding="utf-8") as f:
                    self.assertEqual(got, f.read(), f"exposition of {scenario} differs from its golden file")

    def test_promtool_reports_nothing_beyond_dcgm_exporter_conventions(self):
        for scenario in BUILTIN_SCENARIOS:
            with self.subTest(scenario=scenario):
                text = golden_exposition(scenario)
                p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                                   timeout=60)
                self.assertIn(p.returncode, (0, 3), f"promtool could not parse it: {p.stdout}{p.stderr}")
                problems = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
                unexpected = [l for l in problems if not any(r.match(l) for r in PROMTOOL_ALLOWED)]
                self.assertEqual(unexpected, [], "promtool problems")
                self.assertFalse([l for l in problems if l.startswith("gpulse_") and "camelCase" not in l])

    def test_prometheus_client_parses_every_golden_file(self):
        for scenario in BUILTIN_SCENARIOS:
            with self.subTest(scenario=scenario):
                with open(golden_path(scenario), encoding="utf-8") as f:
                    text = f.read().replace("<varies>", "0").replace("<commit>", "c")
                families = parse_families(text)
                self.assertIn("gpulse_build_info", families)
                self.assertIn("gpulse_backend_up", families)

    def test_8xh100_serves_every_default_counter_for_8_gpus_with_dcgm_labels(self):
        text = golden_exposition("8xH100")
        families = parse_families(text)
        for name in DEFAULT_FAMILIES:
            self.assertIn(name, families)
            self.assertEqual(len(families[name]), 8, name)
            self.assertEqual(sorted(l["gpu"] for l, _ in families[name]), [str(i) for i in range(8)])
        first = sample_lines(text, "DCGM_FI_DEV_GPU_UTIL")[0]
        names = re.findall(r'([A-Za-z_]+)="', first)
        self.assertEqual(names, DCGM_LABELS, "dcgm-exporter's label order")
        for labels, value in families["DCGM_FI_DEV_FB_USED"]:
            self.assertEqual(labels["modelName"], "NVIDIA H100 80GB HBM3")
            self.assertEqual(labels["device"], "nvidia" + labels["gpu"])
            self.assertEqual(labels["DCGM_FI_DRIVER_VERSION"], "550.54.15")
            self.assertEqual(value, 74210)
        self.assertRegex(sample_lines(text, "DCGM_FI_DEV_POWER_USAGE")[0], r"\} \d+\.\d{6}$", "%f like DCGM")
        self.assertNotIn("9223372036854775794", text)

    def test_faults_absent_readings_have_no_series(self):
        families = parse_families(golden_exposition("faults"))
        energy_gpus = sorted(l["gpu"] for l, _ in families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])
        self.assertEqual(energy_gpus, ["0"], "GPU 2's energy is NOT_SUPPORTED, 1 and 3 were not readable at start")
        self.assertEqual(sorted(l["gpu"] for l, _ in families["DCGM_FI_DEV_GPU_UTIL"]), ["0", "2"])

    def test_mig_parent_is_one_gpu_without_utilization(self):
        families = parse_families(golden_exposition("mig-a100"))
        self.assertEqual(sorted(l["gpu"] for l, _ in families["DCGM_FI_DEV_GPU_UTIL"]), ["1"],
                         "a MIG-enabled GPU reports no utilization; no zero is invented")
        self.assertEqual(sorted(l["gpu"] for l, _ in families["DCGM_FI_DEV_POWER_USAGE"]), ["0", "1"])

    def test_no_hostname_and_counters_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            with open(path, "w") as f:
                f.write("# two fields\nDCGM_FI_DEV_POWER_USAGE, gauge, Power\nDCGM_FI_NVML_VERSION, label, n\n")
            text = golden_exposition("1xH200", "-n", "-f", path)
        self.assertNotIn("Hostname", text)
        self.assertEqual([l for l in text.splitlines() if l.startswith("# TYPE DCGM")],
                         ["# TYPE DCGM_FI_DEV_POWER_USAGE gauge"])
        self.assertIn('DCGM_FI_NVML_VERSION="12.550.54.15"', text)

    def test_deploy_default_counters_is_the_built_in_set(self):
        p = self.run_ok("exporter", "--print-counters")
        with open(os.path.join(SOURCE_DIR, "deploy", "default-counters.csv"), encoding="utf-8") as f:
            self.assertEqual(f.read(), p.stdout, "regenerate with `gpulse exporter --print-counters`")


class LiveTest(GpulseTestCase):
    def test_endpoints(self):
        with Exporter("--simulate", "8xH100") as e:
            status, headers, body = e.get("/metrics")
            self.assertEqual(status, 200)
            self.assertEqual(headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
            text = body.decode()
            self.assertEqual(len(sample_lines(text, "DCGM_FI_DEV_GPU_TEMP")), 8)
            status, headers, body = e.get("/metrics", {"Accept-Encoding": "gzip"})
            self.assertEqual(headers.get("Content-Encoding"), "gzip")
            self.assertEqual(headers.get("Vary"), "Accept-Encoding")
            unzipped = gzip.decompress(body).decode()  # checks the CRC-32 and the length
            self.assertIn("DCGM_FI_DEV_GPU_TEMP", unzipped)
            # The kept body's pieces and the scrape's own (ages, live-view counters): every family
            # of the earlier plain answer (a later read may add rates, which need two reads).
            families = lambda t: {l for l in t.splitlines() if l.startswith("# TYPE")}
            self.assertLessEqual(families(text), families(unzipped))
            self.assertEqual(len(sample_lines(unzipped, "gpulse_device_sample_age_seconds")), 8)
            self.assertIn("\ngpulse_live_viewers_refused_total 0\n", unzipped)
            self.assertIn("\nprocess_resident_memory_bytes ", unzipped)  # the exporter's own, last
            self.assertTrue(unzipped.endswith('gpulse_web_config_reloads_total{result="failure"} 0\n'),
                            unzipped[-200:])
            status, _, body = e.get("/health")
            self.assertEqual((status, body.decode().strip()), (200, "ok"))
            status, headers, body = e.get("/api/v1/devices")
            self.assertEqual(status, 200)
            devices = json.loads(body)
            validate(devices, "exporter-devices.schema.json")
            self.assertEqual(len(devices["devices"]), 8)
            status, _, body = e.get("/api/v1/snapshot")
            snap = json.loads(body)
            validate(snap, "exporter-snapshot.schema.json")
            self.assertEqual(snap["devices"][0]["fields"]["DCGM_FI_DEV_FB_USED"], 74210)
            status, headers, body = e.get("/")
            self.assertEqual(status, 200)
            self.assertIn('href="metrics"', body.decode())
            self.assertEqual(e.get("/nope")[0], 404)
            self.assertEqual(e.stop(), 0, "SIGTERM drains and exits 0")

    def test_lost_gpu_and_xid_counters(self):
        with Exporter("--simulate", "faults", "--min-refresh-ms", "0") as e:
            deadline = time.monotonic() + 30
            families = {}
            while time.monotonic() < deadline:
                families = parse_families(e.get("/metrics")[2].decode())
                lost = {l["gpu"]: v for l, v in families.get("gpulse_device_lost", [])}
                if lost.get("3") == 1:
                    break
                time.sleep(0.1)
            self.assertEqual(lost, {"0": 0, "2": 0, "3": 1})
            for name in DEFAULT_FAMILIES:
                self.assertFalse([l for l, _ in families.get(name, []) if l["gpu"] == "3"], name)
            # The XID 79 raised at the loss is counted, and the lost GPU's counter stays.
            xids = {(l["gpu"], l["xid"]): v for l, v in families["gpulse_xid_errors"]}
            self.assertEqual(xids, {("0", "94"): 1, ("3", "79"): 1})
            self.assertEqual([v for l, v in families["DCGM_FI_DEV_XID_ERRORS"]], [94])
            status, _, body = e.get("/health")
            self.assertEqual(status, 503, body)
            self.assertIn(b"GPU 3", body)
            self.assertIn(b"lost", body)
            devices = json.loads(e.get("/api/v1/devices")[2])
            validate(devices, "exporter-devices.schema.json")
            self.assertEqual([d["lost"] for d in devices["devices"]], [False, False, True])
            self.assertEqual([s["gpu"] for s in devices["skipped"]], [1])
            snap = json.loads(e.get("/api/v1/snapshot")[2])
            validate(snap, "exporter-snapshot.schema.json")
            self.assertEqual(snap["devices"][2]["state"], "lost")
            self.assertIsNone(snap["devices"][1]["fields"]["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"], "NOT_SUPPORTED is null")

    def test_concurrent_scrapes_share_reads(self):
        with Exporter("--simulate", "8xH100", "--min-refresh-ms", "60000") as e:
            durations = set()
            for _ in range(5):
                fams = parse_families(e.get("/metrics")[2].decode())
                durations.add(fams["gpulse_scrape_duration_seconds"][0][1])
            self.assertEqual(len(durations), 1, "within --min-refresh-ms every scrape is served by one read")

    def test_reload_with_bad_file_keeps_serving_then_good_file_applies(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "counters.csv")
            with open(path, "w") as f:
                f.write("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n")
            with Exporter("--simulate", "1xH200", "-f", path, "--min-refresh-ms", "0") as e:
                self.assertIn("DCGM_FI_DEV_GPU_TEMP", e.get("/metrics")[2].decode())
                with open(path, "w") as f:
                    f.write("DCGM_FI_DEV_POWER_USAGE, gauge, power\nDCGM_FI_DEV_BOGUS, gauge, x\n")
                e.signal(signal.SIGHUP)
                line = e.read_stderr_line()
                self.assertIn("reload failed", line)
                self.assertIn(f"{path}:2: unknown field \"DCGM_FI_DEV_BOGUS\"", line)
                text = e.get("/metrics")[2].decode()
                self.assertIn("DCGM_FI_DEV_GPU_TEMP", text, "the previous set is still served")
                self.assertNotIn("DCGM_FI_DEV_POWER_USAGE", text)
                with open(path, "w") as f:
                    f.write("DCGM_FI_DEV_POWER_USAGE, gauge, power\n")
                e.signal(signal.SIGHUP)
                self.assertIn("reloaded", e.read_stderr_line())
                text = e.get("/metrics")[2].decode()
                self.assertIn("DCGM_FI_DEV_POWER_USAGE", text)
                self.assertNotIn("DCGM_FI_DEV_GPU_TEMP", text)
                # A FIFO planted in the file's place is refused at once, never waited on: the
                # server keeps answering with the previous set (it used to stall /metrics).
                os.remove(path)
                os.mkfifo(path)
                e.signal(signal.SIGHUP)
                line = e.read_stderr_line()
                self.assertIn("reload failed", line)
                self.assertIn("is not a regular file", line)
                self.assertIn("DCGM_FI_DEV_POWER_USAGE", e.get("/metrics")[2].decode())


class BadInputTest(GpulseTestCase):
    def test_bad_counters_file_names_file_and_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            with open(path, "w") as f:
                f.write("# ok\nDCGM_FI_DEV_GPU_TEMP, gauge\n")
            p = run("exporter", "--simulate", "1xH200", "-f", path, "--once")
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"{path}:2: expected 3 comma-separated fields", p.stderr)
            p = run("exporter", "--simulate", "1xH200", "-f", os.path.join(d, "missing.csv"), "--once")
            self.assertEqual(p.returncode, 2)
            self.assertIn("cannot be read", p.stderr)

    def test_bad_flags_and_web_config_exit_2_busy_address_exits_1(self):
        self.assertEqual(run("exporter", "--min-refresh-ms", "-5").returncode, 2)
        self.assertEqual(run("exporter", "--hostname", "x", "--no-hostname", "--once").returncode, 2)
        p = run("exporter", "--simulate", "1xH200", "-a", "nonsense")
        self.assertEqual(p.returncode, 2)
        self.assertIn("address \"nonsense\"", p.stderr)
        with tempfile.TemporaryDirectory() as d:
            web = os.path.join(d, "web.yml")
            with open(web, "w") as f:
                f.write("basic_auth_users:\n  alice: plaintext\n")
            p = run("exporter", "--simulate", "1xH200", "-a", "127.0.0.1:0", "--web-config-file", web)
            self.assertEqual(p.returncode, 2)
            self.assertIn("not a bcrypt hash", p.stderr)
        with Exporter("--simulate", "1xH200") as e:
            p = run("exporter", "--simulate", "1xH200", "-a", f"127.0.0.1:{e.port}")
            self.assertEqual(p.returncode, 1)
            self.assertIn("cannot bind", p.stderr)


if __name__ == "__main__":
    unittest.main()


class DeployTest(GpulseTestCase):
    """deploy/ files are checked by the tools that will read them."""

    def deploy(self, *parts):
        return os.path.join(SOURCE_DIR, "deploy", *parts)

    def test_prometheus_config_and_rules_pass_promtool(self):
        # The config loads both rule files (checked with it); tests/e2e/test_deploy_rules.py runs
        # their unit tests and checks them against real expositions.
        for args in (["check", "rules", self.deploy("prometheus", "gpulse-rules.yml"),
                      self.deploy("prometheus", "gpulse-alerts.yml")],
                     ["check", "config", self.deploy("prometheus", "prometheus.yml")]):
            p = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_kubernetes_manifests_agree_on_port_and_labels(self):
        import yaml
        docs = {}
        for name, where in (("daemonset", "base"), ("service", "base"),
                            ("servicemonitor", os.path.join("overlays", "servicemonitor"))):
            with open(self.deploy("kubernetes", where, name + ".yaml")) as f:
                docs[name] = yaml.safe_load(f)
        ds, svc, sm = docs["daemonset"], docs["service"], docs["servicemonitor"]
        self.assertEqual(ds["kind"], "DaemonSet")
        container = ds["spec"]["template"]["spec"]["containers"][0]
        # The image's entrypoint runs: `gpulse exporter` (deploy/container/Containerfile).
        self.assertNotIn("command", container)
        self.assertNotIn("args", container)
        with open(self.deploy("container", "Containerfile")) as f:
            self.assertIn('ENTRYPOINT ["/usr/bin/gpulse", "exporter"]', f.read())
        self.assertEqual(container["ports"][0]["containerPort"], 9400)
        # TCP probes on the metrics port: they work with basic auth on (issue 20).
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(container[probe]["tcpSocket"]["port"], container["ports"][0]["name"])
        self.assertEqual(svc["spec"]["selector"], ds["spec"]["selector"]["matchLabels"])
        self.assertEqual(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
        self.assertEqual(sm["spec"]["endpoints"][0]["port"], svc["spec"]["ports"][0]["name"])

    def test_systemd_unit_runs_the_exporter_and_reloads_with_sighup(self):
        with open(self.deploy("systemd", "gpulse-exporter.service")) as f:
            unit = f.read()
        self.assertRegex(unit, r"(?m)^ExecStart=\S*gpulse exporter ")
        self.assertRegex(unit, r"(?m)^ExecReload=/bin/kill -HUP \$MAINPID$")
