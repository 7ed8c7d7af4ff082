"""bench/RESULTS.md's "Exporter in Kubernetes mode with 5,000 pods at the kubelet" (issue 20), its
scrape rows (bench/exporter/attribution_report.py prints the table's last rows, from attribution_bench,
after it: bench/run.sh kubernetes runs both).

`gpulse exporter -k` on `k8s-8xH100` with 5,000 more pods known to a fake kubelet
(tests/e2e/fake_kubelet.py: a List answer of 4.9 MB), against the anchor, the same exporter without
-k; beside them -k against a kubelet of only the node's 4 GPU pods and (unless
--no-same-size-anchor) the exporter without -k given a counters file (-f) of the built-in counters
plus as many more device fields as make its page at least as large as the 4-pod -k exporter's, so
that the part of a ratio that is the page's size alone can be read apart from Kubernetes mode's work.

What it measures, ROUNDS rounds (default 5), each round running every exporter once, the order
rotated every round so that every exporter runs in every place (whatever else the machine does falls
on all alike); figures are medians of the rounds with their spread, ratios are taken round by round:
  - paced wrk (`-c1`, 10 ms between requests, paced.lua, DURATION s): p50/p99, and each exporter's
    CPU per 1,000 scrapes (results.cpu_seconds of its /proc/PID/stat before and after the run);
  - closed loop on one connection (`wrk -t1 -c1`, unpaced, DURATION/2 s): CPU per 1,000 scrapes
    again, over thirty times the scrapes, so that the 10 ms tick of /proc's CPU counters weighs little:
    the main ratio with the paced p99;
  - the kubelet's List calls during those runs against the number of scrapes (the kubelet is never
    called on the scrape path: only at start and every --kubelet-refresh-ms, default 5 s);
  - each exporter's RSS after each round;
  - CPU per List of the 5,004-pod answer: an exporter with `-k --kubelet-refresh-ms 250` and
    nobody scraping (so that the List is nearly all it does), LIST_SECONDS s measured after 2 s,
    LIST_ROUNDS (3) exporters one after the other; no anchor (a figure of its own).
With --gzip every scrape asks for `Accept-Encoding: gzip`, as a Prometheus server does by default;
with --min-refresh-ms N every exporter gets that flag (default: the exporter's 100 ms).
Time: 6 x DURATION x ROUNDS + (LIST_SECONDS + 2) x LIST_ROUNDS + about 40 s: about 6.5 minutes
with the defaults (10 s, 5 rounds; 10 s, 3 list rounds); with attribution_bench (about 20 s), the area
takes about 7 minutes.

The table is printed without the blank line that ends it, so that attribution_report.py's rows
continue it.

Usage: /usr/bin/python3 bench/exporter/kubernetes.py BUILD_DIR [--duration SECONDS] [--rounds N] [--gzip]
       [--min-refresh-ms N] [--no-same-size-anchor] [--list-seconds S] [--list-rounds N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench import (Table, bench_args, col, command_line, fetch, fmt_for, free_port, gzip_size, judge, loaded, per,
                   ratio, rotated, rss_kib, spread, start_exporter, stop, wrk, wrk_errors)
import results

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
os.environ.setdefault("GPULSE_SOURCE_DIR", SOURCE)

from fake_kubelet import FakeKubelet, filler_pods  # noqa: E402

PROCFS = os.path.join(SOURCE, "tests", "testdata", "procfs", "k8s-8xH100")
PODS = 5000
TITLE = "Exporter in Kubernetes mode with 5,000 pods at the kubelet (issue 20)"
BASE, BIG, SMALL = "without -k", "-k, 5,004 pods", "-k, 4 pods"


def start(gpulse, port, extra):
    """`gpulse exporter --simulate k8s-8xH100 --procfs-root PROCFS` with `extra` on 127.0.0.1:port."""
    return start_exporter(gpulse, port, ["--simulate", "k8s-8xH100", "--procfs-root", PROCFS, *extra])


def uuids(gpulse):
    out = subprocess.run([gpulse, "devices", "--simulate", "k8s-8xH100", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return {d["index"]: d["uuid"] for d in json.loads(out)["devices"]}


def node_pods(u):
    gpu = "nvidia.com/gpu"
    return [("ml", "train-0", [("trainer", [(gpu, [u[0], u[1], u[2], u[3]])])]),
            ("serving", "vllm-0", [("vllm", [(gpu, [u[4] + "::1", u[5] + "::0"])])]),
            ("serving", "embed-0", [("embed", [(gpu, [u[4] + "::2"])])]),
            ("batch", "batch-0", [("worker-a", [(gpu, [u[6] + "::0"])]), ("worker-b", [(gpu, [u[6] + "::1"])])])]


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
    builtin = subprocess.run([gpulse, "exporter", "--simulate", "k8s-8xH100", "--print-counters"],
                             capture_output=True, text=True, check=True).stdout
    have = {line.split(",")[0].strip() for line in builtin.splitlines() if line and not line.startswith("#")}
    catalogue = json.loads(subprocess.run([gpulse, "fields", "--format", "json"], capture_output=True, text=True,
                                          check=True).stdout)
    extra = [f for f in catalogue if f["backends"].get("nvml") and f["name"] not in have
             and not f["name"].startswith("DCGM_FI_PROF_") and f["prometheus_type"] in ("gauge", "counter")]
    lines = builtin.rstrip("\n").splitlines()
    size = 0
    for n, f in enumerate(extra, 1):
        lines.append(f"{f['name']}, {f['prometheus_type']}, {f['help'].replace(',', ';')}")
        with open(path, "w") as out:
            out.write("\n".join(lines) + "\n")
        size = len(once(gpulse, ["-f", path]))
        if size >= target:
            return n, size
    raise SystemExit(f"the catalogue's fields make a page of {size:,} B, not {target:,} B")


def cpu_per_list(gpulse, path, kubelet, seconds, rounds):
    """CPU per List (ms) of an exporter with `-k --kubelet-refresh-ms 250` on the kubelet at `path`
    that nobody scrapes, `rounds` exporters one after the other: [ms, ...]."""
    out = []
    for _ in range(rounds):
        p = start(gpulse, free_port(), ["-k", "--pod-resources-kubelet-socket", path, "--kubelet-refresh-ms", "250"])
        try:
            time.sleep(2)
            c0, l0 = results.cpu_seconds(p.pid), kubelet.calls
            time.sleep(seconds)
            c1, l1 = results.cpu_seconds(p.pid), kubelet.calls
        finally:
            stop([p])
        out.append(1000 * (c1 - c0) / max(1, l1 - l0))
    return out


def main():
    def more(ap):
        ap.add_argument("--gzip", action="store_true")
        ap.add_argument("--min-refresh-ms", type=int)
        ap.add_argument("--same-size-anchor", action=argparse.BooleanOptionalAction, default=True)
        ap.add_argument("--list-seconds", type=float, default=10)
        ap.add_argument("--list-rounds", type=int, default=3)

    a, gpulse, _ = bench_args(more, rounds=5)
    closed_s = max(1, a.duration // 2)
    tab = Table(TITLE, command_line("/usr/bin/python3 bench/exporter/kubernetes.py"))
    refresh = [] if a.min_refresh_ms is None else ["--min-refresh-ms", str(a.min_refresh_ms)]
    headers = {"Accept-Encoding": "gzip"} if a.gzip else {}
    wrk_headers = [f"{k}: {v}" for k, v in headers.items()]
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "kubelet.sock")
    small_sock = os.path.join(tmp.name, "small.sock")
    u = uuids(gpulse)
    kubelet = FakeKubelet(sock, node_pods(u) + filler_pods(PODS))
    small = FakeKubelet(small_sock, node_pods(u))
    answer = kubelet.answer_size()
    modes = {BASE: [], BIG: ["-k", "--pod-resources-kubelet-socket", sock],
             SMALL: ["-k", "--pod-resources-kubelet-socket", small_sock]}
    procs, urls = {}, {}
    same = None
    try:
        for name, extra in modes.items():
            port = free_port()
            procs[name] = start(gpulse, port, extra + refresh)
            urls[name] = f"http://127.0.0.1:{port}/metrics"
        for url in urls.values():
            wrk(url, 2, connections=1, paced=True, headers=wrk_headers, body=False)  # warm up
        if a.same_size_anchor:
            # A served page has more than --once prints (the exporter's own counters, and the rates,
            # which come from a second read): the same for both exporters without -k, so the target
            # is the served -k page (after the warm-up) less that difference.
            served = {k: len(fetch(urls[k])[1]) for k in (BASE, SMALL)}
            target = served[SMALL] - (served[BASE] - len(once(gpulse, [])))
            counters = os.path.join(tmp.name, "same-size.csv")
            added, _ = same_size_counters(gpulse, target, counters)
            same = f"without -k, {added} more fields"
            port = free_port()
            procs[same] = start(gpulse, port, ["-f", counters] + refresh)
            urls[same] = f"http://127.0.0.1:{port}/metrics"
            wrk(urls[same], 2, connections=1, paced=True, headers=wrk_headers, body=False)
        paced = {k: [] for k in urls}
        closed = {k: [] for k in urls}
        rss = {k: [] for k in urls}
        calls_before, t0 = kubelet.calls, time.monotonic()
        for i in range(a.rounds):
            for k in rotated(list(urls), i):
                paced[k].append(loaded(procs[k].pid, urls[k], a.duration, connections=1, paced=True,
                                       headers=wrk_headers))
            for k in rotated(list(urls), i):
                closed[k].append(loaded(procs[k].pid, urls[k], closed_s, connections=1, headers=wrk_headers))
            for k, p in procs.items():
                rss[k].append(rss_kib(p.pid)[0] / 1024)
        calls, elapsed = kubelet.calls - calls_before, time.monotonic() - t0
        bodies = {k: fetch(url)[1] for k, url in urls.items()}
        sizes = {k: gzip_size(url) if a.gzip else len(bodies[k]) for k, url in urls.items()}
        stop(list(procs.values()))
        procs = {}
        per_list = cpu_per_list(gpulse, sock, kubelet, a.list_seconds, a.list_rounds)
    finally:
        stop(list(procs.values()))
        kubelet.stop()
        small.stop()
        tmp.cleanup()

    ms = lambda xs: spread(xs, fmt_for(xs), " ms")  # noqa: E731
    sec = lambda xs: spread(xs, fmt_for(xs), " s")  # noqa: E731
    p99 = {k: col(v, "p99") for k, v in paced.items()}
    pcpu = {k: col(v, "cpu_per_1000") for k, v in paced.items()}
    ccpu = {k: col(v, "cpu_per_1000") for k, v in closed.items()}
    page = lambda k: f"{series(bodies[k]):,} series, {sizes[k]:,} B{' gzipped' if a.gzip else ''}"  # noqa: E731
    gz = " -H 'Accept-Encoding: gzip'" if a.gzip else ""
    mr = f", every exporter with `--min-refresh-ms {a.min_refresh_ms}`" if refresh else ""
    tab.note = (f"A fake kubelet (`tests/e2e/fake_kubelet.py`) answers List with the `k8s-8xH100` node's 4 GPU pods "
                f"plus {PODS:,} CPU-only pods ({answer:,} bytes); a second with the 4 GPU pods only. Side by side: "
                "the exporter without `-k` (the anchor), "
                + ("the same with a page as large as Kubernetes mode's (-f with more fields), " if same else "")
                + f"and `-k` on each kubelet{mr}; paced wrk (`-c1`, 10 ms between requests, {a.duration} s) and a "
                f"closed loop on one connection ({closed_s} s){gz and ', every scrape asking for gzip'}, "
                f"{a.rounds} rounds, the order rotated every round; medians with the lowest and highest round, "
                "ratios round by round.")
    errors = wrk_errors({**{f"{k}, paced": v for k, v in paced.items()}, **{f"{k}, closed loop": v for k, v in closed.items()}})
    if errors:
        tab.note += "\n\n" + "\n\n".join(errors)

    r99 = per(p99[BIG], p99[BASE])
    tab.row(f"paced p99, `-k`, 5,004 pods (p50 {ms(col(paced[BIG], 'p50'))})", ms(p99[BIG]),
            f"the exporter without `-k` (p50 {ms(col(paced[BASE], 'p50'))})", ms(p99[BASE]), ratio(r99),
            judge(r99, "<=", 1.2, "≤ 1.2×"))
    per_read = statistics.median(col(closed[BIG], "rps")) / 10 if not refresh else None
    reads = f", about {per_read:,.0f} answers per device read" if per_read else ""
    tab.row(f"CPU per 1,000 scrapes, `-k`, 5,004 pods, closed loop on one connection{reads}", sec(ccpu[BIG]),
            "the exporter without `-k`", sec(ccpu[BASE]), ratio(per(ccpu[BIG], ccpu[BASE])), "",
            f"as above (`wrk -t1 -c1 -d{closed_s}s{gz}`)")
    tab.row("CPU per 1,000 paced scrapes, `-k`, 5,004 pods / 4 pods", f"{sec(pcpu[BIG])} / {sec(pcpu[SMALL])}",
            "the exporter without `-k`", sec(pcpu[BASE]),
            f"{ratio(per(pcpu[BIG], pcpu[BASE]))} / {ratio(per(pcpu[SMALL], pcpu[BASE]))}")
    tab.row("paced p99, `-k`, 4 pods", ms(p99[SMALL]), "as above", "as above", ratio(per(p99[SMALL], p99[BASE])))
    tab.row("CPU per 1,000 scrapes, `-k`, 4 pods, closed loop", sec(ccpu[SMALL]), "as above", "as above",
            ratio(per(ccpu[SMALL], ccpu[BASE])))
    if same:
        tab.row(f"paced p99, without `-k`, a page of the same size ({page(same)})", ms(p99[same]),
                "as above", "as above", ratio(per(p99[same], p99[BASE])))
        tab.row("CPU per 1,000 scrapes, the same-size page, closed loop", sec(ccpu[same]), "as above", "as above",
                ratio(per(ccpu[same], ccpu[BASE])))
    tab.row("the page, `-k` 5,004 pods / 4 pods", f"{page(BIG)} / {page(SMALL)}", "the exporter without `-k`", page(BASE))
    expected = int(elapsed * 1000 / 5000) + 1  # the timer's Lists; the one at start came before t0
    scrapes = sum(r["requests"] for r in paced[BIG] + closed[BIG])
    tab.row("kubelet calls on the scrape path",
            f"none: {calls} Lists in the {elapsed:,.0f} s of runs, one every 5 s ({scrapes:,} scrapes of the "
            "5,004-pod exporter)", "", "", "", judge([calls], "<=", expected, "none"))
    mib = lambda xs: spread(xs, "{:.1f}", " MiB")  # noqa: E731
    tab.row("RSS, `-k` 5,004 pods / 4 pods", f"{mib(rss[BIG])} / {mib(rss[SMALL])}", "the exporter without `-k`",
            mib(rss[BASE]))
    tab.row(f"CPU per List of the {answer / 1e6:.1f} MB 5,004-pod answer (`-k --kubelet-refresh-ms 250`, nobody "
            f"scraping, {a.list_seconds:g} s each, {a.list_rounds} exporters)", spread(per_list, fmt_for(per_list), " ms"))
    tab.print(end=False)  # attribution_report.py continues it


if __name__ == "__main__":
    sys.exit(main())
