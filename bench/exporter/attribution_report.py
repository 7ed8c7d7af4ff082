"""The last rows of bench/RESULTS.md's "Exporter in Kubernetes mode with 5,000 pods at the kubelet"
(issue 20), from attribution_bench's Google Benchmark JSON: Kubernetes mode's work on each new
process list of the k8s-8xH100 node (13 listed processes, 4 GPU pods), the holders kept while the
same PIDs are listed (`BM_NewList/kept_holders`, what the exporter does) against the anchor, every
list worked out again (`BM_NewList/every_list`, what it did before), both in the same program run.

Reads every repetition (run with --benchmark_repetitions=N, not --benchmark_report_aggregates_only;
bench/run.sh kubernetes runs 5): each figure is the median of the repetitions with their lowest and
highest, the ratio is taken repetition by repetition (kept / every, the i-th of each), on the CPU
time of the process (what other processes on the machine disturb least) and on wall time beside it.
A JSON of aggregates only gives the medians, as one run. Time: under a second (the benchmark itself,
5 repetitions of the two, about 15 s).

Prints the rows only, without the table's title and header, and the blank line that ends the
table: they continue the table bench/exporter/kubernetes.py printed just before. --table prints a
whole table of its own (title and header).

Usage: build/bin/attribution_bench --benchmark_repetitions=5 --benchmark_format=json \\
           --benchmark_out=F --benchmark_out_format=json
       /usr/bin/python3 bench/exporter/attribution_report.py F [--table]
"""
import json
import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for results.py

from results import Table, ratio, spread  # noqa: E402

KEPT, EVERY = "BM_NewList/kept_holders", "BM_NewList/every_list"
UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
COMMAND = ("`build/bin/attribution_bench --benchmark_repetitions=5 --benchmark_format=json --benchmark_out=F "
           "--benchmark_out_format=json && /usr/bin/python3 bench/exporter/attribution_report.py F` "
           "(part of `bash bench/run.sh kubernetes`)")


def repetitions(doc, name, key):
    """The benchmark's `key` time (µs) of each repetition, in repetition order; the median aggregate
    alone where the JSON has no repetitions."""
    runs = [b for b in doc["benchmarks"] if b.get("run_name", b["name"]) == name and b.get("run_type") == "iteration"]
    if not runs:
        runs = [b for b in doc["benchmarks"] if b.get("run_name") == name and b.get("aggregate_name") == "median"]
    if not runs:
        raise SystemExit(f"attribution_report: no {name} in the JSON")
    runs.sort(key=lambda b: b.get("repetition_index", 0))
    return [b[key] * UNIT_US[b.get("time_unit", "ns")] for b in runs]


def main():
    args = sys.argv[1:]
    whole = "--table" in args
    paths = [x for x in args if x != "--table"]
    if len(paths) != 1:
        raise SystemExit(__doc__.split("Usage: ")[1])
    with open(paths[0], encoding="utf-8") as f:
        doc = json.load(f)
    tab = Table("Exporter in Kubernetes mode with 5,000 pods at the kubelet (issue 20)", COMMAND)
    us = lambda xs: spread(xs, "{:.1f}", " µs")  # noqa: E731
    kept, every = repetitions(doc, KEPT, "cpu_time"), repetitions(doc, EVERY, "cpu_time")
    n = min(len(kept), len(every))
    tab.row(f"per new process list, k8s-8xH100 (13 listed processes), holders kept (`{KEPT}`), CPU time, "
            f"median of {n} repetitions", us(kept), f"every list worked out again (`{EVERY}`)", us(every),
            ratio([k / e for k, e in zip(kept, every)]), "", COMMAND)
    kept_w, every_w = repetitions(doc, KEPT, "real_time"), repetitions(doc, EVERY, "real_time")
    tab.row("the same, wall time", us(kept_w), "as above", us(every_w),
            ratio([k / e for k, e in zip(kept_w, every_w)]), "", "as above")
    tab.print(head=whole)

if __name__ == "__main__":
    sys.exit(main())
