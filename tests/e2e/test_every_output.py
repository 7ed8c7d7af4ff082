"""No entity vanishes from any output (issue 40): for each built-in scenario with something unusual
(a skipped GPU, a GPU lost before the start, GPUs without sensors, MIG instances, two vendors on
one host) every output gpulse writes names every GPU with its state, and every MIG GPU instance
where the output shows instances. One table of scenarios, one reader per output; a reader returns
{gpu index: state} as that output says it ("present", "skipped" or "lost").

Outputs: devices (text, --json), dmon (table, csv, json), ps (table, --json), record (run.json,
report.txt, report.html), exporter (--once /metrics, and /metrics and /api/v1/devices of a
running exporter), the agent (/api/v1/groups/0, /metrics) and top (--once, text and --json).
Run with Debian's /usr/bin/python3."""
import csv
import io
import json
import os
import re
import shutil
import tempfile
import unittest

from agent_e2e import Agent
from exporter_e2e import Exporter, parse_families
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, validate

MI300X = os.path.join(SOURCE_DIR, "tests", "testdata", "sysfs", "mi300x")
P, S, L = "present", "skipped", "lost"

# name -> (gpulse arguments, {gpu: allowed states}, {gpu: GPU-instance ids}). faults' GPU 3 falls
# off the bus 1.5 s into the scenario: present or lost, as the output's moment has it.
SCENARIOS = {
    "faults": (["--simulate", "faults"], {0: {P}, 1: {S}, 2: {P}, 3: {P, L}}, {}),
    "lost-at-start": (["--simulate", "lost-at-start"], {0: {P}, 1: {L}}, {}),
    "sensorless": (["--simulate", "sensorless"], {0: {P}, 1: {P}, 2: {P}, 3: {P}}, {}),
    "mig-a100": (["--simulate", "mig-a100"], {0: {P}, 1: {P}}, {0: {2, 3, 9, 10}}),
    "mixed vendors": (["--simulate", "1xH200", "--sysfs-root", MI300X], {0: {P}, 1: {P}}, {}),
}


def state_word(text):
    text = text.lower()
    if "skipped" in text:
        return S
    if "lost" in text:
        return L
    return P


# ---- the readers: each returns ({gpu: state}, {gpu: {gpu-instance ids}} or None) ----

def devices_text(out):
    gpus = {int(m.group(1)): state_word(m.group(2)) for m in re.finditer(r"^GPU (\d+): (.*)$", out, re.M)}
    return gpus, None


def devices_json(out):
    doc = json.loads(out)
    validate(doc, "devices.schema.json")
    gpus = {d["index"]: P for d in doc["devices"]}
    gpus.update({s["index"]: s["state"] for s in doc["skipped"]})
    mig = {d["index"]: {m["gpu_instance_id"] for m in d["mig_instances"]} for d in doc["devices"] if d["mig_instances"]}
    return gpus, mig


def dmon_table(out):
    gpus, mig = {}, {}
    for m in re.finditer(r"^GPU (\d+)(?:/GI (\d+))?(.*)$", out, re.M):
        if m.group(2):
            mig.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
        else:
            gpus[int(m.group(1))] = state_word(m.group(3)) if "(GPU" in m.group(3) else P
    return gpus, mig


def dmon_rows(rows):
    gpus, mig = {}, {}
    for r in rows:
        gi = r.get("gpu_instance_id")
        if gi not in (None, ""):
            mig.setdefault(int(r["gpu"]), set()).add(int(gi))
        else:
            gpus[int(r["gpu"])] = {"ok": P, "skipped": S, "lost": L}[r["state"]]
    return gpus, mig


def dmon_csv(out):
    return dmon_rows(list(csv.DictReader(io.StringIO(out))))


def dmon_json(out):
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    for r in rows:
        validate(r, "dmon-record.schema.json")
    return dmon_rows(rows)


