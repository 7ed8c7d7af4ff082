"""Health watches, policies, diagnostics and configuration on the agent (docs/health.md), end to end:
the real `gpulse agent` on the simulator's `health-trips` scenario (each GPU trips one thing at a
known simulated time), driven through the CLI verbs and the API on the agent's simulated clock.

health-trips (sim/scenarios/health-trips.yaml): GPU 0 healthy; GPU 1 13 PCIe replays at t=10; GPU 2
a double-bit ECC error and a pending retired page at t=20; GPU 3 a corrupt InfoROM from t=30; GPU 4
thermal slowdown 40-45 s and power 700 W from t=40 (hot); GPU 5 power cap 50-55 s and 650 W from
t=50; GPU 6 XID 48 at t=60; GPU 7 NVLink errors at t=70. The agent's simulated clock starts at 0.
"""
import json
import os
import re
import subprocess
import time
import unittest

from agent_e2e import Agent
from gpulse_e2e import GPULSE, validate
from test_agent import AgentTestCase

SCENARIO = "health-trips"
HEALTH_SCHEMAS = ["agent-health", "agent-health-watch", "agent-policy", "agent-violation",
                  "agent-violations", "agent-diag", "agent-config", "agent-config-set", "agent-cleared"]


def gpu_result(check, gpu):
    return next(g for g in check["gpus"] if g["gpu"] == gpu)


def subsystem_result(check, gpu, subsystem):
    g = gpu_result(check, gpu)
    return next(s["result"] for s in g["subsystems"] if s["subsystem"] == subsystem)


def metric_lines(text, name):
    return [l for l in text.splitlines() if l.startswith(name + "{")]


