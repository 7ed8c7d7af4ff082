"""The agent's memory over a long run (issue 39): `gpulse agent -k` on `k8s-8xH100` scraped 10^6 times
by wrk (4 keep-alive connections, as fast as it answers) while

  - a fake kubelet (tests/e2e/fake_kubelet.py) changes its answer every 2 s: the node's pods renamed
    and moved between GPUs, and 1,000 filler pods under names that change, so pod labels, holders and
    per-pod series come and go while the answer keeps its size (the agent lists every
    --kubelet-refresh-ms 1000);
  - hostile clients open and close connections without end: a request cut half-way, a chunk-size
    line with a 1 MiB extension, a malformed request, a connection that sends nothing, each from a
    new connection, about 50 a second.

The anchor is the agent's own RSS after the first 10^4 scrapes; the figure is its RSS at the end
(target: less than 1 MiB more; dcgm-exporter users report growth from 100 to 512 MiB in 24-48 h).
Also the agent's RSS at every 10^5 scrapes, so a slow climb shows. Everything on loopback and unix
sockets in a temporary directory, bounded by the scrape count and stopping by itself.

Runs: one soak (a drift is not a ratio; the anchor is the same agent early in the same run): 4 to 7
minutes for 10^6 scrapes on the reference VM, by its load (--scrapes N for a shorter one). The
allocator's bytes in use (glibc's malloc_stats, through gdb) at the anchor, at each 10^5 scrapes and
at the end give a trend (target: under 0.1 MiB per 10^5 scrapes, i.e. 1 MiB per 10^6).

Its rows continue the table of `bench/run.sh network` (bench/exporter/network.py prints the heading;
--head prints it here too, for a run on its own) and close it; the RSS at every 10^5 scrapes and the
mappings that grew go to stderr.

Usage: /usr/bin/python3 bench/agent/soak.py BUILD_DIR [--scrapes N] [--no-churn] [--no-hostile] [--head]
(the two --no flags take a cause away, to tell where a drift comes from)
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
sys.path.insert(0, os.path.join(SOURCE, "bench", "exporter"))
os.environ.setdefault("GPULSE_SOURCE_DIR", SOURCE)

from fake_kubelet import FakeKubelet, filler_pods  # noqa: E402
from hostile import TITLE, NOTE, command_line, free_port, rss_kib  # noqa: E402
from kubernetes import uuids  # noqa: E402
from results import Table, judge, spread  # noqa: E402

PROCFS = os.path.join(SOURCE, "tests", "testdata", "procfs", "k8s-8xH100")
FIRST = 10_000
FILLERS = 1000


def churned_pods(u, generation):
    """The node's pods under new names every generation, moved between GPUs, plus filler pods."""
    gpu = "nvidia.com/gpu"
    g = generation
    a, b = (0, 4) if g % 2 == 0 else (4, 0)
    pods = [("ml", f"train-{g}", [("trainer", [(gpu, [u[a], u[a + 1], u[a + 2], u[a + 3]])])]),
            ("serving", f"vllm-{g % 7}", [("vllm", [(gpu, [u[b] + "::1", u[b + 1] + "::0"])])]),
            ("batch", f"batch-{g % 5}", [("worker", [(gpu, [u[6] + "::0"])])])]
    # As many filler pods every time, under other names: the answer's size stays, so the anchor and
    # the end hold the same workload and what moves is what the churn leaves behind.
    return pods + filler_pods(FILLERS, prefix=f"filler-{g % 3}")


def churn(kubelet, u, stop):
    g = 0
    while not stop.wait(2.0):
        g += 1
        kubelet.set_pods(churned_pods(u, g))


def hostile(port, stop, counts):
    attacks = [
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Cut: ",  # cut half-way, then closed
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"e" * (1 << 20),
        b"\x16\x03\x01\x00\xa5garbage\r\n\r\n",
        b"",  # connects, sends nothing, closes
    ]
    i = 0
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                if attacks[i % 4]:
                    s.sendall(attacks[i % 4])
                s.settimeout(0.05)
                try:
                    s.recv(256)
                except OSError:
                    pass
            counts[i % 4] += 1
        except OSError:
            pass
        i += 1
        stop.wait(0.02)


def rss_parts(pid):
    """(RssAnon, RssFile) in KiB: the heap and stacks, and the binary's and libraries' pages."""
    parts = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("RssAnon", "RssFile"):
                parts[k] = int(v.split()[0])
    return parts["RssAnon"], parts["RssFile"]


def smaps(pid):
    """{(start address, name): (size KiB, Rss KiB)} of every mapping: where a drift lives (the main
    arena's [heap], another arena's heap, a thread's stack, a library's pages). A heap keeps its
    start as it grows, so the start and name key it."""
    out, key = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                lo, hi = int(m.group(1), 16), int(m.group(2), 16)
                key, size = (m.group(1), m.group(3).strip() or "(anonymous)"), (hi - lo) // 1024
            elif line.startswith("Rss:") and key:
                out[key] = (size, int(line.split()[1]))
    return out