def ps_table(out):
    gpus = {}
    for line in out.splitlines()[2:]:
        m = re.match(r"^\s*(\d+)\s", line)
        if m:
            gpus.setdefault(int(m.group(1)), S if "(skipped:" in line else L if "(lost:" in line else P)
    return gpus, None


def ps_json(out):
    doc = json.loads(out)
    validate(doc, "ps.schema.json")
    gpus = {d["index"]: P for d in doc["devices"]}
    gpus.update({u["index"]: u["state"] for u in doc["unreadable_gpus"]})
    return gpus, None


def entities_json(entities):
    """The entity model's list (run.json, /api/v1/devices): GPUs with state, GPU instances."""
    gpus, mig = {}, {}
    for e in entities:
        if e["kind"] == "gpu":
            gpus[e["gpu"]] = e["state"]
        elif e["kind"] == "gpu_instance":
            mig.setdefault(e["gpu"], set()).add(e["gpu_instance_id"])
    return gpus, mig


def metrics(text):
    fams = parse_families(text)
    gpus = {}
    for labels, v in fams.get("gpulse_device_lost", []):
        gpus[int(labels["gpu"])] = L if v == 1 else P
    for labels, v in fams.get("gpulse_device_skipped", []):
        if v == 1:
            gpus[int(labels["gpu"])] = S
        else:
            gpus.setdefault(int(labels["gpu"]), P)
    mig = {}
    for labels, _ in fams.get("DCGM_FI_DEV_FB_USED", []):
        if labels.get("GPU_I_ID"):
            mig.setdefault(int(labels["gpu"]), set()).add(int(labels["GPU_I_ID"]))
    return gpus, mig


def top_text(out):
    gpus, mig = {}, {}
    for m in re.finditer(r"^GPU (\d+)(?:/GI (\d+))?\s+(.*)$", out, re.M):
        gi = m.group(2)
        if gi:
            mig.setdefault(int(m.group(1)), set()).add(int(gi))
        else:
            gpus[int(m.group(1))] = S if m.group(3).startswith("SKIPPED") else L if m.group(3).startswith("LOST") else P
    return gpus, mig


def top_json(out):
    doc = json.loads(out)
    validate(doc, "live-frame.schema.json")
    gpus, mig = {}, {}
    for e in doc["entities"]:
        if e["kind"] == "gpu":
            gpus[e["gpu"]] = {"ok": P, "skipped": S, "lost": L}.get(e["state"], e["state"])
        elif e.get("gpu_instance_id") is not None:
            mig.setdefault(e["gpu"], set()).add(e["gpu_instance_id"])
    return gpus, mig


