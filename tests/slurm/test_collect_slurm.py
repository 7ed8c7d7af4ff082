"""End-to-end test of `gpulse collect` with `launch: srun` on a real Slurm cluster (Debian's
slurm-wlm 22.05 and munge), built by the test on this machine as root: slurmctld and `gpulse collect`
on the head node, one slurmd per compute node in its own network and UTS namespace
(slurm_cluster.py). Run with Debian's /usr/bin/python3.

Real: the allocation (a heterogeneous salloc with one component per node, or a plain two-node
one), every srun step (the clock probes, and the exporter steps, one per het group or one for both
nodes, started, watched and stopped by gpulse collect), the nodes' own hostnames and addresses, the
exporters (`gpulse exporter --simulate`), the benchmark windows and the package. Stand-in: the NTP
answer. The probe path is real (srun runs timedatectl on each node), but this machine's clock is
not NTP-verified, so a fake `timedatectl` that prints `yes` comes first on PATH (srun exports the
environment to its steps)."""
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from gpulse_e2e import GPULSE, SOURCE_DIR, validate  # noqa: E402
import slurm_cluster  # noqa: E402

HEADER = "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w"
NODES = ("node1", "node2")
ROLES = {"node1": "prefill", "node2": "decode"}
PORT = 9400  # every node has its own network namespace: the same port everywhere
IN_CI = os.environ.get("CI") == "true"


def unavailable():
    """Why this machine cannot run the cluster, or None. Under CI a missing program is a failure
    (scripts/install-deps.sh installs them); not being root, or lacking namespaces, is a skip."""
    if os.geteuid() != 0:
        return "needs root (slurmd, munged and network namespaces)"
    missing = slurm_cluster.missing_tools()
    if missing:
        message = f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge iproute2)"
        if IN_CI:
            raise AssertionError(message + "; scripts/install-deps.sh installs them")
        return message
    name = f"gpslprobe{os.getpid()}"
    p = slurm_cluster.run("ip", "netns", "add", name, check=False)
    if p.returncode != 0:
        return f"cannot create a network namespace (ip netns add: {p.stderr.strip()})"
    try:  # `ip netns exec` also mounts a /sys of the namespace's own
        p = slurm_cluster.run("ip", "netns", "exec", name, "true", check=False)
    finally:
        slurm_cluster.run("ip", "netns", "del", name, check=False)
    if p.returncode != 0:
        return f"cannot enter a network namespace (ip netns exec: {p.stderr.strip()})"
    p = slurm_cluster.run("unshare", "--uts", "true", check=False)
    if p.returncode != 0:
        return f"cannot create a UTS namespace (unshare --uts: {p.stderr.strip()})"
    return None


def config_text(cluster, scenario_dir, het_groups=True, concurrencies=(4, 8)):
    """Two endpoints, one per node, the exporters launched by srun: each node in a het group of its
    own (het_groups), or both without one (one srun for both). The command picks each node's
    scenario by the node's own hostname and gives no --hostname, so the exporter's Hostname label
    is the node's UTS hostname."""
    command = f"sh -c 'exec {GPULSE} exporter --simulate {scenario_dir}/$(hostname).yaml -a 0.0.0.0:{{port}}'"
    lines = ["job_id: slurm-e2e", "run_name: slurm", "telemetry:", "  enabled: true",
             "  collect_interval_ms: 200", "  storage_subdir: power", "  required: true",
             "  startup_timeout_seconds: 60", "  request_timeout_seconds: 1", "  clock_sync_check: true",
             "  dcgm_exporter:", "    container_image: gpulse", f"    port: {PORT}",
             f"    command: {json.dumps(command)}", "    launch: srun", "endpoints:"]
    for node in NODES:
        lines.append(f"  - {{hostname: {node}, address: {cluster.address(node)}}}")
    lines.append("workers:")
    for group, node in enumerate(NODES):
        lines.append(f"  - {{hostname: {node}, gpus: [0], worker_role: {ROLES[node]}, worker_index: 0, "
                     f"worker_process: 0, het_group: {group if het_groups else 'null'}}}")
    lines += ["benchmark:", "  type: sa-bench", f"  concurrencies: {list(concurrencies)}"]
    return "\n".join(lines) + "\n"


