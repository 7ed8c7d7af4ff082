"""deploy/prometheus's alerting and recording rules against what gpulse really exports (issue 40).

- Every rule selects only series that a real gpulse exports with its default counters
  (deploy/default-counters.csv): the metric names each rule's expression selects are read from the
  rule files (PyYAML and a small PromQL tokenizer) and looked up in real expositions. Groups that need
  more than the exporter's defaults say so in their name and in the rule file's header (pod usage:
  `gpulse exporter -k`; health: `gpulse agent` with a health watch), and only they may select those
  families; groups that claim dcgm-exporter compatibility select dcgm-exporter's families only.
- Every alert of gpulse-alerts.yml fires, on the right GPU and only there, on series scraped from a
  real `gpulse agent` (the exporter with health watches) walking the health-trips scenario on its
  simulated clock: the scrapes become promtool's input series, and the expectations are the
  scenario's trips, written out below.
- prometheus.yml loads both rule files; promtool checks them and runs their unit tests.

Run with Debian's /usr/bin/python3 (PyYAML, grpcio and protoc for the fake kubelet)."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import yaml

from agent_e2e import Agent
from exporter_e2e import Exporter
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, scenario_variant

PROM_DIR = os.path.join(SOURCE_DIR, "deploy", "prometheus")
RULE_FILES = ["gpulse-rules.yml", "gpulse-alerts.yml"]
COUNTERS = os.path.join(SOURCE_DIR, "deploy", "default-counters.csv")

# What a group needs beyond `gpulse exporter` with the default counters (each rule file's header
# and docs/exporter.md say the same). Every other group may select only the exporter's families.
GROUP_NEEDS = {
    "gpulse-pod": "kubernetes",         # pod labels: gpulse -k (or dcgm-exporter's Kubernetes mode)
    "gpulse-pod-usage": "kubernetes",   # gpulse's per-pod families: gpulse exporter -k
    "gpulse-agent-health-alerts": "agent",  # gpulse_health: gpulse agent with a health watch
}
# Groups whose rules work on dcgm-exporter's series as well: DCGM_FI_* families only (and the
# series recorded by such groups).
DCGM_COMPATIBLE = {"gpulse-gpu", "gpulse-cluster", "gpulse-node", "gpulse-pod", "gpulse-gpu-alerts"}

# ---- PromQL: the metric names an expression selects -------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:[a-zA-Z]+\d*)*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@:])
""", re.X)
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
_LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}  # followed by (labels)
_AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}


def _tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot read PromQL at {expr[pos:pos + 20]!r} in {expr!r}")
        if m.lastgroup not in ("ws", "comment"):
            out.append((m.lastgroup, m.group()))
        pos = m.end()
    return out


