"""Power collector vs Prometheus (issues 7 and 14), `bench/run.sh collector`: `gpulse collect` polling N
loopback endpoints x 8 GPUs at a 1 s cadence, and a real Prometheus server (Debian's) scraping the
same endpoints at 1 s, keeping only the power metric (*power only*) and everything (*stock*).

Measures, for each N of --endpoints (default 4,096 and 1,024): the CPU (user + system, /proc/PID/stat)
of each contender over the same measured seconds, as % of a core, and the collector's against each
Prometheus as one ratio per round; the collector's schedule lag p50/p99/max over the measured
seconds (each request's, from its package's scrape-timings.jsonl) and, as the anchor of the lag, a
timer anchor: a process beside the collector that only wakes every 10 ms and records how late each
wake-up is (`bench.py --timer-anchor`), over the same seconds; the median of each cycle's lag p99;
the slots the collector missed (its manifest, the whole run); and the peak RSS (VmHWM) of each
contender.

The endpoints are C++ stand-ins (BUILD/bin/collector_endpoints, bench/collector/endpoints.cc; or
endpoints.py) at nice 10, each serving the same exposition of 8 simulated GPUs, standing in for
exporters on other machines. Anchor: Prometheus, in the same run, on the same endpoints.

Runs: --rounds (default 3) rounds per N; a round runs the three contenders one after another, each
--warmup (15 s: Prometheus needs about that to reach every target at 4,096) then --seconds (15 s)
measured, the order rotated round by round so that machine load falls on each alike; ratios are
taken per round and given as the median with the spread of the rounds. About 11 minutes with the
defaults (18 runs of about 35 s). Prints the RESULTS.md table (bench/results.py) on
stdout, progress and details on stderr; --json F also writes every figure (--per-cycle adds each
cycle's). Everything listens on 127.0.0.1 and every process is bounded in time. Run with Debian's
/usr/bin/python3; bench/collector/run.sh BUILD runs it.

Usage: /usr/bin/python3 bench/collector/bench.py --gpulse BUILD/bin/gpulse [--endpoints 4096,1024]
       [--rounds 3] [--warmup 15] [--seconds 15] [--contenders ...] [--per-cycle] [--json F]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
from results import Table, cpu_seconds, judge, ratio, spread  # noqa: E402

CONTENDERS = ("collector", "prometheus_power_only", "prometheus_all")
# The CPU target against Prometheus power only, by endpoint count (issue 7: 1,024; issue 14: 4,096).
CPU_TARGETS = {1024: (0.5, "≤ 0.5× (issue 7)"), 4096: (0.25, "≤ 0.25× (issue 14)")}
LAG_TARGET_MS = 20


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def timer_anchor(interval, seconds, skip=0.0):
    """The scheduling-latency anchor (run in its own process by --timer-anchor): wakes on a fixed grid
    (every `interval` s for `seconds` s, on CLOCK_MONOTONIC) and records how late each wake-up is,
    those of the first `skip` seconds left out (the warm-up). Beside `gpulse collect` it shows the lag
    the machine alone imposes on any timer."""
    lags = []
    t0 = time.monotonic()
    k = 1
    while k * interval <= seconds:
        slot = t0 + k * interval
        time.sleep(max(0.0, slot - time.monotonic()))
        if k * interval > skip:
            lags.append(time.monotonic() - slot)
        k += 1
    lags.sort()
    pick = lambda p: lags[min(len(lags) - 1, int(p * len(lags)))] * 1e3
    return {"count": len(lags), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": lags[-1] * 1e3}


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
    here = tempfile.mkdtemp(prefix="endpoints-", dir=tmp)  # this start's ready files, apart from an earlier one's
    for first in range(0, count, per_proc):
        n = min(per_proc, count - first)
        rf = os.path.join(here, f"ready{first}")
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
            stop(procs)
            sys.exit("bench: endpoint servers did not start")
        time.sleep(0.1)
    return procs


def stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


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


def measure(pid, others, warmup, seconds):
    """CPU seconds of `pid` and of `others` between warmup and warmup + seconds after now, as a
    fraction of a core, the seconds measured, the peak RSS of `pid` at the end, and the measured
    window in unix time (start, end)."""
    time.sleep(warmup)
    c0, o0, t0, u0 = cpu_seconds(pid), sum(cpu_seconds(p) for p in others), time.monotonic(), time.time()
    time.sleep(seconds)
    c1, o1, t1, u1 = cpu_seconds(pid), sum(cpu_seconds(p) for p in others), time.monotonic(), time.time()
    return (c1 - c0) / (t1 - t0), (o1 - o0) / (t1 - t0), t1 - t0, peak_rss_mib(pid), (u0, u1)


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


def window_lag(lag, slot, window):
    """The schedule lag of the requests of the cycles whose slot falls in the measured window (unix
    start, end): p50, p99 and max in ms, the cycles, and each cycle's p99."""
    seqs = [s for s in sorted(lag) if window[0] <= slot[s] <= window[1]]
    v = sorted(x for s in seqs for x in lag[s])
    if not v:
        return {"window_cycles": 0}
    return {"window_lag_p50_ms": round(v[len(v) // 2], 1), "window_lag_p99_ms": p99(v),
            "window_lag_max_ms": round(v[-1], 1), "window_cycles": len(seqs),
            "window_cycle_lag_p99_ms": [p99(lag[s]) for s in seqs]}


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


def run_collector(args, tmp, servers, endpoints, tag):
    cfg = os.path.join(tmp, f"collect-{tag}.yaml")
    with open(cfg, "w") as f:
        f.write(collector_config(args.base_port, endpoints))
    logs = os.path.join(tmp, f"collect-logs-{tag}")
    p = subprocess.Popen([args.gpulse, "collect", "--config", cfg, "--log-dir", logs, "--duration",
                          str(args.warmup + args.seconds + 2)], stderr=subprocess.PIPE, text=True)
    # The anchor wakes 100 times a second over the whole run: the machine's own timer lag.
    # Its lags of the warm-up are left out, as the collector's are.
    anchor = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--timer-anchor", "0.01",
                               str(args.warmup + args.seconds), str(args.warmup)], stdout=subprocess.PIPE, text=True)
    try:
        cpu, server_cpu, wall, rss, window = measure(p.pid, [s.pid for s in servers], args.warmup, args.seconds)
        err = p.communicate(timeout=120)[1]
        timer = json.loads(anchor.communicate(timeout=60)[0])
    finally:
        for q in (p, anchor):
            if q.poll() is None:
                q.kill()
                q.wait()
    if p.returncode != 0:
        sys.exit(f"bench: gpulse collect exited with {p.returncode}:\n{err}")
    with open(os.path.join(logs, "power", "manifest.json")) as f:
        m = json.load(f)
    lag = re.search(r"schedule lag p50 ([\d.]+) ms p99 ([\d.]+) ms max ([\d.]+) ms", err)
    steady = re.search(r"after the first cycle p50 ([\d.]+) ms p99 ([\d.]+) ms max ([\d.]+) ms", err)
    if not lag or not steady:
        sys.exit("bench: no schedule lag in gpulse collect's summary:\n" + err)
    with open(os.path.join(logs, "power", "samples.csv")) as f:
        rows = sum(1 for _ in f) - 1
    lags, durs, slots = read_timings(os.path.join(logs, "power", "scrape-timings.jsonl"))
    cycles = per_cycle(lags, durs, slots)
    out = {"cpu_core_fraction": cpu, "endpoint_servers_cpu": server_cpu, "measured_s": wall, "peak_rss_mib": rss,
           "lag_p50_ms": float(lag[1]), "lag_p99_ms": float(lag[2]), "lag_max_ms": float(lag[3]),
           "steady_lag_p50_ms": float(steady[1]), "steady_lag_p99_ms": float(steady[2]),
           "steady_lag_max_ms": float(steady[3]), "timer_anchor": timer,
           "missed_slots": m["missed_sample_count"], "cycles": m["scrape_count"], "rows": rows,
           "max_scrape_duration_s": m["max_scrape_duration_seconds"], "summary": err.strip().splitlines()[-1],
           "cycle_split": cycle_split(lags), **window_lag(lags, slots, window)}
    if args.per_cycle:
        out["per_cycle"] = cycles
    shutil.rmtree(logs, ignore_errors=True)
    return out


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


