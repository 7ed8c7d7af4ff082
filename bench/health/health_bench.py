"""bench/run.sh health (bench/health/run.sh): health and policy on the agent, as the table "Health and
policy" of bench/RESULTS.md (bench/results.py). Standard library only.

1. Latency, --rounds rounds (default 3), each with fresh processes: an agent on the real clock with a
   scenario whose GPUs raise XID 48 at 24 known simulated times (spread over the tick phase), a
   policy `-x` at 1 Hz, a `gpulse policy --reg --json` listener and a real Alertmanager. For each
   violation: condition -> listener (the listener's receive time) and condition -> Alertmanager (the
   alert's updatedAt, when the Alertmanager took it). The simulator starts its clock at the agent's
   nvmlInit, which happens between the agent's launch and its socket appearing: the condition's wall
   time is bracketed by launch + t and ready + t, so each latency is given as an upper bound (from
   the launch) and a lower bound (from the socket).
   Anchor, in the same round: a real Prometheus scraping the same agent every second and evaluating
   deploy/prometheus/gpulse-alerts.yml every second (GpuXidError), sending to the same
   Alertmanager: condition -> Alertmanager through the Prometheus path, per GPU's first XID.
2. CPU: two agents on 8xH100 on the real clock, side by side for --seconds split into --rounds
   windows: one with a health watch of every subsystem and a policy of every condition on all 8
   GPUs at 1 Hz, one without; CPU time of each over the same windows (threads' schedstat, to the ns).
Values: per round (latency) or window (CPU), medians with the min–max; the ratios pair round k of
the agent's path with round k of Prometheus's. Time: about 2.5 minutes (each latency round about
20 s, the CPU --seconds, default 60). Usage: health_bench.py --gpulse BIN --work DIR [--seconds S]
[--rounds N] [--json FILE]
"""
import argparse
import datetime
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from proccpu import cpu_between, cpu_ns  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "prometheus",
                     "gpulse-alerts.yml")

XID_TIMES = [3.0 + 0.37 * k for k in range(24)]  # 3.00 .. 11.51 s, phases all over the second


def scenario(path):
    devices = "\n".join('  - {pci_bus_id: "00000000:%02X:00.0"}' % (0x18 + i) for i in range(8))
    faults = "\n".join("  - {at: %.2f, device: %d, kind: xid, xid: 48}" % (t, k % 8)
                       for k, t in enumerate(XID_TIMES))
    with open(path, "w") as f:
        f.write("name: xid-train\n"
                "device_defaults: {name: \"NVIDIA H100 80GB HBM3\", memory_total_mib: 81559, power_limit_w: 700,\n"
                "                  load: [{t: 0, util: 50, power_w: 300}]}\n"
                "devices:\n" + devices + "\nfaults:\n" + faults + "\n")
    return path