def _closing(tokens, i, open_, close):
    """Index of the token that closes the bracket at tokens[i]."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] == ("op", open_):
            depth += 1
        elif tokens[j] == ("op", close):
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced {open_!r}")


def selected_metrics(expr):
    """The metric names `expr` selects, in order of first appearance: identifiers that are not
    functions, aggregators, keywords, label names (inside {} or a by/without/on/ignoring/group_*
    list) or durations. A selector without a metric name, or one matching __name__, is refused:
    a rule must name the families it needs."""
    tokens = _tokens(expr)
    names = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if (kind, text) == ("op", "{"):
            end = _closing(tokens, i, "{", "}")
            if any(t == ("ident", "__name__") for t in tokens[i:end]):
                raise ValueError(f"selects by __name__: {expr!r}")
            prev = tokens[i - 1] if i else None
            if prev is None or prev[0] != "ident":
                raise ValueError(f"a selector without a metric name: {expr!r}")
            i = end + 1
            continue
        if (kind, text) == ("op", "["):
            i = _closing(tokens, i, "[", "]") + 1
            continue
        if kind == "ident":
            low = text.lower()
            if low in _LABEL_LISTS:
                i = _closing(tokens, i + 1, "(", ")") + 1 if nxt == ("op", "(") else i + 1
                continue
            if low in _KEYWORDS or low in _AGGREGATORS or nxt == ("op", "("):
                i += 1
                continue
            if text not in names:
                names.append(text)
        i += 1
    return names


def rule_groups(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)["groups"]


def recorded_names(paths):
    """{recorded series name: its group} over the rule files."""
    out = {}
    for path in paths:
        for group in rule_groups(path):
            for rule in group["rules"]:
                if "record" in rule:
                    out[rule["record"]] = group["name"]
    return out


def problems(paths, exported):
    """Each rule's selections that no export in `exported` has: `exported` maps "exporter",
    "kubernetes" and "agent" to the sets of series names those real runs exported."""
    recorded = recorded_names(paths)
    out = []
    for path in paths:
        for group in rule_groups(path):
            gname = group["name"]
            allowed = set(exported["exporter"])
            if gname in GROUP_NEEDS:
                allowed |= exported[GROUP_NEEDS[gname]]
            for rule in group["rules"]:
                rname = rule.get("record") or rule.get("alert")
                where = f"{os.path.basename(path)}: group {gname}, rule {rname}"
                try:
                    names = selected_metrics(str(rule["expr"]))
                except ValueError as e:
                    out.append(f"{where}: {e}")
                    continue
                for name in names:
                    if name in recorded:
                        if gname in DCGM_COMPATIBLE and recorded[name] not in DCGM_COMPATIBLE:
                            out.append(f"{where} claims dcgm-exporter compatibility but selects {name}, "
                                       f"recorded by group {recorded[name]}, which does not")
                        continue
                    if name not in allowed:
                        need = GROUP_NEEDS.get(gname, "exporter")
                        out.append(f"{where} selects {name}, which gpulse ({need}, default counters) "
                                   f"does not export")
                    elif gname in DCGM_COMPATIBLE and not name.startswith("DCGM_FI_"):
                        out.append(f"{where} claims dcgm-exporter compatibility but selects gpulse's {name}")
    return out


# ---- real expositions ------------------------------------------------------------------------

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_samples(text):
    """[(series name, {label: value}, value)] of a text exposition, names exactly as exposed
    (python3-prometheus-client's parser would add _total to counters' sample names)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise AssertionError("not an exposition line: " + line)
        labels, body, pos = {}, m.group(2) or "", 0
        while pos < len(body):
            lm = _LABEL.match(body, pos)
            if not lm:
                raise AssertionError("unreadable labels: " + line)
            labels[lm.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), lm.group(2))
            pos = lm.end()
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def names_of(text):
    return {name for name, _, _ in parse_samples(text)}


def once(scenario, *args, clock="80"):
    """`gpulse exporter --simulate SCENARIO --once -f deploy/default-counters.csv` at simulated time
    `clock` (health-trips: every trip has happened by 80 s)."""
    env = {"GPULSE_SIM_CLOCK": clock}
    p = run("exporter", "--simulate", scenario, "--once", "-f", COUNTERS, "--hostname", "node-x", *args, env=env)
    if p.returncode != 0:
        raise AssertionError(f"gpulse exporter --once failed: {p.stderr}")
    return p.stdout


def live_xid_exposition():
    """A running exporter on `faults` (XID 94 at 1.0 s, GPU 3 lost at 1.5 s, real time): the
    families that appear only once something happens (gpulse_xid_errors_total, the last XID)."""
    with Exporter("--simulate", "faults", "-f", COUNTERS, "--min-refresh-ms", "0") as e:
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            text = e.get("/metrics")[2].decode()
            names = names_of(text)
            if "gpulse_xid_errors_total" in names and "DCGM_FI_DEV_XID_ERRORS" in names:
                return text
            time.sleep(0.1)
        raise AssertionError("no XID in 30 s on faults:\n" + text)


def kubernetes_exposition():
    """`gpulse exporter -k --once` on k8s-8xH100 against the fake kubelet (its pods hold GPUs 0-6)."""
    from fake_kubelet import FakeKubelet
    from test_exporter_kubernetes import PROCFS, gpu_uuids, node_pods
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "kubelet.sock")
        with FakeKubelet(sock, node_pods(gpu_uuids("k8s-8xH100"))):
            return once("k8s-8xH100", "--procfs-root", PROCFS, "-k", "--pod-resources-kubelet-socket", sock,
                        clock="5")


# health-trips, with GPU 2 carrying 62 pages retired for single-bit errors from the start, so that
# its double-bit page at 20 s reaches dcgm's 63-page limit (the GpuRetiredPagesLimit alert).
def trips_scenario(directory):
    return scenario_variant(directory, "health-trips", "  - {}\n  - {}\n  - {}\n  - {}\n  - max_temp_c: 90",
                            "  - {}\n  - {}\n  - {counters: {retired_pages_sbe: 62}}\n  - {}\n  - max_temp_c: 90",
                            "health-trips-limit")


STEP_S = 15
STEPS = 31  # scrapes at 0, 15, ..., 450 s


