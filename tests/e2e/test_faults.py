"""Faults end to end (docs/faults.md): the kernel log as a source of Xids next to NVML's events, each
event counted once, the recommended action of each GPU in /metrics, `health --check`, /health, the
live frame and the policy alerts a real Alertmanager receives, and `gpulse inject` raising every
resolution bucket of NVIDIA's catalogue on simulated GPUs.

The kernel-log fixtures are files of records in /dev/kmsg's own format; their timestamps are this
machine's CLOCK_MONOTONIC (time.monotonic()), the kernel log's clock, so a line written before the
exporter started is older than its start exactly as on a real node."""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

import test_health
from agent_e2e import Agent
from exporter_e2e import Exporter
from gpulse_e2e import GPULSE, SOURCE_DIR, validate
from test_agent import AgentTestCase

TWO_GPUS = """\
name: two-gpus-one-xid
devices:
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700, pci_bus_id: "00000000:3B:00.0"}
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700, pci_bus_id: "00000000:5D:00.0"}
faults:
  - {at: 1.0, device: 0, kind: xid, xid: 94}
  - {at: 1.0, device: 1, kind: xid, xid: 43}
"""

SERIES = re.compile(r'^(gpulse_xid_errors_total|gpulse_gpu_recommended_action)\{gpu="(\d+)".*?'
                    r'(?:action="([^"]*)",)?xid="(\d*)"\} (\d+)$', re.M)


def record(message, age_s=0.0, seq=[0]):
    """One /dev/kmsg record `age_s` seconds before now on the kernel log's clock."""
    seq[0] += 1
    usec = int((time.monotonic() - age_s) * 1e6)
    return "4,%d,%d,-;%s\n" % (seq[0], usec, message)


def eventually(read, want, timeout=10):
    """Reads until `read()` equals `want` or the deadline passes (a read may reuse one made within
    --min-refresh-ms), and returns the last value."""
    deadline = time.monotonic() + timeout
    got = read()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.05)
        got = read()
    return got


def series(text):
    """{(gpu, xid): count} of gpulse_xid_errors_total and {gpu: (action, xid)} of the actions."""
    counts, actions = {}, {}
    for name, gpu, action, xid, value in SERIES.findall(text):
        if name == "gpulse_xid_errors_total":
            counts[(int(gpu), int(xid))] = int(value)
        else:
            actions[int(gpu)] = (action, xid)
    return counts, actions


