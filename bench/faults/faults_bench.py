"""bench/run.sh faults (bench/faults/run.sh): the kernel log as a source of Xids (docs/faults.md), as
the table "Faults: kernel log to recommended action" of bench/RESULTS.md (bench/results.py).
Standard library only.

1. Latency, --rounds rounds (default 3), each with a fresh agent on 8 simulated GPUs (real clock)
   reading a kernel-log file (--kmsg): --events times (default 100) per round and path, the log is
   started over (a new boot: every action clears; the bench waits until /metrics says NONE
   everywhere), then an Xid 95 is raised on one GPU and /metrics is read every 5 ms until that GPU's
   `gpulse_gpu_recommended_action` says RESET_GPU. Path "kernel log": the bench appends the driver's
   line to the file itself (t0 just before the write). Anchor, same agent, interleaved: the same
   Xid through NVML's event only (`POST /api/v1/inject` with sources [nvml]; t0 just before the
   request). A reader that polls every 5 ms adds up to 5 ms to both. The agent serves scrapes within
   --min-refresh-ms (100 ms) of a device read from that read, and the log is read with the devices,
   so a line waits for the next read; an inject marks the read stale at once. Third path: the log
   with --min-refresh-ms 0 (every scrape reads), the reader's own cost.
2. CPU: two agents on 8xH100 side by side, each with a health watch at 1 Hz (the reads that poll
   the log) and a --kmsg file; a writer appends 100 Xid lines a second (all codes of the catalogue,
   8 GPUs, a third with pid and name) to one agent's file for --seconds split into --rounds windows;
   the other's stays quiet. CPU time of each over the same windows (threads' schedstat).
/dev/kmsg itself needs CAP_SYSLOG, which the bench does not have; a file of its records is read by
the same code (faults/kmsg.cc) but through pread instead of one read per record.
Usage: faults_bench.py --gpulse BIN --work DIR [--events N] [--seconds S] [--rounds N] [--json FILE]
"""
import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from proccpu import cpu_between, cpu_ns  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

BUSES = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]  # 8xH100's generated PCI buses
ACTION = re.compile(r'^gpulse_gpu_recommended_action\{gpu="(\d+)".*action="([^"]*)",xid="\d*"\} 1$', re.M)


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path_)


