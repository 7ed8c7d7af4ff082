"""Kubernetes pod attribution (issue 20 items 1, 2 and 6, ADR 0021 and 0022): `gpulse exporter -k` and
`gpulse ps` against a fake kubelet serving PodResourcesLister/List on a unix socket in a temporary
directory (fake_kubelet.py), with the k8s-8xH100 scenario and its procfs fixture tree. Every series
of an allocated GPU or MIG instance carries pod, namespace and container; a time-sliced GPU's
series repeat per container with vgpu; per-pod memory, SM and power series add up to the GPU's;
labels go when the pod goes; a kubelet that is down costs labels, not scrapes; the kubelet is never
called on the scrape path; 5,000 pods in an answer over 4 MiB. Run with Debian's /usr/bin/python3."""
import json
import os
import re
import signal
import tempfile
import time
import unittest

from exporter_e2e import Exporter, parse_families
from fake_kubelet import FakeKubelet, filler_pods
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, validate

PROCFS = os.path.join(SOURCE_DIR, "tests", "testdata", "procfs", "k8s-8xH100")
SIM = ["--simulate", "k8s-8xH100", "--procfs-root", PROCFS, "--hostname", "node-1"]
MIB = 1 << 20


def gpu_uuids(scenario):
    """{gpu index: UUID} of a scenario, from gpulse devices --json."""
    p = run("devices", "--simulate", scenario, "--json")
    doc = json.loads(p.stdout)
    return {d["index"]: d["uuid"] for d in doc["devices"]}


def node_pods(u):
    """The k8s-8xH100 pods as the kubelet would list them (see the scenario's comment): train holds
    GPUs 0-3; vllm and embed time-slice GPU 4 (replicas ::1, ::2), vllm also holds GPU 5 (::0);
    batch's two containers time-slice GPU 6; GPU 7 is nobody's."""
    gpu = "nvidia.com/gpu"
    return [
        ("ml", "train-0", [("trainer", [(gpu, [u[0], u[1], u[2], u[3]])])]),
        ("serving", "vllm-0", [("vllm", [(gpu, [u[4] + "::1", u[5] + "::0"])])]),
        ("serving", "embed-0", [("embed", [(gpu, [u[4] + "::2"])])]),
        ("batch", "batch-0", [("worker-a", [(gpu, [u[6] + "::0"])]), ("worker-b", [(gpu, [u[6] + "::1"])])]),
        ("kube-system", "coredns-1", [("coredns", [])]),
    ]