def trim_now(pid):
    """malloc_trim(0) in the agent (gdb): what RSS would be with every free page handed back now."""
    try:
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                       capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True


def heap_in_use(pid, log_path):
    """The allocator's bytes in use, all arenas and mmapped chunks (glibc's malloc_stats, called in
    the agent by gdb: it prints to the agent's stderr), or None without gdb. RSS also counts freed
    memory the allocator keeps for reuse; this is what the program holds."""
    try:
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()"],
                       capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    with open(log_path, errors="replace") as f:
        totals = re.findall(r"Total \(incl\. mmap\):\s*\n?\s*system bytes\s*=\s*\d+\s*\n?\s*in use bytes\s*=\s*(\d+)",
                            f.read())
    return int(totals[-1]) if totals else None


def wrk_requests(port, seconds):
    out = subprocess.run(["wrk", "-t1", "-c4", f"-d{seconds}s", f"http://127.0.0.1:{port}/metrics"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"(\d+) requests in", out)
    if not m:
        raise SystemExit("wrk printed no request count:\n" + out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return int(m.group(1)), int(non2xx.group(1)) if non2xx else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--scrapes", type=int, default=1_000_000)
    ap.add_argument("--no-churn", action="store_true", help="the kubelet's answer never changes")
    ap.add_argument("--no-hostile", action="store_true", help="no hostile connections")
    ap.add_argument("--head", action="store_true",
                    help="print the table's heading and columns too (a run on its own, not after hostile.py)")
    a = ap.parse_args()
    if a.scrapes <= FIRST:
        raise SystemExit(f"soak: --scrapes must be more than the anchor's {FIRST:,}")
    table = Table(TITLE, command_line(), NOTE)
    gpulse = os.path.join(a.build, "bin", "gpulse")
    tmp = tempfile.mkdtemp(prefix="gpulse-soak-")
    u = uuids(gpulse)
    kubelet = FakeKubelet(os.path.join(tmp, "kubelet.sock"), churned_pods(u, 0))
    port = free_port()
    log = open(os.path.join(tmp, "agent.log"), "w")
    agent = subprocess.Popen([gpulse, "agent", "--simulate", "k8s-8xH100", "--procfs-root", PROCFS,
                              "--state-dir", os.path.join(tmp, "state"), "--socket", os.path.join(tmp, "a.sock"),
                              "-a", f"127.0.0.1:{port}", "-k", "--pod-resources-kubelet-socket",
                              os.path.join(tmp, "kubelet.sock"), "--kubelet-refresh-ms", "1000"],
                             stdout=subprocess.DEVNULL, stderr=log)
    stop = threading.Event()
    counts = [0, 0, 0, 0]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or agent.poll() is not None:
                    raise SystemExit("gpulse agent did not start: see " + log.name)
                time.sleep(0.05)
        threads = [] if a.no_churn else [threading.Thread(target=churn, args=(kubelet, u, stop), daemon=True)]
        if not a.no_hostile:
            threads += [threading.Thread(target=hostile, args=(port, stop, counts), daemon=True) for _ in range(3)]
        for t in threads:
            t.start()
        done, failed, rows = 0, 0, []
        # The first 10^4 scrapes (about a second of wrk), then the anchor.
        t0 = time.monotonic()
        while done < FIRST:
            n, bad = wrk_requests(port, 1)
            done, failed = done + n, failed + bad
        anchor = rss_kib(agent.pid)[0]
        rate = done / (time.monotonic() - t0)
        log.flush()
        heap_anchor = heap_in_use(agent.pid, log.name)
        maps_anchor = smaps(agent.pid)
        rows.append((done, anchor, rss_parts(agent.pid), heap_anchor))
        next_row = 100_000
        while done < a.scrapes:
            seconds = max(2, min(60, int((min(next_row, a.scrapes) - done) / max(rate, 1)) + 1))
            t0 = time.monotonic()
            n, bad = wrk_requests(port, seconds)
            rate = n / (time.monotonic() - t0)
            done, failed = done + n, failed + bad
            if done >= next_row or done >= a.scrapes:
                rows.append((done, rss_kib(agent.pid)[0], rss_parts(agent.pid), heap_in_use(agent.pid, log.name)))
                next_row += 100_000
        stop.set()
        for t in threads:
            t.join(timeout=10)
        time.sleep(3)
        end = rss_kib(agent.pid)[0]
        hwm = rss_kib(agent.pid)[1]
        end_parts = rss_parts(agent.pid)
        heap_end = heap_in_use(agent.pid, log.name)
        maps_end = smaps(agent.pid)
        trimmed = rss_kib(agent.pid)[0] if trim_now(agent.pid) else None
    finally:
        stop.set()
        agent.terminate()
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
        kubelet.stop()
    report(table, a, done, failed, kubelet.calls, counts, anchor, heap_anchor, maps_anchor, rows, end, hwm,
           end_parts, heap_end, maps_end, trimmed)
    shutil.rmtree(tmp, ignore_errors=True)  # kept when the run failed: its agent.log


def trend(rows):
    """Least-squares slope of the allocator's bytes in use over the run, in MiB per 10^5 scrapes, or
    None without two readings."""
    pts = [(n / 1e5, used / 2**20) for n, _, _, used in rows if used is not None]
    if len(pts) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def report(table, a, done, failed, calls, counts, anchor, heap_anchor, maps_anchor, rows, end, hwm, end_parts,
           heap_end, maps_end, trimmed):
    log = lambda *x: print(*x, file=sys.stderr, flush=True)
    log(f"soak.py: {done:,} scrapes ({failed} non-2xx), kubelet List calls: {calls}, hostile connections: "
        f"cut {counts[0]}, chunk extension {counts[1]}, garbage {counts[2]}, silent {counts[3]}")
    mib = lambda b: f"{b / 2**20:.2f}" if b is not None else "?"
    log("  scrapes | agent RSS MiB | against the anchor | anonymous (heap) MiB | file-backed MiB | "
        "allocator's bytes in use MiB")
    for n, rss, (anon, filed), used in rows:
        log(f"  {n:,} | {rss / 1024:.2f} | {(rss - anchor) / 1024:+.2f} MiB | {anon / 1024:.2f} | {filed / 1024:.2f} | "
            f"{mib(used)}")
    log(f"  end, hostile clients stopped 3 s before | {end / 1024:.2f} | {(end - anchor) / 1024:+.2f} MiB | "
        f"{end_parts[0] / 1024:.2f} | {end_parts[1] / 1024:.2f} | {mib(heap_end)}")
    rss_of = lambda maps, k: maps.get(k, (0, 0))[1]
    grown = sorted(((rss_of(maps_end, k) - rss_of(maps_anchor, k), k) for k in set(maps_end) | set(maps_anchor)),
                   reverse=True)
    log("  mappings whose RSS grew most from the anchor to the end (start, name: size, RSS at the anchor -> end):")
    for d, k in grown[:6]:
        log(f"    {k[0]} {k[1]}: {maps_end.get(k, (0, 0))[0]} KiB mapped, {rss_of(maps_anchor, k)} -> "
            f"{rss_of(maps_end, k)} KiB ({d:+d})")

    scrapes = "10^6" if a.scrapes == 1_000_000 else f"{a.scrapes:,}"
    causes = [c for c, off in (("pods churning", a.no_churn), (f"{sum(counts):,} hostile connections", a.no_hostile))
              if not off]
    causes = ", ".join(causes) or "no churn, no hostile clients"
    drift = (end - anchor) / 1024
    table.row(f"agent RSS after {scrapes} scrapes (`gpulse agent -k` on k8s-8xH100, {done:,} scrapes, "
              f"{failed} non-2xx, {causes}, {calls:,} kubelet Lists), 3 s after the hostile clients stop",
              f"{end / 1024:.2f} MiB ({drift:+.2f} MiB)", f"the agent's own RSS after its first {FIRST:,} scrapes",
              f"{anchor / 1024:.2f} MiB", "", judge([drift], "<", 1, "drift < 1 MiB"))
    drifts = [(r - anchor) / 1024 for _, r, _, _ in rows[1:]]
    table.row(f"the same at each 10^5 scrapes and at the last, against the anchor ({len(drifts)} "
              f"reading{'s' if len(drifts) > 1 else ''}); peak RSS (VmHWM)",
              f"{spread(drifts, '{:+.2f}', ' MiB')}; peak {hwm / 1024:.2f} MiB", "", "", "", "")
    if heap_anchor is not None and heap_end is not None:
        slope = trend(rows + [(done, end, end_parts, heap_end)])
        used = [u / 2**20 for _, _, _, u in rows[1:] if u is not None]
        table.row("the allocator's bytes in use (glibc `malloc_stats`, all arenas) at the end; at each 10^5 scrapes "
                  "and the last: "
                  f"{spread(used, '{:.2f}', ' MiB')}; trend {slope:+.3f} MiB per 10^5 scrapes",
                  f"{heap_end / 2**20:.2f} MiB", "the same at the anchor", f"{heap_anchor / 2**20:.2f} MiB", "",
                  judge([slope], "<", 0.1, "no leak (trend < 0.1 MiB per 10^5 scrapes, 1 MiB per 10^6)"))
    else:
        table.row("the allocator's bytes in use (glibc `malloc_stats`)", "n/a (no gdb)", "", "", "", "not measured")
    if trimmed is not None:
        table.row("RSS after `malloc_trim(0)` at the end (gdb): what is left with every free page handed back",
                  f"{trimmed / 1024:.2f} MiB ({(trimmed - anchor) / 1024:+.2f} MiB)", "the anchor",
                  f"{anchor / 1024:.2f} MiB", "", "")
    table.print(head=a.head, end=True)


if __name__ == "__main__":
    sys.exit(main())
