"""The scrape rows of bench/RESULTS.md's "Entities on a MIG node" (issue 11; its tick rows are the tick
area's, bench/tick_report.py): `gpulse exporter --simulate mig-8xA100` (8 GPUs x 7 GPU instances: 64
entities with readings) against the anchor, the same exporter on `8xH100` (8 GPUs), with
prometheus-node-exporter beside them, each on loopback.

What it measures, ROUNDS rounds (default 5), each round running every exporter once, the order
rotated every round so that each exporter runs in every place (whatever else the machine does falls
on all alike); figures are medians of the rounds with their spread, ratios are taken round by round:
  - paced wrk (`-c1`, 10 ms between requests, paced.lua) on the exporters at --min-refresh-ms 100
    (the default: reads shared between scrapes) and 0 (every scrape reads every entity), and on
    node_exporter: p50/p99, and the exporter's CPU per 1,000 scrapes (results.cpu_seconds of its
    /proc/PID/stat before and after the run);
  - closed loop on one connection (`wrk -t1 -c1`, unpaced) at --min-refresh-ms 100: requests/s
    and CPU per 1,000 answers of mig-8xA100 against 8xH100.
Time: 7 x DURATION x ROUNDS plus about 20 s: about 6 minutes with the defaults (10 s, 5 rounds).
Prints the RESULTS.md table (bench/results.py).

Usage: /usr/bin/python3 bench/exporter/mig.py BUILD_DIR [--duration SECONDS] [--rounds N]
"""
import sys

from bench import (Table, bench_args, col, command_line, fetch, fmt_for, free_port, judge, loaded, per, ratio, rotated,
                   spread, start_exporter, start_node_exporter, stop, wrk, wrk_errors)

SCENARIOS = ("8xH100", "mig-8xA100")
REFRESH = (100, 0)


def start(gpulse, scenario, port, refresh_ms):
    return start_exporter(gpulse, port, ["--simulate", scenario, "--min-refresh-ms", str(refresh_ms)], timeout=30)


def series(body):
    return sum(1 for line in body.splitlines() if line and not line.startswith("#"))


def measure(a, gpulse):
    procs, urls = {}, {}
    node = None
    try:
        for scenario in SCENARIOS:
            for refresh in REFRESH:
                port = free_port()
                procs[(scenario, refresh)] = start(gpulse, scenario, port, refresh)
                urls[(scenario, refresh)] = f"http://127.0.0.1:{port}/metrics"
        nport = free_port()
        node, _ = start_node_exporter(nport)
        procs["node"], urls["node"] = node, f"http://127.0.0.1:{nport}/metrics"
        for url in urls.values():
            wrk(url, 2, body=False)  # warm up
        paced = {k: [] for k in urls}
        closed = {s: [] for s in SCENARIOS}
        for i in range(a.rounds):
            for k in rotated(list(urls), i):
                paced[k].append(loaded(procs[k].pid, urls[k], a.duration, connections=1, paced=True))
            for s in rotated(SCENARIOS, i):
                closed[s].append(loaded(procs[(s, 100)].pid, urls[(s, 100)], a.duration, connections=1))
        bodies = {s: fetch(urls[(s, 100)])[1] for s in SCENARIOS}
    finally:
        stop(list(procs.values()))
    return paced, closed, bodies


def main():
    a, gpulse, _ = bench_args(rounds=5)
    tab = Table("Entities on a MIG node: tick and scrape with 8 GPUs × 7 instances (issue 11)",
                command_line("/usr/bin/python3 bench/exporter/mig.py"),
                note=("Scenario `mig-8xA100`: 8 A100s, each split into seven 1g.5gb MIG instances (8 GPUs and 56 GPU "
                      "instances with readings of their own). The scrape rows: the exporter on it against the same "
                      "exporter on `8xH100`, paced wrk (`-c1`, 10 ms between requests) and a closed loop on one "
                      f"connection, {a.rounds} rounds, the order rotated every round; medians with the lowest and "
                      "highest round, ratios round by round."))
    paced, closed, bodies = measure(a, gpulse)
    ms = lambda xs: spread(xs, fmt_for(xs), " ms")  # noqa: E731
    node_p99 = col(paced["node"], "p99")
    mig, h100 = ("mig-8xA100", 100), ("8xH100", 100)
    m_p99, h_p99 = col(paced[mig], "p99"), col(paced[h100], "p99")
    tab.row(f"scrape paced p99, mig-8xA100, `--min-refresh-ms 100` ({series(bodies['mig-8xA100']):,} series, "
            f"{len(bodies['mig-8xA100']):,} B; p50 {ms(col(paced[mig], 'p50'))})", f"**{ms(m_p99)}**",
            f"gpulse `8xH100`, same setting ({series(bodies['8xH100']):,} series; node_exporter: {ms(node_p99)})",
            ms(h_p99), f"{ratio(per(m_p99, h_p99))} (vs node_exporter {ratio(per(m_p99, node_p99), '{:.3f}')})",
            judge(m_p99, "<", 1, "< 1 ms"))
    mig0, h0 = ("mig-8xA100", 0), ("8xH100", 0)
    m0, h0_ = col(paced[mig0], "p99"), col(paced[h0], "p99")
    tab.row(f"the same with `--min-refresh-ms 0` (p50 {ms(col(paced[mig0], 'p50'))})", ms(m0),
            "gpulse `8xH100` at 0", ms(h0_), ratio(per(m0, h0_)), judge(m0, "<", 1, "< 1 ms at 0"))
    for refresh in REFRESH:
        mc, hc = col(paced[("mig-8xA100", refresh)], "cpu_per_1000"), col(paced[("8xH100", refresh)], "cpu_per_1000")
        tab.row(f"CPU per 1,000 paced scrapes, mig-8xA100, `--min-refresh-ms {refresh}`", spread(mc, fmt_for(mc), " s"),
                f"gpulse `8xH100` at {refresh}", spread(hc, fmt_for(hc), " s"), ratio(per(mc, hc)))
    m_rps, h_rps = col(closed["mig-8xA100"], "rps"), col(closed["8xH100"], "rps")
    us = lambda rps: spread([1e6 / r for r in rps], "{:.0f}", " µs")  # noqa: E731
    more_series = series(bodies["mig-8xA100"]) / series(bodies["8xH100"])
    tab.row("closed-loop throughput, one connection, `--min-refresh-ms 100`",
            f"{spread(m_rps, '{:,.0f}', ' req/s')} ({us(m_rps)} per response)", "gpulse `8xH100`",
            f"{spread(h_rps, '{:,.0f}', ' req/s')} ({us(h_rps)})",
            f"{ratio(per(h_rps, m_rps))} per response for {more_series:.1f}× the series", "",
            f"as above (`wrk -t1 -c1 -d{a.duration}s`)")
    mc, hc = col(closed["mig-8xA100"], "cpu_per_1000"), col(closed["8xH100"], "cpu_per_1000")
    tab.row("CPU per 1,000 closed-loop answers, one connection", spread(mc, fmt_for(mc), " s"), "gpulse `8xH100`",
            spread(hc, fmt_for(hc), " s"), ratio(per(mc, hc)), "", "as above")
    tab.print()
    named = {f"gpulse {k[0]} --min-refresh-ms {k[1]}, paced" if k != "node" else "node_exporter, paced": v
             for k, v in paced.items()}
    named.update({f"gpulse {s}, closed loop": v for s, v in closed.items()})
    for line in wrk_errors(named):
        print(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