def steady_gpu4(directory):
    """k8s-8xH100 with GPU 4's simulated wobble off (sim/README.md: exact known answers), so that its
    utilization is the scenario's 75 %, the sum of its two pods' processes' SM samples (45 + 30)."""
    with open(os.path.join(SOURCE_DIR, "sim", "scenarios", "k8s-8xH100.yaml"), encoding="utf-8") as f:
        text = f.read()
    line = "  - load: [{t: 0, util: 75, mem_util: 40, mem_used_mib: 42300, power_w: 520}]"
    if line not in text:
        raise AssertionError("k8s-8xH100.yaml changed: GPU 4's load line is not " + line)
    text = text.replace(line, "  - wobble: false\n    " + line[4:]).replace("name: k8s-8xH100", "name: k8s-steady")
    path = os.path.join(directory, "k8s-steady.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def samples(text, family):
    return parse_families(text).get(family, [])


class KubeletTestCase(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sock = os.path.join(self.tmp.name, "kubelet.sock")
        self.uuids = gpu_uuids("k8s-8xH100")
        self.kubelet = FakeKubelet(self.sock, node_pods(self.uuids))

    def tearDown(self):
        self.kubelet.stop()
        self.tmp.cleanup()

    def once(self, *extra):
        return self.run_ok("exporter", *SIM, "--once", "-k", "--pod-resources-kubelet-socket", self.sock, *extra)


class Labels(KubeletTestCase):
    def test_every_series_of_an_allocated_gpu_carries_its_pod(self):
        text = self.once().stdout
        expect = {0: {("ml", "train-0", "trainer")}, 1: {("ml", "train-0", "trainer")},
                  2: {("ml", "train-0", "trainer")}, 3: {("ml", "train-0", "trainer")},
                  4: {("serving", "vllm-0", "vllm"), ("serving", "embed-0", "embed")},
                  5: {("serving", "vllm-0", "vllm")},
                  6: {("batch", "batch-0", "worker-a"), ("batch", "batch-0", "worker-b")}, 7: set()}
        families = [f for f in parse_families(text) if f.startswith("DCGM_FI_")]
        self.assertGreater(len(families), 10)
        for family in families:
            seen = {}
            for labels, _ in samples(text, family):
                owner = (labels["namespace"], labels["pod"], labels["container"]) if "pod" in labels else None
                seen.setdefault(int(labels["gpu"]), []).append(owner)
            for gpu, owners in seen.items():
                with self.subTest(family=family, gpu=gpu):
                    if expect[gpu]:
                        self.assertEqual(set(owners), expect[gpu])
                        self.assertEqual(len(owners), len(expect[gpu]), "one series per container")
                    else:
                        self.assertEqual(owners, [None])

    def test_time_sliced_series_name_their_replica(self):
        text = self.once().stdout
        vgpu = {(l["pod"], l.get("vgpu")) for l, _ in samples(text, "DCGM_FI_DEV_GPU_TEMP") if l["gpu"] == "4"}
        self.assertEqual(vgpu, {("vllm-0", "1"), ("embed-0", "2")})
        whole = [l for l, _ in samples(text, "DCGM_FI_DEV_GPU_TEMP") if l["gpu"] == "0"]
        self.assertNotIn("vgpu", whole[0])

    def test_kubelet_self_metrics(self):
        text = self.once().stdout
        self.assertEqual(samples(text, "gpulse_kubelet_up")[0][1], 1)
        self.assertEqual(samples(text, "gpulse_kubelet_pods")[0][1], 5)
        self.assertEqual(samples(text, "gpulse_kubelet_list_failures")[0][1], 0)

    def test_device_name_id_type(self):
        self.kubelet.set_pods([("ml", "named", [("c", [("nvidia.com/gpu", ["nvidia2"])])])])
        text = self.once("--kubernetes-gpu-id-type", "device-name").stdout
        pods = {(l["gpu"], l.get("pod")) for l, _ in samples(text, "DCGM_FI_DEV_GPU_TEMP")}
        self.assertIn(("2", "named"), pods)
        self.assertIn(("0", None), pods)
        # The same answer read as UUIDs names nothing, and says so once.
        p = self.once()
        self.assertNotIn('pod="named"', p.stdout)
        self.assertEqual(p.stderr.count('"nvidia2"'), 1, p.stderr)

    def test_without_k_no_kubelet_call_and_no_labels(self):
        p = self.run_ok("exporter", *SIM, "--once", "--pod-resources-kubelet-socket", self.sock)
        self.assertNotIn("pod=", p.stdout)
        self.assertNotIn("gpulse_kubelet_up", p.stdout)
        self.assertEqual(self.kubelet.calls, 0)


class AgentKubernetesMode(KubeletTestCase):
    """`gpulse agent -k`: the node agent labels its series and exports per-pod usage as the exporter
    does, from the same kubelet."""

    def test_agent_labels_series_with_pods(self):
        from agent_e2e import Agent
        import urllib.request
        d = os.path.join(self.tmp.name, "agent")
        os.makedirs(d)
        a = Agent(d, scenario="k8s-8xH100", args=["--procfs-root", PROCFS, "-k",
                                                  "--pod-resources-kubelet-socket", self.sock])
        self.addCleanup(a.close)
        fams = {}
        for _ in range(100):  # until the kubelet's first answer has reached a read
            with urllib.request.urlopen(a.url + "/metrics", timeout=20) as r:
                fams = parse_families(r.read().decode())
            if any("pod" in labels for labels, _ in fams.get("DCGM_FI_DEV_GPU_TEMP", [])):
                break
            time.sleep(0.1)
        pods = {(l["gpu"], l.get("pod")) for l, _ in fams["DCGM_FI_DEV_GPU_TEMP"]}
        self.assertIn(("0", "train-0"), pods)
        self.assertEqual(fams["gpulse_kubelet_up"][0][1], 1)
        self.assertTrue(fams.get("gpulse_pod_gpu_memory_used_bytes"))
        self.assertGreater(self.kubelet.calls, 0)

    def test_agent_refuses_k_with_slurm_jobs(self):
        p = run("agent", "--simulate", "k8s-8xH100", "-k", "--slurm-jobs", "--pod-resources-kubelet-socket",
                self.sock, "--state-dir", self.tmp.name, "-a", "127.0.0.1:0", "--socket", "none")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("-k (Kubernetes pods) and --slurm-jobs (Slurm jobs) label the same series", p.stderr)


class SharedGpu(KubeletTestCase):
    """Two pods time-sharing GPU 4: their own memory, SM and power series, adding up to the GPU's."""

    def test_per_pod_usage_adds_up_to_the_device(self):
        steady = steady_gpu4(self.tmp.name)
        self.kubelet.set_pods(node_pods(gpu_uuids(steady)))  # a scenario's UUIDs follow its name
        text = self.run_ok("exporter", "--simulate", steady, "--procfs-root", PROCFS, "--once", "-k",
                           "--pod-resources-kubelet-socket", self.sock).stdout
        def on_gpu(family, gpu):
            return {l["pod"]: v for l, v in samples(text, family) if l["gpu"] == gpu}
        mem = on_gpu("gpulse_pod_gpu_memory_used_bytes", "4")
        sm = on_gpu("gpulse_pod_sm_utilization_percent", "4")
        power = on_gpu("gpulse_pod_power_estimate_watts", "4")
        self.assertEqual(mem, {"vllm-0": 30000 * MIB, "embed-0": 12000 * MIB})
        self.assertEqual(sm, {"vllm-0": 45, "embed-0": 30})
        device = lambda family: [v for l, v in samples(text, family) if l["gpu"] == "4"][0]
        # The processes' SM samples add up to the device's utilization in the scenario, and the
        # power estimate is the device's power split by SM share.
        self.assertEqual(sum(sm.values()), device("DCGM_FI_DEV_GPU_UTIL"))
        self.assertAlmostEqual(sum(power.values()), device("DCGM_FI_DEV_POWER_USAGE"), places=3)
        self.assertAlmostEqual(power["vllm-0"] / power["embed-0"], 45 / 30, places=6)
        # Memory: the per-pod sums are the processes' (gpulse ps), within the device's used memory.
        ps = json.loads(self.run_ok("ps", "--simulate", steady, "--procfs-root", PROCFS, "--json",
                                    "--pod-resources-kubelet-socket", self.sock).stdout)
        on4 = sum(r["used_memory_bytes"] for r in ps["processes"] if r["gpu"]["index"] == 4)
        self.assertEqual(sum(mem.values()), on4)
        self.assertLessEqual(sum(mem.values()) / MIB, device("DCGM_FI_DEV_FB_USED"))

    def test_per_pod_energy_counters_grow_in_the_pods_sm_shares(self):
        steady = steady_gpu4(self.tmp.name)
        self.kubelet.set_pods(node_pods(gpu_uuids(steady)))
        with Exporter("--simulate", steady, "--procfs-root", PROCFS, "-k",
                      "--pod-resources-kubelet-socket", self.sock) as e:
            def energy():
                fams = parse_families(e.get("/metrics")[2].decode())
                rows = fams.get("gpulse_pod_energy_estimate_joules", [])
                return {l["pod"]: v for l, v in rows if l["gpu"] == "4"}
            first = {}
            for _ in range(100):  # until the kubelet's first answer has reached a read
                first = energy()
                if first:
                    break
                time.sleep(0.1)
            self.assertEqual(set(first), {"vllm-0", "embed-0"})
            time.sleep(1.2)
            second = energy()
        grown = {pod: second[pod] - first[pod] for pod in second}
        self.assertGreater(grown["embed-0"], 0)
        # Both integrate the same steady device power over the same reads, split 45:30 by SM share.
        self.assertAlmostEqual(grown["vllm-0"] / grown["embed-0"], 45 / 30, places=6)

    def test_a_pod_with_two_containers_on_one_gpu_is_summed_per_pod(self):
        text = self.once().stdout
        rows = [(l, v) for l, v in samples(text, "gpulse_pod_sm_utilization_percent") if l["gpu"] == "6"]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][0]["pod"], "batch-0")
        self.assertNotIn("container", rows[0][0])
        self.assertEqual(rows[0][1], 100, "60 + 60 capped at 100")

    def test_processes_outside_pods_get_no_pod_series(self):
        text = self.once().stdout
        gpus = {l["gpu"] for l, _ in samples(text, "gpulse_pod_gpu_memory_used_bytes")}
        self.assertEqual(gpus, {"0", "1", "2", "3", "4", "5", "6"})
        on5 = [l["pod"] for l, _ in samples(text, "gpulse_pod_gpu_memory_used_bytes") if l["gpu"] == "5"]
        self.assertEqual(on5, ["vllm-0"], "the Docker container on GPU 5 is no pod")


