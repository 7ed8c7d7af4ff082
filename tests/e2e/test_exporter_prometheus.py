"""A real Prometheus (Debian's prometheus package) on loopback scrapes two gpulse exporters and
evaluates the recording and alerting rules in deploy/ (every rule without an evaluation error); the
test checks through Prometheus's HTTP query API that the series arrive with dcgm-exporter's labels
and the simulator's values, and that every expression of the Grafana dashboard evaluates. Everything
runs on 127.0.0.1 with ports picked at run time and temporary config and data directories;
Prometheus is stopped at the end."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from exporter_e2e import Exporter
from gpulse_e2e import SOURCE_DIR, GpulseTestCase


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A real Prometheus scraping `targets` as job "gpu" every second, evaluating `rule_files` (a
    path or a list of paths); `scrape` adds keys to that scrape config (scheme, tls_config,
    basic_auth, ...)."""

    def __init__(self, targets, rule_files=None, scrape=None):
        self.dir = tempfile.mkdtemp(prefix="gpulse-prom-")
        job = {"job_name": "gpu", "static_configs": [{"targets": targets}]}
        job.update(scrape or {})
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [job],
        }
        if rule_files is not None:
            paths = [rule_files] if isinstance(rule_files, str) else list(rule_files)
            config["rule_files"] = []
            for i, path in enumerate(paths):
                shutil.copy(path, os.path.join(self.dir, f"rules-{i}.yml"))
                config["rule_files"].append(f"rules-{i}.yml")
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.dir}/prometheus.yml", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, expr):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    def wait_for(self, expr, count, timeout=90):
        """The result vector of `expr` once it has `count` series (polls; bounded)."""
        deadline = time.monotonic() + timeout
        result = []
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited: " + open(self.log.name).read())
            try:
                result = self.query(expr)["data"]["result"]
                if len(result) >= count:
                    return result
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        raise AssertionError(f"{expr}: {len(result)} series after {timeout} s, wanted {count}")

    def wait_values(self, expr, key, want, timeout=90):
        """{series[key]: value} of `expr` once it equals `want` (rules catch up a tick after scrapes)."""
        deadline = time.monotonic() + timeout
        got = {}
        while time.monotonic() < deadline:
            try:
                got = {r["metric"].get(key, ""): float(r["value"][1]) for r in self.query(expr)["data"]["result"]}
                if got == want:
                    return got
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{expr}: {got} after {timeout} s, wanted {want}")

    def wait_rules_healthy(self, timeout=90):
        """Every rule of every loaded group evaluated without error (GET /api/v1/rules)."""
        deadline = time.monotonic() + timeout
        bad = {}
        while time.monotonic() < deadline:
            url = f"http://127.0.0.1:{self.port}/api/v1/rules"
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    groups = json.loads(r.read())["data"]["groups"]
                rules = {rule["name"]: (rule["health"], rule.get("lastError", ""))
                         for g in groups for rule in g["rules"]}
                bad = {n: h for n, h in rules.items() if h[0] != "ok"}
                if rules and not bad:
                    return rules
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"rules not all evaluated without error after {timeout} s: {bad}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrometheusScrapesExportersTest(GpulseTestCase):
    def test_prometheus_sees_both_exporters_with_dcgm_labels_and_rules(self):
        with Exporter("--simulate", "8xH100", "--hostname", "node-a") as a, \
             Exporter("--simulate", "mig-a100", "--hostname", "node-b") as b:
            prom = Prometheus([f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"],
                              [os.path.join(SOURCE_DIR, "deploy", "prometheus", name)
                               for name in ("gpulse-rules.yml", "gpulse-alerts.yml")])
            try:
                self.check(prom, a, b)
            finally:
                prom.stop()

    def check(self, prom, a, b):
        up = prom.wait_for('up{job="gpu"} == 1', 2)
        self.assertEqual(len(up), 2)
        temps = prom.wait_for("DCGM_FI_DEV_GPU_TEMP", 10)
        self.assertEqual(len(temps), 10, "8 + 2 GPUs")
        fb = prom.wait_for('DCGM_FI_DEV_FB_USED{Hostname="node-a",gpu="3"}', 1)[0]
        m = fb["metric"]
        for label in ("UUID", "pci_bus_id", "device", "modelName", "DCGM_FI_DRIVER_VERSION", "instance", "job"):
            self.assertIn(label, m)
        self.assertEqual(m["device"], "nvidia3")
        self.assertEqual(m["modelName"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(float(fb["value"][1]), 74210.0, "the simulator's constant memory use")
        devices = json.loads(a.get("/api/v1/devices")[2])
        self.assertEqual(m["UUID"], devices["devices"][3]["uuid"])
        util = prom.wait_for('DCGM_FI_DEV_GPU_UTIL{Hostname="node-b"}', 1)
        self.assertEqual([u["metric"]["gpu"] for u in util], ["1"], "the MIG-enabled GPU reports no utilization")
        self.check_mig(prom, b)
        prom.wait_values("cluster:gpu_count:sum", "", {"": 10})
        prom.wait_values("cluster_model:gpu_count:sum", "modelName",
                         {"NVIDIA H100 80GB HBM3": 8, "NVIDIA A100-SXM4-40GB": 2})
        prom.wait_values("node:gpu_count:sum", "Hostname", {"node-a": 8, "node-b": 2})
        # The MIG-enabled A100 (no utilization, no profiling before Hopper) has no compute reading:
        # the compute ratio leaves it out, above and below the line; it still counts as a GPU.
        prom.wait_values("count by (Hostname) (gpu:gpu_compute_used:ratio)", "Hostname", {"node-a": 8, "node-b": 1})
        prom.wait_values('gpu:gpu_memory_used_bytes:sum{Hostname="node-b"}', "gpu",
                         {"0": (15210 + 6100 + 3050) * 1048576, "1": 31800 * 1048576})
        rules = prom.wait_rules_healthy()
        self.assertIn("GpuNvlinkErrors", rules)
        self.assertIn("cluster:gpu_compute_used:ratio", rules)
        ratio = float(prom.wait_for("cluster:gpu_memory_used:ratio", 1)[0]["value"][1])
        self.assertGreater(ratio, 0.5)
        self.assertLess(ratio, 1.0)
        self.check_dashboard(prom)
        self.check_nvidia_dashboard(prom)

    # The queries of NVIDIA's own Grafana dashboard for dcgm-exporter (grafana/dcgm-exporter-dashboard.json
    # in NVIDIA/dcgm-exporter), its $instance and $gpu variables set to "all". Each must find series on
    # gpulse as it does on dcgm-exporter: the tensor panel was empty before GPM (issue 15).
    NVIDIA_DASHBOARD = {
        "GPU Temperature": 'DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}',
        "GPU Avg. Temp": 'avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})',
        "GPU Power Usage": 'DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}',
        "GPU Power Total": 'sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})',
        "GPU SM Clocks": 'DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000',
        "GPU Utilization": 'DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"}',
        "GPU Framebuffer Mem Used": 'DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"}',
        "Tensor Core Utilization": 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"}',
        # The dashboard's variables: label_values(DCGM_FI_DEV_GPU_TEMP, instance) and (..., gpu).
        "variable instance": "count by (instance) (DCGM_FI_DEV_GPU_TEMP)",
        "variable gpu": "count by (gpu) (DCGM_FI_DEV_GPU_TEMP)",
    }

    def check_nvidia_dashboard(self, prom):
        for panel, expr in self.NVIDIA_DASHBOARD.items():
            expr = expr.replace("$instance", ".*").replace("$gpu", ".*")
            with self.subTest(panel=panel, expr=expr):
                self.assertTrue(prom.wait_for(expr, 1), "NVIDIA's dashboard query finds series")
        tensor = prom.wait_for('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname="node-a"}', 8)
        self.assertEqual(len(tensor), 8, "every H100 has a tensor series (the A100s have no GPM)")

    def check_mig(self, prom, b):
        # One memory series per MIG GPU instance, with dcgm-exporter's labels; the MIG-enabled parent
        # keeps its device-level readings once and leaves memory to its instances (no double count).
        fb = prom.wait_for('DCGM_FI_DEV_FB_USED{Hostname="node-b",gpu="0"}', 4)
        by_gi = {f["metric"]["GPU_I_ID"]: (f["metric"]["GPU_I_PROFILE"], float(f["value"][1])) for f in fb}
        self.assertEqual(by_gi, {"2": ("3g.20gb", 15210.0), "3": ("2g.10gb", 6100.0),
                                 "9": ("1g.5gb", 3050.0), "10": ("1g.5gb", 0.0)})
        power = prom.wait_for('DCGM_FI_DEV_POWER_USAGE{Hostname="node-b",gpu="0"}', 1)
        self.assertEqual(len(power), 1, "device-level power once, on the parent")
        self.assertNotIn("GPU_I_ID", power[0]["metric"])
        snap = json.loads(b.get("/api/v1/snapshot")[2])
        parent = [d for d in snap["devices"] if d["gpu"] == 0 and d["kind"] == "gpu"][0]
        self.assertLessEqual(sum(v for _, v in by_gi.values()), parent["fields"]["DCGM_FI_DEV_FB_USED"])
        total = prom.wait_for('sum(DCGM_FI_DEV_FB_USED{Hostname="node-b"})', 1)[0]
        self.assertEqual(float(total["value"][1]), 24360.0 + 31800.0, "each MiB counted once")

    def check_dashboard(self, prom):
        with open(os.path.join(SOURCE_DIR, "deploy", "grafana", "gpulse-dashboard.json")) as f:
            dash = json.load(f)
        for panel in dash["panels"]:
            for target in panel["targets"]:
                expr = target["expr"].replace("$hostname", ".*").replace("$__rate_interval", "1m")
                with self.subTest(panel=panel["title"], expr=expr):
                    r = prom.query(expr)
                    self.assertEqual(r["status"], "success")
                    if "gpulse_xid_errors_total" not in expr:  # no XID in these scenarios: no series
                        # rate() needs two scrapes and recorded series one rule evaluation: poll.
                        self.assertTrue(prom.wait_for(expr, 1), "the dashboard's query finds series")


if __name__ == "__main__":
    unittest.main()


class PodRulesTest(GpulseTestCase):
    """The pod-level recording rules of deploy/ on a Kubernetes node (issue 20): gpulse -k against a
    fake kubelet (fake_kubelet.py) on the k8s-8xH100 scenario; each pod's rules answer with its
    GPUs and its own processes' memory, a time-sliced GPU counted once per pod."""

    def test_pod_rules_answer_for_every_pod(self):
        from fake_kubelet import FakeKubelet
        from test_exporter_kubernetes import PROCFS, gpu_uuids, node_pods
        mib = 1 << 20
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "kubelet.sock")
            with FakeKubelet(sock, node_pods(gpu_uuids("k8s-8xH100"))), \
                 Exporter("--simulate", "k8s-8xH100", "--procfs-root", PROCFS, "--hostname", "node-k",
                          "-k", "--pod-resources-kubelet-socket", sock) as e:
                prom = Prometheus([f"127.0.0.1:{e.port}"],
                                  os.path.join(SOURCE_DIR, "deploy", "prometheus", "gpulse-rules.yml"))
                try:
                    prom.wait_values("pod:gpu_count:sum", "pod",
                                     {"train-0": 4, "vllm-0": 2, "embed-0": 1, "batch-0": 1})
                    prom.wait_values("pod:gpu_memory_used_bytes:sum", "pod",
                                     {"train-0": 4 * 70000 * mib, "vllm-0": 60000 * mib, "embed-0": 12000 * mib,
                                      "batch-0": 20000 * mib})
                    prom.wait_values("pod:gpu_compute_used_gpus:sum", "pod",
                                     {"train-0": (93 + 94 + 92 + 95) / 100, "vllm-0": (45 + 43) / 100,
                                      "embed-0": 0.3, "batch-0": 1.0})
                    # Each pod's own memory of the GPUs it holds (81559 MiB each): embed-0's 12000
                    # MiB of the time-sliced GPU 4, not GPU 4's whole 42300 MiB (0.52).
                    prom.wait_values("pod:gpu_memory_used:ratio", "pod",
                                     {"train-0": 4 * 70000 * mib / (4 * 81559 * mib), "vllm-0": 60000 / (2 * 81559),
                                      "embed-0": 12000 * mib / (81559 * mib), "batch-0": 20000 * mib / (81559 * mib)})
                    prom.wait_values("pod:gpu_compute_used:ratio", "pod",
                                     {"train-0": (93 + 94 + 92 + 95) / 100 / 4, "vllm-0": (45 + 43) / 100 / 2,
                                      "embed-0": 30 / 100 / 1, "batch-0": 100 / 100 / 1})
                    prom.wait_values("cluster:gpu_count:sum", "", {"": 8})  # GPUs 4 and 6 once each
                    power = prom.wait_for("pod:gpu_power_watts:sum", 4)
                    self.assertEqual({p["metric"]["namespace"] for p in power}, {"ml", "serving", "batch"})
                finally:
                    prom.stop()
