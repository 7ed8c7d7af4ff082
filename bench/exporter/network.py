"""The network face, round two (issue 39): gpulse exporter with TLS and basic auth (bcrypt cost 10),
8 simulated H100s, on loopback, quiet and then under each attack, side by side in one run:

  (a) 16 connections without credentials, each sending a chunk-size line with an endless extension
      (up to 64 MiB each): the exporter's peak RSS (target < 64 MiB) and what they were answered;
  (b) a crowd of 2,048 keep-alive connections from 2,048 client addresses, each repeating
      GET /health every 10 s (reconnecting when closed; bench/exporter/crowd.cc, one epoll thread,
      built with gpulse): scrapes refused (target 0: a paced keep-alive scraper and 39 scrapes on
      fresh connections) and the paced scraper's p50 (target <= 2x quiet);
  (c) a TLS handshake flood (two processes connecting, handshaking and closing as fast as they can):
      the paced scraper's p50 (target <= 2x quiet);
  (d) 2,000 idle TLS connections (handshake and one authenticated request done): RSS held (target
      < 48 MiB) and 3 s after they close (target: within 2 MiB of the start).

The anchor of (b) and (c) is the same exporter's quiet p50 in the same run: rounds alternate quiet
and attack, and the medians are compared. The paced scraper is wrk with one keep-alive connection and
10 ms between requests (paced.lua). Every attack is bounded in time and stops by itself.

Usage: /usr/bin/python3 bench/exporter/network.py BUILD_DIR [--duration SECONDS] [--rounds N]
"""
import base64
import json
import multiprocessing
import os
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from bench import bench_args, cpu_s, median_run, rss_kib
from hostile import PASSWORD, free_port, hold, make_files, paced_scrape, request, start, tls_connect

CHUNKERS = 16
CHUNK_BYTES = 64 << 20
CROWD = 2048
CROWD_PERIOD_S = 10  # each crowd connection sends its request again this often (the idle timeout is 30 s)
IDLE = 2000
FRESH_SCRAPES = 40


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
        line = p.stderr.readline()  # "ready": every connection has answered once
        if line.strip() != "ready":
            raise SystemExit("the crowd did not get ready: " + line + p.stderr.read())
        time.sleep(1)
        result = scrape()
        extra = during()
        p.stdin.write("stop\n")
        p.stdin.flush()
        counts = json.loads(p.stdout.readline())
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
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
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


def timed_scrape(pid, port, duration, cpu):
    """The paced scrape, adding the exporter's CPU seconds over it to cpu[0] and the wall to cpu[1]."""
    c0, t0 = cpu_s(pid), time.monotonic()
    r = paced_scrape(port, duration)
    cpu[0] += cpu_s(pid) - c0
    cpu[1] += time.monotonic() - t0
    return r


def with_attack(target, args, duration, port, scrape=None):
    """Runs the attack processes and the paced scraper (scrape()) while they go on, and returns
    (the scraper's result, the processes' results)."""
    out = multiprocessing.Queue()
    procs = []
    for a in args:
        p = multiprocessing.Process(target=target, args=(*a, out), daemon=True)
        p.start()
        procs.append(p)
    time.sleep(1)
    result = scrape() if scrape is not None else paced_scrape(port, duration)
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
    for s in socks:
        s.close()
    time.sleep(3)
    return start_rss, held, rss_kib(pid)[0]