class EveryOutputNamesEveryEntity(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-every-output-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def check(self, scenario, output, got, want_gpus, want_mig):
        gpus, mig = got
        with self.subTest(scenario=scenario, output=output):
            self.assertEqual(sorted(gpus), sorted(want_gpus), f"{output} of {scenario}: GPUs named")
            for g, allowed in want_gpus.items():
                self.assertIn(gpus[g], allowed, f"{output} of {scenario}: GPU {g}'s state")
            if mig is not None and want_mig:
                self.assertEqual(mig, want_mig, f"{output} of {scenario}: MIG GPU instances")

    def ok(self, *args):
        p = run(*args)
        self.assertIn(p.returncode, (0,), f"gpulse {' '.join(args)}:\n{p.stderr}")
        return p.stdout

    def one_shot_outputs(self, args):
        """(output name, text, reader) of every command that prints once."""
        out = [("devices", self.ok("devices", *args), devices_text),
               ("devices --json", self.ok("devices", "--json", *args), devices_json)]
        for fmt, reader in (("table", dmon_table), ("csv", dmon_csv), ("json", dmon_json)):
            out.append((f"dmon {fmt}", self.ok("dmon", *args, "-c", "1", "-e", "FBUSD,POWER,XIDER", "--format", fmt),
                        reader))
        out.append(("ps", run("ps", *args).stdout, ps_table))
        out.append(("ps --json", run("ps", "--json", *args).stdout, ps_json))
        out.append(("exporter --once", self.ok("exporter", *args, "--once"), metrics))
        out.append(("top --once", self.ok("top", *args, "--once"), top_text))
        out.append(("top --once --json", self.ok("top", *args, "--once", "--json"), top_json))
        return out

    def test_every_output_of_every_scenario(self):
        for scenario, (args, want_gpus, want_mig) in SCENARIOS.items():
            for output, text, reader in self.one_shot_outputs(args):
                self.check(scenario, output, reader(text), want_gpus, want_mig)
                if output in ("devices", "dmon table", "ps", "top --once"):  # GPU order, skipped in place
                    head = text.split("\n\n")[0] if output == "ps" else text
                    pattern = r"^\s*(\d+)\s" if output == "ps" else r"^GPU (\d+)\b"
                    order = [int(g) for g in re.findall(pattern, head, re.M)]
                    self.assertEqual(order, sorted(order), f"{output} of {scenario} lists GPUs out of order")
            self.check_record(scenario, args, want_gpus, want_mig)
            self.check_servers(scenario, args, want_gpus, want_mig)

    def check_record(self, scenario, args, want_gpus, want_mig):
        out = os.path.join(self.tmp, re.sub(r"\W", "-", scenario))
        p = run("record", *args, "-i", "100", "-o", out, "--", "sleep", "0.3")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.check(scenario, "record run.json", entities_json(doc["entities"]), want_gpus, want_mig)
        with open(os.path.join(out, "report.txt"), encoding="utf-8") as f:
            text = f.read()
        named = {int(g) for g in re.findall(r"\bGPU (\d+)\b", text)}
        self.check(scenario, "record report.txt",
                   ({g: (S if re.search(rf"GPU {g}\b[^\n]*skipped", text) else
                         L if re.search(rf"GPU {g}\b[^\n]*lost", text) else P) for g in named}, None),
                   want_gpus, want_mig)
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            html = f.read()
        gpus = {int(g): P for g in re.findall(r'class="plot-group device" data-device="(\d+)"', html)}
        gpus.update({int(g): st for g, st in re.findall(r'class="unsampled" data-device="(\d+)" data-state="(\w+)"', html)})
        self.check(scenario, "record report.html (plots)", (gpus, None), want_gpus, want_mig)
        rows = {int(g) for g in re.findall(r"<tr(?: class=\"unsampled\")?><td>(\d+)</td>", html)}
        self.assertEqual(sorted(rows), sorted(want_gpus), f"report.html summary of {scenario}")

    def check_servers(self, scenario, args, want_gpus, want_mig):
        with Exporter(*args) as e:
            self.check(scenario, "exporter /metrics", metrics(e.get("/metrics")[2].decode()), want_gpus, want_mig)
            status, _, body = e.get("/api/v1/devices")
            self.assertEqual(status, 200)
            doc = json.loads(body)
            validate(doc, "exporter-devices.schema.json")
            self.check(scenario, "exporter /api/v1/devices", entities_json(doc["entities"]), want_gpus, want_mig)
        d = tempfile.mkdtemp(prefix="agent-", dir=self.tmp)
        agent = Agent(d, scenario=args[1], args=args[2:])
        try:
            group = agent.api("GET", "/api/v1/groups/0", schema="agent-group.schema.json")
            gpus = {}
            for ent in group["entities"]:
                m = re.fullmatch(r"GPU (\d+)", ent["label"])
                if m:
                    gpus[int(m.group(1))] = {"ok": P, "present": P}.get(ent["state"], ent["state"])
            self.check(scenario, "agent /api/v1/groups/0", (gpus, None), want_gpus, want_mig)
            self.check(scenario, "agent /metrics", metrics(agent.get("/metrics").text), want_gpus, want_mig)
        finally:
            agent.close()


if __name__ == "__main__":
    unittest.main()
