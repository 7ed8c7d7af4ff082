"""Collector benchmark: `gpulse collect` polling N simulated endpoints x 8 GPUs at a 1 s cadence, and,
side by side in the same run against the same endpoints, a real Prometheus server scraping them at
1 s. Reports CPU use (from /proc/PID/stat over the same measured interval), the collector's schedule
lag p50/p99/max and missed slots, and Prometheus's own scrape-interval quantiles.

Everything listens on 127.0.0.1 and every process is bounded in time. Run with Debian's
/usr/bin/python3; see bench/collector/run.sh.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def check_free(base, count):
    for port in range(base, base + count):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError as e:
                sys.exit(f"bench: port {port} is not free ({e}); pass another --base-port")


def start_endpoints(tmp, exposition, base, count, per_proc, lifetime, program=None, idle=False):
    """`program`: the C++ endpoint server (collector_endpoints); None: endpoints.py. `idle`: under
    SCHED_IDLE instead of nice 10."""
    procs, ready = [], []
    for first in range(0, count, per_proc):
        n = min(per_proc, count - first)
        rf = os.path.join(tmp, f"ready{first}")
        # At nice 10 (or SCHED_IDLE): the endpoints stand in for exporters on other machines, so they yield the two
        # cores to the contender measured (the collector or Prometheus alike) instead of diluting its
        # share with one runnable process per 256 ports.
        server = [program] if program else ["/usr/bin/python3", os.path.join(HERE, "endpoints.py")]
        policy = ["chrt", "--idle", "0"] if idle else ["nice", "-n", "10"]
        procs.append(subprocess.Popen([*policy, *server,
                                       exposition, str(base + first), str(n), rf, str(lifetime)]))
        ready.append(rf)
    deadline = time.monotonic() + 60
    while not all(os.path.exists(r) for r in ready):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            sys.exit("bench: endpoint servers did not start")
        time.sleep(0.1)
    return procs


def collector_config(base, count):
    lines = ["job_id: bench", "run_name: collector-bench", "telemetry:", "  enabled: true",
             "  collect_interval_ms: 1000", "  storage_subdir: power", "  required: false",
             "  startup_timeout_seconds: 60", "  request_timeout_seconds: 1",
             "  clock_sync_check: false",  # polling cost only; the probe runs once at start
             "  dcgm_exporter:",
             "    container_image: bench-endpoints", "    port: 9400", "    command: endpoints.py", "endpoints:"]
    for i in range(count):
        lines.append(f"  - {{hostname: node{i:04d}, address: 127.0.0.1, port: {base + i}}}")
    lines.append("workers:")
    for i in range(count):
        role, het = ("prefill", 0) if i < count // 2 else ("decode", 1)
        lines.append(f"  - {{hostname: node{i:04d}, gpus: [0,1,2,3,4,5,6,7], worker_role: {role}, "
                     f"worker_index: {i}, worker_process: 0, het_group: {het}}}")
    lines += ["benchmark:", "  type: sa-bench", "  concurrencies: [1]"]
    return "\n".join(lines) + "\n"


def peak_rss_mib(pid):
    """The process's peak resident set so far (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def measure(pid, others, warmup, seconds, perf_out=None):
    """CPU seconds of `pid` and of `others` between warmup and warmup + seconds after now, and the
    peak RSS of `pid` at the end. With `perf_out`, the whole machine's context switches and CPU-clock
    samples over the measured seconds go there (perf record, CLOCK_MONOTONIC times)."""
    time.sleep(warmup)
    perf = None
    if perf_out:
        perf = subprocess.Popen(["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-F", "4999",
                                 "-e", "cpu-clock", "-e", "sched:sched_switch", "-m", "1024", "-o", perf_out,
                                 "--", "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
    c0, o0, t0 = cpu_seconds(pid), sum(cpu_seconds(p) for p in others), time.monotonic()
    time.sleep(seconds)
    if perf and perf.wait(timeout=120) != 0:
        sys.exit(f"bench: perf record failed (root is needed): {perf.stderr.read().strip()}")
    c1, o1, t1 = cpu_seconds(pid), sum(cpu_seconds(p) for p in others), time.monotonic()
    return (c1 - c0) / (t1 - t0), (o1 - o0) / (t1 - t0), t1 - t0, peak_rss_mib(pid)


def read_timings(timings):
    """The scrape records of the package's scrape-timings.jsonl, per scrape cycle: each request's
    schedule lag and duration in ms, and the slot's time (unix seconds)."""
    lag, dur, slot = {}, {}, {}
    with open(timings) as f:
        for line in f:
            d = json.loads(line)
            if d.get("event", "scrape") != "scrape" or d.get("schedule_lag_seconds") is None:
                continue
            lag.setdefault(d["scrape_seq"], []).append(d["schedule_lag_seconds"] * 1000)
            slot[d["scrape_seq"]] = d["request_started_at_unix"] - d["schedule_lag_seconds"]
            if d.get("request_duration_seconds") is not None:
                dur.setdefault(d["scrape_seq"], []).append(d["request_duration_seconds"] * 1000)
    return lag, dur, slot


def p99(v):
    v = sorted(v)
    return round(v[int(len(v) * 0.99)], 1) if v else None


def per_cycle(lag, dur, slot):
    """Per scrape cycle: requests started, their schedule lag min/p50/p99 (the min: how late the
    slot's timer fired) and request duration p50/max, in ms (the figures behind a late cycle), and
    the slot's time (unix seconds)."""
    out = []
    for seq in sorted(lag):
        v, w = sorted(lag[seq]), sorted(dur.get(seq, [0]))
        out.append({"cycle": seq, "requests": len(v), "slot_unix": round(slot[seq], 6), "lag_min_ms": round(v[0], 1),
                    "lag_p50_ms": round(v[len(v) // 2], 1), "lag_p99_ms": p99(v),
                    "duration_p50_ms": round(w[len(w) // 2], 1), "duration_max_ms": round(w[-1], 1)})
    return out


def cycle_split(lag, late_ms=2.0):
    """What the run's lag p99 after the first cycle is made of: the cycles whose first request left
    more than `late_ms` after the slot (their timer fired late) apart from the others, the lag p99 of
    the requests of the on-time cycles alone, and the p99 of each request's lag less its cycle's
    earliest (how long a cycle's burst of writes takes, wherever it started)."""
    steady = [lag[s] for s in sorted(lag)[1:]]
    on_time = [v for v in steady if min(v) <= late_ms]
    return {"cycles": len(steady), "late_start_cycles": len(steady) - len(on_time),
            "on_time_cycles_lag_p99_ms": p99([x for v in on_time for x in v]),
            "burst_p99_ms": p99([x - min(v) for v in steady for x in v])}


def unix_minus_monotonic():
    """CLOCK_REALTIME - CLOCK_MONOTONIC now, in seconds (the tightest of a few reads)."""
    best = None
    for _ in range(5):
        a = time.monotonic()
        u = time.time()
        b = time.monotonic()
        if best is None or b - a < best[0]:
            best = (b - a, u - (a + b) / 2)
    return best[1]


def run_collector(args, tmp, servers):
    cfg = os.path.join(tmp, "collect.yaml")
    with open(cfg, "w") as f:
        f.write(collector_config(args.base_port, args.endpoints))
    logs = os.path.join(tmp, "collect-logs")
    p = subprocess.Popen([args.gpulse, "collect", "--config", cfg, "--log-dir", logs, "--duration",
                          str(args.warmup + args.seconds + 2)], stderr=subprocess.PIPE, text=True)
    # The anchor wakes 100 times a second over the whole run: the machine's own timer lag.
    anchor = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "timer_anchor.py"), "0.01",
                               str(args.warmup + args.seconds)], stdout=subprocess.PIPE, text=True)
    cpu, server_cpu, wall, rss = measure(p.pid, [s.pid for s in servers], args.warmup, args.seconds,
                                         args.perf_record)
    err = p.communicate(timeout=120)[1]
    timer = json.loads(anchor.communicate(timeout=60)[0])
    with open(os.path.join(logs, "power", "manifest.json")) as f:
        m = json.load(f)
    lag = re.search(r"schedule lag p50 ([\d.]+) ms p99 ([\d.]+) ms max ([\d.]+) ms", err)
    steady = re.search(r"after the first cycle p50 ([\d.]+) ms p99 ([\d.]+) ms max ([\d.]+) ms", err)
    if not lag or not steady:
        sys.exit("bench: no schedule lag in gpulse collect's summary:\n" + err)
    with open(os.path.join(logs, "power", "samples.csv")) as f:
        rows = sum(1 for _ in f) - 1
    return {"cpu_core_fraction": cpu, "endpoint_servers_cpu": server_cpu, "measured_s": wall, "peak_rss_mib": rss,
            "lag_p50_ms": float(lag[1]), "lag_p99_ms": float(lag[2]), "lag_max_ms": float(lag[3]),
            "steady_lag_p50_ms": float(steady[1]), "steady_lag_p99_ms": float(steady[2]),
            "steady_lag_max_ms": float(steady[3]), "timer_anchor": timer, "unix_minus_monotonic_s": unix_minus_monotonic(),
            "missed_slots": m["missed_sample_count"], "cycles": m["scrape_count"], "rows": rows,
            "max_scrape_duration_s": m["max_scrape_duration_seconds"], "summary": err.strip().splitlines()[-1],
            **(cycle_figures(os.path.join(logs, "power", "scrape-timings.jsonl")) if args.per_cycle else {})}


def cycle_figures(timings):
    lag, dur, slot = read_timings(timings)
    return {"per_cycle": per_cycle(lag, dur, slot), "cycle_split": cycle_split(lag)}


def prometheus_config(base, count, power_only):
    targets = ", ".join(f"'127.0.0.1:{base + i}'" for i in range(count))
    text = ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: bench\n    static_configs:\n      - targets: [{targets}]\n")
    if power_only:
        text += ("    metric_relabel_configs:\n      - source_labels: [__name__]\n"
                 "        regex: DCGM_FI_DEV_POWER_USAGE\n        action: keep\n")
    return text


def prom_metric(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + ("{" if labels else "")) and labels in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def run_prometheus(args, tmp, servers, power_only):
    name = "prom-power" if power_only else "prom-all"
    cfg = os.path.join(tmp, name + ".yml")
    with open(cfg, "w") as f:
        f.write(prometheus_config(args.base_port, args.endpoints, power_only))
    web = f"127.0.0.1:{args.prometheus_port}"
    p = subprocess.Popen([args.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/{name}-data",
                          f"--web.listen-address={web}", "--storage.tsdb.retention.time=1h"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cpu, server_cpu, wall, rss = measure(p.pid, [s.pid for s in servers], args.warmup, args.seconds)
        with urllib.request.urlopen(f"http://{web}/metrics", timeout=10) as r:
            text = r.read().decode()
        q = lambda quant: prom_metric(text, "prometheus_target_interval_length_seconds",
                                      f'interval="1s",quantile="{quant}"')
        with urllib.request.urlopen(f"http://{web}/api/v1/query?query=count(up%3D%3D1)", timeout=10) as r:
            up = json.load(r)["data"]["result"]
        return {"cpu_core_fraction": cpu, "endpoint_servers_cpu": server_cpu, "measured_s": wall,
                "peak_rss_mib": rss, "interval_p50_s": q("0.5"), "interval_p99_s": q("0.99"),
                "targets_up": int(float(up[0]["value"][1])) if up else 0,
                "samples_appended_total": prom_metric(text, "prometheus_tsdb_head_samples_appended_total")}
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpulse", default="build/bin/gpulse")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    ap.add_argument("--endpoints", type=int, default=1024)
    ap.add_argument("--per-process", type=int, default=256, help="ports served by one endpoint process")
    ap.add_argument("--base-port", type=int, default=20000)  # below the ephemeral range (32768-)
    ap.add_argument("--prometheus-port", type=int, default=19999)
    ap.add_argument("--endpoint-server", choices=("cpp", "python"), default="cpp",
                    help="cpp: BUILD/bin/collector_endpoints (bench/collector/endpoints.cc), one epoll loop per "
                         "process; python: endpoints.py (asyncio), the server of the runs before 2026-12-02")
    ap.add_argument("--per-cycle", action="store_true",
                    help="also give the collector's lag and request durations per cycle (scrape-timings.jsonl), and the "
                         "run's lag split into cycles whose timer fired late and the others (cycle_split)")
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--contenders", default="collector,prometheus_power_only,prometheus_all",
                    help="comma-separated subset, run in this order")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--endpoints-idle", action="store_true",
                    help="run the endpoint servers under SCHED_IDLE (they only use a CPU nothing else wants) "
                         "instead of nice 10")
    ap.add_argument("--perf-record", metavar="FILE",
                    help="record the machine's context switches and CPU-clock samples over the collector's measured "
                         "seconds into FILE (root; read with late_slots.py)")
    args = ap.parse_args()
    check_free(args.base_port, args.endpoints)
    tmp = tempfile.mkdtemp(prefix="gpulse-collector-bench-")
    servers = []
    try:
        expo = os.path.join(tmp, "exposition.txt")
        with open(expo, "w") as f:
            subprocess.run([args.gpulse, "exporter", "--simulate", "8xH100", "--once", "--hostname", "bench"],
                           stdout=f, check=True, timeout=60)
        contenders = args.contenders.split(",")
        phases = len(contenders)
        lifetime = phases * (args.warmup + args.seconds + 60) + 60
        program = None
        if args.endpoint_server == "cpp":
            program = os.path.join(os.path.dirname(args.gpulse), "collector_endpoints")
            if not os.access(program, os.X_OK):
                sys.exit(f"bench: no {program}: build it (make build), or --endpoint-server python")
        servers = start_endpoints(tmp, expo, args.base_port, args.endpoints, args.per_process, lifetime, program,
                                  args.endpoints_idle)
        out = {"endpoints": args.endpoints, "endpoint_server": args.endpoint_server,
               "gpus_per_endpoint": 8, "exposition_bytes": os.path.getsize(expo),
               "measured_seconds": args.seconds, "warmup_seconds": args.warmup}
        runners = {"collector": lambda: run_collector(args, tmp, servers),
                   "prometheus_power_only": lambda: run_prometheus(args, tmp, servers, True),
                   "prometheus_all": lambda: run_prometheus(args, tmp, servers, False)}
        for name in contenders:
            if name not in runners:
                sys.exit(f"bench: unknown contender {name!r} (known: {', '.join(runners)})")
            out[name] = runners[name]()
        print(json.dumps(out, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        for s in servers:
            s.terminate()
            s.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