def start_agent(gpulse, work, name, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    log_path = os.path.join(d, "kmsg")
    open(log_path, "w").close()
    err = open(os.path.join(d, "agent.log"), "w")
    env = {k: v for k, v in os.environ.items() if k != "GPULSE_SIM_CLOCK"}
    proc = subprocess.Popen([gpulse, "agent", "--simulate", "8xH100", "--kmsg", log_path,
                             "--state-dir", os.path.join(d, "state"), "--socket", os.path.join(d, "sock"),
                             "-a", "127.0.0.1:0", *extra], stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 30
    port = None
    while time.monotonic() < deadline and (port is None or not os.path.exists(os.path.join(d, "sock"))):
        if proc.poll() is not None:
            raise SystemExit("agent %s exited: %s" % (name, open(err.name).read()))
        m = re.search(r"on http://127\.0\.0\.1:(\d+)/metrics", open(err.name).read())
        port = int(m.group(1)) if m else None
        time.sleep(0.01)
    if port is None:
        raise SystemExit("agent %s did not start" % name)
    return {"proc": proc, "port": port, "sock": os.path.join(d, "sock"), "log": log_path,
            "host": "unix://" + os.path.join(d, "sock")}


def stop(agent):
    agent["proc"].terminate()
    agent["proc"].wait(timeout=30)


def actions(conn):
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    return {int(g): a for g, a in ACTION.findall(r.read().decode())}


def record(message):
    usec = int(time.monotonic() * 1e6)
    return "4,%d,%d,-;%s\n" % (usec, usec, message)


def wait_for(conn, pred, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = actions(conn)
        if pred(got):
            return time.monotonic()
        time.sleep(0.005)
    raise SystemExit("the action did not appear within %d s: %s" % (timeout, got))


def one_event(agent, conn, gpu, path):
    fresh = agent["log"] + ".new"  # a new log (another file in its place): a reboot, every action clears
    open(fresh, "w").close()
    os.replace(fresh, agent["log"])
    wait_for(conn, lambda a: set(a.values()) == {"NONE"})
    if path == "log":
        line = record("NVRM: Xid (PCI:0000:%02x:00): 95, pid=4242, name=python3, Uncontained: LTC TAG "
                      "(0x2,0x1). RST: Yes, D-RST: No" % BUSES[gpu])
        t0 = time.monotonic()
        with open(agent["log"], "a") as f:
            f.write(line)
    else:
        t0 = time.monotonic()
        c = UnixHTTP(agent["sock"])
        c.request("POST", "/api/v1/inject", json.dumps({"gpu": gpu, "kind": "xid", "xid": 95, "sources": ["nvml"]}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        if r.status != 201:
            raise SystemExit("inject: %d %s" % (r.status, body))
        c.close()
    t1 = wait_for(conn, lambda a: a.get(gpu) == "RESET_GPU")
    return (t1 - t0) * 1000


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]


def events_on(gpulse, work, name, events, paths, extra=()):
    agent = start_agent(gpulse, work, name, extra)
    got = {p: [] for p in paths}
    try:
        conn = http.client.HTTPConnection("127.0.0.1", agent["port"], timeout=30)
        for k in range(events):
            for path in (paths if k % 2 == 0 else paths[::-1]):
                got[path].append(one_event(agent, conn, k % 8, path))
        conn.close()
    finally:
        stop(agent)
    return got


def latency(gpulse, work, r, events):
    got = events_on(gpulse, work, "latency-%d" % r, events, ("log", "nvml"))
    # The same agent but reading the devices for every scrape: the log reader without the reuse.
    got["log_fresh"] = events_on(gpulse, work, "fresh-%d" % r, events, ("log",),
                                 ("--min-refresh-ms", "0"))["log"]
    return {p: {"p50_ms": statistics.median(v), "p99_ms": p99(v), "max_ms": max(v), "n": len(v)}
            for p, v in got.items()}


def writer(path, rate, stop_at, counter):
    """Appends `rate` Xid lines a second until stop_at (monotonic), every catalogue code in turn."""
    k, start = 0, time.monotonic()
    with open(path, "a", buffering=1) as f:
        while time.monotonic() < stop_at:
            due = start + k / rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            code = 1 + k % 176
            proc = "pid=%d, name=python3, " % (1000 + k) if k % 3 == 0 else ""
            f.write(record("NVRM: Xid (PCI:0000:%02x:00): %d, %sinjected by the bench, line %d"
                           % (BUSES[k % 8], code, proc, k)))
            k += 1
    counter.append(k)


def cpu(gpulse, work, seconds, windows, rate):
    busy = start_agent(gpulse, work, "busy")
    quiet = start_agent(gpulse, work, "quiet")
    out, lines = [], []
    try:
        for a in (busy, quiet):
            subprocess.run([gpulse, "health", "--host", a["host"], "-g", "0", "--set", "pm", "-u", "1000"],
                           check=True, capture_output=True, timeout=60)
        time.sleep(3)
        t_end = time.monotonic() + seconds + 1
        w = threading.Thread(target=writer, args=(busy["log"], rate, t_end, lines))
        w.start()
        time.sleep(1)  # the writer at its pace
        a, b, t = cpu_ns(busy["proc"].pid), cpu_ns(quiet["proc"].pid), time.monotonic()
        for _ in range(windows):
            time.sleep(seconds / windows)
            a1, b1, t1 = cpu_ns(busy["proc"].pid), cpu_ns(quiet["proc"].pid), time.monotonic()
            x, y = 100 * cpu_between(a, a1) / (t1 - t), 100 * cpu_between(b, b1) / (t1 - t)
            out.append({"seconds": round(t1 - t, 2), "busy_pct_of_core": x, "quiet_pct_of_core": y,
                        "added_pct_of_core": x - y})
            a, b, t = a1, b1, t1
        w.join()
        conn = http.client.HTTPConnection("127.0.0.1", busy["port"], timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        records = int(re.search(r"^gpulse_kernel_log_records_total\{[^}]*\} (\d+)$", text, re.M).group(1))
    finally:
        stop(busy)
        stop(quiet)
    return {"windows": out, "lines_written": lines[0] if lines else 0, "records_read": records}


def table(result, a):
    lat, c = result["latency"], result["cpu"]
    t = Table("Faults: kernel log to recommended action (issue 43)", "bash bench/run.sh faults",
              f"{len(lat)} rounds, each with a fresh agent on 8 simulated GPUs reading a kernel-log file, "
              f"{a.events} Xid 95 per path and round, the log started over before each; /metrics read every 5 ms. "
              f"CPU: {a.seconds:g} s in {len(c['windows'])} windows, two agents side by side with a health watch at 1 Hz. "
              "A file of /dev/kmsg records stands for /dev/kmsg (CAP_SYSLOG is not available here). Medians with "
              "the min–max of the rounds or windows; ratios per round.")
    ms = lambda v: spread(v, "{:,.1f}")
    lp50, lp99 = [r["log"]["p50_ms"] for r in lat], [r["log"]["p99_ms"] for r in lat]
    np50, np99 = [r["nvml"]["p50_ms"] for r in lat], [r["nvml"]["p99_ms"] for r in lat]
    t.row(f"kernel-log line (Xid 95) to `gpulse_gpu_recommended_action` RESET_GPU in /metrics, p50 / p99 "
          f"({lat[0]['log']['n']} events a round)",
          f"{ms(lp50)} / {ms(lp99)} ms", "the same Xid through NVML's event only (`inject --source nvml`)",
          f"{ms(np50)} / {ms(np99)} ms",
          f"{ratio([x / y for x, y in zip(lp50, np50)])} / {ratio([x / y for x, y in zip(lp99, np99)])}",
          judge(lp99, "<", 1000, "p99 < 1 s"))
    fp50, fp99 = [r["log_fresh"]["p50_ms"] for r in lat], [r["log_fresh"]["p99_ms"] for r in lat]
    t.row("the same, the agent with `--min-refresh-ms 0` (every scrape reads the devices and the log)",
          f"{ms(fp50)} / {ms(fp99)} ms", "the NVML path above", f"{ms(np50)} / {ms(np99)} ms",
          f"{ratio([x / y for x, y in zip(fp50, np50)])} / {ratio([x / y for x, y in zip(fp99, np99)])}",
          judge(fp99, "<", 1000, "p99 < 1 s"))
    w = c["windows"]
    busy, quiet, added = ([x[k] for x in w] for k in ("busy_pct_of_core", "quiet_pct_of_core", "added_pct_of_core"))
    t.row(f"agent CPU while the kernel log grows by {a.rate:g} Xid lines/s ({c['lines_written']:,} written, "
          f"{c['records_read']:,} read), 8 GPUs, health watch at 1 Hz",
          f"{spread(busy, '{:.2f}', ' %')} of a core (added: {spread(added, '{:+.2f}', ' %')})",
          "the same agent on a quiet log", spread(quiet, "{:.2f}", " %"),
          ratio([x / y for x, y in zip(busy, quiet) if y > 0]),
          "a fraction of a core, reported")
    t.print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpulse", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--json", help="also write every figure here")
    a = ap.parse_args()
    a.rounds = max(a.rounds, 3)
    result = {"latency": [latency(a.gpulse, a.work, r, a.events) for r in range(a.rounds)],
              "cpu": cpu(a.gpulse, a.work, a.seconds, a.rounds, a.rate)}
    table(result, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
