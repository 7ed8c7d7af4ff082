"""What a gzip answer costs the exporter (Prometheus asks for gzip by default), against the same
exporter's plain answer as the anchor, side by side in one run: `gpulse exporter --simulate
k8s-8xH100` (a 49.8 KB page) under a closed-loop wrk on one connection (-c1, unpaced), so that many
answers share one device read (--min-refresh-ms 100) and the exporter's CPU per answer is what an
answer costs beyond the read. Plain and gzip runs alternate ROUNDS times; CPU is the exporter's
utime + stime over its runs, per 1,000 answers. Given a second binary (an older build, in BUILD/bin
so that it finds the simulator), both are measured the same way in the same rounds.

Usage: /usr/bin/python3 bench/exporter/gzip_scrape.py BUILD [--other NAME] [--duration S] [--rounds N]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kubernetes as k8s  # noqa: E402  (the exporter start and CPU helpers)
from bench import bench_args, free_port, median_run, wrk  # noqa: E402

GZIP = ["Accept-Encoding: gzip"]


def main():
    a, gpulse, load = bench_args(lambda ap: ap.add_argument("--other"))
    binaries = {"gpulse": gpulse}
    if a.other:
        binaries[a.other] = os.path.join(a.build, "bin", a.other)
    procs, urls = {}, {}
    try:
        for name, path in binaries.items():
            port = free_port()
            procs[name] = k8s.start(path, port, [])
            urls[name] = f"http://127.0.0.1:{port}/metrics"
        runs = {(b, m): [] for b in binaries for m in ("plain", "gzip")}
        cpu = {key: 0.0 for key in runs}
        answers = {key: 0 for key in runs}
        for b, url in urls.items():  # warm up
            wrk(url, 1, connections=1)
            wrk(url, 1, connections=1, headers=GZIP)
        for _ in range(a.rounds):
            for (b, mode) in runs:
                c0 = k8s.cpu_s(procs[b].pid)
                r = wrk(urls[b], a.duration, connections=1, headers=GZIP if mode == "gzip" else ())
                cpu[(b, mode)] += k8s.cpu_s(procs[b].pid) - c0
                answers[(b, mode)] += round(r["rps"] * a.duration)
                runs[(b, mode)].append(r)
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(timeout=30)
    print(f"closed loop: wrk -t1 -c1 -d{a.duration}s --latency [-H 'Accept-Encoding: gzip'], {a.rounds} "
          f"alternating rounds, medians; loopback, {os.cpu_count()} CPUs, load average at start {load}\n")
    print("| binary | answer | requests/s | p50 | p99 | CPU per 1,000 answers | vs the plain answer |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (b, mode), rs in runs.items():
        m = median_run(rs)
        per = 1000 * cpu[(b, mode)] / max(1, answers[(b, mode)])
        plain = 1000 * cpu[(b, "plain")] / max(1, answers[(b, "plain")])
        rps = sorted(r["rps"] for r in rs)[len(rs) // 2]
        print(f"| {b} | {mode} | {rps:,.0f} | {m['p50']:.3f} ms | {m['p99']:.3f} ms | {per:.3f} s | {per / plain:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