def main():
    a, gpulse, load = bench_args()
    crowd_bin = os.path.join(a.build, "bin", "crowd")
    d = tempfile.mkdtemp(prefix="gpulse-network-")
    web = make_files(d)
    port = free_port()
    p = start(gpulse, web, port)
    quiet, crowd, flood = [], [], []
    cpu = {"quiet": [0.0, 0.0], "crowd": [0.0, 0.0], "flood": [0.0, 0.0]}  # exporter CPU s, wall s
    crowd_stats, flood_stats, fresh_refused = [], [], 0
    try:
        paced_scrape(port, 2)  # warm up: the scraper's credentials are verified once and cached
        chunk = chunk_attack(p.pid, port, 30)
        for _ in range(a.rounds):
            quiet.append(timed_scrape(p.pid, port, a.duration, cpu["quiet"]))
            s, refused, r = crowd_attack(
                crowd_bin, port, a.duration + 150,
                scrape=lambda: timed_scrape(p.pid, port, a.duration, cpu["crowd"]),
                during=lambda: fresh_scrapes(port, FRESH_SCRAPES // a.rounds))
            fresh_refused += refused
            crowd.append(s)
            crowd_stats.append(r)
            s, r = with_attack(flood_process, [(port, a.duration + 2)] * 2, a.duration, port,
                               scrape=lambda: timed_scrape(p.pid, port, a.duration, cpu["flood"]))
            flood.append(s)
            flood_stats += r
        idle = idle_memory(p.pid, port)
    finally:
        if p.poll() is not None:
            print(f"the exporter ended early (status {p.returncode}): see {d}/exporter.log", file=sys.stderr)
        p.terminate()
        p.wait()
    q, c, f = median_run(quiet), median_run(crowd), median_run(flood)
    print(f"load average before: {load}; {a.rounds} rounds of {a.duration} s; cores: {os.cpu_count()}")
    print("| paced authenticated scrape (1 keep-alive connection) | p50 ms (runs) | p99 ms | non-2xx | p50 ratio |")
    print("|---|---:|---:|---:|---:|")
    runs = lambda rs: ", ".join(f"{r['p50']:.2f}" for r in rs)
    print(f"| quiet (anchor) | {q['p50']:.2f} ({runs(quiet)}) | {q['p99']:.2f} | {q['errors']} | 1.00x |")
    print(f"| (b) crowd of {CROWD:,} keep-alive connections from {CROWD:,} addresses | {c['p50']:.2f} ({runs(crowd)}) | "
          f"{c['p99']:.2f} | {c['errors']} | {c['p50'] / q['p50']:.2f}x |")
    print(f"| (c) TLS handshake flood | {f['p50']:.2f} ({runs(flood)}) | {f['p99']:.2f} | {f['errors']} | "
          f"{f['p50'] / q['p50']:.2f}x |")
    reqs = sum(s["requests"] for s in crowd_stats)
    reconn = sum(s["reconnects"] for s in crowd_stats)
    fails = sum(s["failures"] for s in crowd_stats)
    print(f"(b) crowd: {reqs} requests, {reconn} reconnects after eviction, {fails} failed; "
          f"fresh-connection scrapes refused: {fresh_refused} of {FRESH_SCRAPES // a.rounds * a.rounds}")
    crowd_cpu = sum(s["cpu_s"] for s in crowd_stats)
    print(f"(b) the crowd client's own CPU: {crowd_cpu:.1f} s over its {a.rounds} runs (its setup included)")
    hs = sum(x[0] for x in flood_stats)
    hf = sum(x[1] for x in flood_stats)
    print(f"(c) the flood clients' own CPU: {sum(x[2] for x in flood_stats):.1f} s")
    for phase, (c, w) in cpu.items():
        print(f"exporter CPU during the paced scrapes, {phase}: {c / w * 100:.0f}% of one core ({c:.1f} s in {w:.1f} s)")
    print(f"(c) flood: {hs} handshakes completed, {hf} failed, in {a.rounds * (a.duration + 2)} s")
    s0, peak, answers = chunk
    print()
    print("| memory | RSS before MiB | peak or held MiB | after close MiB | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| (a) {CHUNKERS} chunk-extension connections, no credentials | {s0 / 1024:.1f} | {peak / 1024:.1f} "
          "(peak since start, VmHWM) | | < 64 MiB |")
    i0, held, after = idle
    print(f"| (d) {IDLE:,} idle TLS connections | {i0 / 1024:.1f} | {held / 1024:.1f} | {after / 1024:.1f} "
          f"({(after - i0) / 1024:+.1f}) | < 48 MiB held, back within 2 MiB |")
    print("(a) answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(answers.items())))
    print(f"(d) {(held - i0) / IDLE:.1f} KiB per idle TLS connection")


if __name__ == "__main__":
    sys.exit(main())