def run_prometheus(args, tmp, servers, endpoints, power_only, tag):
    name = ("prom-power" if power_only else "prom-all") + f"-{tag}"
    cfg = os.path.join(tmp, name + ".yml")
    with open(cfg, "w") as f:
        f.write(prometheus_config(args.base_port, endpoints, power_only))
    web = f"127.0.0.1:{args.prometheus_port}"
    data = os.path.join(tmp, name + "-data")
    p = subprocess.Popen([args.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                          f"--web.listen-address={web}", "--storage.tsdb.retention.time=1h"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cpu, server_cpu, wall, rss, _ = measure(p.pid, [s.pid for s in servers], args.warmup, args.seconds)
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
        shutil.rmtree(data, ignore_errors=True)


def run_size(args, tmp, expo, program, endpoints, contenders):
    """Every round of one endpoint count: [{contender: figures}], the contenders' order rotated."""
    check_free(args.base_port, endpoints)
    lifetime = args.rounds * len(contenders) * (args.warmup + args.seconds + 90) + 60
    servers = start_endpoints(tmp, expo, args.base_port, endpoints, args.per_process, lifetime, program,
                              args.endpoints_idle)
    rounds = []
    try:
        for r in range(args.rounds):
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            got = {}
            for name in order:
                tag = f"{endpoints}-{r}"
                t0 = time.monotonic()
                if name == "collector":
                    got[name] = run_collector(args, tmp, servers, endpoints, tag)
                else:
                    got[name] = run_prometheus(args, tmp, servers, endpoints, name == "prometheus_power_only", tag)
                g = got[name]
                extra = (f"lag p50/p99/max {g.get('window_lag_p50_ms')}/{g.get('window_lag_p99_ms')}/"
                         f"{g.get('window_lag_max_ms')} ms over the measured seconds ({g['window_cycles']} cycles; "
                         f"after the first cycle {g['steady_lag_p50_ms']}/{g['steady_lag_p99_ms']}/"
                         f"{g['steady_lag_max_ms']} ms), timer anchor p99 {g['timer_anchor']['p99_ms']:.1f} ms, "
                         f"missed {g['missed_slots']} in {g['cycles']} cycles" if name == "collector" else
                         f"targets up {g['targets_up']}, scrape interval p99 {g['interval_p99_s']} s")
                log(f"bench: {endpoints} endpoints, round {r + 1}/{args.rounds}, {name}: CPU "
                    f"{g['cpu_core_fraction'] * 100:.1f} % of a core "
                    f"(endpoints {g['endpoint_servers_cpu'] * 100:.1f} %), "
                    f"peak RSS {g['peak_rss_mib']:.0f} MiB, {extra} ({time.monotonic() - t0:.0f} s)")
            rounds.append(got)
    finally:
        stop(servers)
    return rounds


def runs_of(rounds, name, key):
    return [r[name][key] for r in rounds if name in r and r[name].get(key) is not None]


def per_round(rounds, a, b, key):
    """a's `key` over b's, one per round where both ran."""
    return [r[a][key] / r[b][key] for r in rounds if a in r and b in r and r[b][key]]


def three(p50, p99_, mx, bold=True):
    """'9.8 / **23.1** / 36.2 ms (p50 9.1–10.2, p99 21.0–25.3, max 30.1–40.0; 3 runs)': the medians
    of the runs, then each one's lowest and highest."""
    if not p50:
        return "n/a"
    med = lambda v: statistics.median(v)
    b = "**" if bold else ""
    text = f"{med(p50):.1f} / {b}{med(p99_):.1f}{b} / {med(mx):.1f} ms"
    if len(p50) > 1:
        rng = lambda v: f"{min(v):.1f}–{max(v):.1f}"
        text += f" (p50 {rng(p50)}, p99 {rng(p99_)}, max {rng(mx)}; {len(p50)} runs)"
    return text


def report(table, results):
    for endpoints, rounds in results:
        n = f"{endpoints:,} endpoints"
        pct = lambda name: [v * 100 for v in runs_of(rounds, name, "cpu_core_fraction")]
        cp = per_round(rounds, "collector", "prometheus_power_only", "cpu_core_fraction")
        cs = per_round(rounds, "collector", "prometheus_all", "cpu_core_fraction")
        target, label = CPU_TARGETS.get(endpoints, (None, None))
        up = lambda name: "/".join(str(v) for v in runs_of(rounds, name, "targets_up")) or "n/a"
        table.row(f"CPU (% of a core), {n} (targets up at the end of each run, Prometheus power only: "
                  f"{up('prometheus_power_only')}; stock: {up('prometheus_all')})",
                  spread(pct("collector"), "{:.1f}", " %"),
                  f"Prometheus power only (stock: {spread(pct('prometheus_all'), '{:.1f}', ' %')})",
                  spread(pct("prometheus_power_only"), "{:.1f}", " %"),
                  f"{ratio(cp)} (stock: {ratio(cs)})", judge(cp, "<=", target, label) if target else "")
        c = "collector"
        timer = [r[c]["timer_anchor"] for r in rounds if c in r]
        p99s = runs_of(rounds, c, "window_lag_p99_ms")
        table.row(f"schedule lag p50 / p99 / max over the measured seconds (the warm-up left out), {n}",
                  three(runs_of(rounds, c, "window_lag_p50_ms"), p99s, runs_of(rounds, c, "window_lag_max_ms")),
                  "timer anchor (a process beside the collector that only wakes every 10 ms)",
                  three([t["p50_ms"] for t in timer], [t["p99_ms"] for t in timer], [t["max_ms"] for t in timer],
                        bold=False),
                  "", judge(p99s, "<", LAG_TARGET_MS, f"p99 < {LAG_TARGET_MS} ms") if p99s else "")
        cycle_p99 = [v for r in rounds if c in r for v in r[c].get("window_cycle_lag_p99_ms", []) if v is not None]
        if cycle_p99:
            under = sum(1 for v in cycle_p99 if v < LAG_TARGET_MS)
            table.row(f"median of each cycle's lag p99, {n} (the cycles of the measured seconds)",
                      f"{statistics.median(cycle_p99):.1f} ms; {under} of {len(cycle_p99)} cycles under "
                      f"{LAG_TARGET_MS} ms", "", "", "", "")
        missed, cycles = sum(runs_of(rounds, c, "missed_slots")), sum(runs_of(rounds, c, "cycles"))
        if cycles:
            runs = len(runs_of(rounds, c, "cycles"))
            table.row(f"missed slots, {n} (whole runs, warm-up included)",
                      f"{missed:,} of {endpoints * cycles:,} ({cycles} cycles in {runs} "
                      f"run{'s' if runs > 1 else ''})", "", "", "", judge([missed], "==", 0, "0"))
        rp = per_round(rounds, "collector", "prometheus_power_only", "peak_rss_mib")
        rs = per_round(rounds, "collector", "prometheus_all", "peak_rss_mib")
        table.row(f"peak RSS (VmHWM), {n}", spread(runs_of(rounds, c, "peak_rss_mib"), "{:,.0f}", " MiB"),
                  "Prometheus power only / stock",
                  f"{spread(runs_of(rounds, 'prometheus_power_only', 'peak_rss_mib'), '{:,.0f}', ' MiB')} / "
                  f"{spread(runs_of(rounds, 'prometheus_all', 'peak_rss_mib'), '{:,.0f}', ' MiB')}",
                  f"{ratio(rp)} (stock: {ratio(rs)})", "")


def command_line(args):
    """The command as run.sh would give it: bash bench/collector/run.sh BUILD [options]."""
    rel = lambda p: os.path.relpath(os.path.abspath(p), SOURCE) if os.path.abspath(p).startswith(SOURCE + os.sep) else p
    rest, skip = [], False
    for i, w in enumerate(sys.argv[1:]):
        if skip:
            skip = False
            continue
        if w == "--gpulse":
            skip = True
            continue
        if w.startswith("--gpulse="):
            continue
        rest.append(w)
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.gpulse)))
    return shlex.join(["bash", "bench/collector/run.sh", rel(build), *rest])