class Served(KubeletTestCase):
    def start(self, *extra):
        return Exporter(*SIM, "-k", "--pod-resources-kubelet-socket", self.sock, *extra)

    def wait_for(self, exporter, predicate):
        """Scrapes until predicate(text) holds (the watcher's refresh is asynchronous); fails after
        many tries."""
        for _ in range(200):
            status, _, body = exporter.get("/metrics")
            self.assertEqual(status, 200)
            text = body.decode()
            if predicate(text):
                return text
            time.sleep(0.1)
        self.fail("condition never held; last scrape:\n" + text[:2000])

    def test_labels_disappear_when_the_pod_is_gone(self):
        with self.start("--kubelet-refresh-ms", "3600000") as e:
            self.wait_for(e, lambda t: 'pod="embed-0"' in t)
            self.kubelet.set_pods([p for p in node_pods(self.uuids) if p[1] != "embed-0"])
            e.signal(signal.SIGHUP)  # on demand
            text = self.wait_for(e, lambda t: 'pod="embed-0"' not in t)
            on4 = {l.get("pod") for l, _ in samples(text, "DCGM_FI_DEV_GPU_TEMP") if l["gpu"] == "4"}
            self.assertEqual(on4, {"vllm-0"})
            self.assertNotIn("embed-0", text, "no per-pod series either")

    def test_no_kubelet_call_on_the_scrape_path(self):
        with self.start("--kubelet-refresh-ms", "3600000") as e:
            e.get("/metrics")
            before = self.kubelet.calls
            for _ in range(30):
                status, _, body = e.get("/metrics")
                self.assertEqual(status, 200)
                self.assertIn(b'pod="train-0"', body)
            self.assertEqual(self.kubelet.calls, before)
            self.assertEqual(before, 1, "the first List, at start")

    def test_a_kubelet_restarted_at_the_same_path_is_found_by_the_next_list(self):
        # The watcher keeps its gRPC channel between Lists; the restart breaks it, and the List
        # after the failed one connects to the new kubelet.
        with self.start("--kubelet-refresh-ms", "3600000") as e:
            self.wait_for(e, lambda t: 'pod="train-0"' in t)
            self.kubelet.stop()
            e.signal(signal.SIGHUP)
            self.wait_for(e, lambda t: "gpulse_kubelet_up 0" in t)
            renamed = [(ns, "train-1" if pod == "train-0" else pod, c) for ns, pod, c in node_pods(self.uuids)]
            self.kubelet = FakeKubelet(self.sock, renamed)
            e.signal(signal.SIGHUP)
            text = self.wait_for(e, lambda t: 'pod="train-1"' in t)
            self.assertIn("gpulse_kubelet_up 1", text)
            self.assertNotIn('pod="train-0"', text)

    def test_refreshed_on_a_timer(self):
        with self.start("--kubelet-refresh-ms", "200") as e:
            self.kubelet.set_pods([p for p in node_pods(self.uuids) if p[1] != "train-0"])
            self.wait_for(e, lambda t: 'pod="train-0"' not in t and 'pod="vllm-0"' in t)
            self.assertGreater(self.kubelet.calls, 1)

    def test_a_kubelet_that_is_down_costs_labels_not_scrapes(self):
        with self.start("--kubelet-refresh-ms", "3600000") as e:
            self.wait_for(e, lambda t: 'pod="train-0"' in t)
            self.kubelet.fail = True
            e.signal(signal.SIGHUP)
            text = self.wait_for(e, lambda t: "gpulse_kubelet_up 0" in t)
            self.assertNotIn("pod=", text)
            self.assertIn("DCGM_FI_DEV_GPU_TEMP", text)
            self.assertEqual(samples(text, "gpulse_kubelet_list_failures")[0][1], 1)
            e.signal(signal.SIGHUP)
            text = self.wait_for(e, lambda t: samples(t, "gpulse_kubelet_list_failures")[0][1] == 2)
            self.kubelet.fail = False
            e.signal(signal.SIGHUP)
            self.wait_for(e, lambda t: "gpulse_kubelet_up 1" in t and 'pod="train-0"' in t)

    def test_no_socket_at_start_is_no_failure(self):
        missing = os.path.join(self.tmp.name, "absent.sock")
        with Exporter(*SIM, "-k", "--pod-resources-kubelet-socket", missing, "--kubelet-refresh-ms", "3600000") as e:
            status, _, body = e.get("/metrics")
            self.assertEqual(status, 200)
            text = body.decode()
            self.assertIn("gpulse_kubelet_up 0", text)
            self.assertNotIn("pod=", text)
            # The kubelet comes up: the next refresh finds it.
            late = FakeKubelet(missing, node_pods(self.uuids))
            try:
                e.signal(signal.SIGHUP)
                self.wait_for(e, lambda t: 'pod="train-0"' in t)
            finally:
                late.stop()

    def test_five_thousand_pods_in_an_answer_over_4_mib(self):
        self.kubelet.set_pods(node_pods(self.uuids) + filler_pods(5000))
        self.assertGreater(self.kubelet.answer_size(), 4 << 20)
        with self.start("--kubelet-refresh-ms", "3600000") as e:
            text = self.wait_for(e, lambda t: "gpulse_kubelet_up 1" in t)
            self.assertEqual(samples(text, "gpulse_kubelet_pods")[0][1], 5005)
            self.assertIn('pod="embed-0"', text)


