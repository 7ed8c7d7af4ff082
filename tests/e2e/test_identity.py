"""`gpulse ps` and `gpulse devices --visible` end to end: the real binary, the NVML simulator
through the normal loader, and procfs fixture trees (tests/testdata/procfs/k8s-8xH100, copied and
extended in temporary directories where a test needs environ files)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gpulse_e2e import NO_DRIVER_NVML, SOURCE_DIR, GpulseTestCase, run, validate

K8S_TREE = os.path.join(SOURCE_DIR, "tests", "testdata", "procfs", "k8s-8xH100")

TRAIN_POD = "5c1f0e9a-2b7d-4c3e-9a81-7d2e4f6b0c13"
VLLM_POD = "8e2d4a71-6f3b-4d09-b5c2-19a0e7f3d864"
EMBED_POD = "0b9c6d2e-4f18-4a7e-8c53-e1d27f90a6b5"
BATCH_POD = "c4a8e3f1-9d26-4b5a-a7e0-3f61d8b92c47"

# pid -> (GPU index, container id prefix or None, runtime, pod uid or None, QoS, name, uid)
EXPECTED = {
    41001: (0, "a42bbf4ad752", "containerd", TRAIN_POD, "Guaranteed", "python3", 1000),
    41002: (1, "a42bbf4ad752", "containerd", TRAIN_POD, "Guaranteed", "python3", 1000),
    41003: (2, "a42bbf4ad752", "containerd", TRAIN_POD, "Guaranteed", "python3", 1000),
    41004: (3, "a42bbf4ad752", "containerd", TRAIN_POD, "Guaranteed", "python3", 1000),
    42001: (4, "7ca90c488777", "containerd", VLLM_POD, "Burstable", "vllm", 0),
    43001: (4, "30f135d74dc1", "containerd", EMBED_POD, "Burstable", "python", 0),
    42002: (5, "7ca90c488777", "containerd", VLLM_POD, "Burstable", "vllm", 0),
    46001: (5, "4c479da8b210", "docker", None, None, "jupyter-lab", 1001),
    45001: (6, "5a6e55ca9626", "containerd", BATCH_POD, "BestEffort", "worker", 0),
    45002: (6, "e40ff5820a3c", "containerd", BATCH_POD, "BestEffort", "worker", 0),
    46501: (7, "fb3b2bf9f96e", "podman", None, None, "llama-server", 1000),
    47001: (7, None, None, None, None, "blender", 1000),
    47002: (7, None, None, None, None, None, None),
}
MIB = 2**20


def setUpModule():
    # The tests set the variables they mean; nothing from the caller's shell may leak in.
    for var in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "GPULSE_PROCFS_ROOT"):
        os.environ.pop(var, None)


def write_scenario(directory, text, name="scenario.yaml"):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class PsTest(GpulseTestCase):
    def ps(self, *args, **kw):
        p = self.run_ok("ps", "--json", *args, **kw)
        doc = json.loads(p.stdout)
        validate(doc, "ps.schema.json")
        return doc

    def test_k8s_node_every_process_on_its_gpu_container_and_pod(self):
        doc = self.ps("--simulate", "k8s-8xH100", "--procfs-root", K8S_TREE)
        self.assertEqual(doc["scenario"], "k8s-8xH100")
        self.assertEqual(doc["procfs_root"], K8S_TREE)
        got = {p["pid"]: p for p in doc["processes"]}
        self.assertEqual(set(got), set(EXPECTED))
        for pid, (gpu, cid, runtime, pod, qos, name, uid) in EXPECTED.items():
            with self.subTest(pid=pid):
                p = got[pid]
                self.assertEqual(p["gpu"]["index"], gpu)
                self.assertEqual(p["name"], name)
                self.assertEqual(p["uid"], uid)
                if cid is None:
                    self.assertIsNone(p["container"])
                else:
                    self.assertTrue(p["container"]["id"].startswith(cid))
                    self.assertEqual(p["container"]["runtime"], runtime)
                if pod is None:
                    self.assertIsNone(p["pod"])
                else:
                    self.assertEqual({k: p["pod"][k] for k in ("uid", "qos_class")}, {"uid": pod, "qos_class": qos})
                    self.assertIsNone(p["pod"]["name"], "no kubelet socket: named by UID")
        self.assertEqual(got[42001]["user"], "root")
        self.assertEqual(got[47001]["type"], "C+G")
        self.assertEqual(got[47001]["enc_util"], 11)
        self.assertIsNotNone(got[47002]["procfs_error"], "an exited process says why it is anonymous")
        self.assertIsNone(got[47002]["sm_util"], "no utilization sample is null, not 0")
        self.assertEqual(got[47002]["used_memory_bytes"], 1024 * MIB)
        self.assertEqual(got[43001]["dec_util"], 18)
        devices = doc["devices"]
        self.assertEqual(len(devices), 8)
        self.assertTrue(all(d["listed"] and d["error"] is None for d in devices))
        self.assertTrue(all(d["source"].startswith("nvmlDeviceGetRunningProcessDetailList") for d in devices))
        self.assertTrue(all(d["utilization_source"] == "nvmlDeviceGetProcessUtilization" for d in devices))

    def test_k8s_node_aggregates_per_pod_and_container(self):
        doc = self.ps("--simulate", "k8s-8xH100", "--procfs-root", K8S_TREE)
        pods = {p["uid"]: p for p in doc["pods"]}
        self.assertEqual(set(pods), {TRAIN_POD, VLLM_POD, EMBED_POD, BATCH_POD})
        train = pods[TRAIN_POD]
        self.assertEqual([g["index"] for g in train["gpus"]], [0, 1, 2, 3])
        self.assertEqual(train["used_memory_bytes"], 4 * 70000 * MIB)
        self.assertEqual(train["sm_util"], 93 + 94 + 92 + 95)
        batch = pods[BATCH_POD]
        self.assertEqual(len(batch["containers"]), 2)
        self.assertEqual(batch["gpus"][0]["sm_util"], 100, "60 + 60 on one GPU is capped at 100")
        self.assertEqual(batch["used_memory_bytes"], 20000 * MIB)
        vllm = pods[VLLM_POD]
        self.assertEqual([g["index"] for g in vllm["gpus"]], [4, 5])
        self.assertEqual(vllm["sm_util"], 45 + 43)
        containers = {c["id"][:12]: c for c in doc["containers"]}
        self.assertEqual(len(containers), 7)
        self.assertEqual(containers["4c479da8b210"]["runtime"], "docker")
        self.assertIsNone(containers["4c479da8b210"]["pod_uid"])
        self.assertEqual(containers["5a6e55ca9626"]["sm_util"], 60)
        self.assertEqual(containers["a42bbf4ad752"]["pod_uid"], TRAIN_POD)

    def test_text_output_lists_processes_pods_and_containers(self):
        p = self.run_ok("ps", "--simulate", "k8s-8xH100", "--procfs-root", K8S_TREE)
        self.assertIn("# simulated GPUs: scenario k8s-8xH100", p.stdout)
        self.assertIn("Per pod", p.stdout)
        self.assertIn("Per container", p.stdout)
        self.assertIn(BATCH_POD, p.stdout)
        long = self.run_ok("ps", "-l", "--simulate", "k8s-8xH100", "--procfs-root", K8S_TREE)
        self.assertIn("BestEffort", long.stdout)
        self.assertIn("a42bbf4ad75207d2409e1e235055b5ebdb401a57e2a869a500df014f80fb4224", long.stdout)

    def test_procfs_root_from_environment(self):
        doc = self.ps("--simulate", "k8s-8xH100", env={"GPULSE_PROCFS_ROOT": K8S_TREE})
        self.assertEqual(doc["procfs_root"], K8S_TREE)
        self.assertTrue(any(p["pod"] for p in doc["processes"]))

    def test_simulated_pids_stay_anonymous_without_a_procfs_tree(self):
        doc = self.ps("--simulate", "4xA40-tp2")
        self.assertIsNone(doc["procfs_root"])
        self.assertEqual([p["pid"] for p in doc["processes"]], [4242, 4243])
        for p in doc["processes"]:
            self.assertIsNone(p["name"])
            self.assertIsNone(p["container"])
            self.assertIn("--procfs-root", p["procfs_error"])
        self.assertEqual(doc["pods"], [])

    def test_mig_processes_name_their_instance(self):
        doc = self.ps("--simulate", "mig-a100")
        got = {p["pid"]: p for p in doc["processes"]}
        self.assertEqual(got[7101]["mig"]["profile"], "3g.20gb")
        self.assertTrue(got[7101]["mig"]["uuid"].startswith("MIG-"))
        self.assertEqual(got[7102]["mig"]["gpu_instance_id"], 3)
        self.assertIsNone(got[7200]["mig"])
        self.assertIsNone(doc["devices"][0]["utilization_source"], "no per-process utilization on MIG")

    def test_older_driver_falls_back_to_v2_lists(self):
        with tempfile.TemporaryDirectory() as d:
            path = write_scenario(d, (
                "devices:\n"
                "  - name: Old GPU\n    memory_total_mib: 16000\n    power_limit_w: 250\n"
                "    unsupported: [process_detail_list, process_utilization]\n"
                "    processes: [{pid: 11, used_memory_mib: 100}, {pid: 12, used_memory_mib: 200}]\n"))
            doc = self.ps("--simulate", path)
        self.assertEqual(doc["devices"][0]["source"],
                         "nvmlDeviceGetComputeRunningProcesses_v2, nvmlDeviceGetGraphicsRunningProcesses_v2")
        self.assertEqual([p["used_memory_bytes"] for p in doc["processes"]], [100 * MIB, 200 * MIB])
        self.assertIsNone(doc["processes"][0]["sm_util"])

    def test_missing_procfs_root_is_a_usage_error(self):
        p = run("ps", "--simulate", "k8s-8xH100", "--procfs-root", "/nonexistent/procfs")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/procfs", p.stderr)

    def test_no_driver_is_a_runtime_failure(self):
        p = run("ps", "--nvml-lib", NO_DRIVER_NVML)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not loaded", p.stderr)


class VisibleTest(GpulseTestCase):
    def visible(self, *args, env=None, expect=0):
        p = run("devices", "--visible", "--json", *args, env=env)
        self.assertEqual(p.returncode, expect, p.stderr + p.stdout)
        doc = json.loads(p.stdout)
        validate(doc, "visible-devices.schema.json")
        return doc

    def uuids(self, scenario):
        p = self.run_ok("devices", "--simulate", scenario, "--json")
        return [d["uuid"] for d in json.loads(p.stdout)["devices"]]

    def test_uuid_prefix_and_index_map_to_physical_gpus(self):
        uuids = self.uuids("4xA40-tp2")
        mask = uuids[3][:12] + ",1"
        env = {"CUDA_VISIBLE_DEVICES": mask, "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}
        doc = self.visible("--simulate", "4xA40-tp2", env=env)
        self.assertEqual([(o["ordinal"], o["index"]) for o in doc["ordinals"]], [(0, 3), (1, 1)])
        self.assertEqual(doc["ordinals"][0]["uuid"], uuids[3])
        self.assertIsNone(doc["refusal"])
        self.assertEqual(doc["environment"]["CUDA_VISIBLE_DEVICES"], mask)
        text = run("devices", "--visible", "--simulate", "4xA40-tp2", env=env)
        self.assertEqual(text.returncode, 0, text.stderr)
        lines = [l.split() for l in text.stdout.splitlines()]
        self.assertIn(["0", "3", "-", uuids[3], "00000000:E3:00.0", "NVIDIA", "A40"], lines)
        self.assertIn(["1", "1", "-", uuids[1], "00000000:65:00.0", "NVIDIA", "A40"], lines)

    def test_unresolvable_mask_prints_the_refusal_and_exits_1(self):
        with tempfile.TemporaryDirectory() as d:
            path = write_scenario(d, (
                "devices:\n"
                "  - {name: NVIDIA A40, memory_total_mib: 46068, power_limit_w: 300}\n"
                "  - {name: NVIDIA H100 80GB HBM3, memory_total_mib: 81559, power_limit_w: 700}\n"))
            env = {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}
            doc = self.visible("--simulate", path, env=env, expect=1)
            self.assertEqual(doc["ordinals"], [])
            self.assertEqual(doc["refusal"]["from_ordinal"], 0)
            self.assertIn("FASTEST_FIRST", doc["refusal"]["reason"])
            text = run("devices", "--visible", "--simulate", path, env=env)
            self.assertEqual(text.returncode, 1)
            self.assertIn("refused (all ordinals): CUDA_DEVICE_ORDER is FASTEST_FIRST", text.stdout)
            doc = self.visible("--simulate", path, env={**env, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
            self.assertEqual([o["index"] for o in doc["ordinals"]], [1, 0])

    def test_mig_instance_by_uuid(self):
        p = self.run_ok("devices", "--simulate", "mig-a100", "--json")
        mig = json.loads(p.stdout)["devices"][0]["mig_instances"][1]
        doc = self.visible("--simulate", "mig-a100", env={"CUDA_VISIBLE_DEVICES": mig["uuid"]})
        self.assertEqual(len(doc["ordinals"]), 1)
        self.assertEqual(doc["ordinals"][0]["index"], 0)
        self.assertEqual(doc["ordinals"][0]["mig"]["uuid"], mig["uuid"])
        doc = self.visible("--simulate", "mig-a100", env={"CUDA_VISIBLE_DEVICES": "0"}, expect=1)
        self.assertIn("MIG enabled", doc["refusal"]["reason"])

    def env_tree(self, environs):
        """A copy of the k8s fixture tree with /proc/PID/environ files added."""
        d = tempfile.mkdtemp(prefix="gpulse-e2e-procfs-")
        self.addCleanup(shutil.rmtree, d)
        root = os.path.join(d, "proc")
        shutil.copytree(K8S_TREE, root)
        for pid, env in environs.items():
            with open(os.path.join(root, str(pid), "environ"), "wb") as f:
                f.write(b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
        return root

    def test_env_from_a_pod_process_uses_its_containers_gpus(self):
        uuids = self.uuids("k8s-8xH100")
        root = self.env_tree({
            42001: {"PATH": "/usr/bin", "NVIDIA_VISIBLE_DEVICES": f"{uuids[5]},{uuids[4]}"},
            41001: {"NVIDIA_VISIBLE_DEVICES": ",".join(uuids[:4]), "CUDA_VISIBLE_DEVICES": "2",
                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            45001: {"HOME": "/root"},
            47001: {"CUDA_VISIBLE_DEVICES": uuids[7][:14]},
        })
        common = ("--simulate", "k8s-8xH100", "--procfs-root", root, "--env-from")
        doc = self.visible(*common, "42001")
        self.assertEqual(doc["pid"], 42001)
        self.assertIn("container 7ca90c488777", doc["source"])
        self.assertEqual([o["index"] for o in doc["ordinals"]], [4, 5], "bus order inside the container")
        doc = self.visible(*common, "41001")
        self.assertEqual([o["index"] for o in doc["ordinals"]], [2])
        doc = self.visible(*common, "45001", expect=1)
        self.assertIn("NVIDIA_VISIBLE_DEVICES", doc["refusal"]["reason"])
        doc = self.visible(*common, "47001")
        self.assertEqual([o["index"] for o in doc["ordinals"]], [7], "a host process sees every GPU")

    def test_env_from_a_real_process_reads_its_exec_environment(self):
        uuids = self.uuids("4xA40-tp2")
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": uuids[2][:10] + ",0"}
        child = subprocess.Popen(["sleep", "60"], env=env)
        try:
            doc = self.visible("--simulate", "4xA40-tp2", "--procfs-root", "/proc",
                               "--env-from", str(child.pid))
        finally:
            child.kill()
            child.wait()
        self.assertEqual(doc["pid"], child.pid)
        self.assertEqual(doc["environment"]["CUDA_VISIBLE_DEVICES"], uuids[2][:10] + ",0")
        self.assertEqual([o["index"] for o in doc["ordinals"]], [2, 0])

    def test_env_from_errors_are_clear(self):
        p = run("devices", "--visible", "--simulate", "k8s-8xH100", "--env-from", "42001")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--procfs-root", p.stderr)
        p = run("devices", "--visible", "--simulate", "k8s-8xH100", "--procfs-root", K8S_TREE,
                "--env-from", "999999")
        self.assertEqual(p.returncode, 2)
        self.assertIn("999999", p.stderr)
        p = run("devices", "--simulate", "k8s-8xH100", "--env-from", "1")
        self.assertEqual(p.returncode, 2, "--env-from needs --visible")
        p = run("devices", "--visible", "--simulate", "k8s-8xH100", "--env-from", "abc")
        self.assertEqual(p.returncode, 2)

    def test_no_driver_says_why(self):
        doc = self.visible("--nvml-lib", NO_DRIVER_NVML, expect=1)
        self.assertIn("not loaded", doc["error"])
        self.assertEqual(doc["ordinals"], [])


if __name__ == "__main__":
    unittest.main()