class SlurmCollect(unittest.TestCase):
    """gpulse collect inside an allocation of a two-node Slurm cluster, one cluster for the class."""

    @classmethod
    def setUpClass(cls):
        reason = unavailable()
        if reason:
            raise unittest.SkipTest(reason)
        cls.tmp = tempfile.TemporaryDirectory(prefix="gpulse-slurm-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.cluster = slurm_cluster.Cluster(os.path.join(cls.tmp.name, "cluster"), NODES)
        os.makedirs(cls.cluster.root)
        cls.addClassCleanup(cls.cluster.stop)  # also when building it fails half way (runs first)
        try:
            cls.cluster.create_network()
        except RuntimeError as e:
            raise unittest.SkipTest(f"cannot build the cluster's network (bridge, veth, namespaces): {e}")
        try:
            cls.cluster.start()
        except RuntimeError as e:
            raise AssertionError(f"the Slurm cluster did not start: {e}")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName[:20] + "-", dir=self.tmp.name)
        self.mark = f"GPULSE_SLURM_TEST={self.dir}"  # in the environment of what this test starts
        self.addCleanup(self.cluster.end_jobs, self.mark)
        self.logs = os.path.join(self.dir, "logs")
        self.power = os.path.join(self.logs, "power")
        os.makedirs(os.path.join(self.logs, "results"))

    def scenario(self, name):
        """1xH200 under another name: the simulator derives UUIDs from it, so every node differs."""
        with open(os.path.join(SOURCE_DIR, "sim", "scenarios", "1xH200.yaml")) as f:
            text = f.read().replace("name: 1xH200", f"name: {name}", 1)
        path = os.path.join(self.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def uuid_of(self, scenario):
        p = subprocess.run([GPULSE, "devices", "--simulate", scenario, "--json"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        [device] = json.loads(p.stdout)["devices"]
        return device["uuid"]

    def fake_timedatectl(self):
        """A directory holding a `timedatectl` that says the clock is NTP-synchronised."""
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "timedatectl"), "w") as f:
            f.write("#!/bin/sh\necho yes\n")
        os.chmod(os.path.join(bindir, "timedatectl"), 0o755)
        return bindir

    def window_cmd(self, concurrency, snapshot=None):
        """`gpulse window run` around a stand-in benchmark that runs for 2 s and writes its result;
        with `snapshot`, it first records there the job steps and every exporter's power lines."""
        result = os.path.join(self.logs, "results", f"sa-bench-c{concurrency}.json")
        work = f"sleep 2 && echo '{{\"concurrency\": {concurrency}}}' > {result}"
        if snapshot:
            urls = [f"http://{self.cluster.address(n)}:{PORT}/metrics" for n in NODES]
            work = f"/usr/bin/python3 {HERE}/slurm_cluster.py snapshot {snapshot} {' '.join(urls)} && {work}"
        return (f"{GPULSE} window run --type sa-bench --concurrency {concurrency} --result {result} -- "
                f"sh -c {shlex.quote(work)}")

    def collect_in_allocation(self, salloc_args, het_groups):
        """Runs `gpulse collect` (two windows) in `salloc SALLOC_ARGS`, on the head node; checks that
        it made a publishable package from both nodes, and left no exporter and no step behind.
        Returns (collect's stderr, the job steps the benchmark saw)."""
        self.uuids = {n: self.uuid_of(self.scenario(n)) for n in NODES}
        self.assertEqual(len(set(self.uuids.values())), len(NODES), "every node's GPU has its own UUID")
        cfg = os.path.join(self.dir, "collect.yaml")
        with open(cfg, "w") as f:
            f.write(config_text(self.cluster, self.dir, het_groups))
        during, after = os.path.join(self.dir, "during.json"), os.path.join(self.dir, "after.json")
        bench = f"{self.window_cmd(4, snapshot=during)} && {self.window_cmd(8)}"
        collect = [GPULSE, "collect", "--config", cfg, "--log-dir", self.logs, "--", "sh", "-c", bench]
        env = self.cluster.env(GPULSE_PROCESS_MARK=f"exporter --simulate {self.dir}/", GPULSE_SLURM_TEST=self.dir)
        env.pop("GPULSE_SRUN", None)  # the real srun, from PATH
        env["PATH"] = self.fake_timedatectl() + os.pathsep + env["PATH"]  # for the head's probe too
        argv = [slurm_cluster.tool("salloc"), "--job-name=gpulse-e2e", *salloc_args, "/usr/bin/python3",
                os.path.join(HERE, "slurm_cluster.py"), "in-allocation", after, "--", *collect]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env, start_new_session=True)
        except subprocess.TimeoutExpired as e:  # its output is bytes, even with text=True
            output = b"".join(o or b"" for o in (e.stdout, e.stderr)).decode(errors="replace")
            self.fail(f"salloc did not end within 90 s (the cleanup stops everything)\n{output}\n"
                      f"{self.cluster.diagnostics()}")
        context = f"salloc exit {p.returncode}\n{p.stdout}{p.stderr}\n{self.cluster.diagnostics()}"
        self.assertEqual(p.returncode, 0, context)
        with open(after) as f:
            after = json.load(f)
        self.assertEqual(after["exit_code"], 0, context)
        m = self.manifest()
        self.assertEqual(m["status"], "complete", context)
        self.assertTrue(m["publication_valid"], json.dumps(m["window_validations"], indent=1) + context)
        reasons = set(m["reason_codes"]) | set(m.get("gpulse_reason_codes", []))
        for code in ("exporter_launch_failed", "exporter_exited", "clock_sync_unverified"):
            self.assertNotIn(code, reasons, context)
        self.assertEqual(m["clock_sync_checked"], [socket.gethostname(), *NODES])
        self.assertEqual(m["clock_sync_failures"], [])
        self.check_samples()
        with open(during) as f:
            during = json.load(f)
        self.check_exporters_during_the_benchmark(during)
        # The nodes share this PID namespace (only network and UTS are their own): one /proc sees all.
        self.assertEqual(after["processes_after"], [], "no exporter is left on any node once collect has ended")
        self.assertEqual(after["steps_after"]["steps"], [], "and slurmctld knows no step of the job any more")
        validate(m, "power-manifest.schema.json")
        return p.stderr, during["steps"]

    def validate_power(self, *extra):
        v = subprocess.run([GPULSE, "validate-power", "--power-dir", self.power, "--result-root", self.logs,
                            "--expect-role", "prefill=1", "--expect-role", "decode=1", *extra],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)

    def test_one_exporter_step_per_het_group_in_a_heterogeneous_allocation(self):
        salloc = []
        for i, node in enumerate(NODES):  # one het component per node
            salloc += [*([":"] if i else []), "--nodes=1", "--ntasks=1", f"--nodelist={node}"]
        stderr, steps = self.collect_in_allocation(salloc, het_groups=True)
        self.validate_power("--require-distinct-het-groups")
        for group, node in enumerate(NODES):
            prefix = f"srun --overlap --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist={node} --het-group={group} "
            self.check_clock_probe(node, stderr, prefix)
            self.assertRegex(stderr, rf"launched exporter g{group} \(pid \d+\): {prefix}--kill-on-bad-exit=1 "
                                     rf"sh -c exec \S+ exporter")
            self.check_exporter_log(f"telemetry_dcgm_exporter.g{group}.out", [node])
        ids_and_nodes = [line.split() for line in steps["steps"]]
        self.assertEqual(sorted(nodes for _, nodes in ids_and_nodes), sorted(NODES), steps)
        self.assertEqual(len({step.split(".")[0] for step, _ in ids_and_nodes}), len(NODES),
                         f"each exporter step in its own het component (a job id of its own): {steps}")

    def test_one_exporter_step_for_nodes_without_a_het_group(self):
        salloc = [f"--nodes={len(NODES)}", f"--ntasks={len(NODES)}", f"--nodelist={','.join(NODES)}"]
        stderr, steps = self.collect_in_allocation(salloc, het_groups=False)
        self.validate_power()
        for node in NODES:
            self.check_clock_probe(node, stderr, f"srun --overlap --nodes=1 --ntasks=1 --ntasks-per-node=1 "
                                                 f"--nodelist={node} ")
        self.assertRegex(stderr, rf"launched exporter all \(pid \d+\): srun --overlap --nodes=2 --ntasks=2 "
                                 rf"--ntasks-per-node=1 --nodelist={','.join(NODES)} --kill-on-bad-exit=1 "
                                 rf"sh -c exec \S+ exporter")
        self.check_exporter_log("telemetry_dcgm_exporter.out", NODES)
        self.assertEqual(len(steps["steps"]), 1, f"one step on both nodes: {steps}")

    def manifest(self):
        with open(os.path.join(self.power, "manifest.json")) as f:
            return json.load(f)

    def check_clock_probe(self, node, stderr, srun_prefix):
        """The node's clock probed on the node, through srun."""
        self.assertIn(f"clock_sync_check: {node} OK (timedatectl: NTPSynchronized=yes)", stderr)
        with open(os.path.join(self.logs, f"clock_sync_{node}.out")) as f:
            self.assertIn(f"$ {srun_prefix}timedatectl show --property=NTPSynchronized --value\nyes\n", f.read())

    def check_exporter_log(self, name, nodes):
        """The step's output: each node's exporter found its scenario by the node's own hostname."""
        with open(os.path.join(self.logs, name)) as f:
            log = f.read()
        for node in nodes:
            self.assertIn(f"serving 1 GPU (simulated: scenario {node})", log)

    def check_samples(self):
        with open(os.path.join(self.power, "samples.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(rows[0], HEADER)
        seen = {}
        for row in rows[1:]:
            fields = row.split(",")
            seen.setdefault(fields[3], set()).add(fields[5])
        self.assertEqual(seen, {n: {self.uuids[n]} for n in NODES}, "each endpoint address served its own node's GPU")
        for c in (4, 8):
            with open(os.path.join(self.power, "windows", f"sa-bench-c{c}.json")) as f:
                w = json.load(f)
            self.assertEqual(w["status"], "completed")
            validate(w, "power-window.schema.json")

    def check_exporters_during_the_benchmark(self, during):
        """While the benchmark ran, each node's exporter was labelled with the node's own hostname
        (no --hostname: its UTS namespace) and served the node's GPU."""
        self.assertEqual(during["steps"]["exit_code"], 0, during["steps"]["stderr"])
        for node in NODES:
            power = during["power_lines"][f"http://{self.cluster.address(node)}:{PORT}/metrics"]
            self.assertEqual(len(power), 1, power)
            self.assertIn(f'Hostname="{node}"', power[0])
            self.assertIn(f'UUID="{self.uuids[node]}"', power[0])


if __name__ == "__main__":
    unittest.main()