class HealthWatchTest(AgentTestCase):
    """One agent, the clock walked through every trip of the scenario in order."""

    scenario = SCENARIO

    def check(self, agent=None, code=None):
        agent = agent or self.agent
        p = agent.cli("health", "-g", "0", "--check", "--json")
        doc = json.loads(p.stdout)
        validate(doc, "agent-health.schema.json")
        self.assertEqual(p.returncode, 1 if doc["overall"] == "fail" else 0, p.stderr)
        return doc

    def test_each_subsystem_trips_on_its_gpu_at_its_time(self):
        a = self.agent
        watch = self.cli_json(a, "agent-health-watch.schema.json", "health", "-g", "0", "--set", "a")
        self.assertEqual(watch["systems"], "pmitnd")
        a.advance(5)
        doc = self.check()
        self.assertEqual(doc["overall"], "pass")
        self.assertEqual(len(doc["gpus"]), 8)
        for g in doc["gpus"]:
            self.assertEqual(g["incidents"], [], g)

        a.advance(6)  # t = 11: GPU 1's 13 replays within the minute
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 1, "pcie"), "warn")
        self.assertEqual(gpu_result(doc, 1)["incidents"][0]["message"],
                         "Detected more than 8 PCIe replays per minute for GPU 1: 13")
        self.assertEqual(doc["overall"], "warn")
        text = a.cli("health", "-g", "0", "--check").stdout
        self.assertIn("Overall Health: Warning", text)
        self.assertIn("PCIe system: Warning - Detected more than 8 PCIe", text)

        a.advance(10)  # t = 21: GPU 2's double-bit error fails memory; its retirement is pending
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 2, "memory"), "fail")
        msgs = [i["message"] for i in gpu_result(doc, 2)["incidents"]]
        self.assertTrue(any("double-bit" in m for m in msgs), msgs)
        self.assertTrue(any("retirement is pending" in m for m in msgs), msgs)
        self.assertEqual(doc["overall"], "fail")
        p = a.cli("health", "-g", "0", "--check")
        self.assertEqual(p.returncode, 1)
        self.assertIn("Overall Health: Failure", p.stdout)

        a.advance(10)  # t = 31: GPU 3's InfoROM is corrupt, but it is validated once a minute
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 3, "inforom"), "pass")

        a.advance(15)  # t = 46: GPU 4's thermal violation time grew
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 4, "thermal"), "warn")
        self.assertEqual(subsystem_result(doc, 4, "power"), "pass")

        a.advance(10)  # t = 56: GPU 5's power violation time grew
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 5, "power"), "warn")
        self.assertEqual(subsystem_result(doc, 5, "thermal"), "pass")

        a.advance(5)  # t = 61: GPU 6's XID 48 (a double-bit error: reset the GPU); the InfoROM read at 60
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 3, "inforom"), "warn")
        self.assertEqual(gpu_result(doc, 3)["incidents"][0]["message"],
                         "A corrupt InfoROM has been detected in GPU 3.")
        self.assertEqual(subsystem_result(doc, 6, "memory"), "fail")
        self.assertIn("XID 48", gpu_result(doc, 6)["incidents"][0]["message"])

        a.advance(10)  # t = 71: GPU 7's NVLink errors; GPU 1's replays are older than a minute
        doc = self.check()
        self.assertEqual(subsystem_result(doc, 7, "nvlink"), "warn")
        self.assertEqual(subsystem_result(doc, 1, "pcie"), "pass")
        self.assertEqual(subsystem_result(doc, 0, "memory"), "pass")
        self.assertEqual(gpu_result(doc, 0)["overall"], "pass")

        # The exporter's view of the same verdicts.
        metrics = a.tcp_request("GET", "/metrics").text
        lines = metric_lines(metrics, "gpulse_health")
        self.assertEqual(len(lines), 8 * 7, lines[:5])
        self.assertTrue(any(re.match(r'gpulse_health\{gpu="2",UUID="GPU-[^"]+",.*subsystem="memory"\} 20$', l)
                            for l in lines), lines)
        self.assertTrue(any(re.match(r'gpulse_health\{gpu="0",.*subsystem="pcie"\} 0$', l) for l in lines))

    def test_fetch_clear_and_refusals(self):
        a = self.new_agent()
        self.cli_fails(a, 2, "no health watch", "health", "-g", "0", "--check")
        self.cli_fails(a, 2, "unknown health subsystem letter 'q'", "health", "-g", "0", "--set", "pq")
        self.cli_fails(a, 2, "no group 9", "health", "-g", "9", "--set", "pm")
        self.cli_fails(a, 2, "give one of", "health", "-g", "0")
        self.cli_ok(a, "health", "-g", "0", "--set", "pm", "-m", "120")
        fetched = self.cli_json(a, "agent-health-watch.schema.json", "health", "-g", "0", "--fetch")
        self.assertEqual(fetched["subsystems"], ["pcie", "memory"])
        self.assertEqual(fetched["keep_age_s"], 120)
        table = self.cli_ok(a, "health", "-g", "0", "--fetch").stdout
        self.assertRegex(table, r"\| PCIe +\| On +\|")
        self.assertRegex(table, r"\| InfoROM +\| Off +\|")
        # Survives a restart (committed before the answer), then clears.
        a.restart(kill=True)
        self.assertEqual(self.cli_json(a, "agent-health-watch.schema.json", "health", "-g", "0",
                                       "--fetch")["systems"], "pm")
        self.cli_json(a, "agent-cleared.schema.json", "health", "-g", "0", "--clear")
        self.cli_fails(a, 2, "no health watch", "health", "-g", "0", "--fetch")

    def test_skipped_and_lost_gpus_stay_in_the_check(self):
        a = self.new_agent(scenario="faults")
        self.cli_ok(a, "health", "-g", "0", "--set", "pm")
        a.advance(2)  # GPU 3 falls off the bus at 1.5 s; GPU 1 was never readable
        doc = self.check(a)
        self.assertEqual(sorted(g["gpu"] for g in doc["gpus"]), [0, 1, 2, 3])
        skipped = gpu_result(doc, 1)
        self.assertEqual(skipped["state"], "skipped")
        self.assertEqual(skipped["overall"], "warn")
        self.assertIn("its health is unknown", skipped["incidents"][0]["message"])
        lost = gpu_result(doc, 3)
        self.assertEqual(lost["overall"], "fail")
        self.assertEqual({s["result"] for s in lost["subsystems"]}, {"fail"})
        self.assertIn("GPU 3 is lost", lost["incidents"][0]["message"])
        self.assertEqual(doc["overall"], "fail")

    def test_health_endpoint_fails_with_the_flag(self):
        a = self.new_agent(args=("--health-in-health",))
        self.cli_ok(a, "health", "-g", "0", "--set", "m")
        self.assertEqual(a.tcp_request("GET", "/health").status, 200)
        a.advance(21)
        # /health answers from a read at most --min-refresh-ms old: wait (bounded) for a new one.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = a.tcp_request("GET", "/health")
            if r.status != 200:
                break
            time.sleep(0.05)
        self.assertEqual(r.status, 503)
        self.assertIn("double-bit ECC", r.text)
        # Without the flag /health stays about the reader only.
        b = self.new_agent(name="noflag")
        self.cli_ok(b, "health", "-g", "0", "--set", "m")
        b.advance(21)
        self.assertEqual(b.tcp_request("GET", "/health").status, 200)