class StartUp(GpulseTestCase):
    def test_a_socket_path_that_is_not_a_socket_stops_gpulse(self):
        with tempfile.NamedTemporaryFile() as f:
            p = run("exporter", "--simulate", "k8s-8xH100", "--once", "-k", "--pod-resources-kubelet-socket", f.name)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--pod-resources-kubelet-socket", p.stderr)
        self.assertIn("not a unix socket", p.stderr)

    def test_bad_values_stop_gpulse_naming_the_variable(self):
        p = run("exporter", "--simulate", "k8s-8xH100", "--once", "-k",
                env={"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "uuid"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", p.stderr)
        p = run("exporter", "--simulate", "k8s-8xH100", "--once", "--nvidia-resource-names", "a100")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--nvidia-resource-names", p.stderr)

    def test_the_variables_enable_kubernetes_mode(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "k.sock")
            with FakeKubelet(sock, node_pods(gpu_uuids("k8s-8xH100"))):
                p = run("exporter", *SIM, "--once", env={"DCGM_EXPORTER_KUBERNETES": "true",
                                                         "DCGM_POD_RESOURCES_KUBELET_SOCKET": sock})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('pod="train-0"', p.stdout)


class DeploySettings(KubeletTestCase):
    """deploy/kubernetes's settings (base/settings.yaml with overlays/pod-labels' changes) work as
    written: gpulse starts with exactly those variables (the DaemonSet's envFrom), only the node's
    paths pointed at the test's, and serves pod labels."""

    def test_the_settings_file_starts_gpulse_in_kubernetes_mode(self):
        import yaml
        kube = os.path.join(SOURCE_DIR, "deploy", "kubernetes")
        with open(os.path.join(kube, "base", "settings.yaml"), encoding="utf-8") as f:
            data = yaml.safe_load(f)["data"]
        with open(os.path.join(kube, "overlays", "pod-labels", "settings.yaml"), encoding="utf-8") as f:
            data.update(yaml.safe_load(f)["data"])  # what the pod-labels overlay changes
        self.assertTrue(all(isinstance(v, str) for v in data.values()), "ConfigMap values are strings")
        env = dict(data)
        env["DCGM_EXPORTER_COLLECTORS"] = os.path.join(SOURCE_DIR, "deploy", "default-counters.csv")
        env["DCGM_POD_RESOURCES_KUBELET_SOCKET"] = self.sock
        env["GPULSE_PROCFS_ROOT"] = PROCFS
        env["NODE_NAME"] = "gpu-node-7"
        p = run("exporter", "--simulate", "k8s-8xH100", "--once", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        temps = samples(p.stdout, "DCGM_FI_DEV_GPU_TEMP")
        self.assertTrue(any(l.get("pod") == "train-0" for l, _ in temps))
        self.assertEqual({l["Hostname"] for l, _ in temps}, {"gpu-node-7"})
        self.assertIn("gpulse_pod_gpu_memory_used_bytes", p.stdout, "per-pod usage from GPULSE_PROCFS_ROOT")


class Mig(GpulseTestCase):
    def test_mig_instances_carry_their_pods(self):
        doc = json.loads(run("devices", "--simulate", "mig-a100", "--json").stdout)
        text = json.dumps(doc)
        migs = sorted(set(re.findall(r"MIG-[0-9a-fA-F-]+", text)))
        self.assertGreaterEqual(len(migs), 2)
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "k.sock")
            pods = [("ml", "small", [("c", [("nvidia.com/mig-1g.5gb", [migs[0]])])]),
                    ("ml", "other", [("c", [("nvidia.com/mig-2g.10gb", [migs[1]])])])]
            with FakeKubelet(sock, pods):
                p = self.run_ok("exporter", "--simulate", "mig-a100", "--once", "-k",
                                "--pod-resources-kubelet-socket", sock)
        fb = samples(p.stdout, "DCGM_FI_DEV_FB_USED")
        held = {l["pod"]: l.get("GPU_I_ID") for l, _ in fb if "pod" in l}
        self.assertEqual(set(held), {"small", "other"})
        self.assertTrue(all(gi for gi in held.values()), "on GPU instance series")
        unheld = [l for l, _ in fb if "pod" not in l and l.get("GPU_I_ID")]
        self.assertTrue(unheld, "the instances nobody holds keep unlabelled series")


class Ps(KubeletTestCase):
    def test_ps_names_the_pods(self):
        p = self.run_ok("ps", *SIM[:4], "--pod-resources-kubelet-socket", self.sock)
        for name in ("ml/train-0", "serving/vllm-0", "serving/embed-0", "batch/batch-0"):
            self.assertIn(name, p.stdout)
        doc = json.loads(self.run_ok("ps", *SIM[:4], "--json", "--pod-resources-kubelet-socket", self.sock).stdout)
        validate(doc, "ps.schema.json")
        names = {r["pid"]: (r["pod"] or {}).get("name") for r in doc["processes"]}
        self.assertEqual(names[42001], "vllm-0")
        self.assertEqual(names[43001], "embed-0")
        self.assertEqual(names[46001], None)
        self.assertEqual({g["name"] for g in doc["pods"]}, {"train-0", "vllm-0", "embed-0", "batch-0"})

    def test_an_answer_that_is_not_a_list_answer_is_refused_naming_the_byte(self):
        # A pod whose name is not UTF-8 (proto3 strings are): the answer is refused whole, pods are
        # shown by UID, and the reason names the socket and where the answer went wrong.
        self.kubelet.set_answer_bytes(b"\x0a\x04\x0a\x02\xff\xfe")
        p = self.run_ok("ps", *SIM[:4], "--pod-resources-kubelet-socket", self.sock)
        self.assertIn("5c1f0e9a-", p.stdout)
        self.assertIn(self.sock, p.stderr)
        self.assertIn("not a ListPodResourcesResponse: a string that is not UTF-8 at byte 4 of 6", p.stderr)

    def test_ps_without_the_socket_shows_uids_and_says_why(self):
        missing = os.path.join(self.tmp.name, "none.sock")
        p = self.run_ok("ps", *SIM[:4], "--pod-resources-kubelet-socket", missing)
        self.assertIn("5c1f0e9a-", p.stdout)
        self.assertIn("shown by UID", p.stderr)
        self.assertIn(missing, p.stderr)
        doc = json.loads(self.run_ok("ps", *SIM[:4], "--json", "--pod-resources-kubelet-socket", missing).stdout)
        validate(doc, "ps.schema.json")
        self.assertTrue(all(g["name"] is None and missing in g["name_error"] for g in doc["pods"]))


if __name__ == "__main__":
    unittest.main()
