"""The network face (issue 39), the first part of `bench/run.sh network`: gpulse exporter with TLS (a
P-256 certificate) and basic auth (bcrypt cost 10), 8 simulated H100s, on loopback, quiet and then
under each attack, side by side in one run:

  (a) 16 connections without credentials, each sending a chunk-size line with an endless extension
      (up to 64 MiB each): the exporter's peak RSS (target < 64 MiB) and what they were answered;
  (b) a crowd of 2,048 keep-alive connections from 2,048 client addresses, each repeating
      GET /health every 10 s (reconnecting when closed; bench/exporter/crowd.cc, one epoll thread,
      built with gpulse as BUILD/bin/crowd): scrapes refused (target 0: a paced keep-alive scraper
      and 39 scrapes on fresh connections) and the paced scraper's p50 (target <= 2x quiet);
  (c) a TLS handshake flood (two processes connecting, handshaking and closing as fast as they can):
      the paced scraper's p50 (target <= 2x quiet);
  (d) 2,000 idle TLS connections (handshake and one authenticated request done): RSS held (target
      < 48 MiB) and 3 s after they close (target: within 2 MiB of the start).

Anchor of (b) and (c): the same exporter quiet, in the same run. Each round scrapes it quiet, under
the crowd and under the flood, back to back, so machine load falls on all three alike; the ratio
(attack / quiet) of the p50, and of the exporter's CPU over the scrape (/proc/PID/stat), is taken
per round and given as the median with the spread of the rounds, p99 beside. The paced scraper is
wrk with one keep-alive connection and 10 ms between requests (paced.lua). Every attack is bounded
in time and stops by itself.

Runs: --rounds (default 3) rounds of 3 x --duration (default 8) s plus the crowd's set-up, then
(d): about 3 minutes with the defaults.

Prints the table's heading, columns and first rows (bench/results.py); hostile.py and
bench/agent/soak.py print the rows that continue it. Details go to stderr.

Usage: /usr/bin/python3 bench/exporter/network.py BUILD_DIR [--duration SECONDS] [--rounds N]
"""
import base64
import json
import multiprocessing
import os
import resource
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from bench import bench_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hostile import (NOTE, PASSWORD, TITLE, command_line, context, established, free_port, hold, log, make_files,
                     paced_scrape, request, rss_kib, start, timed_scrape, tls_connect, unanswered)  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

CHUNKERS = 16
CHUNK_BYTES = 64 << 20
CROWD = 2048
CROWD_PERIOD_S = 10  # each crowd connection sends its request again this often (the idle timeout is 30 s)
IDLE = 2000
FRESH_SCRAPES = 40
DURATION = 8


# ---- (a) chunk extensions without credentials ----

def chunker(port, deadline, answers, lock):
    try:
        s = tls_connect(port, timeout=10)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;")
        block = b"e" * 65536
        sent = 0
        s.settimeout(1)
        while sent < CHUNK_BYTES and time.monotonic() < deadline:
            try:
                s.sendall(block)
                sent += len(block)
            except (OSError, ssl.SSLError):
                break  # the server answered and closed
        s.settimeout(5)
        try:
            status = s.recv(64)[:12].decode(errors="replace") or "closed"
        except (OSError, ssl.SSLError):
            status = "reset"
        s.close()
    except (OSError, ssl.SSLError) as e:
        status = type(e).__name__
    with lock:
        answers[status] = answers.get(status, 0) + 1


def chunk_attack(pid, port, seconds):
    answers, lock = {}, threading.Lock()
    deadline = time.monotonic() + seconds
    start_rss = rss_kib(pid)[0]
    threads = [threading.Thread(target=chunker, args=(port, deadline, answers, lock), daemon=True)
               for _ in range(CHUNKERS)]
    for t in threads:
        t.start()
    peak = start_rss
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline + 10:
        peak = max(peak, rss_kib(pid)[0])
        time.sleep(0.02)
    for t in threads:
        t.join(timeout=10)
    return start_rss, max(peak, rss_kib(pid)[1]), answers  # the sampled peak, or the kernel's mark


# ---- (b) the keep-alive crowd ----

