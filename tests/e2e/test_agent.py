"""`gpulse agent` end to end: groups, field watches and their history, job and process statistics,
restarts (clean and SIGKILL), the state database's refusals, the unix socket's access control, and
the HTTP API's answers, every JSON answer checked against docs/schema/agent-*.schema.json.

The agents run on simulated GPUs with a simulated clock (GPULSE_SIM_CLOCK=0): it stands still until
a test moves it with POST /api/v1/clock, which runs every tick due on the way, so an hour of watching
takes well under a second and every count is exact. Tick rule (src/agent/agent.cc, NextAligned): a
watch with update_ms U added at time T first ticks at the next multiple of U after T, then every U,
up to and including the time the clock is moved to. An agent starting on an empty state directory is
at simulated second 0, a multiple of every interval, so advancing N seconds after adding a 1000 ms
watch gives exactly N points per field and entity (none at T itself)."""
import csv
import http.client
import io
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import time
import unittest

from agent_e2e import Agent
from gpulse_e2e import GPULSE, SOURCE_DIR, GpulseTestCase, run, schema, validate

import jsonschema

S = 1_000_000_000  # ns per second
MS = 1_000_000  # ns per ms
POWER = "DCGM_FI_DEV_POWER_USAGE"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
AGENT_SCHEMAS = ["agent-status", "agent-groups", "agent-group", "agent-watches", "agent-watch", "agent-history",
                 "agent-history-rows", "agent-jobs", "agent-job", "agent-process", "agent-clock", "agent-deleted",
                 "agent-error", "agent-stats-enable"]


def devices(scenario):
    p = run("devices", "--simulate", scenario, "--json")
    if p.returncode != 0:
        raise AssertionError("gpulse devices --simulate %s failed: %s" % (scenario, p.stderr))
    return json.loads(p.stdout)["devices"]


def scenario_mean_power(name):
    """The time average of a scenario's keyframed power (device_defaults.load, linear between
    keyframes, repeating): what the energy of a long job should come to per second. The simulator's
    wobble (a 7 s sinusoid of +-2 %) averages out over minutes."""
    import yaml  # python3-yaml, beside python3-jsonschema
    with open(os.path.join(SOURCE_DIR, "sim", "scenarios", name + ".yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    load = doc["device_defaults"]["load"]
    frames = [(float(k["t"]), float(k["power_w"])) for k in load["keyframes"]]
    area = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(frames, frames[1:]))
    if frames[-1][0] != float(load["repeat_s"]):
        raise AssertionError("the test assumes the last keyframe closes the loop")
    return area / float(load["repeat_s"])


def table_value(text, label):
    """The value cell of the first dcgmi box row whose label is `label`."""
    m = re.search(r"^\| %s\s+\| (.*?)\s*\|$" % re.escape(label), text, re.M)
    if m is None:
        raise AssertionError("no row %r in:\n%s" % (label, text))
    return m.group(1)


def layout(text):
    """A dcgmi box's title and row labels ("| LABEL", whitespace collapsed) and its sections
    ("== NAME"), in order; rows with a blank label (a wrapped value, a health incident) are left out."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^[+|]-+ (.+?) -*\+", line)
        if m:
            out.append("== " + m.group(1))
        elif line.startswith("| ") and line.count("|") >= 2:
            label = " ".join(line[1:].split("|")[0].split())
            if label:
                out.append("| " + label)
    return out


def table_values(text, label):
    return re.findall(r"^\| %s\s+\| (.*?)\s*\|$" % re.escape(label), text, re.M)


def table_cell(text, label):
    """The value cell of row `label` with the rows it wraps onto (blank labels) joined back: the box
    wraps a long value at its width, in the middle of a word if need be."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^\| %s\s+\| (.*) \|$" % re.escape(label), line)
        if m is None:
            continue
        parts = [m.group(1)]
        for more in lines[i + 1:]:
            c = re.match(r"^\|\s+\| (.*) \|$", more)
            if c is None:
                break
            parts.append(c.group(1))
        return "".join(parts).rstrip()
    raise AssertionError("no row %r in:\n%s" % (label, text))


def wait_for_exit(proc, timeout=30):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the process did not exit within %d s" % timeout)


class AgentTestCase(GpulseTestCase):
    """A test class with one agent for all its tests (setUpClass); tests that need their own agent
    make one with `new_agent`."""

    scenario = "8xH100"
    agent_args = ()
    sim_clock = "0"
    shared_agent = True

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpulse-agent-")
        cls.agent = None
        if cls.shared_agent:
            cls.agent = Agent(os.path.join(cls.tmp, "shared"), scenario=cls.scenario, args=cls.agent_args,
                              sim_clock=cls.sim_clock, start=False)
            os.makedirs(cls.agent.dir)
            try:
                cls.agent.start()
                cls.prepare()
            except BaseException:
                cls.agent.close()
                shutil.rmtree(cls.tmp, ignore_errors=True)
                raise

    @classmethod
    def prepare(cls):
        """Runs once after the shared agent started."""

    @classmethod
    def tearDownClass(cls):
        if cls.agent is not None:
            cls.agent.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def new_agent(self, scenario=None, args=(), sim_clock="0", name=None):
        d = tempfile.mkdtemp(prefix=(name or self._testMethodName)[:40] + "-", dir=self.tmp)
        a = Agent(d, scenario=scenario or self.scenario, args=args, sim_clock=sim_clock)
        self.addCleanup(a.close)
        return a

    # ---- the CLI ----

    def cli_ok(self, agent, verb, *args):
        p = agent.cli(verb, *args)
        self.assertEqual(p.returncode, 0, "gpulse %s %s failed (%d):\n%s\nagent log:\n%s"
                         % (verb, " ".join(args), p.returncode, p.stderr, agent.log()[-2000:]))
        return p

    def cli_json(self, agent, schema_name, verb, *args):
        """`gpulse VERB --host ... ARGS --json`, parsed and validated."""
        p = self.cli_ok(agent, verb, *args, "--json")
        doc = json.loads(p.stdout)
        validate(doc, schema_name)
        return doc

    def cli_fails(self, agent, code, message, verb, *args):
        """The verb must exit `code` and say `message` (a regular expression) on stderr."""
        p = agent.cli(verb, *args)
        self.assertEqual(p.returncode, code, "gpulse %s %s: exit %d, stderr %r" % (verb, " ".join(args), p.returncode, p.stderr))
        self.assertRegex(p.stderr, message)
        self.assertEqual(p.stdout, "")
        return p

    def create_group(self, agent, name, entities=None):
        g = self.cli_json(agent, "agent-group.schema.json", "group", "-c", name)
        if entities:
            self.cli_ok(agent, "group", "-g", str(g["id"]), "-a", entities)
        return g["id"]


