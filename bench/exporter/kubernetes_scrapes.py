"""Which scrapes make the tail in Kubernetes mode (issue 20): each scrape timed on its own, and told
apart by whether it started a device read (its gpulse_device_sample_age_seconds is under 2 ms: the
read was made for it) or copied a kept body. `gpulse exporter --simulate k8s-8xH100` without -k (the
anchor) and with -k on a fake kubelet of the node's 4 GPU pods, side by side, plain answers, one
keep-alive connection each, 10 ms between scrapes (as kubernetes.py's paced wrk), 1,000 scrapes
per exporter per round, alternating ROUNDS times. A Python client adds its own time to every scrape
of both exporters alike, so compare the rows, not the numbers with wrk's.

Usage: /usr/bin/python3 bench/exporter/kubernetes_scrapes.py BUILD [--rounds N]
"""
import http.client
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kubernetes as k8s  # noqa: E402  (sets up the fake kubelet's import path)
from bench import bench_args, free_port  # noqa: E402
from fake_kubelet import FakeKubelet  # noqa: E402

AGE = re.compile(rb'^gpulse_device_sample_age_seconds\{gpu="0"[^}]*\} (\S+)', re.M)
FRESH_S = 0.002


def scrapes(port, n):
    """(milliseconds, started a read) of n paced scrapes on one connection."""
    out = []
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(n):
        t0 = time.perf_counter_ns()
        c.request("GET", "/metrics")
        body = c.getresponse().read()
        ms = (time.perf_counter_ns() - t0) / 1e6
        out.append((ms, float(AGE.search(body).group(1)) < FRESH_S))
        time.sleep(0.01)
    c.close()
    return out


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main():
    a, gpulse, load = bench_args()
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "kubelet.sock")
    kubelet = FakeKubelet(sock, k8s.node_pods(k8s.uuids(gpulse)))
    modes = {"without -k": [], "-k, 4 pods": ["-k", "--pod-resources-kubelet-socket", sock]}
    procs, ports, got = {}, {}, {m: [] for m in modes}
    try:
        for name, extra in modes.items():
            ports[name] = free_port()
            procs[name] = k8s.start(gpulse, ports[name], extra)
        for name in modes:
            scrapes(ports[name], 100)  # warm up
        for _ in range(a.rounds):
            for name in modes:
                got[name] += scrapes(ports[name], 1000)
    finally:
        k8s.stop_all(procs.values(), (kubelet,), tmp)
    print(f"{a.rounds} alternating rounds of 1,000 paced scrapes (10 ms apart) per exporter; loopback, "
          f"{os.cpu_count()} CPUs, load average at start {load}\n")
    print("| exporter | all p50 | all p99 | read-starting scrapes | their p50 | their p90 | kept-body p50 | kept-body p99 | share of the slowest 1% that started a read |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rs in got.items():
        all_ms = [ms for ms, _ in rs]
        fresh = [ms for ms, f in rs if f]
        kept = [ms for ms, f in rs if not f]
        top = sorted(rs, reverse=True)[:max(1, len(rs) // 100)]
        share = sum(1 for _, f in top if f) / len(top)
        print(f"| gpulse {name} | {pct(all_ms, .5):.3f} ms | {pct(all_ms, .99):.3f} ms | {len(fresh):,} of {len(rs):,} | "
              f"{pct(fresh, .5):.3f} ms | {pct(fresh, .9):.3f} ms | {pct(kept, .5):.3f} ms | {pct(kept, .99):.3f} ms | {share:.0%} |")


if __name__ == "__main__":
    sys.exit(main())
