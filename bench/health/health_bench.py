"""The health/policy benchmark (bench/health/run.sh). Standard library only.

1. Latency: an agent on the real clock with a scenario whose GPUs raise XID 48 at 24 known simulated
   times (spread over the tick phase), a policy `-x` at 1 Hz, a `gpulse policy --reg --json`
   listener and a real Alertmanager. For each violation: condition -> listener (the listener's
   receive time) and condition -> Alertmanager (the alert's updatedAt, when the Alertmanager took
   it). The simulator starts its clock at the agent's nvmlInit, which happens between the agent's
   launch and its socket appearing: the condition's wall time is bracketed by launch + t and
   ready + t, so each latency is given as an upper bound (from the launch) and a lower bound (from
   the socket).
   Anchor, in the same run: a real Prometheus scraping the same agent every second and evaluating
   deploy/prometheus/gpulse-alerts.yml every second (GpuXidError), sending to the same
   Alertmanager: condition -> Alertmanager through the Prometheus path, per GPU's first XID.
2. CPU: two agents on 8xH100 on the real clock, side by side for --seconds: one with a health watch
   of every subsystem and a policy of every condition on all 8 GPUs at 1 Hz, one without; CPU time
   of each from /proc/PID/stat over the same window.
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
import time

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "prometheus",
                     "gpulse-alerts.yml")

TICKS = os.sysconf("SC_CLK_TCK")
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


def start_alertmanager(work):
    d = os.path.join(work, "am")
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


def start_prometheus(work, target_port, am_port):
    d = os.path.join(work, "prom")
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


def latency(gpulse, work):
    am, port = start_alertmanager(work)
    scen = scenario(os.path.join(work, "xid-train.yaml"))
    agent, host, (launched, ready) = start_agent(gpulse, work, "latency", scen,
                                                 ("--alertmanager", "http://127.0.0.1:%d" % port))
    prom = start_prometheus(work, agent_port(work, "latency"), port)
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


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu(gpulse, work, seconds):
    watched, host_w, _ = start_agent(gpulse, work, "watched", "8xH100")
    plain, host_p, _ = start_agent(gpulse, work, "plain", "8xH100")
    try:
        cli(gpulse, host_w, "health", "-g", "0", "--set", "a", "-u", "1000")
        cli(gpulse, host_w, "policy", "-g", "0", "--set", "0,0", "-T", "95", "-P", "690", "-M", "60",
            "-e", "-p", "-n", "-x", "-u", "1000")
        time.sleep(5)  # warm: both agents past their first reads
        a0, b0, w0 = cpu_ticks(watched.pid), cpu_ticks(plain.pid), time.monotonic()
        time.sleep(seconds)
        a1, b1, w1 = cpu_ticks(watched.pid), cpu_ticks(plain.pid), time.monotonic()
        check = json.loads(cli(gpulse, host_w, "health", "-g", "0", "--check", "--json"))
    finally:
        for p in (watched, plain):
            p.terminate()
            p.wait(timeout=30)
    wall = w1 - w0
    pct = lambda d: round(100.0 * d / TICKS / wall, 3)
    return {"seconds": round(wall, 1), "watched_pct_of_core": pct(a1 - a0), "plain_pct_of_core": pct(b1 - b0),
            "added_pct_of_core": round(pct(a1 - a0) - pct(b1 - b0), 3), "gpus_checked": len(check["gpus"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpulse", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    result = {"latency": latency(a.gpulse, a.work), "cpu": cpu(a.gpulse, a.work, a.seconds)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