class DefaultSocketTest(GpulseTestCase):
    """`gpulse agent` without --socket, started by a user who may not write /run (issue 40: it
    exited at once with "cannot bind: No such file or directory"). As root the test runs the agent
    and the CLI as nobody (setpriv), so /run is never written."""

    NOBODY = 65534

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpulse-default-socket-")
        os.chmod(self.dir, 0o755)
        self.xdg = os.path.join(self.dir, "xdg")
        self.state = os.path.join(self.dir, "state")
        for d in (self.xdg, self.state):
            os.mkdir(d, 0o700)
            if os.geteuid() == 0:
                os.chown(d, self.NOBODY, self.NOBODY)
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def as_user(self, *argv):
        prefix = []
        if os.geteuid() == 0:
            prefix = ["setpriv", "--reuid=%d" % self.NOBODY, "--regid=%d" % self.NOBODY, "--clear-groups"]
        return prefix + [GPULSE, *argv]

    def env(self):
        env = {k: v for k, v in os.environ.items() if k not in ("GPULSE_HOST", "XDG_RUNTIME_DIR")}
        env["XDG_RUNTIME_DIR"] = self.xdg
        return env

    def test_the_agent_falls_back_to_a_per_user_socket_and_the_cli_finds_it(self):
        if os.path.isdir("/run/gpulse") and os.access("/run/gpulse", os.W_OK) and os.geteuid() != 0:
            self.skipTest("this user may write /run/gpulse: the system path is the right choice")
        log_path = os.path.join(self.dir, "agent.log")
        with open(log_path, "w") as log:
            agent = subprocess.Popen(self.as_user("agent", "--simulate", "8xH100", "--state-dir", self.state,
                                                  "-a", "127.0.0.1:0"),
                                     stdout=subprocess.DEVNULL, stderr=log, env=self.env())
        self.addCleanup(lambda: agent.poll() is None and (agent.kill(), agent.wait()))
        sock = os.path.join(self.xdg, "gpulse", "agent.sock")
        deadline = time.monotonic() + 30
        while not os.path.exists(sock) and agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(log_path) as f:
            log = f.read()
        self.assertIsNone(agent.poll(), "the agent exited:\n" + log)
        self.assertTrue(stat.S_ISSOCK(os.lstat(sock).st_mode), log)
        self.assertEqual(stat.S_IMODE(os.lstat(os.path.dirname(sock)).st_mode), 0o700)
        self.assertRegex(log, r"/run/gpulse is not writable by uid \d+: the management API's socket is "
                         + re.escape(sock))
        # The CLI, with neither --host nor $GPULSE_HOST, finds the per-user socket.
        p = subprocess.run(self.as_user("group", "-c", "found"), capture_output=True, text=True,
                           env=self.env(), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('Successfully created group "found"', p.stdout)
        agent.terminate()
        self.assertEqual(agent.wait(timeout=30), 0)
        self.assertFalse(os.path.exists(sock), "the socket is removed at exit")


class SchemaFilesTest(unittest.TestCase):
    def test_every_agent_schema_is_a_strict_draft_2020_12_schema(self):
        for name in AGENT_SCHEMAS:
            with self.subTest(schema=name):
                s = schema(name + ".schema.json")
                jsonschema.Draft202012Validator.check_schema(s)
                self.assertEqual(s["$schema"], "https://json-schema.org/draft/2020-12/schema")
                self.assertEqual(s["$id"], "https://gpulse.dev/schema/%s.schema.json" % name)
                self.assertTrue(s["title"] and s["description"])
                missing = []

                def walk(node, path, in_condition=False):
                    if isinstance(node, dict):
                        for k, v in node.get("properties", {}).items():
                            if not in_condition and isinstance(v, dict) and "description" not in v:
                                missing.append(path + "/" + k)
                        for k, v in node.items():
                            walk(v, path + "/" + k, in_condition or k in ("if", "then", "else"))
                    elif isinstance(node, list):
                        for i, v in enumerate(node):
                            walk(v, "%s/%d" % (path, i), in_condition)

                walk(s, "")
                self.assertEqual(missing, [], "properties without a description")

    def test_the_error_schema_is_strict(self):
        validate({"error": "no group 9"}, "agent-error.schema.json")
        for bad in ({}, {"error": ""}, {"error": 5}, {"error": "x", "extra": 1}):
            with self.assertRaises(jsonschema.ValidationError):
                validate(bad, "agent-error.schema.json")


class GroupIdTest(AgentTestCase):
    shared_agent = False

    def test_ids_start_at_2_and_are_never_reused_even_across_restarts(self):
        a = self.new_agent()
        self.assertEqual(self.create_group(a, "a"), 2)
        self.assertEqual(self.create_group(a, "b"), 3)
        self.assertEqual(self.cli_json(a, "agent-deleted.schema.json", "group", "-d", "3"), {"deleted": 3})
        self.assertEqual(self.create_group(a, "c"), 4, "id 3 was deleted, never handed out again")
        p = self.cli_ok(a, "group", "-d", "2")
        self.assertEqual(p.stdout, "Successfully removed group 2\n")
        a.restart()
        self.assertEqual(self.create_group(a, "d"), 5, "after a clean restart")
        a.restart(kill=True)
        self.assertEqual(self.create_group(a, "e"), 6, "after a SIGKILL")
        groups = self.cli_json(a, "agent-groups.schema.json", "group", "-l")["groups"]
        self.assertEqual([(g["id"], g["name"]) for g in groups],
                         [(0, "DCGM_ALL_SUPPORTED_GPUS"), (4, "c"), (5, "d"), (6, "e")])
        self.assertEqual(a.status()["groups"], 3)


class GroupTest(AgentTestCase):
    @classmethod
    def prepare(cls):
        cls.devs = devices("8xH100")

    def group(self, gid):
        return self.agent.api("GET", "/api/v1/groups/%d" % gid, schema="agent-group.schema.json")

    def test_a_duplicate_name_is_refused(self):
        gid = self.create_group(self.agent, "dup")
        self.cli_fails(self.agent, 2, r'a group named "dup" exists \(id %d\)' % gid, "group", "-c", "dup")
        err = self.agent.api("POST", "/api/v1/groups", {"name": "dup"}, status=400)
        self.assertIn('"dup" exists', err["error"])
        names = [g["name"] for g in self.agent.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]]
        self.assertEqual(names.count("dup"), 1)

    def test_bad_names_are_refused(self):
        self.cli_fails(self.agent, 2, "the default group's name", "group", "-c", "DCGM_ALL_SUPPORTED_GPUS")
        self.cli_fails(self.agent, 2, "1 to 64 printable ASCII", "group", "-c", "x" * 65)
        self.cli_fails(self.agent, 2, "1 to 64 printable ASCII", "group", "-c", "tab\there")
        self.agent.api("POST", "/api/v1/groups", {"name": 7}, status=400)
        self.agent.api("POST", "/api/v1/groups", {}, status=400)

    def test_entities_are_added_and_removed_by_index_and_uuid(self):
        gid = self.create_group(self.agent, "by-index-and-uuid")
        uuid3, uuid5 = self.devs[3]["uuid"], self.devs[5]["uuid"]
        p = self.cli_ok(self.agent, "group", "-g", str(gid), "-a", "0,%s,5" % uuid3)
        self.assertEqual(p.stdout, "Add to group operation successful.\n")
        g = self.group(gid)
        self.assertEqual([e["entity"] for e in g["entities"]], ["0", "3", "5"], "in the order added")
        self.assertEqual([e["uuid"] for e in g["entities"]], [self.devs[0]["uuid"], uuid3, uuid5])
        self.assertEqual([e["label"] for e in g["entities"]], ["GPU 0", "GPU 3", "GPU 5"])
        self.assertEqual({e["kind"] for e in g["entities"]}, {"gpu"})
        # Adding one already there changes nothing.
        self.cli_ok(self.agent, "group", "-g", str(gid), "-a", "3")
        self.assertEqual([e["entity"] for e in self.group(gid)["entities"]], ["0", "3", "5"])
        p = self.cli_ok(self.agent, "group", "-g", str(gid), "-r", "0")
        self.assertEqual(p.stdout, "Remove from group operation successful.\n")
        doc = self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-r", uuid5)
        self.assertEqual([e["entity"] for e in doc["entities"]], ["3"])
        self.assertEqual(doc, self.group(gid))

    def test_unknown_entities_are_refused_and_change_nothing(self):
        gid = self.create_group(self.agent, "unknown-entities", "1")
        before = self.group(gid)
        self.cli_fails(self.agent, 2, r'no GPU or MIG instance "8"', "group", "-g", str(gid), "-a", "8")
        self.cli_fails(self.agent, 2, r'no GPU or MIG instance "GPU-00000000-0000-0000-0000-000000000000"',
                       "group", "-g", str(gid), "-a", "2,GPU-00000000-0000-0000-0000-000000000000")
        self.cli_fails(self.agent, 2, r'no GPU or MIG instance "0:1"', "group", "-g", str(gid), "-a", "0:1")
        self.cli_fails(self.agent, 2, r"group %d does not hold entity 2" % gid, "group", "-g", str(gid), "-r", "2")
        self.assertEqual(self.group(gid), before, "a refused change is not applied in part")
        self.cli_fails(self.agent, 2, r"no group 999", "group", "-g", "999", "-a", "0")
        self.cli_fails(self.agent, 2, r"no group 999", "group", "-g", "999", "-i")
        self.cli_fails(self.agent, 2, r"no group 999", "group", "-d", "999")
        self.agent.api("POST", "/api/v1/groups/%d/entities" % gid, {"add": "0"}, status=400)
        self.agent.api("POST", "/api/v1/groups/%d/entities" % gid, {"add": [0]}, status=400)
        self.agent.api("GET", "/api/v1/groups/abc", status=400)

    def test_info_and_list_print_dcgmi_tables(self):
        gid = self.create_group(self.agent, "tables", "0,1")
        p = self.cli_ok(self.agent, "group", "-g", str(gid), "-i")
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"^\+-+\+-+\+$")
        self.assertRegex(p.stdout, r"(?m)^\| GROUP INFO\s+\|$")
        self.assertRegex(p.stdout, r"(?m)^\| %d\s+\|\s+\|$" % gid)
        self.assertEqual(table_value(p.stdout, "-> Group ID"), str(gid))
        self.assertEqual(table_value(p.stdout, "-> Group Name"), "tables")
        self.assertEqual(table_value(p.stdout, "-> Entities"), "GPU 0, GPU 1")
        self.assertEqual(len({len(l) for l in lines}), 1, "every line of the box is as wide")

        p = self.cli_ok(self.agent, "group", "-l")
        user = [g for g in self.agent.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]
                if not g["default"]]
        m = re.search(r"(?m)^\| (\d+) (groups?) found\.\s+\|$", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        self.assertEqual(int(m.group(1)), len(user))
        self.assertEqual(m.group(2), "group" if len(user) == 1 else "groups")
        self.assertRegex(p.stdout, r"(?m)^\| GROUPS\s+\|$")
        self.assertRegex(p.stdout, r"(?m)^\| Groups\s+\|\s+\|$")
        self.assertEqual(table_values(p.stdout, "-> %d" % gid), [""])
        self.assertEqual([int(v) for v in table_values(p.stdout, "   -> Group ID")], [g["id"] for g in user])
        self.assertEqual(table_values(p.stdout, "   -> Group Name"), [g["name"] for g in user])
        self.assertNotIn("DCGM_ALL_SUPPORTED_GPUS", p.stdout, "dcgmi -l lists the user groups only")

    def test_the_default_group_holds_every_gpu_and_cannot_be_changed(self):
        g = self.group(0)
        self.assertTrue(g["default"])
        self.assertEqual(g["name"], "DCGM_ALL_SUPPORTED_GPUS")
        self.assertEqual([e["uuid"] for e in g["entities"]], [d["uuid"] for d in self.devs])
        self.cli_fails(self.agent, 2, "default group .*cannot be changed", "group", "-g", "0", "-a", "1")
        self.cli_fails(self.agent, 2, "default group .*cannot be changed", "group", "-g", "0", "-r", "1")
        self.cli_fails(self.agent, 2, "the default group cannot be deleted", "group", "-d", "0")
        self.assertEqual(self.group(0), g)
        p = self.cli_ok(self.agent, "group", "-g", "0", "-i")
        self.assertEqual(table_value(p.stdout, "-> Group Name"), "DCGM_ALL_SUPPORTED_GPUS")
        self.assertEqual(table_cell(p.stdout, "-> Entities"), ", ".join("GPU %d" % i for i in range(8)))

    def test_json_answers_validate(self):
        created = self.cli_json(self.agent, "agent-group.schema.json", "group", "-c", "json-out")
        self.assertEqual((created["name"], created["default"], created["entities"], created["missing_entities"]),
                         ("json-out", False, [], []))
        self.assertEqual(created["created_unix_ns"], self.agent.now_ns())
        gid = created["id"]
        changed = self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-a", "7")
        self.assertEqual([e["entity"] for e in changed["entities"]], ["7"])
        self.assertEqual(self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-i"), changed)
        listed = self.cli_json(self.agent, "agent-groups.schema.json", "group", "-l")
        self.assertIn(changed, listed["groups"])
        self.assertTrue(listed["groups"][0]["default"])
        self.assertEqual(self.cli_json(self.agent, "agent-deleted.schema.json", "group", "-d", str(gid)), {"deleted": gid})
        self.agent.api("GET", "/api/v1/groups/%d" % gid, status=404)

    def test_deleting_a_group_removes_its_watches(self):
        gid = self.create_group(self.agent, "with-a-watch", "2")
        w = self.cli_json(self.agent, "agent-watch.schema.json", "watch", "-g", str(gid), "-e", "155")
        ids = [x["id"] for x in self.agent.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")["watches"]]
        self.assertIn(w["id"], ids)
        self.cli_ok(self.agent, "group", "-d", str(gid))
        ids = [x["id"] for x in self.agent.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")["watches"]]
        self.assertNotIn(w["id"], ids)
        self.agent.api("DELETE", "/api/v1/watches/%d" % w["id"], status=404)


class MigGroupTest(AgentTestCase):
    scenario = "mig-a100"

    @classmethod
    def prepare(cls):
        cls.devs = devices("mig-a100")
        cls.instances = cls.devs[0]["mig_instances"]

    def test_gpu_instances_by_gpu_gi_form_and_mig_uuid(self):
        self.assertTrue(self.devs[0]["mig_enabled"])
        first, second = self.instances[0], self.instances[1]
        gid = self.create_group(self.agent, "mig")
        gi_key = "0:%d" % first["gpu_instance_id"]
        self.cli_ok(self.agent, "group", "-g", str(gid), "-a", gi_key)
        doc = self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-a", second["uuid"])
        ents = doc["entities"]
        self.assertEqual([e["entity"] for e in ents], [gi_key, "0:%d" % second["gpu_instance_id"]],
                         "a MIG UUID names its GPU instance")
        self.assertEqual([e["kind"] for e in ents], ["gpu_instance", "gpu_instance"])
        self.assertEqual([e["uuid"] for e in ents], [first["uuid"], second["uuid"]])
        self.assertEqual(ents[0]["label"], "GPU 0/GI %d" % first["gpu_instance_id"])
        ci_key = "0:%d:%d" % (first["gpu_instance_id"], first["compute_instance_id"])
        doc = self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-a", ci_key + ",1")
        self.assertEqual([e["entity"] for e in doc["entities"]][2:], [ci_key, "1"])
        self.assertEqual(doc["entities"][2]["kind"], "compute_instance")
        # GI ids that do not exist on GPU 0, and GPU 1 has MIG off.
        absent = min(set(range(1, 15)) - {i["gpu_instance_id"] for i in self.instances})
        self.cli_fails(self.agent, 2, r'no GPU or MIG instance "0:%d"' % absent, "group", "-g", str(gid), "-a", "0:%d" % absent)
        self.cli_fails(self.agent, 2, r'no GPU or MIG instance "1:1"', "group", "-g", str(gid), "-a", "1:1")
        doc = self.cli_json(self.agent, "agent-group.schema.json", "group", "-g", str(gid), "-r", gi_key + "," + ci_key)
        self.assertEqual([e["entity"] for e in doc["entities"]], ["0:%d" % second["gpu_instance_id"], "1"])
        p = self.cli_ok(self.agent, "group", "-g", str(gid), "-i")
        self.assertIn("GPU 0/GI %d" % second["gpu_instance_id"], p.stdout)

    def test_history_of_a_gpu_instance(self):
        gi = self.instances[0]
        key = "0:%d" % gi["gpu_instance_id"]
        gid = self.create_group(self.agent, "mig-history", key + ",1")
        self.cli_json(self.agent, "agent-watch.schema.json", "watch", "-g", str(gid), "-e", "252,155")
        before = self.agent.now_ns() // MS
        self.agent.advance(5)
        h = self.agent.api("GET", "/api/v1/history?group=%d&fields=252,155" % gid, schema="agent-history.schema.json")
        e = h["entities"][0]
        self.assertEqual((e["entity"], e["gpu"], e["uuid"], e["gpu_instance_id"], e["gpu_instance_profile"]),
                         (key, 0, gi["uuid"], gi["gpu_instance_id"], gi["profile"]))
        used, power = e["series"]
        self.assertTrue(used["watched"], "memory is read per GPU instance")
        self.assertEqual([p[0] for p in used["points"]], [before + 1000 * k for k in range(1, 6)])
        self.assertTrue(all(p[1] is not None and 0 <= p[1] <= gi["memory_total_bytes"] / 2**20 for p in used["points"]))
        self.assertFalse(power["watched"], "power is the GPU's, not an instance's")
        self.assertEqual(power["points"], [])
        rows = self.agent.api("GET", "/api/v1/history?group=%d&fields=252,155&format=rows" % gid,
                              schema="agent-history-rows.schema.json")["rows"]
        self.assertEqual(len(rows), 10)
        self.assertEqual({r["entity"] for r in rows}, {key, "1"})
        self.assertTrue(all(r["values"][1] is None for r in rows if r["entity"] == key))


class WatchGroupChangeTest(AgentTestCase):
    shared_agent = False

    def test_a_watch_follows_its_group(self):
        a = self.new_agent()
        gid = self.create_group(a, "growing", "0")
        w = self.cli_json(a, "agent-watch.schema.json", "watch", "-g", str(gid), "-e", "155")
        t0 = a.now_ns() // MS
        a.advance(10)
        self.cli_ok(a, "group", "-g", str(gid), "-a", "1")
        a.advance(10)
        h = a.api("GET", "/api/v1/history?group=%d&fields=155" % gid, schema="agent-history.schema.json")
        times = {e["entity"]: [p[0] for p in e["series"][0]["points"]] for e in h["entities"]}
        self.assertEqual(times["0"], [t0 + 1000 * k for k in range(1, 21)])
        self.assertEqual(times["1"], [t0 + 1000 * k for k in range(11, 21)], "from the first tick after it joined")
        self.cli_ok(a, "group", "-g", str(gid), "-r", "0")
        h = a.api("GET", "/api/v1/history?entities=0,1&fields=155", schema="agent-history.schema.json")
        self.assertEqual([(e["series"][0]["watched"], len(e["series"][0]["points"])) for e in h["entities"]],
                         [(False, 0), (True, 10)], "a GPU that left the group is no longer watched")
        self.assertEqual(self.cli_ok(a, "watch", "-d", str(w["id"])).stdout, "Removed watch %d\n" % w["id"])
        st = a.status()
        self.assertEqual((st["watches"], st["history"]["series"], st["history"]["points"], st["history"]["bound_bytes"]),
                         (0, 0, 0, 0), "a removed watch takes its history with it")


class WatchHourTest(AgentTestCase):
    """Two fields on two GPUs every second for a simulated hour (kept 2 h)."""

    @classmethod
    def prepare(cls):
        a = cls.agent
        cls.gid = a.api("POST", "/api/v1/groups", {"name": "hour"}, status=201, schema="agent-group.schema.json")["id"]
        a.api("POST", "/api/v1/groups/%d/entities" % cls.gid, {"add": ["0", "1"]}, schema="agent-group.schema.json")
        p = a.cli("watch", "-g", str(cls.gid), "-e", "155,150", "-i", "1000", "--keep-age", "7200")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.watch_text = p.stdout
        cls.t0_ms = a.now_ns() // MS
        cls.ticks = 0
        for _ in range(3):
            cls.ticks += a.advance(1200)["ticks"]
        cls.now_ms = a.now_ns() // MS

    def history(self, query, schema_name="agent-history.schema.json"):
        return self.agent.api("GET", "/api/v1/history?" + query, schema=schema_name)

    def test_every_tick_of_the_hour_is_kept(self):
        self.assertEqual(self.now_ms - self.t0_ms, 3_600_000)
        self.assertEqual(self.ticks, 3600)
        self.assertRegex(self.watch_text, r"^Watch \d+ on group %d: fields 155,150 every 1000 ms, kept 7200 s "
                                          r"\(history bound [0-9.]+ [KMG]iB\)\n$" % self.gid)
        h = self.history("group=%d&fields=155,150" % self.gid)
        self.assertEqual(h["now_unix_ms"], self.now_ms)
        self.assertEqual((h["from_unix_ms"], h["until_unix_ms"]), (0, self.now_ms + 1))
        self.assertEqual(h["fields"], [{"id": 155, "name": POWER}, {"id": 150, "name": TEMP}])
        self.assertEqual(h["points"], 2 * 2 * 3600)
        self.assertEqual([e["entity"] for e in h["entities"]], ["0", "1"])
        expected_times = [self.t0_ms + 1000 * k for k in range(1, 3601)]
        for e in h["entities"]:
            for s, field in zip(e["series"], (POWER, TEMP)):
                with self.subTest(entity=e["entity"], field=field):
                    self.assertEqual(s["field"], field)
                    self.assertTrue(s["watched"])
                    self.assertFalse(s["unsupported"])
                    self.assertEqual(s["update_ms"], 1000)
                    self.assertEqual(s["oldest_unix_ms"], self.t0_ms + 1000)
                    self.assertEqual([p[0] for p in s["points"]], expected_times,
                                     "one point per tick, from the first multiple of 1000 ms after the watch "
                                     "was added up to and including now")
                    values = [p[1] for p in s["points"]]
                    self.assertNotIn(None, values)
                    lo, hi = (300, 720) if field == POWER else (25, 80)
                    self.assertTrue(all(lo <= v <= hi for v in values), (min(values), max(values)))
                    self.assertGreater(len(set(values)), 10, "the readings follow the simulated clock")

    def test_status_and_watch_list_report_the_history_and_its_bound(self):
        st = self.agent.status()
        self.assertEqual((st["groups"], st["watches"], st["ticks"], st["entities"]), (1, 1, 3600, 8))
        self.assertTrue(st["simulated_clock"])
        self.assertEqual(st["now_unix_ns"], self.now_ms * MS)
        self.assertEqual(st["checkpoints"], 3, "one per clock move")
        self.assertIsNone(st["last_checkpoint_error"])
        self.assertEqual(st["database"], os.path.join(self.agent.state_dir, "agent.db"))
        h = st["history"]
        self.assertEqual((h["series"], h["points"]), (4, 4 * 3600))
        self.assertGreater(h["bound_bytes"], h["bytes"])
        self.assertGreater(h["bytes"], 0)
        self.assertEqual(h["limit_bytes"], 1024 << 20)
        self.assertAlmostEqual(h["bytes_per_point"], h["bytes"] / h["points"])
        self.assertLess(h["bytes_per_point"], 16, "compressed: a regular cadence costs bits, not bytes")
        ws = self.cli_json(self.agent, "agent-watches.schema.json", "watch", "-l")
        self.assertEqual(len(ws["watches"]), 1)
        w = ws["watches"][0]
        self.assertEqual((w["group"], [f["id"] for f in w["fields"]], w["update_ms"], w["keep_age_s"]),
                         (self.gid, [155, 150], 1000, 7200))
        self.assertEqual((w["points"], w["bytes"], w["bound_bytes"]), (h["points"], h["bytes"], h["bound_bytes"]))
        self.assertEqual(ws["history"], {"bytes": h["bytes"], "points": h["points"], "bound_bytes": h["bound_bytes"],
                                         "limit_bytes": h["limit_bytes"]})
        text = self.cli_ok(self.agent, "watch", "-l").stdout
        self.assertRegex(text, r"(?m)^\s+%d\s+%d\s+1000\s+7200\s+14400\s+.*155,150$" % (w["id"], self.gid))
        self.assertRegex(text, r"(?m)^history: .* in 14400 points; bound .* of a 1\.0 GiB limit$")

    def test_dmon_since_prints_the_api_rows(self):
        api = self.history("group=%d&fields=155,150&format=rows&since=1h" % self.gid, "agent-history-rows.schema.json")
        rows = api["rows"]
        self.assertEqual(api["from_unix_ms"], self.now_ms - 3_600_000)
        self.assertEqual(len(rows), 2 * 3600)
        self.assertEqual([(r["t_unix_ms"], r["entity"]) for r in rows[:4]],
                         [(self.t0_ms + 1000, "0"), (self.t0_ms + 1000, "1"), (self.t0_ms + 2000, "0"), (self.t0_ms + 2000, "1")])
        p = self.cli_ok(self.agent, "dmon", "--since", "1h", "-g", str(self.gid), "-e", "155,150", "--format", "csv")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "timestamp_unix,gpu,gpu_instance_id,gpu_instance_profile,uuid,state,%s,%s" % (POWER, TEMP))
        self.assertEqual(len(lines), 1 + len(rows))
        printed = list(csv.DictReader(io.StringIO(p.stdout)))
        for r, c in zip(rows, printed):
            self.assertEqual(float(c["timestamp_unix"]), r["t_unix_ms"] / 1000)
            self.assertEqual((c["gpu"], c["uuid"], c["state"], c["gpu_instance_id"]), (str(r["gpu"]), r["uuid"], "ok", ""))
            self.assertEqual(c[POWER], "%.3f" % r["values"][0])
            self.assertEqual(int(c[TEMP]), r["values"][1])
        table = self.cli_ok(self.agent, "dmon", "--since", "1h", "-g", str(self.gid), "-e", "155,150").stdout.splitlines()
        # As the live dmon: the table says first that the GPUs are simulated.
        self.assertEqual(table.pop(0), "# simulated GPUs: scenario 8xH100")
        self.assertEqual(table[0].split(), ["#Entity", "POWER", "TMPTR"])
        self.assertEqual(len(table), 2 + len(rows))
        self.assertEqual(table[2].split(), ["GPU", "0", "%.3f" % rows[0]["values"][0], "%d" % rows[0]["values"][1]])
        # -i selects entities, as the live dmon does.
        p = self.cli_ok(self.agent, "dmon", "--since", "10s", "-i", "1", "-e", "155", "--format", "csv", "--no-header")
        self.assertEqual([l.split(",")[1] for l in p.stdout.splitlines()], ["1"] * 11)

    def test_dmon_since_json_rows_validate_and_match(self):
        rows = self.history("group=%d&fields=155,150&format=rows&since=2m" % self.gid, "agent-history-rows.schema.json")["rows"]
        p = self.cli_ok(self.agent, "dmon", "--since", "2m", "-g", str(self.gid), "-e", "155,150", "--format", "json")
        recs = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(len(recs), len(rows))
        self.assertEqual(len(rows), 2 * 121, "since is inclusive: 120 s back and now")
        for r, rec in zip(rows, recs):
            validate(rec, "dmon-record.schema.json")
            self.assertAlmostEqual(rec["timestamp_unix"], r["t_unix_ms"] / 1000, places=3)
            self.assertEqual((rec["gpu"], rec["uuid"], rec["state"]), (r["gpu"], r["uuid"], "ok"))
            self.assertEqual(rec["fields"], {POWER: r["values"][0], TEMP: r["values"][1]})

    def test_dmon_since_json_rows_say_the_gpus_are_simulated(self):
        # dmon-record.schema.json's `simulated`: whether the readings came from the simulator. The live
        # dmon says true for --simulate; the history of an agent on simulated GPUs is no less simulated.
        p = self.cli_ok(self.agent, "dmon", "--since", "5s", "-g", str(self.gid), "-e", "155", "--format", "json")
        recs = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(len(recs), 12)
        self.assertEqual({r["simulated"] for r in recs}, {True})

    def test_history_csv_from_the_api(self):
        r = self.agent.get("/api/v1/history?group=%d&fields=POWER,TMPTR&format=csv&since=1h" % self.gid)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "text/csv; charset=utf-8")
        lines = r.text.splitlines()
        self.assertEqual(lines[0], "timestamp_unix,entity,gpu,gpu_instance_id,uuid,%s,%s" % (POWER, TEMP))
        self.assertEqual(len(lines), 1 + 2 * 3600)
        rows = self.history("group=%d&fields=155,150&format=rows&since=1h" % self.gid, "agent-history-rows.schema.json")["rows"]
        for line, row in zip(list(csv.DictReader(io.StringIO(r.text)))[:50], rows):
            self.assertEqual(float(line["timestamp_unix"]) * 1000, row["t_unix_ms"])
            self.assertEqual((line["entity"], line["uuid"]), (row["entity"], row["uuid"]))
            self.assertEqual([float(line[POWER]), float(line[TEMP])], row["values"], "the CSV reads back exactly")

    def test_ranges(self):
        h = self.history("group=%d&fields=155&since=30m&until=15m" % self.gid)
        self.assertEqual((h["from_unix_ms"], h["until_unix_ms"]), (self.now_ms - 1_800_000, self.now_ms - 900_000))
        for e in h["entities"]:
            times = [p[0] for p in e["series"][0]["points"]]
            self.assertEqual(times, list(range(self.now_ms - 1_800_000, self.now_ms - 900_000, 1000)),
                             "since inclusive, until exclusive")
        self.assertEqual(h["points"], 2 * 900)
        unix = (self.now_ms - 10_000) / 1000
        h = self.history("entities=0&fields=155&since=%.3f&until=now" % unix)
        self.assertEqual([p[0] for p in h["entities"][0]["series"][0]["points"]],
                         list(range(self.now_ms - 10_000, self.now_ms + 1, 1000)))
        h = self.history("fields=155&since=1s")
        self.assertEqual(len(h["entities"]), 8, "no group: every GPU")
        self.assertEqual([len(e["series"][0]["points"]) for e in h["entities"]], [2, 2, 0, 0, 0, 0, 0, 0])
        self.assertEqual([e["series"][0]["watched"] for e in h["entities"]], [True, True] + [False] * 6)
        for q, message in (("fields=155&since=bogus", "since"), ("fields=155&since=1h&until=2h", "until is before since"),
                           ("fields=155&format=xml", "format"), ("since=1h", "give the fields"),
                           ("fields=nope", "unknown field"), ("fields=155&entities=9", "no GPU")):
            with self.subTest(query=q):
                self.assertIn(message, self.agent.api("GET", "/api/v1/history?" + q, status=400)["error"])
        self.agent.api("GET", "/api/v1/history?fields=155&group=42", status=404)

    def test_an_unwatched_field_has_an_empty_series(self):
        h = self.history("group=%d&fields=155,203&since=5s" % self.gid)
        for e in h["entities"]:
            watched, other = e["series"]
            self.assertEqual(len(watched["points"]), 6)
            self.assertEqual((other["field_id"], other["watched"], other["points"]), (203, False, []))
            self.assertNotIn("update_ms", other)

    def test_bad_watches_are_refused(self):
        before = self.agent.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")
        self.cli_fails(self.agent, 2, r'unknown field "bogus"', "watch", "-g", str(self.gid), "-e", "155,bogus")
        self.cli_fails(self.agent, 2, r"not in range 10 to 3600000", "watch", "-e", "155", "-i", "5")
        self.cli_fails(self.agent, 2, r"not in range", "watch", "-e", "155", "-i", "3600001")
        self.cli_fails(self.agent, 2, r"not in range", "watch", "-e", "155", "--keep-age", "0")
        self.cli_fails(self.agent, 2, r"no group 77", "watch", "-g", "77", "-e", "155")
        self.cli_fails(self.agent, 2, r"give one of", "watch", "-g", str(self.gid))
        for body, message in (({"fields": "155", "update_ms": 5}, '"update_ms" must be 10 to 3600000, not 5'),
                              ({"fields": "155", "update_ms": 3600001}, '"update_ms" must be'),
                              ({"fields": "155", "update_ms": 1.5}, "must be a whole number"),
                              ({"fields": "155", "keep_age_s": 0}, '"keep_age_s" must be 1 to 2592000, not 0'),
                              ({"fields": "155", "keep_age_s": 2592001}, '"keep_age_s" must be'),
                              ({"fields": 155}, "list of field ids or names"),
                              ({"update_ms": 1000}, "give \"fields\""),
                              ({"fields": "155,nope"}, "unknown field")):
            with self.subTest(body=body):
                self.assertIn(message, self.agent.api("POST", "/api/v1/watches", body, status=400)["error"])
        self.assertEqual(self.agent.api("GET", "/api/v1/watches", schema="agent-watches.schema.json"), before)

    def test_a_watch_over_the_history_limit_is_refused(self):
        err = self.agent.api("POST", "/api/v1/watches",
                             {"fields": "all", "update_ms": 10, "keep_age_s": 2592000}, status=409)
        self.assertRegex(err["error"], r"raise the history bound to \d+ bytes, over the agent's limit of 1073741824")
        self.cli_fails(self.agent, 2, "over the agent's limit", "watch", "-e", "all", "-i", "10", "--keep-age", "2592000")
        self.assertEqual(self.agent.status()["watches"], 1)


class KeepAgeTest(AgentTestCase):
    def test_keep_age_drops_old_points_in_whole_chunks(self):
        a = self.agent
        gid = self.create_group(a, "keep", "4")
        w = self.cli_json(a, "agent-watch.schema.json", "watch", "-g", str(gid), "-e", "155", "-i", "1000", "--keep-age", "600")
        self.assertEqual((w["update_ms"], w["keep_age_s"], w["points"], w["bytes"]), (1000, 600, 0, 0))
        self.assertGreater(w["bound_bytes"], 0)
        t0 = a.now_ns() // MS
        a.advance(3600)
        now = a.now_ns() // MS
        h = a.api("GET", "/api/v1/history?group=%d&fields=155" % gid, schema="agent-history.schema.json")
        s = h["entities"][0]["series"][0]
        times = [p[0] for p in s["points"]]
        # series.h: the newest 601 points (600 s / 1 s, plus the newest) are always kept, and whole
        # chunks of 1024 points are dropped once their newest point is older than the keep-age (or
        # the bound holds without them).
        self.assertEqual(times, list(range(times[0], now + 1, 1000)), "no gap")
        self.assertLessEqual(times[0], now - 600_000, "600 s are kept")
        self.assertGreaterEqual(times[0], now - 600_000 - 1024 * 1000, "at most one chunk more")
        self.assertLess(len(times), 601 + 1024)
        self.assertEqual(s["oldest_unix_ms"], times[0])
        # Exactly: chunks hold ticks 1..1024, 1025..2048, 2049..3072, 3073..3600; at tick 3600 the
        # first two ended before now - 600 s and are gone.
        self.assertEqual(times[0], t0 + 2049 * 1000)
        st = a.status()["history"]
        self.assertEqual(st["points"], len(times))
        self.assertGreater(st["bound_bytes"], st["bytes"])
        self.assertGreater(st["bytes"], 0)
        # Kept across a restart, with the keep-age still applied afterwards.
        a.restart()
        h2 = a.api("GET", "/api/v1/history?group=%d&fields=155" % gid, schema="agent-history.schema.json")
        self.assertEqual(h2["entities"][0]["series"][0]["points"], s["points"])
        a.advance(600)
        s3 = a.api("GET", "/api/v1/history?group=%d&fields=155" % gid,
                   schema="agent-history.schema.json")["entities"][0]["series"][0]
        self.assertEqual(s3["points"][-1][0], now + 600_000)
        self.assertGreaterEqual(s3["points"][0][0], now + 600_000 - 600_000 - 1024 * 1000)
        self.assertEqual(s3["points"][0][0], t0 + 3073 * 1000)


def trapezoid_joules(points):
    return sum((t1 - t0) / 1000 * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))


class JobTest(AgentTestCase):
    """A 600 s job on GPUs 0 and 1 of 8xH100."""

    @classmethod
    def prepare(cls):
        a = cls.agent
        cls.gid = a.api("POST", "/api/v1/groups", {"name": "job"}, status=201, schema="agent-group.schema.json")["id"]
        a.api("POST", "/api/v1/groups/%d/entities" % cls.gid, {"add": ["0", "1"]}, schema="agent-group.schema.json")
        p = a.cli("stats", "-g", str(cls.gid), "-s", "train-600", "--json")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.started = json.loads(p.stdout)
        cls.start_ns = a.now_ns()
        a.advance(600)
        p = a.cli("stats", "-x", "train-600", "--json")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.stopped = json.loads(p.stdout)

    def job(self):
        return self.cli_json(self.agent, "agent-job.schema.json", "stats", "-j", "train-600")

    def test_start_and_stop_answers(self):
        validate(self.started, "agent-job.schema.json")
        validate(self.stopped, "agent-job.schema.json")
        self.assertEqual((self.started["id"], self.started["group"], self.started["running"]), ("train-600", self.gid, True))
        self.assertIsNone(self.started["stop_unix_ns"])
        self.assertEqual(self.started["start_unix_ns"], self.start_ns)
        self.assertEqual(len(self.started["watches_added"]), 1, "the job's fields were not watched yet")
        added = self.started["watches_added"][0]
        self.assertEqual((added["group"], added["update_ms"], added["keep_age_s"]), (self.gid, 1000, 4 * 3600))
        ids = {f["id"] for f in added["fields"]}
        self.assertTrue({155, 156, 203, 252, 100, 101, 230} <= ids, ids)
        self.assertNotIn("watches_added", self.stopped)
        self.assertEqual(self.stopped["stop_unix_ns"], self.start_ns + 600 * S)
        self.assertEqual(self.stopped, self.job(), "a stopped job's statistics are kept as computed at the stop")

    def test_statistics_of_the_job(self):
        j = self.job()
        self.assertFalse(j["running"])
        self.assertEqual(j["duration_s"], 600.0)
        self.assertEqual(j["notes"], [])
        self.assertEqual([g["device_index"] for g in j["gpus"]], [0, 1])
        mean_w = scenario_mean_power("8xH100")
        devs = devices("8xH100")
        for g in j["gpus"]:
            with self.subTest(gpu=g["device_index"]):
                self.assertEqual(g["uuid"], devs[g["device_index"]]["uuid"])
                self.assertEqual(g["state"], "present")
                # A sample at the start (the agent reads the job's fields then, as DCGM updates every
                # field at a job's start), then the job watch's ticks at start + 1 s .. stop.
                self.assertEqual(g["sample_count"], 601)
                self.assertEqual(g["energy_source"], "counter")
                self.assertEqual(g["energy_joules"], g["energy_millijoules"] / 1000)
                pw = g["power_watts"]
                self.assertLessEqual(pw["min"], pw["mean"])
                self.assertLessEqual(pw["mean"], pw["max"])
                self.assertAlmostEqual(pw["mean"], mean_w, delta=0.01 * mean_w)
                self.assertAlmostEqual(g["energy_joules"], pw["mean"] * 600, delta=0.02 * pw["mean"] * 600)
                self.assertAlmostEqual(g["energy_joules"], mean_w * 600, delta=0.02 * mean_w * 600)
                self.assertLess(abs(g["energy_relative_difference"]), 0.01, "counter and power integral agree")
                # Issue 44: the bound of a 600 s counter figure is a few tenths of a percent.
                self.assertEqual(g["energy_bound_joules"], g["energy_bound_millijoules"] / 1000)
                self.assertLess(g["energy_bound_joules"], 0.01 * g["energy_joules"])
                self.assertFalse(g["energy_disagreement"])
                self.assertEqual(g["xid_errors"], [])
                self.assertEqual((g["ecc_dbe_errors"], g["ecc_sbe_errors"], g["pcie_replays"]), (0, 0, 0))
                self.assertEqual(g["sm_clock_mhz"]["max"], 1980)
                self.assertGreater(g["sm_utilization_percent"]["mean"], 80)
                self.assertEqual((g["overall_health"], g["health_incidents"]), ("healthy", []))
                pid = 52001 + g["device_index"]
                self.assertEqual([p["pid"] for p in g["processes"]], [pid])
                proc = g["processes"][0]
                self.assertEqual((proc["first_seen_unix_ns"], proc["last_seen_unix_ns"]),
                                 (self.start_ns, self.start_ns + 600 * S))
                self.assertEqual(proc["max_memory_bytes"], 73900 << 20)
        self.assertAlmostEqual(j["energy_joules"], sum(g["energy_joules"] for g in j["gpus"]))
        self.assertAlmostEqual(j["energy_bound_joules"], sum(g["energy_bound_joules"] for g in j["gpus"]))

    def test_energy_integral_is_the_history_s(self):
        j = self.job()
        stop_ms = j["stop_unix_ns"] // MS
        h = self.agent.api("GET", "/api/v1/history?group=%d&fields=155&since=%.3f" % (self.gid, self.start_ns / S),
                           schema="agent-history.schema.json")
        for g, e in zip(j["gpus"], h["entities"]):
            pts = [p for p in e["series"][0]["points"] if self.start_ns // MS <= p[0] <= stop_ms]
            self.assertEqual(len(pts), g["sample_count"])
            self.assertAlmostEqual(g["energy_integrated_millijoules"] / 1000, trapezoid_joules(pts), places=3)
            self.assertAlmostEqual(g["power_watts"]["mean"], sum(p[1] for p in pts) / len(pts), places=6)

    def test_profiling_readings_reach_the_job(self):
        # H100s have GPM: the simulator gives PCIe rates (8xH100.yaml: 2400 MB/s in, 350 MB/s out while
        # computing), as `gpulse dmon --simulate 8xH100 -e 1009,1010` shows.
        j = self.job()
        for g in j["gpus"]:
            with self.subTest(gpu=g["device_index"]):
                self.assertIsNotNone(g["pcie_rx_bytes_per_second"])
                self.assertIsNotNone(g["pcie_tx_bytes_per_second"])
                self.assertLessEqual(g["pcie_rx_bytes_per_second"]["max"], 2400e6 * 1.05)
                self.assertGreaterEqual(g["pcie_rx_bytes_per_second"]["max"], 2400e6 * 0.95)

    def test_verbose_table(self):
        j = self.job()
        p = self.cli_ok(self.agent, "stats", "-j", "train-600", "-v")
        out = p.stdout
        self.assertEqual(out.splitlines()[0], "Successfully retrieved statistics for job: train-600.")
        self.assertEqual(re.findall(r"(?m)^\| GPU ID: (\d+)\s+\|$", out), ["0", "1"])
        # dcgmi stats -j -v's sections and rows, in its order (NVIDIA DCGM's dcgmi/ProcessStats.cpp).
        box = out[out.index("| GPU ID: 0"):out.index("| GPU ID: 1")]
        self.assertEqual(layout(box), [
            "| GPU ID: 0", "== Execution Stats", "| Start Time", "| End Time", "| Total Execution Time (sec)",
            "| No. of Processes", "== Performance Stats", "| Energy Consumed (Joules)", "| Power Usage (Watts)",
            "| Max GPU Memory Used (bytes)", "| SM Clock (MHz)", "| Memory Clock (MHz)", "| SM Utilization (%)",
            "| Memory Utilization (%)", "| PCIe Rx Bandwidth (megabytes)", "| PCIe Tx Bandwidth (megabytes)",
            "== Event Stats", "| Single Bit ECC Errors", "| Double Bit ECC Errors", "| PCIe Replay Warnings",
            "| Critical XID Errors", "== Slowdown Stats", "| Due to - Power (%)", "| - Thermal (%)",
            "| - Reliability (%)", "| - Board Limit (%)", "| - Low Utilization (%)", "| - Sync Boost (%)",
            "== Compute Process Utilization", "| PID", "| Avg SM Utilization (%)", "| Avg Memory Utilization (%)",
            "== Overall Health", "| Overall Health"])
        for label in ("Start Time", "No. of Processes", "Energy Consumed (Joules)", "PCIe Rx Bandwidth (megabytes)",
                      "       - Reliability (%)", "PID", "Overall Health"):
            self.assertEqual(len(table_values(out, label)), 2, label)
        self.assertEqual(table_values(out, "       - Reliability (%)"), ["N/A", "N/A"], "no clock-event reason says it")
        self.assertEqual(table_values(out, "       - Low Utilization (%)"),
                         ["%.0f" % g["slowdown_percent"]["low_utilization"] for g in j["gpus"]])
        self.assertEqual(table_values(out, "Energy Consumed (Joules)"), ["%.0f" % g["energy_joules"] for g in j["gpus"]])
        self.assertEqual(table_values(out, "Power Usage (Watts)"),
                         ["Avg: %.0f, Max: %.0f, Min: %.0f" % (g["power_watts"]["mean"], g["power_watts"]["max"],
                                                               g["power_watts"]["min"]) for g in j["gpus"]])
        self.assertEqual(table_values(out, "Total Execution Time (sec)"), ["600.00", "600.00"])
        self.assertEqual(table_values(out, "PID"), ["52001", "52002"])
        self.assertEqual(table_values(out, "Critical XID Errors"), ["0", "0"])
        self.assertEqual(table_values(out, "Overall Health"), ["Healthy", "Healthy"])
        self.assertRegex(out, r"(?m)^\+----- Performance Stats -+\+-+\+$")

    def test_summary_table(self):
        j = self.job()
        out = self.cli_ok(self.agent, "stats", "-j", "train-600").stdout
        self.assertRegex(out, r"(?m)^\| Summary\s+\|$")
        self.assertEqual(table_value(out, "No. of Processes"), "2")
        self.assertEqual(table_value(out, "Clocks and PCIe Performance"), "Available per GPU in verbose mode")
        self.assertEqual(table_value(out, "Power Usage (Watts)"),
                         "Avg: %.0f, Max: N/A, Min: N/A" % sum(g["power_watts"]["mean"] for g in j["gpus"]))
        self.assertEqual(table_value(out, "Energy Consumed (Joules)"), "%.0f" % j["energy_joules"])
        self.assertEqual(table_value(out, "Critical XID Errors"), "0")
        self.assertEqual(table_value(out, "Overall Health"), "Healthy")
        self.assertEqual(table_value(out, "Total Execution Time (sec)"), "600.00")

    def test_list_and_errors(self):
        jobs = self.cli_json(self.agent, "agent-jobs.schema.json", "stats", "--list")["jobs"]
        mine = [x for x in jobs if x["id"] == "train-600"]
        self.assertEqual(mine, [{"id": "train-600", "group": self.gid, "start_unix_ns": self.start_ns,
                                 "stop_unix_ns": self.start_ns + 600 * S, "running": False}])
        text = self.cli_ok(self.agent, "stats", "--list").stdout
        self.assertRegex(text, r"(?m)^train-600\s+%d\s+stopped\s" % self.gid)
        self.cli_fails(self.agent, 2, r'job "train-600" exists', "stats", "-g", str(self.gid), "-s", "train-600")
        self.cli_fails(self.agent, 2, r'job "train-600" has already stopped', "stats", "-x", "train-600")
        self.cli_fails(self.agent, 2, r'no job "nope"', "stats", "-j", "nope")
        self.cli_fails(self.agent, 2, r'no job "nope"', "stats", "-x", "nope")
        self.cli_fails(self.agent, 2, r"a job id is 1 to 64", "stats", "-s", "a b")
        self.cli_fails(self.agent, 2, r"no group 99", "stats", "-g", "99", "-s", "elsewhere")
        self.agent.api("GET", "/api/v1/jobs/%25zz", status=404)

    def test_a_job_id_with_a_plus_sign_is_found_by_its_path(self):
        # '+' is allowed in a job id and is a plain character in a URL path (only query strings
        # of HTML forms use it for a space).
        self.agent.api("POST", "/api/v1/jobs", {"id": "a+b", "group": self.gid}, status=201, schema="agent-job.schema.json")
        self.addCleanup(self.agent.request, "DELETE", "/api/v1/jobs/a%2Bb")
        self.assertEqual(self.agent.api("GET", "/api/v1/jobs/a%2Bb", schema="agent-job.schema.json")["id"], "a+b")
        self.assertEqual(self.agent.api("GET", "/api/v1/jobs/a+b", schema="agent-job.schema.json")["id"], "a+b")

    def test_a_running_job_keeps_its_group_and_can_be_removed_after(self):
        a = self.agent
        gid = self.create_group(a, "running", "6")
        start = a.now_ns()
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-g", str(gid), "-s", "still-running")
        a.advance(30)
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-j", "still-running")
        self.assertTrue(j["running"])
        self.assertIsNone(j["stop_unix_ns"])
        self.assertEqual(j["duration_s"], 30.0)
        self.assertEqual(j["gpus"][0]["sample_count"], 30)
        out = self.cli_ok(a, "stats", "-j", "still-running", "-v").stdout
        self.assertEqual(table_value(out, "End Time"), "Still Running")
        self.assertEqual(table_value(out, "Total Execution Time (sec)"), "Still Running")
        self.cli_fails(a, 1, r'job "still-running" runs on group %d: stop it first' % gid, "group", "-d", str(gid))
        self.assertEqual(self.cli_ok(a, "stats", "-x", "still-running").stdout,
                         "Successfully stopped recording stats for still-running.\n")
        self.cli_json(a, "agent-deleted.schema.json", "group", "-d", str(gid))
        self.assertEqual(self.cli_json(a, "agent-deleted.schema.json", "stats", "-r", "still-running"),
                         {"deleted": "still-running"})
        self.cli_fails(a, 2, r'no job "still-running"', "stats", "-j", "still-running")
        self.assertLess(start, a.now_ns())


class ProcessStatsTest(AgentTestCase):
    def test_process_watches_answer_for_a_pid_and_include_the_start_tick_in_jobs(self):
        a = self.agent
        gid = self.create_group(a, "procs", "2,3")
        enabled = self.cli_json(a, "agent-stats-enable.schema.json", "stats", "-g", str(gid), "-e")
        self.assertEqual(enabled["group"], gid)
        self.assertEqual(enabled["watch"]["update_ms"], 1000)
        t_enable = a.now_ns()
        a.advance(60)
        p = self.cli_json(a, "agent-process.schema.json", "stats", "-g", str(gid), "-p", "52003")
        self.assertEqual((p["pid"], p["group"]), (52003, gid))
        self.assertEqual((p["first_seen_unix_ns"], p["last_seen_unix_ns"]), (t_enable + S, t_enable + 60 * S))
        self.assertEqual([g["device_index"] for g in p["gpus"]], [2])
        self.assertEqual([x["pid"] for x in p["gpus"][0]["processes"]], [52003])
        self.assertEqual(p["gpus"][0]["sample_count"], 60)
        text = self.cli_ok(a, "stats", "-g", str(gid), "-p", "52004", "-v").stdout
        self.assertTrue(text.startswith("Successfully retrieved process info for PID: 52004. Process ran on 1 GPUs.\n"), text)
        self.assertEqual(table_value(text, "PID"), "52004")
        self.cli_fails(a, 2, r"no process 52001 was seen on the GPUs of group %d" % gid, "stats", "-g", str(gid), "-p", "52001")
        # A job whose fields are watched already has a sample at its start tick too: the window is
        # [start, stop] inclusive.
        self.cli_json(a, "agent-job.schema.json", "stats", "-g", str(gid), "-s", "prewatched")
        a.advance(120)
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-x", "prewatched")
        self.assertEqual([g["sample_count"] for g in j["gpus"]], [121, 121])
        self.assertEqual(j["duration_s"], 120.0)


class DcgmiProcessLayoutTest(AgentTestCase):
    """`stats -p PID -v` as seed 004's `dcgmi stats -p PID -v` transcript lays it out
    (tests/e2e/golden/dcgmi-stats-p-v.txt), on k8s-8xH100, whose GPU 4 two pods time-slice (PIDs
    42001 and 43001) and whose GPU 7 has a compute-and-graphics process (47001)."""

    scenario = "k8s-8xH100"

    @classmethod
    def prepare(cls):
        a = cls.agent
        p = a.cli("group", "-c", "shared", "--json")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.gid = json.loads(p.stdout)["id"]
        if a.cli("group", "-g", str(cls.gid), "-a", "4,7").returncode != 0:
            raise AssertionError("cannot add GPUs 4 and 7")
        if a.cli("stats", "-g", str(cls.gid), "-e").returncode != 0:
            raise AssertionError("cannot enable process watches")
        a.advance(30)

    def golden(self):
        with open(os.path.join(os.path.dirname(__file__), "golden", "dcgmi-stats-p-v.txt"), encoding="utf-8") as f:
            return [l.rstrip("\n") for l in f if not l.startswith("#")]

    def test_the_verbose_process_view_has_dcgmis_sections_and_rows(self):
        out = self.cli_ok(self.agent, "stats", "-g", str(self.gid), "-p", "43001", "-v").stdout
        self.assertTrue(out.startswith("Successfully retrieved process info for PID: 43001. Process ran on 1 GPUs.\n"))
        got = [x.replace("| GPU ID: 4", "| GPU ID: N") for x in layout(out)]
        got = [x for x in got if x != "| Conflicting PIDs"]
        got.append(" ".join(" ".join(out.strip().splitlines()[-2:]).split()))
        self.assertEqual(got, self.golden())

    def test_conflicting_processes_are_the_others_on_its_gpu(self):
        p = self.cli_json(self.agent, "agent-process.schema.json", "stats", "-g", str(self.gid), "-p", "42001")
        self.assertEqual([(g["device_index"], g["conflicting_pids"]) for g in p["gpus"]], [(4, [43001])])
        out = self.cli_ok(self.agent, "stats", "-g", str(self.gid), "-p", "42001", "-v").stdout
        self.assertEqual(table_value(out, "No. of Conflicting Processes *"), "1")
        self.assertEqual(table_value(out, "Conflicting PIDs"), "43001")
        self.assertEqual(table_value(out, "Max GPU Memory Used (bytes) *"), str(30000 * 1024 * 1024))
        self.assertEqual(table_value(out, "    Avg SM Utilization (%)"), "45")
        summary = self.cli_ok(self.agent, "stats", "-g", str(self.gid), "-p", "42001").stdout
        self.assertRegex(summary, r"(?m)^\| Summary\s+\|$")
        self.assertEqual(table_value(summary, "No. of Conflicting Processes *"), "1")
        self.assertNotIn("Process Utilization", summary)
        self.assertIn("(*) Represents a process statistic.", summary)

    def test_a_job_lists_compute_and_graphics_processes_apart(self):
        a = self.agent
        self.cli_json(a, "agent-job.schema.json", "stats", "-g", str(self.gid), "-s", "mixed")
        a.advance(10)
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-x", "mixed")
        g7 = [g for g in j["gpus"] if g["device_index"] == 7][0]
        self.assertEqual({p["pid"]: p["type"] for p in g7["processes"]},
                         {46501: "compute", 47001: "compute+graphics", 47002: "compute"})
        out = self.cli_ok(a, "stats", "-j", "mixed", "-v").stdout
        box = out[out.index("| GPU ID: 7"):]
        sections = [x for x in layout(box) if x.startswith("==")]
        self.assertIn("== Compute Process Utilization", sections)
        self.assertIn("== Graphics Process Utilization", sections)
        graphics = box[box.index("Graphics Process Utilization"):]
        self.assertEqual(table_values(graphics.split("Overall Health")[0], "PID"), ["47001"])


class FaultsJobTest(AgentTestCase):
    """A 5 s job on every GPU of the `faults` scenario: XID 94 on GPU 0 at 1.0 s, GPU 1 unreadable
    (NO_PERMISSION: skipped), GPU 3 lost at 1.5 s (XID 79)."""

    scenario = "faults"

    @classmethod
    def prepare(cls):
        a = cls.agent
        if a.cli("stats", "-s", "faulty").returncode != 0:
            raise AssertionError("cannot start the job")
        a.advance(5)
        p = a.cli("stats", "-x", "faulty", "--json")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.job = json.loads(p.stdout)
        cls.gpus = {g["device_index"]: g for g in cls.job["gpus"]}

    def test_xid_errors_make_the_verdict(self):
        g0, g2, g3 = self.gpus[0], self.gpus[2], self.gpus[3]
        self.assertEqual([(x["device_index"], x["xid"]) for x in g0["xid_errors"]], [(0, 94)])
        # The job's first sample is at its start (0 s): the replays at 0.5 s and the ECC errors at
        # 1.0 s happen during the job and count.
        self.assertEqual((g0["overall_health"], g0["health_incidents"]),
                         ("failure", ["1 double-bit ECC error(s)", "1 XID error(s)", "5 PCIe replay(s)"]))
        self.assertEqual((g0["ecc_sbe_errors"], g0["ecc_dbe_errors"], g0["pcie_replays"]), (3, 1, 5))
        self.assertEqual((g2["overall_health"], g2["xid_errors"]), ("healthy", []))
        self.assertEqual([x["xid"] for x in g3["xid_errors"]], [79])
        self.assertEqual(g3["overall_health"], "failure")
        self.assertEqual(g0["throttle_ns"].get("hw_slowdown"), 1 * S, "hardware slowdown from 1.0 s to 2.0 s")
        self.assertEqual(self.gpus[1]["state"], "skipped")
        self.assertEqual(self.gpus[1]["sample_count"], 0)

    def test_summary_counts_the_xid_errors_of_the_json(self):
        out = self.cli_ok(self.agent, "stats", "-j", "faulty").stdout
        total = sum(len(g.get("xid_errors", [])) for g in self.job["gpus"])
        self.assertEqual(total, 2)
        self.assertEqual(table_value(out, "Critical XID Errors"), "2")
        self.assertEqual(table_value(out, "Overall Health"), "Failure")

    def test_a_skipped_gpu_has_a_whole_statistics_entry(self):
        # job_stats.h: every GPU's entry is run.json's job_statistics entry plus the agent's keys, so a
        # GPU nothing could be read from has its keys null or empty, and the tables say N/A or 0.
        g1 = self.gpus[1]
        self.assertEqual(g1.get("xid_errors"), [])
        self.assertIsNone(g1.get("power_watts", "missing"))
        out = self.cli_ok(self.agent, "stats", "-j", "faulty", "-v").stdout
        self.assertEqual(table_values(out, "Critical XID Errors"), ["1", "0", "0", "1"])
        validate(self.job, "agent-job.schema.json")

    def test_a_gpu_lost_during_the_job_is_reported_lost(self):
        # GPU 3 answers GPU_IS_LOST from 1.5 s: the agent's ticks see it (its points are absent from
        # then on), so the agent must not go on calling it present, and the ticks without a reading
        # are no samples (as in `gpulse record`, whose statistics code the agent shares).
        h = self.agent.api("GET", "/api/v1/history?entities=3&fields=155", schema="agent-history.schema.json")
        pts = h["entities"][0]["series"][0]["points"]
        self.assertEqual([p[1] is None for p in pts], [False, False, True, True, True, True])
        self.assertEqual(h["entities"][0]["state"], "lost")
        self.assertEqual(self.gpus[3]["state"], "lost")
        self.assertEqual(self.gpus[3]["sample_count"], 2, "the start and 1 s")
        g = self.agent.api("GET", "/api/v1/groups/0", schema="agent-group.schema.json")
        self.assertEqual([e["state"] for e in g["entities"]], ["present", "skipped", "present", "lost"])


class ProfilingTest(AgentTestCase):
    """The profiling fields (GPM) on the simulated clock: H100s have GPM, and `gpulse dmon --simulate
    8xH100 -e 1009,1010` reads 350 MB/s out and 2400 MB/s in over PCIe while the step computes
    (8xH100.yaml, 0 to 9 s of every 12 s)."""

    def test_watched_profiling_fields_have_values(self):
        a = self.agent
        a.api("POST", "/api/v1/watches", {"fields": "1009,1010,1002", "update_ms": 1000}, status=201,
              schema="agent-watch.schema.json")
        a.advance(5)
        h = a.api("GET", "/api/v1/history?entities=0&fields=1009,1010,1002", schema="agent-history.schema.json")
        tx, rx, sm = (s["points"] for s in h["entities"][0]["series"])
        self.assertEqual(len(tx), 5)
        # The first read only primes GPM (its values need two samples); every later one has them.
        for points, rate in ((tx, 350e6), (rx, 2400e6)):
            values = [p[1] for p in points[1:]]
            self.assertNotIn(None, values)
            self.assertTrue(all(abs(v - rate) <= 0.05 * rate for v in values), values)
        self.assertTrue(all(p[1] is not None and 0.8 < p[1] <= 1.0 for p in sm[1:]), sm)

    def test_metrics_carry_the_profiling_families(self):
        # Once the simulated clock has moved (the backend then reads on it), as before.
        self.agent.advance(2)
        self.agent.tcp_request("GET", "/metrics")
        self.agent.advance(1)
        text = self.agent.tcp_request("GET", "/metrics").text
        names = {l.split("{", 1)[0] for l in text.splitlines() if l.startswith("DCGM_FI_PROF_")}
        self.assertIn("DCGM_FI_PROF_PCIE_TX_BYTES", names)
        self.assertIn("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", names)


class AgentFlagsTest(GpulseTestCase):
    def agent_fails(self, args, env, message):
        with tempfile.TemporaryDirectory() as d:
            p = run("agent", "--state-dir", os.path.join(d, "state"), "--socket", os.path.join(d, "sock"),
                    "-a", "127.0.0.1:0", *args, env=env, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(message, p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "state")), "refused before touching the state")

    def test_bad_flags_and_variables_are_refused(self):
        self.agent_fails(["--simulate", "8xH100", "--socket-mode", "0999"], {"GPULSE_SIM_CLOCK": "0"},
                         '--socket-mode "0999" is not an octal mode')
        self.agent_fails([], {"GPULSE_SIM_CLOCK": "0"}, "GPULSE_SIM_CLOCK drives a simulated clock: it needs --simulate")
        self.agent_fails(["--simulate", "8xH100"], {"GPULSE_SIM_CLOCK": "soon"}, 'GPULSE_SIM_CLOCK: "soon" is not a number')
        self.agent_fails(["--simulate", "8xH100", "--socket-group", "no-such-group-here"], {"GPULSE_SIM_CLOCK": "0"},
                         '--socket-group: no group named "no-such-group-here"')


class RestartTest(AgentTestCase):
    shared_agent = False

    def job_across_restart(self, kill):
        a = self.new_agent()
        gid = self.create_group(a, "restart", "0,1")
        started = self.cli_json(a, "agent-job.schema.json", "stats", "-g", str(gid), "-s", "across")
        fields = len(started["watches_added"][0]["fields"])
        start = a.now_ns()
        a.advance(300)
        before = a.now_ns()
        st = a.restart(kill=kill)
        validate(st, "agent-status.schema.json")
        self.assertEqual(st["now_unix_ns"], before, "the simulated clock resumes where the database last saw it")
        self.assertEqual((st["groups"], st["watches"], st["jobs"]), (1, 1, 1))
        self.assertEqual(st["history"]["points"], 2 * fields * 301, "every point of the first 300 s, and the start's")
        a.advance(300)
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-x", "across")
        self.assertEqual(j["duration_s"], 600.0)
        self.assertEqual(len(j["notes"]), 1, j["notes"])
        self.assertIn("the agent was down from %d to %d" % (before, before), j["notes"][0])
        self.assertIn("a clean shutdown" if not kill else "stopped without shutting down", j["notes"][0])
        for g in j["gpus"]:
            self.assertEqual(g["sample_count"], 601, "the start, 300 ticks before the restart and 300 after, none lost")
            self.assertAlmostEqual(g["energy_joules"], g["power_watts"]["mean"] * 600, delta=0.02 * g["power_watts"]["mean"] * 600)
        h = a.api("GET", "/api/v1/history?group=%d&fields=155,156" % gid, schema="agent-history.schema.json")
        for e in h["entities"]:
            for s in e["series"]:
                self.assertEqual([p[0] for p in s["points"]], [start // MS + 1000 * k for k in range(0, 601)],
                                 "no gap and no repeat at the restart")
        out = self.cli_ok(a, "stats", "-j", "across").stdout
        self.assertIn("Note: the agent was down from", out)
        # The notes are kept: another restart does not add one to a stopped job.
        a.restart()
        self.assertEqual(self.cli_json(a, "agent-job.schema.json", "stats", "-j", "across"), j)

    def test_a_job_spans_a_clean_restart(self):
        self.job_across_restart(kill=False)

    def test_a_job_spans_a_sigkill(self):
        self.job_across_restart(kill=True)

    def test_a_crash_before_the_first_checkpoint_is_noted_on_running_jobs(self):
        # A job started on a fresh agent that is killed before it ever checkpointed (on the real
        # clock: within --checkpoint-s of starting) lost whatever was sampled meanwhile; its notes
        # must say so, as they do after a later crash.
        a = self.new_agent()
        self.cli_json(a, "agent-job.schema.json", "stats", "-s", "early")
        t = a.now_ns()
        a.kill9()
        a.start()
        a.advance(10)
        j = self.cli_json(a, "agent-job.schema.json", "stats", "-x", "early")
        self.assertEqual(len(j["notes"]), 1, j["notes"])
        self.assertIn("the agent was down from %d" % t, j["notes"][0])
        self.assertIn("stopped without shutting down", j["notes"][0])

    def test_acknowledged_changes_survive_sigkill(self):
        a = self.new_agent()
        gid = self.create_group(a, "durable")
        a.kill9()
        a.start()
        self.assertEqual(a.api("GET", "/api/v1/groups/%d" % gid, schema="agent-group.schema.json")["name"], "durable")
        self.cli_ok(a, "group", "-g", str(gid), "-a", "2,3")
        a.kill9()
        a.start()
        w = self.cli_json(a, "agent-watch.schema.json", "watch", "-g", str(gid), "-e", "150", "-i", "500")
        a.kill9()
        a.start()
        self.cli_json(a, "agent-job.schema.json", "stats", "-g", str(gid), "-s", "j1")
        a.kill9()
        a.start()
        g = a.api("GET", "/api/v1/groups/%d" % gid, schema="agent-group.schema.json")
        self.assertEqual([e["entity"] for e in g["entities"]], ["2", "3"])
        watches = a.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")["watches"]
        self.assertEqual([(x["id"], x["group"], x["update_ms"]) for x in watches][0], (w["id"], gid, 500))
        self.assertEqual(len(watches), 2, "the watch and the one the job added")
        jobs = a.api("GET", "/api/v1/jobs", schema="agent-jobs.schema.json")["jobs"]
        self.assertEqual([(x["id"], x["running"]) for x in jobs], [("j1", True)])
        # A removal, a stop and a delete are as durable.
        self.cli_ok(a, "stats", "-x", "j1")
        self.cli_ok(a, "watch", "-d", str(w["id"]))
        gid2 = self.create_group(a, "gone")
        self.cli_ok(a, "group", "-d", str(gid2))
        a.kill9()
        a.start()
        jobs = a.api("GET", "/api/v1/jobs", schema="agent-jobs.schema.json")["jobs"]
        self.assertEqual([(x["id"], x["running"]) for x in jobs], [("j1", False)])
        self.assertNotIn(w["id"], [x["id"] for x in a.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")["watches"]])
        self.assertEqual([x["id"] for x in a.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]], [0, gid])
        self.assertEqual(self.create_group(a, "next"), gid2 + 1, "ids are never reused, even after SIGKILL")

    def test_a_second_agent_on_the_same_state_directory_is_refused(self):
        a = self.new_agent()
        other = Agent(tempfile.mkdtemp(prefix="second-", dir=self.tmp), start=False)
        other.state_dir = a.state_dir
        proc = other.launch()
        rc = wait_for_exit(proc)
        self.assertNotEqual(rc, 0)
        self.assertIn("another gpulse agent holds %s" % a.state_dir, other.log())
        self.assertEqual(a.status()["groups"], 0, "the first one goes on")

    def test_a_group_entity_this_machine_lacks_is_noted(self):
        a = self.new_agent()
        gid = self.create_group(a, "eight", "0,7")
        self.cli_ok(a, "watch", "-g", str(gid), "-e", "155")
        a.advance(10)
        self.assertEqual(a.stop(), 0)
        a.scenario = "1xH200"  # the same state on a machine with one GPU
        st = a.start()
        validate(st, "agent-status.schema.json")
        self.assertIn("group %d names entity 7, which this machine does not have" % gid, st["notes"])
        # Both series: GPU 7 is gone, and 1xH200's GPU 0 is another GPU (another UUID) at index 0,
        # whose history must not be the old GPU 0's.
        self.assertIn("2 stored series were not loaded (an entity this machine no longer has, or a damaged image)",
                      st["notes"])
        g = a.api("GET", "/api/v1/groups/%d" % gid, schema="agent-group.schema.json")
        self.assertEqual(([e["entity"] for e in g["entities"]], g["missing_entities"]), (["0"], ["7"]))
        out = self.cli_ok(a, "group", "-g", str(gid), "-i").stdout
        self.assertEqual(table_cell(out, "-> Entities"), "GPU 0, 7 (not here)")
        self.assertEqual(st["history"]["points"], 0, "the old GPU 0's series is not served as the new one's")


class DatabaseRefusalTest(AgentTestCase):
    shared_agent = False

    def refused(self, content, message):
        d = tempfile.mkdtemp(prefix="refused-", dir=self.tmp)
        a = Agent(d, start=False)
        os.makedirs(a.state_dir)
        db = os.path.join(a.state_dir, "agent.db")
        content(db)
        with open(db, "rb") as f:
            before = f.read()
        mtime = os.stat(db).st_mtime_ns
        rc = wait_for_exit(a.launch())
        self.assertNotEqual(rc, 0)
        self.assertRegex(a.log(), re.escape(db) + r".*" + message)
        with open(db, "rb") as f:
            self.assertEqual(f.read(), before, "the file is left as it was")
        self.assertEqual(os.stat(db).st_mtime_ns, mtime)
        self.assertFalse(os.path.exists(a.socket), "nothing is served")
        self.assertEqual(sorted(os.listdir(a.state_dir)), ["agent.db", "agent.lock"])

    def test_a_text_file_is_refused_and_left_unchanged(self):
        def write(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write("these are my notes, not a database\n" * 20)
        self.refused(write, "is not an SQLite database; refusing to overwrite it")

    def test_another_program_s_sqlite_database_is_refused_and_left_unchanged(self):
        def write(path):
            c = sqlite3.connect(path)
            c.execute("CREATE TABLE groups(id INTEGER, name TEXT)")
            c.execute("INSERT INTO groups VALUES (1, 'theirs')")
            c.commit()
            c.close()
        self.refused(write, "belongs to another program")


class SocketPermissionTest(AgentTestCase):
    shared_agent = False

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root: runs the CLI as uid 65534 with setpriv")
        if shutil.which("setpriv") is None:
            self.skipTest("no setpriv")
        os.chmod(self.tmp, 0o755)
        path = os.path.dirname(os.path.abspath(self.tmp))
        while path != "/":
            if not os.stat(path).st_mode & stat.S_IXOTH:
                self.skipTest("%s is not traversable by other users" % path)
            path = os.path.dirname(path)
        p = self.as_nobody("--version")
        if p.returncode != 0:
            self.skipTest("uid 65534 cannot run %s: %s" % (GPULSE, p.stderr))

    def as_nobody(self, *args):
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", GPULSE, *args],
                              capture_output=True, text=True, timeout=60)

    def agent_with_mode(self, mode):
        d = tempfile.mkdtemp(prefix="sock-", dir=self.tmp)
        os.chmod(d, 0o755)
        a = Agent(d, args=["--socket-mode", mode])
        self.addCleanup(a.close)
        self.create_group(a, "root-made")
        return a

    def test_the_socket_s_mode_keeps_other_users_out(self):
        a = self.agent_with_mode("0660")
        st = os.stat(a.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid), (0o660, 0, 0))
        p = self.as_nobody("group", "--host", a.host, "-l")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot reach the agent at %s: Permission denied" % a.host, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(self.cli_ok(a, "group", "-l").returncode, 0, "root is served")

    def test_the_credential_check_refuses_when_the_mode_is_opened(self):
        a = self.agent_with_mode("0666")
        self.assertEqual(stat.S_IMODE(os.stat(a.socket).st_mode), 0o666)
        p = self.as_nobody("group", "--host", a.host, "-l")
        self.assertNotEqual(p.returncode, 0)
        self.assertRegex(p.stderr, r"gpulse group: .*agent.*%s" % re.escape(a.host))
        self.assertNotIn("root-made", p.stdout + p.stderr)
        p = self.as_nobody("group", "--host", a.host, "-c", "intruder")
        self.assertNotEqual(p.returncode, 0)
        self.assertTrue(a.running())
        names = [g["name"] for g in a.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]]
        self.assertEqual(names, ["DCGM_ALL_SUPPORTED_GPUS", "root-made"], "nothing was changed through the socket")


class HttpTest(AgentTestCase):
    def test_the_exporter_side_still_serves_metrics(self):
        r = self.agent.tcp_request("GET", "/metrics")
        self.assertEqual(r.status, 200)
        lines = [l for l in r.text.splitlines() if l.startswith("DCGM_FI_DEV_POWER_USAGE{")]
        self.assertEqual(sorted(re.search(r'gpu="(\d+)"', l).group(1) for l in lines), [str(i) for i in range(8)])
        for l in lines:
            self.assertGreater(float(l.rsplit(" ", 1)[1]), 50)
        r = self.agent.tcp_request("POST", "/metrics", b"")
        self.assertEqual(r.status, 405)
        r = self.agent.request("GET", "/metrics")
        self.assertEqual(r.status, 200, "the socket serves the exporter's paths too")

    def test_the_api_is_on_tcp_too(self):
        r = self.agent.tcp_request("GET", "/api/v1/status")
        self.assertEqual(r.status, 200)
        validate(r.json, "agent-status.schema.json")
        r = self.agent.tcp_request("GET", "/api/v1/x")
        self.assertEqual(r.status, 404)
        validate(r.json, "agent-error.schema.json")

    def test_unknown_paths_and_methods(self):
        for method, path in (("GET", "/api/v1/x"), ("GET", "/api/v1/"), ("GET", "/api/v1/groups/2/x"),
                             ("POST", "/api/v1/status/x"), ("GET", "/api/v1/jobs/a/b/c")):
            with self.subTest(method=method, path=path):
                err = self.agent.api(method, path, status=404)
                self.assertIn("no such API path", err["error"])
        for method, path in (("PUT", "/api/v1/groups"), ("POST", "/api/v1/status"), ("DELETE", "/api/v1/history"),
                             ("GET", "/api/v1/stats"), ("PUT", "/api/v1/clock"), ("POST", "/api/v1/processes/1")):
            with self.subTest(method=method, path=path):
                err = self.agent.api(method, path, {} if method in ("POST", "PUT") else None, status=405)
                self.assertIn("is not served: use", err["error"])

    def test_bad_json_bodies_are_400(self):
        cases = [("/api/v1/groups", "not json"), ("/api/v1/groups", "[1, 2]"), ("/api/v1/groups", '"name"'),
                 ("/api/v1/groups", '{"name": "x"'), ("/api/v1/groups", {"name": 5}), ("/api/v1/groups", {"name": None}),
                 ("/api/v1/watches", "{"), ("/api/v1/watches", {"fields": 155}), ("/api/v1/watches", {"fields": "155", "update_ms": "1000"}),
                 ("/api/v1/jobs", {"id": 5}), ("/api/v1/jobs", {}), ("/api/v1/clock", {"advance_s": "10"}),
                 ("/api/v1/clock", {"advance_s": -1}), ("/api/v1/clock", "12"), ("/api/v1/stats", "nope")]
        for path, body in cases:
            with self.subTest(path=path, body=body):
                err = self.agent.api("POST", path, body, status=400)
                self.assertTrue(err["error"])
        self.assertEqual(self.agent.status()["groups"], 0, "nothing was created")

    def test_wrongly_typed_numbers_are_400_not_a_crash(self):
        a = self.new_agent()
        gid = self.create_group(a, "typed")
        cases = [("/api/v1/watches", {"group": str(gid), "fields": "155"}),
                 ("/api/v1/watches", {"group": None, "fields": "155"}),
                 ("/api/v1/jobs", {"id": "typed-job", "group": str(gid)}),
                 ("/api/v1/stats", {"group": str(gid)}),
                 ("/api/v1/stats", {"update_ms": "100"}),
                 ("/api/v1/stats", {"keep_age_s": [1]}),
                 ("/api/v1/watches", {"group": 1e15, "fields": "155"}),
                 ("/api/v1/watches", {"group": 2.5, "fields": "155"}),
                 ("/api/v1/stats", {"keep_age_s": 1.5})]
        for path, body in cases:
            with self.subTest(path=path, body=body):
                try:
                    r = a.request("POST", path, body)
                except (OSError, http.client.HTTPException) as e:
                    try:
                        a.proc.wait(timeout=10)  # closed without an answer: did it die?
                    except subprocess.TimeoutExpired:
                        raise e from None
                    log = a.log()
                    a.start()  # for the next case
                    self.fail("the agent died on POST %s %s:\n%s" % (path, json.dumps(body), log[-400:]))
                self.assertEqual(r.status, 400, r)
                validate(r.json, "agent-error.schema.json")
        self.assertEqual(a.status()["watches"], 0, "nothing was added")

    def test_a_bad_percent_escape_in_a_query_is_400(self):
        a = self.agent
        err = a.api("GET", "/api/v1/history?fields=155&since=1h%zz", status=400)
        self.assertTrue(err["error"])

    def test_the_clock_cannot_be_moved_on_the_real_clock(self):
        a = self.new_agent(sim_clock=None)
        c = a.api("GET", "/api/v1/clock", schema="agent-clock.schema.json")
        self.assertFalse(c["simulated"])
        self.assertFalse(a.status()["simulated_clock"])
        self.assertLess(abs(c["now_unix_ns"] - time.time_ns()), 60 * S)
        err = a.api("POST", "/api/v1/clock", {"advance_s": 10}, status=409)
        self.assertIn("real clock", err["error"])

    def test_the_simulated_clock_moves_only_when_told(self):
        a = self.agent
        t = a.now_ns()
        self.assertEqual(a.now_ns(), t)
        moved = a.advance(1.5)
        self.assertEqual(moved, {"now_unix_ns": t + 1500 * MS, "ticks": 0, "checkpoint": "saved"})
        self.assertEqual(a.advance(0)["now_unix_ns"], t + 1500 * MS)
        self.assertEqual(a.api("GET", "/api/v1/clock", schema="agent-clock.schema.json"),
                         {"simulated": True, "now_unix_ns": t + 1500 * MS})


if __name__ == "__main__":
    unittest.main()
