#!/usr/bin/python3
"""Formats power_scan_bench's JSON (stdin, with repetitions) as a markdown table of medians.

Adds the bound a single thread cannot beat when it both parses and hashes every byte:
1 / (1 / digest rate + 1 / parser rate).
"""
import json
import sys

ROWS = [
    ("BM_CountLines", "memchr line count (the `wc -l` kernel)"),
    ("BM_Sha256", "SHA-256 alone"),
    ("BM_Read", "line reader alone (copy + cut)"),
    ("BM_ScanNoDigest", "every row rule, no digest (parser)"),
    ("BM_Scan", "validate-power pass, 1 thread (parser + digest)"),
    ("BM_ScanThreads/2/real_time", "2 threads (digest thread + parser thread), wall"),
    ("BM_GeneralRow", "general row parser alone (no fast path)"),
]


def main():
    doc = json.load(sys.stdin)
    rate = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rate[b["run_name"]] = b["bytes_per_second"] / 1e9
    anchor = rate.get("BM_CountLines")
    print("| measure | GB/s | vs memchr count |")
    print("|---|---:|---:|")
    for name, label in ROWS:
        if name in rate:
            rel = f"{rate[name] / anchor:.2f}x" if anchor else "n/a"
            print(f"| {label} | {rate[name]:.2f} | {rel} |")
    if "BM_Sha256" in rate and "BM_ScanNoDigest" in rate:
        bound = 1 / (1 / rate["BM_Sha256"] + 1 / rate["BM_ScanNoDigest"])
        got = rate.get("BM_Scan")
        print()
        print(f"One-thread bound 1/(1/{rate['BM_Sha256']:.2f} + 1/{rate['BM_ScanNoDigest']:.2f}) "
              f"= {bound:.2f} GB/s; measured {got:.2f} GB/s." if got else f"bound {bound:.2f} GB/s")


if __name__ == "__main__":
    main()
