"""Exporter scrapes in Kubernetes mode (issue 20): `gpulse exporter -k` on `k8s-8xH100` with 5,000
more pods known to a fake kubelet (tests/e2e/fake_kubelet.py: a List answer over 4 MiB), against
the same exporter without -k and with -k against a kubelet of only the node's 4 GPU pods, side by side
in one run, both loaded by the same paced wrk run
(10 ms between requests) on loopback, ROUNDS rounds, each starting one exporter further on (so
that every exporter runs in every place of a round); medians compared. Also: each
exporter's CPU time per 1,000 scrapes (utime + stime from /proc/PID/stat over its wrk runs), the
TCP segments this host sends per scrape (nstat's TcpOutSegs over 300 sequential scrapes on one
connection: loopback carries at most 64 KiB per segment, so a larger page takes more), and the
kubelet's List calls against the number of scrapes (the kubelet is never called on the scrape path:
only at start and every --kubelet-refresh-ms, default 5 s). Under the table: each ratio's 95%
interval from the rounds drawn again with replacement (ratio_interval), and the place's effect.
bench/exporter/pool_runs.py gives the same from saved outputs, and over several runs pooled.

With --same-size-anchor a fourth exporter runs beside them: the exporter without -k given a
counters file (-f) of the built-in counters plus as many more device fields as make its page at
least as large as the 4-pod -k exporter's, so that the part of the ratio that is the page's size
alone can be read apart from Kubernetes mode's own work.

With --gzip every scrape (wrk's, the segment count's) asks for `Accept-Encoding: gzip`, as a
Prometheus server does by default; the body column is then the compressed size. With
--min-refresh-ms N every exporter gets that flag (default: the exporter's 100 ms).

Usage: /usr/bin/python3 bench/exporter/kubernetes.py BUILD_DIR [--duration SECONDS] [--rounds N] [--gzip]
       [--min-refresh-ms N] [--same-size-anchor]
"""
import http.client
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from bench import bench_args, cpu_s, fetch, free_port, median_run, rss_kib, wrk

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
os.environ.setdefault("GPULSE_SOURCE_DIR", SOURCE)

from fake_kubelet import FakeKubelet, filler_pods  # noqa: E402

PROCFS = os.path.join(SOURCE, "tests", "testdata", "procfs", "k8s-8xH100")
PODS = 5000


