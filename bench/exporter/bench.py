"""The exporter area of bench/RESULTS.md ("Exporter: gpulse exporter vs node_exporter, plain and gzip"):
`gpulse exporter --simulate 8xH100` against Debian's prometheus-node-exporter (default collectors), the
anchor, side by side in one run on loopback under wrk, and the gzip answer against the plain one.

What it measures, ROUNDS rounds (default 3), the order of subject and anchor swapped (or rotated)
every round so that whatever else the machine does falls on both alike; every figure is the median
of the rounds with their spread, every ratio is taken round by round (results.ratio):
  - saturated, `wrk -t1 -c4 -dD`: requests/s, p50/p99, and CPU per 1,000 scrapes of each exporter
    (results.cpu_seconds of the exporter's /proc/PID/stat before and after the run, over the requests
    wrk counted): the ratio the machine's load disturbs least;
  - paced, `-c1` with 10 ms between requests (paced.lua): p50/p99 of both, and gpulse's again with
    1,000 idle TCP connections held open (a paced and a saturated run while they are held);
  - gpulse's RSS (and peak) after the load and while the idle connections are held; the /metrics
    body's bytes of both;
  - gzip: `gpulse exporter --simulate k8s-8xH100` (a 49.8 KB page) under a closed loop on one
    connection (`-c1`, unpaced), so that about a thousand answers share one device read
    (--min-refresh-ms 100) and the CPU per answer is what an answer costs beyond the read: CPU per
    1,000 gzip answers against the same exporter's plain answers, requests/s, p50/p99;
  - start to the first valid scrape of each exporter, STARTS (5) start-ups alternated.
Time: about 8 x DURATION x ROUNDS plus 30 s: 4.5 minutes with the defaults. Loopback only; every
process stops by itself. Prints the RESULTS.md table (bench/results.py).

Usage: /usr/bin/python3 bench/exporter/bench.py BUILD_DIR [--duration SECONDS] [--rounds N]
       (bench/exporter/run.sh BUILD_DIR [...] checks for wrk and node_exporter first)

The helpers below (bench_args, median_run, free_port, fetch, wrk, start_gpulse, ...) are shared by the
other scripts of bench/exporter/.
"""
import argparse
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.append(os.path.dirname(HERE))  # bench/, for results.py

import results  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

WRK_THREADS = 1
WRK_CONNECTIONS = 4
IDLE_CONNECTIONS = 1000
ROUNDS = 3
STARTS = 5  # start-ups of each exporter, alternated
K8S_PROCFS = os.path.join(SOURCE, "tests", "testdata", "procfs", "k8s-8xH100")
GZIP = ["Accept-Encoding: gzip"]


def bench_args(more=None, rounds=ROUNDS, duration=10):
    """The arguments every exporter bench script takes (BUILD [--duration S] [--rounds N]), plus what
    more(parser) adds, the gpulse binary in BUILD and the load average before the run:
    (args, gpulse, load). `rounds` and `duration` are the defaults."""
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--duration", type=int, default=duration)
    ap.add_argument("--rounds", type=int, default=rounds)
    if more:
        more(ap)
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1:
        ap.error("--rounds and --duration must be at least 1")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return a, os.path.join(a.build, "bin", "gpulse"), load