class Listener:
    """`gpulse policy --reg --json --count N` in the background."""

    def __init__(self, agent, count, group="0"):
        self.proc = subprocess.Popen([GPULSE, "policy", "--host", agent.host, "-g", group, "--reg",
                                      "--json", "--count", str(count)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_registered(self, agent, n):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = re.search(r"^gpulse_policy_listeners (\d+)$", agent.tcp_request("GET", "/metrics").text, re.M)
            if m and int(m.group(1)) >= n:
                return
            if self.proc.poll() is not None:
                raise AssertionError("listener exited: " + self.proc.stderr.read())
            time.sleep(0.05)
        raise AssertionError("listeners did not register")

    def result(self):
        out, err = self.proc.communicate(timeout=60)
        if self.proc.returncode != 0:
            raise AssertionError("listener exited %d: %s" % (self.proc.returncode, err))
        return [json.loads(l) for l in out.splitlines() if l.strip()]


EXPECTED = [  # (gpu, condition) in order of time; within a tick, counters before limits
    (1, "pcie"), (2, "dbe"), (2, "max_pages"), (4, "power"), (4, "thermal"), (5, "power"), (6, "xid"),
    (7, "nvlink")]


class PolicyTest(AgentTestCase):
    scenario = SCENARIO
    shared_agent = False

    def set_policy(self, agent, *extra):
        return self.cli_json(agent, "agent-policy.schema.json", "policy", "-g", "0", "--set", "0,0",
                             "-T", "80", "-P", "600", "-M", "1", "-e", "-p", "-n", "-x", *extra)

    def test_listeners_receive_each_violation_exactly_once(self):
        a = self.new_agent()
        p = self.set_policy(a)
        self.assertEqual(p["policy"]["conditions"],
                         ["dbe", "pcie", "max_pages", "thermal", "power", "nvlink", "xid"])
        listeners = [Listener(a, len(EXPECTED)) for _ in range(3)]
        listeners[0].wait_registered(a, 3)
        a.advance(80)
        got = [l.result() for l in listeners]
        for events in got:
            for e in events:
                validate(e, "agent-violation.schema.json")
            self.assertEqual([(e["gpu"], e["condition"]) for e in events], EXPECTED)
            self.assertEqual([e["seq"] for e in events], list(range(1, len(EXPECTED) + 1)))
        self.assertEqual(got[0], got[1])
        self.assertEqual(got[0], got[2])
        by = {(e["gpu"], e["condition"]): e for e in got[0]}
        self.assertEqual(by[(1, "pcie")]["value"], 13)
        self.assertEqual(by[(6, "xid")]["value"], 48)
        self.assertEqual(by[(7, "nvlink")]["value"], 7)
        self.assertGreater(by[(4, "thermal")]["value"], 80)
        self.assertEqual(by[(5, "power")]["value"], 650)
        self.assertEqual(by[(4, "power")]["value"], 700)
        # Each at its trip's time (the agent reads every second from t = 0).
        t0 = a.now_ns() // 1_000_000 - 80_000
        self.assertEqual(by[(1, "pcie")]["t_unix_ms"] - t0, 10_000)
        self.assertEqual(by[(6, "xid")]["t_unix_ms"] - t0, 60_000)
        self.assertEqual(by[(7, "nvlink")]["t_unix_ms"] - t0, 70_000)
        self.assertTrue(40_000 < by[(4, "thermal")]["t_unix_ms"] - t0 <= 45_000)
        # The API's list and the exporter's counters agree; nothing more arrives later.
        a.advance(30)
        listed = a.api("GET", "/api/v1/policy/violations", schema="agent-violations.schema.json")
        self.assertEqual([v["seq"] for v in listed["violations"]], list(range(1, len(EXPECTED) + 1)))
        self.assertEqual(listed["violations"], got[0])
        counts = metric_lines(a.tcp_request("GET", "/metrics").text, "gpulse_policy_violations_total")
        self.assertEqual(len(counts), 8 * 7)
        self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in counts), len(EXPECTED))
        self.assertTrue(any(re.match(r'gpulse_policy_violations_total\{gpu="6",.*condition="xid"\} 1$', l)
                            for l in counts))

    def test_an_xid_read_by_a_scrape_still_reaches_the_policy(self):
        """The driver hands an XID to whichever read asks first: here a scrape between two policy
        ticks (every 7 s: at 56 and 63) takes GPU 6's XID 48 of t = 60."""
        a = self.new_agent()
        self.cli_ok(a, "policy", "-g", "0", "--set", "0,0", "-x", "-u", "7000")
        a.advance(61)
        self.assertIn('xid="48"', a.tcp_request("GET", "/metrics").text)  # the scrape saw it
        a.advance(3)
        v = a.api("GET", "/api/v1/policy/violations", schema="agent-violations.schema.json")["violations"]
        self.assertEqual([(x["gpu"], x["condition"], x["value"]) for x in v], [(6, "xid", 48)])

    def test_text_listener_get_and_clear(self):
        a = self.new_agent()
        self.set_policy(a)
        text = self.cli_ok(a, "policy", "-g", "0", "--get").stdout
        self.assertIn("Max temperature threshold - 80", text)
        self.assertIn("XID errors", text)
        proc = subprocess.Popen([GPULSE, "policy", "--host", a.host, "-g", "0", "--reg", "--count", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Listener.wait_registered(type("L", (), {"proc": proc})(), a, 1)
        a.advance(11)
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("Listening for violations.", out)
        self.assertRegex(out, r"Timestamp: 2026-01-01T00:00:10\.000Z\nGPU 1: PCIe replay errors have "
                              r"violated policy manager values\. Replays: 13")
        self.cli_json(a, "agent-cleared.schema.json", "policy", "-g", "0", "--clear")
        self.cli_fails(a, 2, "has no policy", "policy", "-g", "0", "--get")

    def test_bad_policies_are_refused(self):
        a = self.new_agent()
        self.cli_fails(a, 2, "needs conditions", "policy", "-g", "0", "--set", "0,0")
        self.cli_fails(a, 2, "ACTION,VALIDATION", "policy", "-g", "0", "--set", "2,0", "-x")
        self.cli_fails(a, 2, "need GPU kernels", "policy", "-g", "0", "--set", "1,2", "-x")
        self.cli_fails(a, 2, "go with --set", "policy", "-g", "0", "--get", "-x")
        r = a.request("POST", "/api/v1/policy", {"group": 0, "conditions": ["thermal"]})
        self.assertEqual(r.status, 400)
        self.assertIn("max_temp_c", r.json["error"])

    def test_reset_action_restores_config_and_runs_validation(self):
        a = self.new_agent()
        self.cli_ok(a, "group", "-c", "six")
        self.cli_ok(a, "group", "-g", "2", "-a", "6")
        self.cli_ok(a, "config", "-g", "2", "--set", "-P", "500", "-c", "2")
        self.cli_ok(a, "policy", "-g", "2", "--set", "1,1", "-x")
        a.advance(61)
        v = a.api("GET", "/api/v1/policy/violations?group=2", schema="agent-violations.schema.json")["violations"]
        self.assertEqual(len(v), 1)
        self.assertEqual(v[0]["action"]["done"], True, v[0])
        self.assertEqual(v[0]["action"]["config"][0]["gpu"], 6)
        self.assertEqual(sorted(v[0]["action"]["config"][0]["set"]), ["compute_mode", "power_limit_w"])
        validate(v[0]["validation"], "agent-diag.schema.json")
        cfg = self.cli_json(a, "agent-config.schema.json", "config", "-g", "2", "--get")
        settings = {s["setting"]: s for s in cfg["gpus"][0]["settings"]}
        self.assertEqual(settings["power_limit_w"]["current"], 500)
        self.assertEqual(settings["compute_mode"]["current"], 3)
        self.assertTrue(cfg["gpus"][0]["matches_target"])


class AlertmanagerTest(AgentTestCase):
    """A real Alertmanager (Debian's prometheus-alertmanager) on loopback receives the violations."""

    scenario = SCENARIO
    shared_agent = False

    def start_alertmanager(self):
        binary = "/usr/bin/prometheus-alertmanager"
        if not os.path.exists(binary):
            if os.environ.get("CI") == "true":
                self.fail("prometheus-alertmanager is not installed (scripts/install-deps.sh installs it)")
            self.skipTest("prometheus-alertmanager is not installed")
        d = os.path.join(self.tmp, "am")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "am.yml"), "w") as f:
            f.write("route:\n  receiver: nobody\n  group_wait: 1h\nreceivers:\n  - name: nobody\n")
        log = open(os.path.join(d, "am.log"), "w")
        proc = subprocess.Popen([binary, "--config.file", os.path.join(d, "am.yml"),
                                 "--storage.path", os.path.join(d, "data"),
                                 "--web.listen-address", "127.0.0.1:0", "--cluster.listen-address", ""],
                                stdout=log, stderr=log)
        self.addCleanup(lambda: (proc.terminate(), proc.wait(timeout=30), log.close()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(os.path.join(d, "am.log")) as f:
                m = re.search(r'address=127\.0\.0\.1:(\d+)', f.read())
            if m:
                port = int(m.group(1))
                try:
                    import http.client
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    try:
                        c.request("GET", "/-/ready")
                        if c.getresponse().status == 200:
                            return port
                    finally:
                        c.close()
                except OSError:
                    pass
            if proc.poll() is not None:
                raise AssertionError("alertmanager exited:\n" + open(os.path.join(d, "am.log")).read())
            time.sleep(0.1)
        raise AssertionError("alertmanager did not start")

    def alerts(self, port):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            c.request("GET", "/api/v2/alerts")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            return json.loads(r.read())
        finally:
            c.close()

    def test_alertmanager_receives_every_violation(self):
        port = self.start_alertmanager()
        a = self.new_agent(args=("--alertmanager", "http://127.0.0.1:%d" % port, "--hostname", "node7"))
        self.cli_ok(a, "policy", "-g", "0", "--set", "0,0", "-T", "80", "-P", "600", "-M", "1",
                    "-e", "-p", "-n", "-x")
        a.advance(80)
        deadline = time.monotonic() + 60
        want = set((str(g), c) for g, c in EXPECTED)
        got = set()
        while time.monotonic() < deadline:
            got = set((al["labels"].get("gpu"), al["labels"].get("condition")) for al in self.alerts(port))
            if got >= want:
                break
            time.sleep(0.2)
        self.assertEqual(got, want)
        by = {(al["labels"]["gpu"], al["labels"]["condition"]): al for al in self.alerts(port)}
        xid = by[("6", "xid")]
        self.assertEqual(xid["labels"]["alertname"], "GpulsePolicyViolation")
        self.assertEqual(xid["labels"]["severity"], "critical")
        self.assertEqual(xid["labels"]["xid"], "48")
        self.assertEqual(xid["labels"]["Hostname"], "node7")
        self.assertRegex(xid["labels"]["UUID"], r"^GPU-")
        self.assertIn("XID: 48", xid["annotations"]["summary"])
        self.assertEqual(by[("5", "power")]["labels"]["severity"], "warning")
        # The sender counts a batch once it has read the Alertmanager's answer, which can be after
        # the Alertmanager lists its alerts: wait (bounded) for the count, then check it is exact.
        self.assertEqual(self.alerts_sent_when_at_least(a, len(EXPECTED)), len(EXPECTED))

    def alerts_sent_when_at_least(self, agent, n):
        deadline = time.monotonic() + 30
        sent = -1
        while time.monotonic() < deadline:
            m = re.search(r"^gpulse_alerts_sent_total (\d+)$", agent.tcp_request("GET", "/metrics").text, re.M)
            self.assertIsNotNone(m, "no gpulse_alerts_sent_total in /metrics")
            sent = int(m.group(1))
            if sent >= n:
                break
            time.sleep(0.1)
        return sent

    def test_an_absent_alertmanager_costs_nothing_and_bad_urls_are_refused(self):
        a = self.new_agent(args=("--alertmanager", "http://127.0.0.1:9"))
        self.cli_ok(a, "policy", "-g", "0", "--set", "0,0", "-x")
        a.advance(61)
        listed = a.api("GET", "/api/v1/policy/violations", schema="agent-violations.schema.json")
        self.assertEqual(len(listed["violations"]), 1)  # the tick went on
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = re.search(r"^gpulse_alerts_failed_total (\d+)$", a.tcp_request("GET", "/metrics").text, re.M)
            if m and int(m.group(1)) >= 1:
                break
            time.sleep(0.1)
        self.assertGreaterEqual(int(m.group(1)), 1)
        for url, why in (("https://127.0.0.1:9093", "https is not supported"),
                         ("127.0.0.1:9093", "must start with http://"),
                         ("http://127.0.0.1", "HOST:PORT")):
            p = subprocess.run([GPULSE, "agent", "--simulate", SCENARIO, "--state-dir",
                                os.path.join(self.tmp, "bad"), "--socket", "none", "-a", "127.0.0.1:0",
                                "--alertmanager", url], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(why, p.stderr)


class DiagTest(AgentTestCase):
    scenario = SCENARIO
    shared_agent = False

    def dev_root(self, minors=range(8)):
        d = os.path.join(self.tmp, "dev-%d" % len(os.listdir(self.tmp)))
        os.makedirs(d)
        for n in ["nvidiactl"] + ["nvidia%d" % m for m in minors]:
            open(os.path.join(d, n), "w").close()
        return d

    def test_level_one_checks(self):
        a = self.new_agent(args=("--dev-root", self.dev_root()))
        doc = self.cli_json(a, "agent-diag.schema.json", "diag", "-g", "0", "-r", "1")
        results = {t["name"]: t for t in doc["tests"]}
        self.assertEqual(results["CUDA Main Library"]["result"], "skip")
        self.assertEqual(results["Permissions and OS Blocks"]["result"], "pass")
        self.assertEqual(results["Inforom"]["result"], "pass")
        self.assertEqual(results["Page Retirement/Row Remap"]["result"], "pass")
        self.assertEqual(doc["overall"], "pass")
        a.advance(31)  # GPU 2's pending retirement, GPU 3's InfoROM
        p = a.cli("diag", "-g", "0", "-r", "1", "--json")
        self.assertEqual(p.returncode, 1)
        doc = json.loads(p.stdout)
        results = {t["name"]: t for t in doc["tests"]}
        self.assertEqual(results["Inforom"]["result"], "fail")
        self.assertIn("GPU 3", results["Inforom"]["reason"])
        self.assertEqual(results["Page Retirement/Row Remap"]["result"], "warn")
        text = a.cli("diag", "-g", "0", "-r", "1").stdout
        self.assertIn("Successfully ran diagnostic for group.", text)
        self.assertRegex(text, r"\| Inforom +\| Fail - the InfoROM is corrupt on GPU 3")

    def test_missing_device_nodes_and_cuda_variables(self):
        a = self.new_agent(args=("--dev-root", self.dev_root(minors=range(7))))
        a.stop()
        a.env = {"CUDA_LAUNCH_BLOCKING": "1"}
        a.start()
        doc = json.loads(a.cli("diag", "-g", "0", "--json").stdout)
        results = {t["name"]: t for t in doc["tests"]}
        self.assertEqual(results["Permissions and OS Blocks"]["result"], "fail")
        self.assertIn("nvidia7 does not exist", results["Permissions and OS Blocks"]["reason"])
        self.assertEqual(results["Environment Variables"]["result"], "warn")
        self.assertIn("CUDA_LAUNCH_BLOCKING", results["Environment Variables"]["reason"])

    def test_levels_that_need_gpu_kernels_are_refused(self):
        a = self.new_agent()
        for level in ("2", "3"):
            self.cli_fails(a, 2, "runs GPU kernels", "diag", "-g", "0", "-r", level)
        self.cli_fails(a, 2, "is not 1, 2, 3 or 4", "diag", "-g", "0", "-r", "9")
        # An action under the write rule: not a GET, and not over TCP without authentication.
        self.assertEqual(a.request("GET", "/api/v1/diag").status, 405)
        self.assertEqual(a.tcp_request("POST", "/api/v1/diag", {"group": 0}).status, 403)


class ConfigTest(AgentTestCase):
    scenario = SCENARIO
    shared_agent = False

    def settings(self, agent, group="0"):
        cfg = self.cli_json(agent, "agent-config.schema.json", "config", "-g", group, "--get")
        return cfg, [{s["setting"]: s for s in g["settings"]} for g in cfg["gpus"]]

    def test_set_get_and_the_target_survives_restarts(self):
        a = self.new_agent()
        cfg, gpus = self.settings(a)
        self.assertIsNone(cfg["target"])
        self.assertEqual(gpus[0]["power_limit_w"]["current"], 700)
        self.assertIsNone(gpus[0]["power_limit_w"]["target"])
        out = self.cli_json(a, "agent-config-set.schema.json", "config", "-g", "0", "--set", "-P", "500", "-c", "2")
        # dcgmi's -c 2 is Exclusive Process; the agent's API speaks NVML's number for it, 3.
        self.assertEqual(out["target"], {"compute_mode": 3, "power_limit_w": 500})
        cfg, gpus = self.settings(a)
        for g in gpus:
            self.assertEqual(g["power_limit_w"]["current"], 500)
            self.assertEqual(g["compute_mode"]["current"], 3)
        table = self.cli_ok(a, "config", "-g", "0", "--get").stdout
        self.assertRegex(table, r"\| Compute Mode +\| E\. Process +\| E\. Process +\|")
        self.assertRegex(table, r"\| Power Limit +\| 500 +\| 500 +\|")
        self.assertIn("Group of 8 GPUs", table)
        self.assertRegex(table, r"\| Sync Boost +\| Not Specified +\| Not Supported +\|")
        # A clean restart and a kill -9: the simulator starts from its defaults, the agent applies
        # the target again.
        for kill in (False, True):
            a.restart(kill=kill)
            cfg, gpus = self.settings(a)
            self.assertTrue(all(g["matches_target"] for g in cfg["gpus"]), cfg)
            self.assertEqual(gpus[7]["power_limit_w"]["current"], 500)
        verbose = self.cli_ok(a, "config", "-g", "0", "--get", "-v").stdout
        self.assertEqual(verbose.count("GPU ID:"), 8)
        enforced = self.cli_json(a, "agent-config-set.schema.json", "config", "-g", "0", "--enforce")
        self.assertTrue(enforced["complete"])
        self.assertTrue(all(g["set"] == [] for g in enforced["applied"]))

    def test_sets_outside_the_range_are_refused_before_anything_changes(self):
        a = self.new_agent()
        _, gpus = self.settings(a)
        p = self.cli_fails(a, 2, r"GPU 0: power limit 900 W is outside the allowed range", "config", "-g", "0",
                           "--set", "-P", "900")
        self.cli_fails(a, 2, "is not supported", "config", "-g", "0", "--set", "-a", "1,2")
        self.cli_fails(a, 2, "sync boost cannot be set", "config", "-g", "0", "--set", "-s", "1")
        self.cli_fails(a, 2, "go with --set", "config", "-g", "0", "--get", "-P", "500")
        self.cli_fails(a, 2, "give one of", "config", "-g", "0")
        cfg, after = self.settings(a)
        self.assertIsNone(cfg["target"])
        self.assertEqual(after, gpus)

    def test_permission_errors_are_reported_as_such(self):
        path = os.path.join(self.tmp, "denied.yaml")
        with open(path, "w") as f:
            f.write("name: denied\ndevices:\n  - {name: \"NVIDIA H100 80GB HBM3\", memory_total_mib: 81559, "
                    "power_limit_w: 700, settings_permission: false}\n")
        a = self.new_agent(scenario=path)
        p = self.cli_fails(a, 1, "GPU 0: .*NO_PERMISSION", "config", "-g", "0", "--set", "-P", "500")
        cfg, _ = self.settings(a)
        self.assertIsNone(cfg["target"])  # not kept

    def test_a_refused_set_changes_no_gpu(self):
        """GPU 0 takes the new limit, GPU 1 refuses it: GPU 0's is put back."""
        path = os.path.join(self.tmp, "half-denied.yaml")
        with open(path, "w") as f:
            f.write("name: half-denied\n"
                    "device_defaults: {name: \"NVIDIA H100 80GB HBM3\", memory_total_mib: 81559, power_limit_w: 700}\n"
                    "devices:\n  - {pci_bus_id: \"00000000:18:00.0\"}\n"
                    "  - {pci_bus_id: \"00000000:2A:00.0\", settings_permission: false}\n")
        a = self.new_agent(scenario=path)
        self.cli_fails(a, 1, "GPU 1: .*NO_PERMISSION", "config", "-g", "0", "--set", "-P", "500", "-c", "2")
        cfg, gpus = self.settings(a)
        self.assertIsNone(cfg["target"])
        for g in gpus:
            self.assertEqual(g["power_limit_w"]["current"], 700)
            self.assertEqual(g["compute_mode"]["current"], 0)


class AlertingRulesTest(unittest.TestCase):
    """deploy/prometheus/gpulse-alerts.yml: valid, and each alert fires on its condition
    (promtool's rule unit tests in gpulse-alerts.test.yml)."""

    def test_promtool_checks_and_tests_the_alerting_rules(self):
        from gpulse_e2e import SOURCE_DIR
        d = os.path.join(SOURCE_DIR, "deploy", "prometheus")
        for args in (["check", "rules", "gpulse-alerts.yml"], ["test", "rules", "gpulse-alerts.test.yml"]):
            p = subprocess.run(["promtool", *args], cwd=d, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("SUCCESS", p.stdout)


class SchemasTest(unittest.TestCase):
    def test_the_new_schemas_are_strict_and_described(self):
        from test_agent import SchemaFilesTest
        import test_agent
        saved = test_agent.AGENT_SCHEMAS
        test_agent.AGENT_SCHEMAS = HEALTH_SCHEMAS
        try:
            SchemaFilesTest("test_every_agent_schema_is_a_strict_draft_2020_12_schema").test_every_agent_schema_is_a_strict_draft_2020_12_schema()
        finally:
            test_agent.AGENT_SCHEMAS = saved


if __name__ == "__main__":
    unittest.main()