def start(gpulse, port, extra):
    p = subprocess.Popen([gpulse, "exporter", "--simulate", "k8s-8xH100", "--procfs-root", PROCFS,
                          "-a", f"127.0.0.1:{port}", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if fetch(f"http://127.0.0.1:{port}/metrics")[0] == 200:
            return p
        time.sleep(0.01)
    p.kill()
    raise SystemExit("gpulse exporter did not start")


def uuids(gpulse):
    import json
    out = subprocess.run([gpulse, "devices", "--simulate", "k8s-8xH100", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return {d["index"]: d["uuid"] for d in json.loads(out)["devices"]}


def node_pods(u):
    gpu = "nvidia.com/gpu"
    return [("ml", "train-0", [("trainer", [(gpu, [u[0], u[1], u[2], u[3]])])]),
            ("serving", "vllm-0", [("vllm", [(gpu, [u[4] + "::1", u[5] + "::0"])])]),
            ("serving", "embed-0", [("embed", [(gpu, [u[4] + "::2"])])]),
            ("batch", "batch-0", [("worker-a", [(gpu, [u[6] + "::0"])]), ("worker-b", [(gpu, [u[6] + "::1"])])])]


def tcp_out_segments():
    out = subprocess.run(["nstat", "-az", "TcpOutSegs"], capture_output=True, text=True, check=True).stdout
    return int(out.split("TcpOutSegs")[1].split()[0])


def scrape(c, headers):
    """One GET /metrics on connection c: the body's size as sent."""
    c.request("GET", "/metrics", headers=headers)
    return len(c.getresponse().read())


def segments_per_scrape(port, headers, n=300):
    """TCP segments sent by this host (both ends are here) per scrape of /metrics, request and
    acknowledgements included, and the body's size as sent."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(20):
        scrape(c, headers)
    before = tcp_out_segments()
    for _ in range(n):
        size = scrape(c, headers)
    c.close()
    return (tcp_out_segments() - before) / n, size


def stop_all(procs, kubelets, tmp):
    """Stops the exporters, then the fake kubelets, and removes the temporary directory."""
    for p in procs:
        p.terminate()
        p.wait(timeout=30)
    for kubelet in kubelets:
        kubelet.stop()
    tmp.cleanup()


def series(body):
    return sum(1 for line in body.splitlines() if line and not line.startswith("#"))


def once(gpulse, extra):
    """One /metrics page of the scenario, rendered by `gpulse exporter --once`."""
    return subprocess.run([gpulse, "exporter", "--simulate", "k8s-8xH100", "--procfs-root", PROCFS, "--once", *extra],
                          capture_output=True, text=True, check=True).stdout


def same_size_counters(gpulse, target, path):
    """Writes to `path` the built-in counters plus device fields (no profiling ones) not among them,
    one more at a time until the page without -k is at least `target` bytes. Returns the number of
    fields added and the page's size."""
    import json
    builtin = subprocess.run([gpulse, "exporter", "--simulate", "k8s-8xH100", "--print-counters"],
                             capture_output=True, text=True, check=True).stdout
    have = {line.split(",")[0].strip() for line in builtin.splitlines() if line and not line.startswith("#")}
    catalogue = json.loads(subprocess.run([gpulse, "fields", "--format", "json"], capture_output=True, text=True,
                                          check=True).stdout)
    extra = [f for f in catalogue if f["backends"].get("nvml") and f["name"] not in have
             and not f["name"].startswith("DCGM_FI_PROF_") and f["prometheus_type"] in ("gauge", "counter")]
    lines = builtin.rstrip("\n").splitlines()
    for n, f in enumerate(extra, 1):
        lines.append(f"{f['name']}, {f['prometheus_type']}, {f['help'].replace(',', ';')}")
        with open(path, "w") as out:
            out.write("\n".join(lines) + "\n")
        size = len(once(gpulse, ["-f", path]))
        if size >= target:
            return n, size
    raise SystemExit(f"the catalogue's fields make a page of {size:,} B, not {target:,} B")


def rotated(names, i):
    """The order of round i: each round starts one exporter further on, so that every exporter
    runs in every place of a round, equally often when the rounds are a multiple of the exporters
    (a fixed order gives each exporter always the same place, after the same other)."""
    k = i % len(names)
    return names[k:] + names[:k]


def by_place(runs, positions):
    """Median over exporters of each run's p99 against its exporter's median p99, per place in the
    round: how much the place itself moves a p99 (1.00 everywhere: no effect)."""
    ratios = {}
    for k, rs in runs.items():
        med = statistics.median(r["p99"] for r in rs)
        for r, place in zip(rs, positions[k]):
            ratios.setdefault(place, []).append(r["p99"] / med)
    return [round(statistics.median(ratios[p]), 2) for p in sorted(ratios)]


def upper_median(xs):
    """The middle value, the upper one of an even count (the run median_run picks)."""
    return sorted(xs)[len(xs) // 2]


def ratio_interval(runs, base, k, resamples=2000, seed=20):
    """The 2.5th and 97.5th percentiles of k's median p99 over base's when the rounds are drawn again
    with replacement (a paired bootstrap: both exporters' runs of one round stay together, as they
    shared the machine's state then): how far the ratio of one run of the bench can be trusted."""
    rng = random.Random(seed)
    n = len(runs[base])
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(upper_median([runs[k][i]["p99"] for i in idx]) /
                      upper_median([runs[base][i]["p99"] for i in idx]))
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def main():
    def more(ap):
        ap.add_argument("--gzip", action="store_true")
        ap.add_argument("--min-refresh-ms", type=int)
        ap.add_argument("--same-size-anchor", action="store_true")

    a, gpulse, load = bench_args(more)
    refresh = [] if a.min_refresh_ms is None else ["--min-refresh-ms", str(a.min_refresh_ms)]
    headers = {"Accept-Encoding": "gzip"} if a.gzip else {}
    wrk_headers = [f"{k}: {v}" for k, v in headers.items()]
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "kubelet.sock")
    small_sock = os.path.join(tmp.name, "small.sock")
    kubelet = FakeKubelet(sock, node_pods(uuids(gpulse)) + filler_pods(PODS))
    small = FakeKubelet(small_sock, node_pods(uuids(gpulse)))
    answer = kubelet.answer_size()
    modes = {"without -k": [], "-k, 5,004 pods": ["-k", "--pod-resources-kubelet-socket", sock],
             "-k, 4 pods": ["-k", "--pod-resources-kubelet-socket", small_sock]}
    procs, urls = {}, {}
    try:
        for name, extra in modes.items():
            port = free_port()
            procs[name] = start(gpulse, port, extra + refresh)
            urls[name] = f"http://127.0.0.1:{port}/metrics"
        if a.same_size_anchor:
            # A served page has more than --once prints (the exporter's own counters): the same for
            # both exporters without -k, so the target is the served -k page less that difference.
            served = {k: len(fetch(urls[k])[1]) for k in ("without -k", "-k, 4 pods")}
            target = served["-k, 4 pods"] - (served["without -k"] - len(once(gpulse, [])))
            counters = os.path.join(tmp.name, "same-size.csv")
            added, _ = same_size_counters(gpulse, target, counters)
            name = f"without -k, {added} more fields"
            port = free_port()
            procs[name] = start(gpulse, port, ["-f", counters] + refresh)
            order = ["without -k", name, "-k, 5,004 pods", "-k, 4 pods"]
            urls = {k: urls[k] if k in urls else f"http://127.0.0.1:{port}/metrics" for k in order}
        for url in urls.values():
            wrk(url, 2, connections=1, paced=True, headers=wrk_headers)  # warm up
        runs = {k: [] for k in urls}
        cpu = {k: 0.0 for k in urls}
        scrapes = {k: 0 for k in urls}
        calls_before, t0 = kubelet.calls, time.monotonic()
        positions = {k: [] for k in urls}  # each run's place in its round
        for i in range(a.rounds):
            for place, k in enumerate(rotated(list(urls), i)):
                c0 = cpu_s(procs[k].pid)
                r = wrk(urls[k], a.duration, connections=1, paced=True, headers=wrk_headers)
                cpu[k] += cpu_s(procs[k].pid) - c0
                scrapes[k] += round(r["rps"] * a.duration)
                runs[k].append(r)
                positions[k].append(place)
        calls, elapsed = kubelet.calls - calls_before, time.monotonic() - t0
        bodies = {k: fetch(url)[1] for k, url in urls.items()}
        segments = {k: segments_per_scrape(int(url.split(":")[2].split("/")[0]), headers) for k, url in urls.items()}
        rss = {k: rss_kib(p.pid)[0] for k, p in procs.items()}
    finally:
        stop_all(procs.values(), (kubelet, small), tmp)
    med = {k: median_run(v) for k, v in runs.items()}
    base = "without -k"
    gz = " -H 'Accept-Encoding: gzip'" if a.gzip else ""
    mr = f"; exporters with --min-refresh-ms {a.min_refresh_ms}" if refresh else ""
    print(f"paced: wrk -t1 -c1 -d{a.duration}s --latency{gz} -s bench/exporter/paced.lua (10 ms between requests){mr}, "
          f"{a.rounds} rounds, each starting one exporter further on, medians; loopback, {os.cpu_count()} CPUs, load average at start {load}; "
          f"fake kubelet answer {answer:,} B ({PODS + 4:,} pods)\n")
    print(f"| exporter | series | body{' (gzip)' if a.gzip else ''} | TCP segments per scrape | paced p50 | paced p99 (runs) | p99 vs without -k | CPU per 1,000 scrapes | RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, m in med.items():
        body = bodies[k]
        segs, sent = segments[k]
        print(f"| gpulse {k} | {series(body)} | {sent:,} B | {segs:.1f} | {m['p50']:.3f} ms | {m['p99']:.3f} ms ({m['all_p99']}) | "
              f"{m['p99'] / med[base]['p99']:.2f}x | {1000 * cpu[k] / max(1, scrapes[k]):.3f} s | {rss[k] / 1024:.1f} MiB |")
    print(f"\np99 vs without -k, 95% interval (the {a.rounds} rounds drawn again with replacement, 2,000 times): " +
          "; ".join(f"{k} {lo:.2f}x to {hi:.2f}x" for k in med if k != base
                    for lo, hi in [ratio_interval(runs, base, k)]))
    k8s = "-k, 5,004 pods"
    print(f"\nkubelet List calls during the {elapsed:.0f} s of paced runs: {calls} "
          f"(scrapes of the -k exporter in that time: {scrapes[k8s]:,}; one List every 5 s is {elapsed / 5:.0f})")
    print(f"\neach run's p99 over its exporter's median, median per place in the round (1st, 2nd, ...): "
          f"{', '.join(f'{x:.2f}' for x in by_place(runs, positions))}")
    for k, v in med.items():
        if v["errors"]:
            print(f"\nwrk reported for {k}: {v['errors']}")


if __name__ == "__main__":
    sys.exit(main())