def command_line(script, argv=None):
    """How this run was asked for, for a table's command column: `script BUILD [options]`, the build
    directory relative to the source tree where it lies inside it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-"):
        rel = os.path.relpath(os.path.abspath(argv[0]), SOURCE)
        argv[0] = argv[0] if rel.startswith("..") else rel
    return " ".join([script] + argv)


def median_run(runs):
    """The run with the median p99, and every run's p99 for the record."""
    ordered = sorted(runs, key=lambda r: r["p99"])
    m = dict(ordered[len(ordered) // 2])
    m["all_p99"] = ", ".join(f"{r['p99']:.3f}" for r in runs)
    return m


def rotated(names, i):
    """The order of round i: each round starts one further on, so that every subject runs in every
    place of a round, equally often when the rounds are a multiple of the subjects (with two: subject
    and anchor swap places every round)."""
    names = list(names)
    k = i % len(names)
    return names[k:] + names[:k]


def col(runs, key, scale=1.0):
    """One figure of every run: [run[key] * scale, ...]."""
    return [r[key] * scale for r in runs]


def per(xs, ys):
    """Round-by-round ratios x / y (a round whose y is 0, a CPU time under /proc's 10 ms tick, is
    left out)."""
    return [x / y for x, y in zip(xs, ys) if y]


def fmt_for(values):
    """A format with about three significant digits for the median of `values`."""
    m = abs(statistics.median(values)) if values else 0
    if m >= 100:
        return "{:,.0f}"
    if m >= 10:
        return "{:.1f}"
    if m >= 0.1:
        return "{:.2f}"
    if m >= 0.01:
        return "{:.3f}"
    return "{:.2g}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except OSError:
        return None, ""


def gzip_size(url, timeout=2):
    """The size of /metrics as sent to a client that accepts gzip."""
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return len(r.read())


def start_exporter(gpulse, port, args, timeout=60):
    """Starts `gpulse exporter -a 127.0.0.1:PORT ARGS...` and waits for its first 200 on /metrics."""
    p = subprocess.Popen([gpulse, "exporter", "-a", f"127.0.0.1:{port}", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fetch(f"http://127.0.0.1:{port}/metrics")[0] == 200:
            return p
        if p.poll() is not None:
            break
        time.sleep(0.01)
    p.kill()
    raise SystemExit(f"gpulse exporter {' '.join(args)} did not start")


def stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def start_gpulse(gpulse, port):
    """Starts the exporter; returns (process, seconds from exec to the first scrape with 8 GPUs)."""
    t0 = time.monotonic()
    p = subprocess.Popen([gpulse, "exporter", "--simulate", "8xH100", "-a", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = t0 + 30
    while time.monotonic() < deadline:
        status, body = fetch(url, timeout=1)
        if status == 200 and body.count("DCGM_FI_DEV_GPU_TEMP{") == 8:
            return p, time.monotonic() - t0
        time.sleep(0.0005)
    p.kill()
    raise SystemExit("gpulse exporter did not serve a valid scrape within 30 s")


def start_node_exporter(port):
    """Starts node_exporter; returns (process, seconds from exec to its first complete scrape)."""
    t0 = time.monotonic()
    p = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = t0 + 30
    while time.monotonic() < deadline:
        status, body = fetch(f"http://127.0.0.1:{port}/metrics", timeout=1)
        if status == 200 and "node_cpu_seconds_total{" in body:
            return p, time.monotonic() - t0
        time.sleep(0.0005)
    p.kill()
    raise SystemExit("node exporter did not start")


def start_times(gpulse, rounds=STARTS):
    """Start-up of both exporters, `rounds` times, the first of the pair swapped every time (each
    polled every 0.5 ms): lists of seconds from exec to the first valid scrape, gpulse's and
    node_exporter's, the i-th of each from the same pair."""
    g_runs, n_runs = [], []
    starts = {"gpulse": (lambda port: start_gpulse(gpulse, port), g_runs), "node": (start_node_exporter, n_runs)}
    for i in range(rounds):
        for who in rotated(["gpulse", "node"], i):
            start, runs = starts[who]
            p, seconds = start(free_port())
            runs.append(seconds)
            p.terminate()
            p.wait(timeout=30)
    return g_runs, n_runs


def to_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


PACED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paced.lua")


def wrk(url, duration, connections=WRK_CONNECTIONS, paced=False, headers=(), body=True):
    """One wrk run: {"rps", "p50", "p99" (ms), "requests", "errors", "bytes"} (bytes: the body of one
    GET after the run, None with body=False)."""
    cmd = ["wrk", f"-t{WRK_THREADS}", f"-c{connections}", f"-d{duration}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    if paced:
        cmd += ["-s", PACED]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=duration + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    pct = {m.group(1): to_ms(m.group(2)) for m in re.finditer(r"^\s+(50|99)%\s+(\S+)$", out, re.M)}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return {"rps": rps, "p50": pct["50"], "p99": pct["99"], "requests": requests,
            "errors": errors.group(0) if errors else "", "bytes": len(fetch(url)[1]) if body else None}


def loaded(pid, url, duration, **kw):
    """One wrk run (wrk's arguments) with the CPU the process `pid` spent in it: the run's figures
    plus "cpu" (seconds, results.cpu_seconds before and after) and "cpu_per_1000" (seconds per 1,000
    requests)."""
    c0 = results.cpu_seconds(pid)
    r = wrk(url, duration, body=False, **kw)
    r["cpu"] = results.cpu_seconds(pid) - c0
    r["cpu_per_1000"] = 1000 * r["cpu"] / max(1, r["requests"])
    return r


def rss_kib(pid):
    """(VmRSS, VmHWM) of a process, in KiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def hold_idle(port, n, per_address=None, request=None):
    """Opens n TCP connections to 127.0.0.1:port and returns them. per_address: that many from each
    source address 127.1.X.Y (the exporter admits 256 connections from one address), else all from
    the default one. request: bytes sent on each connection, whose answer (Content-Length bodies)
    is read, so that each is an idle keep-alive connection (the exporter closes one that has not
    sent a request 10 s after its connect, an idle keep-alive one after 30 s)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 256)), hard))
    socks = []
    for i in range(n):
        if per_address:
            k = i // per_address
            source = (f"127.1.{k // 250}.{k % 250 + 1}", 0)
            s = socket.create_connection(("127.0.0.1", port), source_address=source)
        else:
            s = socket.create_connection(("127.0.0.1", port))
        socks.append(s)
    if request:
        for s in socks:
            s.sendall(request)
        for s in socks:
            _read_answer(s)
    return socks


def _read_answer(s):
    """Reads one HTTP answer with a Content-Length body from socket s."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("bench: the exporter closed a connection before answering")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    want = int(m.group(1)) if m else 0
    while len(body) < want:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk


IDLE_REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def idle_run(pid, port, url, duration, **kw):
    """One loaded() run while IDLE_CONNECTIONS idle keep-alive connections from as many addresses
    are held open (each has passed one GET /health, so that the exporter keeps it for 30 s), with
    the exporter's RSS and peak (KiB) taken while they are held: (run, (rss, hwm))."""
    socks = hold_idle(port, IDLE_CONNECTIONS, per_address=1, request=IDLE_REQUEST)
    try:
        time.sleep(0.5)
        r = loaded(pid, url, duration, **kw)
        mem = rss_kib(pid)
    finally:
        for s in socks:
            s.close()
    time.sleep(0.5)
    return r, mem


def wrk_errors(named_runs):
    """Notes for the runs in which wrk saw errors: {name: [run, ...]}."""
    out = []
    for name, runs in named_runs.items():
        errs = [r["errors"] for r in runs if r.get("errors")]
        if errs:
            out.append(f"wrk reported for {name}: {'; '.join(errs)}")
    return out


def measure(a, gpulse):
    """Every run of the area: a dict of lists of runs, one entry per round."""
    R = {k: [] for k in ("g_sat", "n_sat", "g_paced", "n_paced", "g_idle_paced", "g_idle_sat",
                         "plain", "gzip", "rss", "idle_rss", "g_bytes", "n_bytes")}
    R["g_starts"], R["n_starts"] = start_times(gpulse)
    gport, nport, zport = free_port(), free_port(), free_port()
    g, _ = start_gpulse(gpulse, gport)
    n, _ = start_node_exporter(nport)
    z = start_exporter(gpulse, zport, ["--simulate", "k8s-8xH100", "--procfs-root", K8S_PROCFS])
    try:
        gurl, nurl = f"http://127.0.0.1:{gport}/metrics", f"http://127.0.0.1:{nport}/metrics"
        zurl = f"http://127.0.0.1:{zport}/metrics"
        for url in (gurl, nurl):  # warm up
            wrk(url, 2, body=False)
        wrk(zurl, 1, connections=1, body=False)
        wrk(zurl, 1, connections=1, headers=GZIP, body=False)
        R["z_plain_bytes"], R["z_gzip_bytes"] = len(fetch(zurl)[1]), gzip_size(zurl)
        d = a.duration
        for i in range(a.rounds):
            # Saturated, gpulse and node_exporter, swapped every round.
            for who in rotated(["g", "n"], i):
                pid, url = (g.pid, gurl) if who == "g" else (n.pid, nurl)
                R[f"{who}_sat"].append(loaded(pid, url, d))
            R["rss"].append(rss_kib(g.pid))
            R["g_bytes"].append(len(fetch(gurl)[1]))
            R["n_bytes"].append(len(fetch(nurl)[1]))
            # Paced: gpulse, node_exporter and gpulse with the idle connections held, rotated.
            for who in rotated(["g", "n", "idle"], i):
                if who == "idle":
                    r, _ = idle_run(g.pid, gport, gurl, d, connections=1, paced=True)
                    R["g_idle_paced"].append(r)
                    r, mem = idle_run(g.pid, gport, gurl, d)
                    R["g_idle_sat"].append(r)
                    R["idle_rss"].append(mem)
                else:
                    pid, url = (g.pid, gurl) if who == "g" else (n.pid, nurl)
                    R[f"{who}_paced"].append(loaded(pid, url, d, connections=1, paced=True))
            # gzip against plain answers, one connection, closed loop, swapped every round.
            for mode in rotated(["plain", "gzip"], i):
                R[mode].append(loaded(z.pid, zurl, d, connections=1, headers=GZIP if mode == "gzip" else ()))
    finally:
        stop([g, n, z])
    return R


def table(a, R, tab):
    ms = lambda xs: spread(xs, fmt_for(xs), " ms")  # noqa: E731
    g_sat, n_sat = R["g_sat"], R["n_sat"]
    tab.row("/metrics body", spread(R["g_bytes"], "{:,.0f}", " B"), "node_exporter", spread(R["n_bytes"], "{:,.0f}", " B"))
    g_rps, n_rps = col(g_sat, "rps"), col(n_sat, "rps")
    tp = per(g_rps, n_rps)
    tab.row(f"throughput, saturated (`wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{a.duration}s`)",
            spread(g_rps, "{:,.0f}", " req/s"), "node_exporter", spread(n_rps, "{:,.0f}", " req/s"),
            ratio(tp, "{:,.0f}"), judge(tp, ">=", 50, "≥ 50×"))
    g_cpu, n_cpu = col(g_sat, "cpu_per_1000"), col(n_sat, "cpu_per_1000")
    cr = per(g_cpu, n_cpu)
    tab.row("CPU per 1,000 scrapes, saturated (the exporter's user + system time over the requests wrk counted)",
            spread(g_cpu, fmt_for(g_cpu), " s"), "node_exporter", spread(n_cpu, fmt_for(n_cpu), " s"), ratio(cr, fmt_for(cr)))
    tab.row("saturated p50 / p99 latency", f"{ms(col(g_sat, 'p50'))} / {ms(col(g_sat, 'p99'))}", "node_exporter",
            f"{ms(col(n_sat, 'p50'))} / {ms(col(n_sat, 'p99'))}")
    g_paced, n_paced, idle = R["g_paced"], R["n_paced"], R["g_idle_paced"]
    tab.row("paced p50 latency (`-c1`, 10 ms between requests)", ms(col(g_paced, "p50")), "node_exporter",
            ms(col(n_paced, "p50")))
    g_p99 = col(g_paced, "p99")
    tab.row("paced p99 latency", ms(g_p99), "node_exporter", ms(col(n_paced, "p99")), "",
            judge(g_p99, "<", 2, "< 2 ms"))
    ir = per(col(idle, "p99"), g_p99)
    tab.row(f"paced p99 with {IDLE_CONNECTIONS:,} idle connections held", ms(col(idle, "p99")),
            "the same exporter without them", ms(g_p99), ratio(ir), judge(ir, "<=", 1.5, "≤ 1.5×"))
    isat = R["g_idle_sat"]
    tab.row(f"saturated throughput / p99 with {IDLE_CONNECTIONS:,} idle connections",
            f"{spread(col(isat, 'rps'), '{:,.0f}', ' req/s')} / {ms(col(isat, 'p99'))}",
            "saturated p99 without them", ms(col(g_sat, "p99")),
            ratio(per(col(isat, "p99"), col(g_sat, "p99"))) + " (p99)")
    mib = lambda pairs: (spread([r / 1024 for r, _ in pairs], "{:.1f}", " MiB")  # noqa: E731
                         + f", peak {max(h for _, h in pairs) / 1024:.1f} MiB")
    tab.row("RSS after the load (peak: VmHWM)", mib(R["rss"]), "", "", "",
            judge([r / 1024 for r, _ in R["rss"]], "<", 20, "< 20 MiB"))
    tab.row(f"RSS with {IDLE_CONNECTIONS:,} idle connections (peak)", mib(R["idle_rss"]))
    gs, ns = [x * 1000 for x in R["g_starts"]], [x * 1000 for x in R["n_starts"]]
    tab.row(f"start to first valid scrape, {len(gs)} start-ups of each, alternated", spread(gs, "{:.1f}", " ms"),
            "node_exporter", spread(ns, "{:.1f}", " ms"), ratio(per(gs, ns)),
            judge(gs, "<", 100, "< 100 ms") + " (dcgm-exporter: 28.5 s, *published*)")
    plain, gz = R["plain"], R["gzip"]
    p_cpu, z_cpu = col(plain, "cpu_per_1000"), col(gz, "cpu_per_1000")
    per_read = statistics.median(col(gz, "rps")) / 10  # --min-refresh-ms 100: a read every 0.1 s at most
    tab.row(f"CPU per 1,000 gzip answers, one connection, closed loop, about {per_read:,.0f} answers per device "
            f"read (`--simulate k8s-8xH100`, a {R['z_plain_bytes'] / 1000:.1f} KB page, "
            f"{R['z_gzip_bytes'] / 1000:.1f} KB gzipped)",
            spread(z_cpu, fmt_for(z_cpu), " s"), "the same exporter's plain answer", spread(p_cpu, fmt_for(p_cpu), " s"),
            ratio(per(z_cpu, p_cpu)), "", f"as above (`wrk -t1 -c1 -d{a.duration}s -H 'Accept-Encoding: gzip'`)")
    tab.row("gzip answers per second, p50 / p99",
            f"{spread(col(gz, 'rps'), '{:,.0f}', ' req/s')}, {ms(col(gz, 'p50'))} / {ms(col(gz, 'p99'))}",
            "plain answers", f"{spread(col(plain, 'rps'), '{:,.0f}', ' req/s')}, {ms(col(plain, 'p50'))} / "
            f"{ms(col(plain, 'p99'))}")


def main():
    a, gpulse, _ = bench_args()
    tab = Table("Exporter: gpulse exporter vs node_exporter, plain and gzip (issues 5, 20 and 40)",
                command_line("bash bench/exporter/run.sh"),
                note=("`gpulse exporter --simulate 8xH100` and Debian's `prometheus-node-exporter` (default collectors) "
                      f"side by side on loopback under wrk: saturated (`-t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{a.duration}s`) "
                      f"and paced (`-c1`, 10 ms between requests, `bench/exporter/paced.lua`), then with "
                      f"{IDLE_CONNECTIONS:,} idle TCP connections held; gzip on `--simulate k8s-8xH100`. {a.rounds} rounds, "
                      "the order swapped every round; medians with the lowest and highest round, ratios round by round."))
    R = measure(a, gpulse)
    table(a, R, tab)
    tab.print()
    notes = wrk_errors({"gpulse, saturated": R["g_sat"], "node_exporter, saturated": R["n_sat"],
                        "gpulse, paced": R["g_paced"], "node_exporter, paced": R["n_paced"],
                        "gpulse with idle connections, paced": R["g_idle_paced"],
                        "gpulse with idle connections, saturated": R["g_idle_sat"],
                        "k8s-8xH100 plain": R["plain"], "k8s-8xH100 gzip": R["gzip"]})
    for line in notes:
        print(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
