"""Exporter scrape latency on a MIG node (issue 11): gpulse exporter on `mig-8xA100` (8 GPUs x 7 GPU
instances: 64 entities with readings, 120 in all) against the same exporter on `8xH100` (8 GPUs, the
earlier per-device figure) and prometheus-node-exporter, side by side in one run, each loaded by
the same paced wrk run (10 ms between requests) on loopback. Paced runs alternate between the
exporters ROUNDS times and the medians are compared. Two refresh settings: the default
(--min-refresh-ms 100: reads shared between scrapes) and 0 (every scrape reads every entity).

Usage: /usr/bin/python3 bench/exporter/mig.py BUILD_DIR [--duration SECONDS] [--rounds N]
"""
import os
import subprocess
import sys
import time

from bench import bench_args, fetch, free_port, median_run, rss_kib, start_node_exporter, wrk


def start(gpulse, scenario, port, refresh_ms):
    p = subprocess.Popen([gpulse, "exporter", "--simulate", scenario, "-a", f"127.0.0.1:{port}",
                          "--min-refresh-ms", str(refresh_ms)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if fetch(f"http://127.0.0.1:{port}/metrics")[0] == 200:
            return p
        time.sleep(0.01)
    p.kill()
    raise SystemExit(f"gpulse exporter --simulate {scenario} did not start")


def series(body):
    return sum(1 for line in body.splitlines() if line and not line.startswith("#"))


def main():
    a, gpulse, load = bench_args()
    procs, urls = {}, {}
    for scenario in ("8xH100", "mig-8xA100"):
        for refresh in (100, 0):
            port = free_port()
            procs[(scenario, refresh)] = start(gpulse, scenario, port, refresh)
            urls[(scenario, refresh)] = f"http://127.0.0.1:{port}/metrics"
    nport = free_port()
    node, _ = start_node_exporter(nport)
    nurl = f"http://127.0.0.1:{nport}/metrics"
    runs = {k: [] for k in urls}
    node_runs = []
    try:
        for url in list(urls.values()) + [nurl]:
            wrk(url, 2)  # warm up
        for _ in range(a.rounds):
            for k, url in urls.items():
                runs[k].append(wrk(url, a.duration, connections=1, paced=True))
            node_runs.append(wrk(nurl, a.duration, connections=1, paced=True))
        bodies = {k: fetch(url)[1] for k, url in urls.items()}
        rss = {k: rss_kib(p.pid)[0] for k, p in procs.items()}
    finally:
        for p in list(procs.values()) + [node]:
            p.terminate()
            p.wait(timeout=30)
    med = {k: median_run(v) for k, v in runs.items()}
    nmed = median_run(node_runs)
    print(f"paced: wrk -t1 -c1 -d{a.duration}s --latency -s bench/exporter/paced.lua (10 ms between requests), "
          f"{a.rounds} alternating rounds, medians; loopback, {os.cpu_count()} CPUs, load average at start {load}\n")
    print("| exporter | --min-refresh-ms | series | body | paced p50 | paced p99 (runs) | RSS | p99 vs 8xH100 | p99 vs node_exporter |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (scenario, refresh), m in med.items():
        base = med[("8xH100", refresh)]["p99"]
        body = bodies[(scenario, refresh)]
        print(f"| gpulse `{scenario}` | {refresh} | {series(body)} | {len(body):,} B | {m['p50']:.3f} ms | "
              f"{m['p99']:.3f} ms ({m['all_p99']}) | {rss[(scenario, refresh)] / 1024:.1f} MiB | "
              f"{m['p99'] / base:.2f}x | {m['p99'] / nmed['p99']:.3f}x |")
    print(f"| node_exporter (defaults) | | | | {nmed['p50']:.3f} ms | {nmed['p99']:.3f} ms ({nmed['all_p99']}) | | | 1x |")
    for k, v in list(med.items()) + [("node_exporter", nmed)]:
        if v["errors"]:
            print(f"\nwrk reported for {k}: {v['errors']}")


if __name__ == "__main__":
    sys.exit(main())