def crowd_attack(crowd_bin, port, seconds, scrape, during):
    """The crowd (bench/exporter/crowd.cc: one epoll thread, so it takes little of the machine's
    CPU), then scrape() and during() while it holds its connections; returns (scrape's, during's,
    the crowd's counts)."""
    auth = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    p = subprocess.Popen([crowd_bin, str(port), str(CROWD), str(CROWD_PERIOD_S), str(seconds), auth],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        line = p.stderr.readline()  # "ready": every connection has answered once
        if line.strip() != "ready":
            raise SystemExit("the crowd did not get ready: " + line + p.stderr.read())
        ready_s = time.monotonic() - t0
        time.sleep(1)
        result = scrape()
        extra = during()
        p.stdin.write("stop\n")
        p.stdin.flush()
        counts = json.loads(p.stdout.readline())
        counts["ready_s"] = ready_s
    finally:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return result, extra, counts


def fresh_scrapes(port, n):
    refused = 0
    for _ in range(n):
        try:
            s = tls_connect(port, timeout=10)
            if not request(s, "/metrics", PASSWORD).startswith("HTTP/1.1 200"):
                refused += 1
            s.close()
        except (OSError, ssl.SSLError):
            refused += 1
        time.sleep(0.05)
    return refused


# ---- (c) the handshake flood ----

def flood_process(port, seconds, out):
    ctx = context()
    deadline = time.monotonic() + seconds
    done = failed = 0
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                with ctx.wrap_socket(raw):
                    done += 1
        except (OSError, ssl.SSLError):
            failed += 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put((done, failed, usage.ru_utime + usage.ru_stime))


def with_attack(target, args, duration, scrape):
    """Runs the attack processes and scrape() while they go on, and returns (scrape's result, the
    processes' results)."""
    out = multiprocessing.Queue()
    procs = []
    for a in args:
        p = multiprocessing.Process(target=target, args=(*a, out), daemon=True)
        p.start()
        procs.append(p)
    time.sleep(1)
    result = scrape()
    results = [out.get(timeout=duration + 200) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return result, results


# ---- (d) idle TLS connections ----

def idle_memory(pid, port):
    start_rss = rss_kib(pid)[0]
    socks = hold(port, IDLE, tls=True)  # from 16 client addresses, one request each
    time.sleep(0.5)
    held = rss_kib(pid)[0]
    open_now = established(port)  # every one still held: else the figure per connection means nothing
    for s in socks:
        s.close()
    time.sleep(3)
    return start_rss, held, rss_kib(pid)[0], open_now


def ms(values):
    return spread(values, "{:.2f}", " ms")


def pct(runs):
    return [r["cpu_s"] / r["wall_s"] * 100 for r in runs]


def main():
    a, gpulse, load = bench_args(lambda ap: ap.set_defaults(duration=DURATION))
    if a.rounds < 1 or a.duration < 1:
        raise SystemExit("network: --rounds and --duration must be at least 1")
    table = Table(TITLE, command_line(), NOTE)
    crowd_bin = os.path.join(a.build, "bin", "crowd")
    if not os.access(crowd_bin, os.X_OK):
        raise SystemExit(f"network: no {crowd_bin}: build it (ninja -C BUILD crowd)")
    d = tempfile.mkdtemp(prefix="gpulse-network-")
    web = make_files(d)
    port = free_port()
    p = start(gpulse, web, port)
    quiet, crowd, flood = [], [], []
    crowd_stats, flood_stats, fresh_refused, fresh_tried = [], [], 0, 0
    try:
        paced_scrape(port, 2)  # warm up: the scraper's credentials are verified once and cached
        chunk = chunk_attack(p.pid, port, 30)
        for _ in range(a.rounds):
            quiet.append(timed_scrape(p.pid, port, a.duration))
            n_fresh = FRESH_SCRAPES // a.rounds
            s, refused, r = crowd_attack(crowd_bin, port, a.duration + 150,
                                         scrape=lambda: timed_scrape(p.pid, port, a.duration),
                                         during=lambda: fresh_scrapes(port, n_fresh))
            fresh_refused, fresh_tried = fresh_refused + refused, fresh_tried + n_fresh
            crowd.append(s)
            crowd_stats.append(r)
            s, r = with_attack(flood_process, [(port, a.duration + 2)] * 2, a.duration,
                               scrape=lambda: timed_scrape(p.pid, port, a.duration))
            flood.append(s)
            flood_stats.append(r)
        idle = idle_memory(p.pid, port)
    finally:
        if p.poll() is not None:
            print(f"the exporter ended early (status {p.returncode}): see {d}/exporter.log", file=sys.stderr)
        p.terminate()
        p.wait()

    log(f"network.py: load average before {load}; {a.rounds} rounds of {a.duration} s")
    for i, (q, c, f) in enumerate(zip(quiet, crowd, flood)):
        log(f"  round {i + 1}: p50/p99 ms quiet {q['p50']:.2f}/{q['p99']:.2f}, crowd {c['p50']:.2f}/{c['p99']:.2f}, "
            f"flood {f['p50']:.2f}/{f['p99']:.2f}; exporter CPU % quiet {pct([q])[0]:.1f}, crowd {pct([c])[0]:.1f}, "
            f"flood {pct([f])[0]:.1f}; scraper non-2xx {q['errors']}/{c['errors']}/{f['errors']}")
    for i, s in enumerate(crowd_stats):
        log(f"  crowd {i + 1}: ready in {s['ready_s']:.1f} s, {s['requests']} requests, {s['reconnects']} reconnects "
            f"after eviction, {s['failures']} failed; its own CPU {s['cpu_s']:.1f} s (set-up included)")
    log(f"  flood clients' own CPU: {sum(x[2] for r in flood_stats for x in r):.1f} s")

    col = lambda rs, k: [r[k] for r in rs]
    crowd_ratio = [c["p50"] / q["p50"] for q, c in zip(quiet, crowd)]
    flood_ratio = [f["p50"] / q["p50"] for q, f in zip(quiet, flood)]
    rounds = f"{a.rounds} round{'s' if a.rounds > 1 else ''} of {a.duration} s"
    reconnects = sum(s["reconnects"] for s in crowd_stats)
    non2xx = sum(col(crowd, "errors"))
    table.row(f"scrape p50 under a crowd of {CROWD:,} keep-alive TLS connections from {CROWD:,} addresses "
              f"({rounds}; {reconnects:,} reconnects after eviction, scraper non-2xx: {non2xx}"
              f"{unanswered(crowd + quiet, a.duration)})",
              f"{ms(col(crowd, 'p50'))}; p99 {ms(col(crowd, 'p99'))}", "the same exporter quiet",
              f"{ms(col(quiet, 'p50'))}; p99 {ms(col(quiet, 'p99'))}", ratio(crowd_ratio),
              judge(crowd_ratio, "<=", 2, "≤ 2×"))
    table.row("the exporter's CPU over those scrapes, % of a core (the crowd's requests included)",
              spread(pct(crowd), "{:.1f}", " %"), "quiet", spread(pct(quiet), "{:.1f}", " %"),
              ratio([c / q for c, q in zip(pct(crowd), pct(quiet)) if q > 0]), "")
    table.row("scrapes on fresh connections refused during the crowd", f"{fresh_refused} of {fresh_tried}",
              "", "", "", judge([fresh_refused], "==", 0, "0"))
    hs = [sum(x[0] for x in r) for r in flood_stats]
    hf = sum(x[1] for r in flood_stats for x in r)
    flood_s = a.duration + 2
    table.row(f"scrape p50 under a TLS handshake flood ({sum(hs):,} handshakes in {a.rounds} × {flood_s} s, "
              f"{hf:,} failed; {rounds}; scraper non-2xx: {sum(col(flood, 'errors'))}{unanswered(flood, a.duration)})",
              f"{ms(col(flood, 'p50'))}; p99 {ms(col(flood, 'p99'))}", "quiet",
              f"{ms(col(quiet, 'p50'))}; p99 {ms(col(quiet, 'p99'))}", ratio(flood_ratio),
              judge(flood_ratio, "<=", 2, "≤ 2×"))
    table.row(f"the exporter's CPU over those scrapes, % of a core (handshakes per round: "
              f"{spread([h / flood_s for h in hs], '{:,.0f}', '/s')})",
              spread(pct(flood), "{:.1f}", " %"), "quiet", spread(pct(quiet), "{:.1f}", " %"),
              ratio([f / q for f, q in zip(pct(flood), pct(quiet)) if q > 0]), "")
    s0, peak, answers = chunk
    answered = ", ".join(f"`{k.strip()}` ×{v}" for k, v in sorted(answers.items()))
    table.row(f"RSS with {CHUNKERS} connections without credentials, each sending a chunk-size line with up to "
              f"{CHUNK_BYTES >> 20} MiB of extension (answered: {answered})",
              f"{peak / 1024:.1f} MiB (VmHWM since start)", "RSS before", f"{s0 / 1024:.1f} MiB", "",
              judge([peak / 1024], "<", 64, "< 64 MiB"))
    i0, held, after, open_now = idle
    table.row(f"RSS with {IDLE:,} idle TLS connections (handshake and one authenticated request done; "
              f"{open_now:,} open at the reading), and 3 s after they close",
              f"{held / 1024:.1f} MiB ({(held - i0) / max(open_now, 1):.1f} KiB each); {after / 1024:.1f} MiB after "
              f"({(after - i0) / 1024:+.1f})", "RSS before", f"{i0 / 1024:.1f} MiB", "",
              f"{judge([held / 1024], '<', 48, '< 48 MiB held')}; "
              f"{judge([(after - i0) / 1024], '<=', 2, 'back within 2 MiB')}")
    table.print(head=True, end=False)
    shutil.rmtree(d, ignore_errors=True)  # kept when the run failed: its exporter.log


if __name__ == "__main__":
    sys.exit(main())