class KernelLogExporterTest(unittest.TestCase):
    """The exporter on two simulated GPUs with a kernel-log fixture naming them by PCI address."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-faults-")
        self.scenario = os.path.join(self.tmp, "two.yaml")
        with open(self.scenario, "w") as f:
            f.write(TWO_GPUS)
        self.log = os.path.join(self.tmp, "kmsg")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp])

    def write(self, *lines):
        with open(self.log, "a") as f:
            f.write("".join(lines))

    def scrape(self, e):
        status, _, body = e.get("/metrics")
        self.assertEqual(status, 200)
        return series(body.decode())

    def test_lines_before_and_after_start_each_count_once_with_nvml(self):
        # Before the exporter starts: an hour-old Xid 48 on GPU 0, Xids 13 and 79 on GPU 1, a line
        # for a GPU that is not here, and lines that are not Xids.
        self.write(record("NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, "
                          "An uncorrectable double bit error (DBE) has been detected.", 3600),
                   record("NVRM: Xid (PCI:0000:5d:00): 13, pid=1, name=init, Graphics Exception", 3500),
                   record("NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.", 3400),
                   record("NVRM: Xid (PCI:0000:ff:00): 31, a GPU of another node", 3300),
                   record("usb 1-1: new high-speed USB device", 3200),
                   " SUBSYSTEM=pci\n")
        with Exporter("--simulate", self.scenario, "--kmsg", self.log) as e:
            counts, actions = self.scrape(e)
            self.assertEqual(counts.get((0, 48)), 1, counts)
            self.assertEqual(counts.get((1, 13)), 1, counts)
            self.assertEqual(counts.get((1, 79)), 1, counts)
            self.assertEqual(actions[0], ("RESET_GPU", "48"))
            self.assertEqual(actions[1], ("RESTART_BM", "79"))
            # After start: Xid 94 on GPU 0 through the log and through NVML (the scenario raises it
            # at simulated 1.0 s), Xid 31 through the log only; Xid 43 on GPU 1 through NVML only.
            self.write(record("NVRM: Xid (PCI:0000:3b:00): 94, pid=4242, name=python3, Contained: "
                              "SM (0x1). RST: No, D-RST: No"),
                       record("NVRM: Xid (PCI:0000:5d:00): 31, pid=4343, name=python3, MMU Fault"))
            # Read until NVML's events (due at simulated 1.0 s) have come too, then once more: no
            # report, from either source, counts twice.
            want = {(0, 48): 1, (0, 94): 1, (1, 13): 1, (1, 31): 1, (1, 43): 1, (1, 79): 1}
            self.assertEqual(eventually(lambda: self.scrape(e)[0], want, timeout=60), want)
            time.sleep(0.2)  # past --min-refresh-ms: the next scrape is a new read
            counts, actions = self.scrape(e)
            self.assertEqual(counts, want)
            self.assertEqual(actions[0], ("RESET_GPU", "48"), "Xid 94 asks less than 48")
            self.assertEqual(actions[1], ("RESTART_BM", "79"))
            status, _, body = e.get("/metrics")
            text = body.decode()
            self.assertIn('gpulse_kernel_log_readable{path="%s"} 1' % self.log, text)
            self.assertRegex(text, r'gpulse_kernel_log_records_total\{path="[^"]+"\} 7\n')
            status, _, health = e.get("/health")
            self.assertEqual(status, 200)
            self.assertIn("RESET_GPU (Xid 48", health.decode())
            self.assertIn("RESTART_BM (Xid 79", health.decode())
            # A new log (the fixture replaced, as after a reboot) clears every action, not a count.
            os.unlink(self.log)
            self.write(record("Linux version 6.1.0"))
            none = {0: ("NONE", ""), 1: ("NONE", "")}
            self.assertEqual(eventually(lambda: self.scrape(e)[1], none), none)
            self.assertEqual(self.scrape(e)[0][(1, 79)], 1)

    def test_an_unreadable_log_is_stated_and_nvml_still_counts(self):
        missing = os.path.join(self.tmp, "no-such-log")
        with Exporter("--simulate", self.scenario, "--kmsg", missing) as e:
            self.assertTrue(any(missing in l and "kernel log not read" in l for l in e.stderr_lines),
                            e.stderr_lines)
            status, _, body = e.get("/metrics")
            self.assertIn('gpulse_kernel_log_readable{path="%s"} 0' % missing, body.decode())
            counts, actions = series(body.decode())
            self.assertEqual(actions[0], ("NONE", ""))

    def test_once_reads_the_log_and_a_gpu_lost_before_start_keeps_its_xids(self):
        # lost-at-start: GPU 1 (PCI 2A) is lost before NVML opens; only the kernel log has its Xid 79.
        env = dict(os.environ, GPULSE_PROCFS_ROOT=os.path.join(SOURCE_DIR, "tests", "testdata", "procfs",
                                                               "lost-at-start"))
        self.write(record("NVRM: Xid (PCI:0000:2a:00): 79, GPU has fallen off the bus.", 60))
        p = subprocess.run([GPULSE, "exporter", "--simulate", "lost-at-start", "--kmsg", self.log, "--once"],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        counts, actions = series(p.stdout)
        self.assertEqual(counts, {(1, 79): 1}, p.stdout[-3000:])
        self.assertEqual(actions, {0: ("NONE", ""), 1: ("RESTART_BM", "79")})


# Every immediate bucket of NVIDIA's catalogue (and what gpulse adds): the Xid injected, what else
# the request says, and the recommended action that must follow.
BUCKETS = [
    ("IGNORE", {"xid": 43}, "NONE"),
    ("RESTART_APP", {"xid": 13}, "RESTART_APP"),
    ("RESTART_VM", {"xid": 151}, "RESTART_VM"),
    ("RESET_GPU", {"xid": 95}, "RESET_GPU"),
    ("RESTART_BM", {"xid": 79}, "RESTART_BM"),
    ("CHECK_MECHANICALS", {"xid": 54}, "CHECK_MECHANICALS"),
    ("UPDATE_SWFW", {"xid": 78}, "UPDATE_SWFW"),
    ("CONTACT_SUPPORT", {"xid": 142}, "CONTACT_SUPPORT"),
    ("XID_154", {"xid": 154, "message": "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"},
     "DRAIN_AND_RESET"),
    ("XID_154 (NVML only)", {"xid": 154, "sources": ["nvml"]}, "XID_154"),
    ("CHECK_UVM", {"xid": 159}, "CHECK_UVM"),
    ("WORKFLOW_XID_45", {"xid": 45, "message": "Ch 00000010"}, "WORKFLOW_XID_45"),
    ("WORKFLOW_XID_48", {"xid": 48}, "RESET_GPU"),
    ("WORKFLOW_NVLINK_ERR", {"xid": 74}, "WORKFLOW_NVLINK_ERR"),
    ("WORKFLOW_NVLINK5_ERR", {"xid": 149, "message": "NETIR_LINK_EVT Fatal XC0 i0 Link 09 (0x025525c6 0x0 0x0 0x0 0x0 0x0)"},
     "WORKFLOW_NVLINK5_ERR"),
    ("no bucket (162)", {"xid": 162}, "UNKNOWN"),
    ("not in the catalogue", {"xid": 999}, "UNKNOWN"),
    ("ecc (Xid 48)", {"kind": "ecc", "dbe": 1}, "RESET_GPU"),
]


class InjectionTest(AgentTestCase):
    """`gpulse inject` on an agent reading a kernel-log file, with a policy on the recommended action
    and a real Alertmanager."""

    scenario = "8xH100"
    shared_agent = False
    start_alertmanager = test_health.AlertmanagerTest.start_alertmanager
    alerts = test_health.AlertmanagerTest.alerts

    def new_injection_agent(self, *extra):
        self.log = os.path.join(self.tmp, "kmsg-%s" % self._testMethodName)
        open(self.log, "w").close()
        return self.new_agent(args=("--kmsg", self.log, *extra))

    def inject(self, agent, gpu, fields, status=0):
        args = ["inject", "--gpu", str(gpu), fields.get("kind", "xid"), "--json"]
        for key, flag in (("xid", "--xid"), ("message", "--message"), ("dbe", "--dbe"), ("pid", "--pid"),
                          ("process", "--process")):
            if key in fields:
                args += [flag, str(fields[key])]
        for source in fields.get("sources", []):
            args += ["--source", source]
        p = agent.cli(*args)
        self.assertEqual(p.returncode, status, p.stderr)
        return json.loads(p.stdout) if status == 0 else p

    def actions(self, agent):
        return series(agent.tcp_request("GET", "/metrics").text)[1]

    def reboot(self):
        """A new kernel log, as after a reboot: every action clears."""
        os.unlink(self.log)
        open(self.log, "w").close()

    def test_every_bucket_reaches_metrics_health_policy_and_alertmanager(self):
        port = self.start_alertmanager()
        a = self.new_injection_agent("--alertmanager", "http://127.0.0.1:%d" % port, "--hostname", "node9")
        self.cli_ok(a, "health", "-g", "0", "--set", "pm")
        self.cli_ok(a, "policy", "-g", "0", "--set", "0,0", "-a", "any")
        want_alerts = set()
        for start in range(0, len(BUCKETS), 8):
            self.reboot()
            none = {("NONE", "")}
            self.assertEqual(eventually(lambda: set(self.actions(a).values()), none), none)
            batch = BUCKETS[start:start + 8]
            for gpu, (bucket, fields, action) in enumerate(batch):
                answer = self.inject(a, gpu, fields)
                self.assertEqual(answer["gpu"], gpu)
                if "sources" not in fields:
                    self.assertRegex(answer["kernel_log"], r"^NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): \d+, ")
            actions = self.actions(a)
            p = a.cli("health", "-g", "0", "--check", "--json")
            check = json.loads(p.stdout)
            validate(check, "agent-health.schema.json")
            for gpu, (bucket, fields, action) in enumerate(batch):
                xid = str(fields.get("xid", 48))
                self.assertEqual(actions[gpu], (action, "" if action == "NONE" else xid), bucket)
                ra = next(g for g in check["gpus"] if g["gpu"] == gpu)["recommended_action"]
                self.assertEqual(ra["action"], action, bucket)
                if action != "NONE":
                    want_alerts.add((str(gpu), action, xid))
                    self.assertIn("Recommended action: %s - Xid %s" % (action, xid),
                                  a.cli("health", "-g", "0", "--check").stdout, bucket)
            violations = a.api("GET", "/api/v1/policy/violations?group=0",
                               schema="agent-violations.schema.json")["violations"]
            got = set((str(v["gpu"]), v["recommended_action"], str(int(v["value"]))) for v in violations)
            self.assertLessEqual(set(w for w in want_alerts), got)
        # Every action reached the Alertmanager with the Xid and the catalogue's description.
        deadline = time.monotonic() + 60
        got = set()
        while time.monotonic() < deadline:
            alerts = [al for al in self.alerts(port) if al["labels"].get("condition") == "action"]
            got = set((al["labels"]["gpu"], al["labels"]["action"], al["labels"]["xid"]) for al in alerts)
            if got >= want_alerts:
                break
            time.sleep(0.2)
        self.assertEqual(got, want_alerts)
        by = {(al["labels"]["gpu"], al["labels"]["action"]): al for al in alerts}
        reset = by[("3", "RESET_GPU")]
        self.assertEqual(reset["labels"]["xid"], "95")
        self.assertEqual(reset["labels"]["Hostname"], "node9")
        self.assertEqual(reset["annotations"]["description"], "Uncontained memory error")
        self.assertEqual(reset["annotations"]["action"], "reset the GPU")

    def test_actions_clear_when_seen_done(self):
        a = self.new_injection_agent()
        # RESTART_APP clears when the process the driver named exits.
        app = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: (app.kill(), app.wait()))
        self.inject(a, 0, {"xid": 13, "pid": app.pid, "process": "sleep"})
        self.assertEqual(self.actions(a)[0], ("RESTART_APP", "13"))
        app.kill()
        app.wait()
        self.assertEqual(eventually(lambda: self.actions(a)[0], ("NONE", "")), ("NONE", ""))
        # RESET_GPU clears with a GPU reset: a policy that resets on it.
        gid = self.create_group(a, "one", "1")
        self.cli_ok(a, "policy", "-g", str(gid), "--set", "1,0", "-a", "RESET_GPU")
        self.inject(a, 1, {"xid": 95})
        self.actions(a)  # the read that fires the policy, which resets the GPU
        v = a.api("GET", "/api/v1/policy/violations?group=%d" % gid, schema="agent-violations.schema.json")
        self.assertEqual(v["violations"][-1]["action"]["done"], True, v)
        self.assertEqual(eventually(lambda: self.actions(a)[1], ("NONE", "")), ("NONE", ""))
        # A reset does not clear a reboot: Xid 79 waits for a new boot.
        self.inject(a, 2, {"kind": "lost"})
        self.assertEqual(self.actions(a)[2], ("RESTART_BM", "79"))
        status = a.tcp_request("GET", "/health")
        self.assertEqual(status.status, 503, "a lost GPU fails /health")
        self.reboot()
        self.assertEqual(eventually(lambda: self.actions(a)[2], ("NONE", "")), ("NONE", ""))

    def test_thermal_power_and_bad_requests(self):
        a = self.new_injection_agent()
        for kind in ("thermal", "power"):
            answer = self.inject(a, 4, {"kind": kind})
            self.assertNotIn("kernel_log", answer)
            self.assertIn("throttle", answer["simulator"][0])
        self.assertEqual(self.actions(a)[4], ("NONE", ""))
        p = self.inject(a, 0, {"kind": "xid"}, status=2)
        self.assertIn("needs 'xid'", p.stderr)
        p = self.inject(a, 42, {"xid": 13}, status=2)
        self.assertIn("no GPU 42", p.stderr)
        r = a.request("POST", "/api/v1/inject", {"gpu": 0, "kind": "xid", "xid": 13, "colour": 1})
        self.assertEqual(r.status, 400)
        self.assertIn("unknown member 'colour'", r.json["error"])
        r = a.request("POST", "/api/v1/inject", {"gpu": 0, "kind": "xid", "xid": 13, "message": "a\nb"})
        self.assertEqual(r.status, 400)
        # Nothing was injected by the refused requests.
        self.assertEqual(set(self.actions(a).values()), {("NONE", "")})

    def test_without_a_log_file_injection_goes_through_nvml_alone(self):
        a = self.new_agent()
        r = a.request("POST", "/api/v1/inject", {"gpu": 0, "kind": "xid", "xid": 13})
        self.assertEqual(r.status, 201, r.body)
        self.assertNotIn("kernel_log", r.json)
        self.assertEqual(self.actions(a)[0], ("RESTART_APP", "13"))


if __name__ == "__main__":
    unittest.main()