def prometheus_version(prometheus):
    try:
        out = subprocess.run([prometheus, "--version"], capture_output=True, text=True, timeout=30)
        m = re.search(r"version (\S+)", out.stdout + out.stderr)
        return m.group(1).split("+")[0] if m else "?"
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpulse", default="build/bin/gpulse")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    ap.add_argument("--endpoints", default="4096,1024",
                    help="endpoint counts, comma-separated, measured and printed in this order")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per endpoint count (each runs every contender)")
    ap.add_argument("--per-process", type=int, default=256, help="ports served by one endpoint process")
    ap.add_argument("--base-port", type=int, default=20000)  # below the ephemeral range (32768-)
    ap.add_argument("--prometheus-port", type=int, default=19999)
    ap.add_argument("--endpoint-server", choices=("cpp", "python"), default="cpp",
                    help="cpp: BUILD/bin/collector_endpoints (bench/collector/endpoints.cc), one epoll loop per "
                         "process; python: endpoints.py (asyncio), the server of the runs before 2026-12-02")
    ap.add_argument("--per-cycle", action="store_true",
                    help="also write each cycle's lag and request durations (scrape-timings.jsonl) into --json")
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--contenders", default=",".join(CONTENDERS),
                    help="comma-separated subset of " + ", ".join(CONTENDERS) + "; the first round runs them in "
                         "this order, each later round rotates it by one")
    ap.add_argument("--json", help="also write every figure here")
    ap.add_argument("--endpoints-idle", action="store_true",
                    help="run the endpoint servers under SCHED_IDLE (they only use a CPU nothing else wants) "
                         "instead of nice 10")
    ap.add_argument("--timer-anchor", nargs=3, type=float, metavar=("INTERVAL", "SECONDS", "SKIP"),
                    help="(internal) be the timer anchor: wake every INTERVAL s for SECONDS s, print one JSON "
                         "object of the lags after the first SKIP s")
    args = ap.parse_args()
    if args.timer_anchor:
        print(json.dumps(timer_anchor(*args.timer_anchor)))
        return
    try:
        sizes = [int(x) for x in args.endpoints.split(",") if x]
    except ValueError:
        sys.exit(f"bench: --endpoints takes counts separated by commas, not {args.endpoints!r}")
    contenders = args.contenders.split(",")
    for name in contenders:
        if name not in CONTENDERS:
            sys.exit(f"bench: unknown contender {name!r} (known: {', '.join(CONTENDERS)})")
    if not sizes or args.rounds < 1:
        sys.exit("bench: needs at least one endpoint count and one round")
    program = None
    if args.endpoint_server == "cpp":
        program = os.path.join(os.path.dirname(args.gpulse), "collector_endpoints")
        if not os.access(program, os.X_OK):
            sys.exit(f"bench: no {program}: build it (make build), or --endpoint-server python")
    title_sizes = " and ".join(f"{n:,}" for n in sorted(set(sizes)))
    tmp = tempfile.mkdtemp(prefix="gpulse-collector-bench-")
    try:
        expo = os.path.join(tmp, "exposition.txt")
        with open(expo, "w") as f:
            subprocess.run([args.gpulse, "exporter", "--simulate", "8xH100", "--once", "--hostname", "bench"],
                           stdout=f, check=True, timeout=60)
        size = os.path.getsize(expo)
        server = ("C++ stand-ins" if program else "Python stand-ins") + (
            " under SCHED_IDLE" if args.endpoints_idle else " at nice 10")
        note = (f"`gpulse collect` polling N loopback endpoints ({server}, each serving the same {size:,}-byte\n"
                f"exposition of 8 GPUs) at 1 s, then Debian's Prometheus {prometheus_version(args.prometheus)} on the "
                "same endpoints: keeping only\nthe power metric (*power only*) and everything (*stock*). "
                f"{args.rounds} round{'s' if args.rounds > 1 else ''} per N, the contenders' order rotated\nround by round; each contender "
                f"{args.warmup:g} s of warm-up, then {args.seconds:g} s measured. CPU is user + system time\n"
                "(/proc) over the measured seconds; a ratio is taken per round. The schedule lag is the collector's\n"
                "own (scrape-timings.jsonl) over the same seconds; its anchor is a process that only wakes every\n"
                "10 ms, beside the collector.")
        table = Table(f"Power collector vs Prometheus, {title_sizes} endpoints × 8 GPUs at 1 s (issues 7 and 14)",
                      command_line(args), note)
        results = []
        for endpoints in sizes:
            results.append((endpoints, run_size(args, tmp, expo, program, endpoints, contenders)))
        report(table, results)
        table.print()
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"endpoint_server": args.endpoint_server, "gpus_per_endpoint": 8, "exposition_bytes": size,
                           "measured_seconds": args.seconds, "warmup_seconds": args.warmup, "rounds": args.rounds,
                           "sizes": [{"endpoints": n, "rounds": r} for n, r in results]}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
