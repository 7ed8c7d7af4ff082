#!/usr/bin/python3
"""power_scan_bench's JSON (bench/power/scan_bench.cc, with its repetitions), one throughput per
repetition: rates(doc) for bench/power/report.py (the rows of the RESULTS.md table), or, run alone on
stdin, a markdown table of every benchmark (median and min–max of the repetitions) with the bound a
single thread cannot beat when it both parses and hashes every byte: 1 / (1 / digest + 1 / parser).

    build/bin/power_scan_bench --benchmark_repetitions=5 --benchmark_format=json | micro_report.py
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gbench import Runs  # noqa: E402
from results import spread  # noqa: E402

ROWS = [
    ("BM_CountLines", "memchr line count (the `wc -l` kernel)"),
    ("BM_Sha256", "SHA-256 alone"),
    ("BM_Read", "line reader alone (copy + cut)"),
    ("BM_ScanNoDigest", "every row rule, no digest (parser)"),
    ("BM_Scan", "validate-power pass, 1 thread (parser + digest)"),
    ("BM_ScanThreads/2/real_time", "2 threads (digest thread + parser thread), wall"),
    ("BM_GeneralRow", "general row parser alone (no fast path)"),
]


def rates(doc):
    """{benchmark: [GB/s of each repetition]} (bytes_per_second: over CPU time, over wall time for
    the /real_time ones)."""
    runs = Runs(doc)
    return {name: runs.values(name, "bytes_per_second", 1e-9) for name, _ in ROWS if runs.has(name)}


def main():
    rate = rates(json.load(sys.stdin))
    med = {k: statistics.median(v) for k, v in rate.items()}
    anchor = rate.get("BM_CountLines")
    print("| measure | GB/s | vs memchr count |")
    print("|---|---:|---:|")
    for name, label in ROWS:
        if name in rate:
            rel = spread([r / a for r, a in zip(rate[name], anchor)], "{:.2f}") if anchor else "n/a"
            print(f"| {label} | {spread(rate[name])} | {rel} |")
    if "BM_Sha256" in med and "BM_ScanNoDigest" in med:
        bound = 1 / (1 / med["BM_Sha256"] + 1 / med["BM_ScanNoDigest"])
        got = med.get("BM_Scan")
        print()
        print(f"One-thread bound 1/(1/{med['BM_Sha256']:.2f} + 1/{med['BM_ScanNoDigest']:.2f}) "
              f"= {bound:.2f} GB/s; measured {got:.2f} GB/s." if got else f"bound {bound:.2f} GB/s")


if __name__ == "__main__":
    main()