def start_agent(gpulse, work, name, scen, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    log = open(os.path.join(d, "agent.log"), "w")
    env = {k: v for k, v in os.environ.items() if k != "GPULSE_SIM_CLOCK"}
    launched = time.time()
    proc = subprocess.Popen([gpulse, "agent", "--simulate", scen, "--state-dir", os.path.join(d, "state"),
                             "--socket", os.path.join(d, "sock"), "-a", "127.0.0.1:0", *extra],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    sock = os.path.join(d, "sock")
    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("agent %s did not start: %s" % (name, open(log.name).read()))
        time.sleep(0.001)
    return proc, "unix://" + sock, (launched, time.time())


def cli(gpulse, host, *args):
    p = subprocess.run([gpulse, *args[:1], "--host", host, *args[1:]], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise SystemExit("gpulse %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def start_alertmanager(work, name="am"):
    d = os.path.join(work, name)
    os.makedirs(d)
    with open(os.path.join(d, "am.yml"), "w") as f:
        f.write("route:\n  receiver: nobody\n  group_wait: 1h\nreceivers:\n  - name: nobody\n")
    log = open(os.path.join(d, "am.log"), "w")
    proc = subprocess.Popen(["/usr/bin/prometheus-alertmanager", "--config.file", os.path.join(d, "am.yml"),
                             "--storage.path", os.path.join(d, "data"), "--web.listen-address", "127.0.0.1:0",
                             "--cluster.listen-address", ""], stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"address=127\.0\.0\.1:(\d+)", open(log.name).read())
        if m:
            return proc, int(m.group(1))
        time.sleep(0.05)
    raise SystemExit("alertmanager did not start")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_port(work, name):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = re.search(r"on http://127\.0\.0\.1:(\d+)/metrics", open(os.path.join(work, name, "agent.log")).read())
        if m:
            return int(m.group(1))
        time.sleep(0.01)
    raise SystemExit("agent did not say its address")


def start_prometheus(work, target_port, am_port, name="prom"):
    d = os.path.join(work, name)
    os.makedirs(d)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "rule_files: ['%s']\n"
                "alerting: {alertmanagers: [{static_configs: [{targets: ['127.0.0.1:%d']}]}]}\n"
                "scrape_configs: [{job_name: gpulse, static_configs: [{targets: ['127.0.0.1:%d']}]}]\n"
                % (os.path.abspath(RULES), am_port, target_port))
    port = free_port()
    log = open(os.path.join(d, "prom.log"), "w")
    proc = subprocess.Popen(["/usr/bin/prometheus", "--config.file", os.path.join(d, "prometheus.yml"),
                             "--storage.tsdb.path", os.path.join(d, "data"),
                             "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=log)
    return proc


def am_alerts(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/api/v2/alerts")
        return json.loads(c.getresponse().read())
    finally:
        c.close()


def parse_time(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def summary(xs):
    xs = sorted(xs)
    return {"n": len(xs), "p50_ms": round(statistics.median(xs) * 1000, 1),
            "p99_ms": round(xs[min(len(xs) - 1, int(0.99 * len(xs)))] * 1000, 1),
            "max_ms": round(xs[-1] * 1000, 1), "min_ms": round(xs[0] * 1000, 1)}


def latency(gpulse, work, r=0):
    am, port = start_alertmanager(work, "am%d" % r)
    scen = scenario(os.path.join(work, "xid-train.yaml"))
    agent, host, (launched, ready) = start_agent(gpulse, work, "latency%d" % r, scen,
                                                 ("--alertmanager", "http://127.0.0.1:%d" % port))
    prom = start_prometheus(work, agent_port(work, "latency%d" % r), port, "prom%d" % r)
    try:
        cli(gpulse, host, "policy", "-g", "0", "--set", "0,0", "-x")
        listener = subprocess.Popen(["timeout", "60", gpulse, "policy", "--host", host, "-g", "0", "--reg", "--json",
                                     "--count", str(len(XID_TIMES))], stdout=subprocess.PIPE, text=True)
        received = []
        for line in listener.stdout:
            received.append((time.time(), json.loads(line)))
        listener.wait(timeout=60)
        deadline = time.monotonic() + 30
        alerts = []
        while time.monotonic() < deadline:
            alerts = am_alerts(port)
            # one alert per GPU from each path (the labels are the same for a GPU's repeats)
            if len(alerts) >= 16:
                break
            time.sleep(0.2)
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        agent.terminate()
        agent.wait(timeout=30)
        am.terminate()
        am.wait(timeout=30)
    to_listener = [recv - (launched + XID_TIMES[v["seq"] - 1]) for recv, v in received]
    to_listener_low = [recv - (ready + XID_TIMES[v["seq"] - 1]) for recv, v in received]
    tick_to_listener = [recv - v["t_unix_ms"] / 1000 for recv, v in received]
    # The Alertmanager keeps one alert per label set: its updatedAt is when it took the newest one
    # of each GPU, i.e. that GPU's last violation.
    last_per_gpu, first_per_gpu = {}, {}
    for k, t in enumerate(XID_TIMES):
        last_per_gpu[k % 8] = t
        first_per_gpu.setdefault(k % 8, t)
    ours = [a for a in alerts if a["labels"].get("alertname") == "GpulsePolicyViolation"]
    theirs = [a for a in alerts if a["labels"].get("alertname") == "GpuXidError"]
    to_am = [parse_time(a["updatedAt"]) - (launched + last_per_gpu[int(a["labels"]["gpu"])]) for a in ours]
    to_am_low = [parse_time(a["updatedAt"]) - (ready + last_per_gpu[int(a["labels"]["gpu"])]) for a in ours]
    # Prometheus' alert for a GPU starts at its first XID and is not updated by the repeats.
    prom_am = [parse_time(a["startsAt"]) - (launched + first_per_gpu[int(a["labels"]["gpu"])]) for a in theirs]
    prom_am_recv = [parse_time(a["updatedAt"]) - (launched + first_per_gpu[int(a["labels"]["gpu"])])
                    for a in theirs]
    return {"violations": len(received), "startup_ms": round((ready - launched) * 1000, 1),
            "condition_to_listener_upper": summary(to_listener),
            "condition_to_listener_lower": summary(to_listener_low),
            "tick_to_listener": summary(tick_to_listener),
            "condition_to_alertmanager_upper": summary(to_am),
            "condition_to_alertmanager_lower": summary(to_am_low),
            "anchor_prometheus_condition_to_firing_upper": summary(prom_am) if prom_am else None,
            "anchor_prometheus_condition_to_alertmanager_upper": summary(prom_am_recv) if prom_am_recv else None}


def cpu(gpulse, work, seconds, windows):
    watched, host_w, _ = start_agent(gpulse, work, "watched", "8xH100")
    plain, host_p, _ = start_agent(gpulse, work, "plain", "8xH100")
    out = []
    try:
        cli(gpulse, host_w, "health", "-g", "0", "--set", "a", "-u", "1000")
        cli(gpulse, host_w, "policy", "-g", "0", "--set", "0,0", "-T", "95", "-P", "690", "-M", "60",
            "-e", "-p", "-n", "-x", "-u", "1000")
        time.sleep(5)  # warm: both agents past their first reads
        a, b, t = cpu_ns(watched.pid), cpu_ns(plain.pid), time.monotonic()
        for _ in range(windows):
            time.sleep(seconds / windows)
            a1, b1, t1 = cpu_ns(watched.pid), cpu_ns(plain.pid), time.monotonic()
            w, p = 100 * cpu_between(a, a1) / (t1 - t), 100 * cpu_between(b, b1) / (t1 - t)
            out.append({"seconds": round(t1 - t, 2), "watched_pct_of_core": w, "plain_pct_of_core": p,
                        "added_pct_of_core": w - p})
            a, b, t = a1, b1, t1
        check = json.loads(cli(gpulse, host_w, "health", "-g", "0", "--check", "--json"))
    finally:
        for p in (watched, plain):
            p.terminate()
            p.wait(timeout=30)
    return {"windows": out, "gpus_checked": len(check["gpus"])}


def command():
    """bench/run.sh's line, or bench/health/run.sh's with the options given to it."""
    argv, extra = sys.argv[1:], []
    while argv:
        x = argv.pop(0)
        if x in ("--gpulse", "--work", "--json"):
            argv = argv[1:]
        elif not x.startswith(("--gpulse=", "--work=", "--json=")):
            extra.append(x)
    return " ".join(["bash bench/health/run.sh BUILD", *extra]) if extra else "bash bench/run.sh health"


def table(result, a):
    lat, c = result["latency"], result["cpu"]
    t = Table("Health and policy on the agent (issue 17)", command(),
              f"{len(lat)} rounds, each with a fresh agent (XID 48 raised {len(XID_TIMES)} times on 8 GPUs of a "
              "simulated scenario, a policy `-x` at 1 Hz), listener, Alertmanager and Prometheus; latencies are upper "
              "bounds (from the agent's launch: the simulator's clock starts between launch and socket), the lower "
              f"bounds from the socket. CPU: {a.seconds:g} s in {len(c['windows'])} windows. Medians with the min–max "
              "of the rounds or windows; ratios per round.")
    ms = lambda v: spread(v, "{:,.1f}")
    get = lambda key, f: [r[key][f] for r in lat if r.get(key)]
    p50, mx = get("condition_to_listener_upper", "p50_ms"), get("condition_to_listener_upper", "max_ms")
    lo50, lomx = get("condition_to_listener_lower", "p50_ms"), get("condition_to_listener_lower", "max_ms")
    t.row(f"condition (XID 48, {len(XID_TIMES)} times) to a `gpulse policy --reg` listener, p50 / p99 = max, upper "
          f"bound (lower bound {statistics.median(lo50):,.1f} / {statistics.median(lomx):,.1f} ms)",
          f"{ms(p50)} / {ms(mx)} ms", "", "", "", judge(mx, "<", 1000, "within one watch interval (1 s)"))
    a50, amx = get("condition_to_alertmanager_upper", "p50_ms"), get("condition_to_alertmanager_upper", "max_ms")
    pr = [r for r in lat if r.get("anchor_prometheus_condition_to_alertmanager_upper")]
    q50 = [r["anchor_prometheus_condition_to_alertmanager_upper"]["p50_ms"] for r in pr]
    qmx = [r["anchor_prometheus_condition_to_alertmanager_upper"]["max_ms"] for r in pr]
    ours_pr = [r["condition_to_alertmanager_upper"] for r in pr]
    n_alerts = statistics.median(r["condition_to_alertmanager_upper"]["n"] for r in lat)
    t.row(f"condition to the Alertmanager, from the agent, p50 / p99 = max ({n_alerts:.0f} alerts), upper bound",
          f"{ms(a50)} / {ms(amx)} ms", "Prometheus scraping every 1 s and evaluating `GpuXidError` every 1 s",
          f"{ms(q50)} / {ms(qmx)} ms",
          f"{ratio([o['p50_ms'] / q for o, q in zip(ours_pr, q50)])} / {ratio([o['max_ms'] / q for o, q in zip(ours_pr, qmx)])}",
          judge(amx, "<", 2000, "under 2 s"))
    w = c["windows"]
    watched, plain, added = ([x[k] for x in w] for k in ("watched_pct_of_core", "plain_pct_of_core", "added_pct_of_core"))
    t.row(f"agent CPU, health (all subsystems) and policy (all conditions) at 1 Hz on {c['gpus_checked']} GPUs",
          f"{spread(watched, '{:.3f}', ' %')} of a core (added: {spread(added, '{:+.3f}', ' %')})",
          "the same agent without them", spread(plain, "{:.3f}", " %"), "", judge(watched, "<", 1, "< 1 %"))
    t.print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpulse", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write every figure here")
    a = ap.parse_args()
    a.rounds = max(a.rounds, 3)
    result = {"latency": [latency(a.gpulse, a.work, r) for r in range(a.rounds)],
              "cpu": cpu(a.gpulse, a.work, a.seconds, a.rounds)}
    table(result, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