def agent_scrapes(directory):
    """/metrics of a `gpulse agent` on trips_scenario with a health watch on every subsystem of every
    GPU, scraped every STEP_S simulated seconds (the agent's clock is advanced between scrapes)."""
    os.makedirs(directory, exist_ok=True)
    a = Agent(directory, scenario=trips_scenario(directory), args=("--hostname", "node-h"))
    try:
        p = a.cli("health", "-g", "0", "--set", "a")
        if p.returncode != 0:
            raise AssertionError("gpulse health --set: " + p.stderr)
        scrapes = []
        for _ in range(STEPS):
            r = a.tcp_request("GET", "/metrics")
            if r.status != 200:
                raise AssertionError(f"/metrics answered {r.status}")
            scrapes.append(r.text)
            a.advance(STEP_S)
        return scrapes
    finally:
        a.close()


# ---- promtool --------------------------------------------------------------------------------

def promtool(*args, cwd=None):
    return subprocess.run(["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def series_selector(name, labels):
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return name + "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def input_series(scrapes, wanted):
    """promtool's input_series from real scrapes: one entry per series of a `wanted` family, its
    value at each step ('_' before it appears, 'stale' when it goes as a scrape would mark it)."""
    order, values = [], {}
    for step, text in enumerate(scrapes):
        for name, labels, value in parse_samples(text):
            if name not in wanted:
                continue
            key = series_selector(name, labels)
            if key not in values:
                order.append(key)
                values[key] = {}
            values[key][step] = value
    out = []
    for key in order:
        vals, seen = [], False
        for step in range(len(scrapes)):
            if step in values[key]:
                vals.append(repr(values[key][step]))
                seen = True
            elif seen and vals and vals[-1] not in ("_", "stale"):
                vals.append("stale")
            else:
                vals.append("_")
        out.append({"series": key, "values": " ".join(vals)})
    return out


def render(template, labels, value):
    """The {{ $labels.X }} and {{ $value }} of an annotation, as Prometheus renders these simple ones."""
    text = re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    return re.sub(r"\{\{\s*\$value\s*\}\}", "%g" % value, text)


class PromqlTokenizerTest(unittest.TestCase):
    def test_names_functions_labels_and_durations_apart(self):
        cases = {
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0": ["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"],
            "DCGM_FI_DEV_RETIRED_SBE + DCGM_FI_DEV_RETIRED_DBE >= 63": ["DCGM_FI_DEV_RETIRED_SBE",
                                                                         "DCGM_FI_DEV_RETIRED_DBE"],
            "(gpulse_xid_errors_total unless gpulse_xid_errors_total offset 5m)"
            " or increase(gpulse_xid_errors_total[5m]) > 0": ["gpulse_xid_errors_total"],
            'count by (modelName) (gpulse_device_info{GPU_I_ID=""})': ["gpulse_device_info"],
            'sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{pod!=""}) / on (namespace) group_left(team) kube_info':
                ["DCGM_FI_DEV_FB_USED", "kube_info"],
            "sum without (gpu) (rate(a_total[1h:5m] @ start())) / ignoring(x) b": ["a_total", "b"],
            "cluster:gpu_count:sum * 2 + count_values(\"v\", c) > bool 1e3": ["cluster:gpu_count:sum", "c"],
            "max(x) by (Hostname) or vector(0) and on() y": ["x", "y"],
        }
        for expr, want in cases.items():
            with self.subTest(expr=expr):
                self.assertEqual(selected_metrics(expr), want)

    def test_selectors_without_a_name_are_refused(self):
        for expr in ('{__name__=~"DCGM_FI_.*"}', 'count({job="gpu"})', 'sum({__name__="x"})'):
            with self.subTest(expr=expr), self.assertRaises(ValueError):
                selected_metrics(expr)


class RulesSelectExportedSeriesTest(GpulseTestCase):
    """Each rule selects only what gpulse really exports: the default counters on health-trips after
    every trip (ECC, retired pages, NVLink errors), plus what appears on events (XIDs, on `faults`),
    plus -k's per-pod families and the agent's gpulse_health for the groups that say they need them."""

    @classmethod
    def setUpClass(cls):
        exporter = names_of(once("health-trips")) | names_of(live_xid_exposition())
        with tempfile.TemporaryDirectory() as d:
            agent = names_of(agent_scrapes(d)[-1])
        cls.exported = {"exporter": exporter, "kubernetes": names_of(kubernetes_exposition()), "agent": agent}
        cls.paths = [os.path.join(PROM_DIR, f) for f in RULE_FILES]

    def test_every_rule_selects_only_exported_series(self):
        self.assertEqual(problems(self.paths, self.exported), [])

    def test_the_default_counters_export_what_the_alerts_select(self):
        for name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_RETIRED_PENDING", "DCGM_FI_DEV_RETIRED_SBE",
                     "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                     "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                     "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"):
            self.assertIn(name, self.exported["exporter"])
        self.assertIn("gpulse_pod_gpu_memory_used_bytes", self.exported["kubernetes"])
        self.assertNotIn("gpulse_pod_gpu_memory_used_bytes", self.exported["exporter"])
        self.assertIn("gpulse_health", self.exported["agent"])
        self.assertNotIn("gpulse_health", self.exported["exporter"])

    def test_a_rule_selecting_an_unexported_family_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yml")
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump({"groups": [
                    {"name": "gpulse-gpu-alerts", "rules": [
                        {"alert": "GpuSingleBitEcc", "expr": "increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[5m]) > 0"},
                        {"alert": "GpuHealth", "expr": "gpulse_health == 20"},
                        {"alert": "GpuInfo", "expr": 'count(gpulse_device_info{GPU_I_ID=""}) < 8'}]},
                    {"name": "gpulse-cluster", "rules": [
                        {"record": "cluster:pod_memory:sum", "expr": "sum(pod:gpu_memory_used_bytes:sum)"}]},
                    {"name": "gpulse-pod-usage", "rules": [
                        {"record": "pod:gpu_memory_used_bytes:sum", "expr": "sum(gpulse_pod_gpu_memory_used_bytes)"}]},
                ]}, f)
            got = problems([path], self.exported)
        self.assertEqual(got, [
            "bad.yml: group gpulse-gpu-alerts, rule GpuSingleBitEcc selects DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, "
            "which gpulse (exporter, default counters) does not export",
            "bad.yml: group gpulse-gpu-alerts, rule GpuHealth selects gpulse_health, which gpulse (exporter, "
            "default counters) does not export",
            "bad.yml: group gpulse-gpu-alerts, rule GpuInfo claims dcgm-exporter compatibility but selects "
            "gpulse's gpulse_device_info",
            "bad.yml: group gpulse-cluster, rule cluster:pod_memory:sum claims dcgm-exporter compatibility but "
            "selects pod:gpu_memory_used_bytes:sum, recorded by group gpulse-pod-usage, which does not",
        ])

    def test_every_group_is_described_in_its_file_and_the_docs(self):
        with open(os.path.join(SOURCE_DIR, "docs", "exporter.md"), encoding="utf-8") as f:
            docs = f.read()
        for path in self.paths:
            with open(path, encoding="utf-8") as f:
                header = "".join(l for l in f if l.startswith("#"))
            for group in rule_groups(path):
                with self.subTest(group=group["name"]):
                    self.assertRegex(header, r"(?<![\w-])" + re.escape(group["name"]) + r"(?![\w-])")
                    self.assertTrue("`" + group["name"] + "`" in docs, "docs/exporter.md does not name it")


class AlertsFireOnRealScrapesTest(GpulseTestCase):
    """Each alert of gpulse-alerts.yml (and the exporter-health alerts of gpulse-rules.yml) fires on
    the GPU that trips its condition in health-trips, at the time it trips, and nowhere else, on a
    real agent's scrapes (promtool evaluates the rules over them)."""

    # (alert, evaluation time in s, [(source family, {labels that pick the series}, $value)]).
    # Scrapes every 15 s; health-trips: GPU 1 13 PCIe replays at 10 s; GPU 2 a double-bit ECC
    # error and a page retired for it (pending; with the 62 single-bit pages, 63) at 20 s; GPU 3
    # a corrupt InfoROM from 30 s (read once a minute: at 60 s); GPU 4 700 W from 40 s and 90 C from
    # 45 s; GPU 5 650 W from 50 s (not above 650); GPU 6 XID 48 at 60 s; GPU 7 NVLink errors at 70 s.
    EXPECTED = [
        ("GpuPcieReplays", 0, []),
        ("GpuPcieReplays", 30, [("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", {"gpu": "1"}, 13)]),
        ("GpuPcieReplays", 90, []),  # no replay within the last minute
        ("GpuDoubleBitEccError", 15, []),
        ("GpuDoubleBitEccError", 60, [("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {"gpu": "2"}, 1)]),
        ("GpuRetiredPagesPending", 15, []),
        ("GpuRetiredPagesPending", 60, [("DCGM_FI_DEV_RETIRED_PENDING", {"gpu": "2"}, 1)]),
        ("GpuRetiredPagesLimit", 15, []),  # 62 pages
        ("GpuRetiredPagesLimit", 60, [("DCGM_FI_DEV_RETIRED_SBE", {"gpu": "2"}, 63)]),
        ("GpuTemperatureHigh", 60, []),  # pending: 90 C for less than a minute
        ("GpuTemperatureHigh", 120, [("DCGM_FI_DEV_GPU_TEMP", {"gpu": "4"}, 90)]),
        ("GpuPowerHigh", 60, []),
        ("GpuPowerHigh", 120, [("DCGM_FI_DEV_POWER_USAGE", {"gpu": "4"}, 700)]),
        ("GpuNvlinkErrors", 60, []),
        ("GpuNvlinkErrors", 90, [("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", {"gpu": "7"}, 7)]),
        ("GpuXidError", 45, []),
        ("GpuXidError", 90, [("gpulse_xid_errors_total", {"gpu": "6", "xid": "48"}, 1)]),
        ("GpuHealthFailing", 15, []),
        ("GpuHealthFailing", 90, [("gpulse_health", {"gpu": "2", "subsystem": "memory"}, 20),
                                  ("gpulse_health", {"gpu": "6", "subsystem": "memory"}, 20)]),
        # Warnings that last 5 minutes: the InfoROM, and the thermal, power and NVLink watches,
        # which keep warning after their trips; GPU 1's PCIe warning lasted a minute.
        ("GpuHealthWarning", 330, []),
        ("GpuHealthWarning", 420, [("gpulse_health", {"gpu": "3", "subsystem": "inforom"}, 10),
                                   ("gpulse_health", {"gpu": "4", "subsystem": "thermal"}, 10),
                                   ("gpulse_health", {"gpu": "5", "subsystem": "power"}, 10),
                                   ("gpulse_health", {"gpu": "7", "subsystem": "nvlink"}, 10)]),
        ("GpulseGpuLost", 420, []),
        ("GpulseBackendDown", 420, []),
    ]

    def test_each_alert_fires_on_its_trip(self):
        paths = [os.path.join(PROM_DIR, f) for f in RULE_FILES]
        alerts = {r["alert"]: r for p in paths for g in rule_groups(p) for r in g["rules"] if "alert" in r}
        self.assertEqual(set(alerts), {a for a, _, _ in self.EXPECTED}, "every alert is expected somewhere")
        wanted = {n for p in paths for g in rule_groups(p) for r in g["rules"]
                  for n in selected_metrics(str(r["expr"]))}
        with tempfile.TemporaryDirectory() as d:
            scrapes = agent_scrapes(os.path.join(d, "agent"))
            for name in RULE_FILES:
                shutil.copy(os.path.join(PROM_DIR, name), d)
            tests = []
            for alert, at, firing in self.EXPECTED:
                rule = alerts[alert]
                exp = []
                for family, pick, value in firing:
                    step = at // STEP_S
                    found = [l for n, l, _ in parse_samples(scrapes[step])
                             if n == family and all(l.get(k) == v for k, v in pick.items())]
                    self.assertEqual(len(found), 1, f"{family} {pick} at {at} s")
                    labels = dict(found[0], **rule.get("labels", {}))
                    exp.append({"exp_labels": labels,
                                "exp_annotations": {k: render(v, labels, value)
                                                    for k, v in rule.get("annotations", {}).items()}})
                tests.append({"eval_time": f"{at}s", "alertname": alert, "exp_alerts": exp})
            suite = {"rule_files": RULE_FILES, "evaluation_interval": f"{STEP_S}s",
                     "tests": [{"interval": f"{STEP_S}s",
                                "input_series": input_series(scrapes, wanted),
                                "alert_rule_test": tests}]}
            with open(os.path.join(d, "real.test.yml"), "w", encoding="utf-8") as f:
                yaml.safe_dump(suite, f, sort_keys=False, width=1000)
            p = promtool("test", "rules", "real.test.yml", cwd=d)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)


class PromtoolTest(unittest.TestCase):
    def test_prometheus_yml_loads_every_rule_file(self):
        with open(os.path.join(PROM_DIR, "prometheus.yml"), encoding="utf-8") as f:
            config = yaml.safe_load(f)
        self.assertEqual(sorted(config["rule_files"]), sorted(RULE_FILES))
        p = promtool("check", "config", "prometheus.yml", cwd=PROM_DIR)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for name in RULE_FILES:
            self.assertIn("Checking " + name, p.stdout)

    def test_rules_unit_tests_pass(self):
        for name in ("gpulse-rules.test.yml", "gpulse-alerts.test.yml"):
            with self.subTest(name=name):
                p = promtool("test", "rules", name, cwd=PROM_DIR)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("SUCCESS", p.stdout)


if __name__ == "__main__":
    unittest.main()
