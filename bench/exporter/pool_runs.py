"""Ratios and 95% intervals from saved outputs of bench/exporter/kubernetes.py: each file's, and all
the files' rounds pooled (the same median and paired bootstrap as kubernetes.py prints, over the
rounds of every file; round i of every exporter in one file stays together).

Usage: /usr/bin/python3 bench/exporter/pool_runs.py OUTPUT [OUTPUT ...]
  where each OUTPUT is what `kubernetes.py BUILD --rounds N ...` printed, saved to a file.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kubernetes import ratio_interval, upper_median  # noqa: E402

BASE = "without -k"
ROW = re.compile(r"\| gpulse (.*?) \|.*?\| [\d.]+ ms \(([\d., ]+)\)")


def read_runs(path):
    """Each exporter's per-round p99s (ms) from one output's table."""
    runs = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                runs[m.group(1)] = [{"p99": float(x)} for x in m.group(2).split(",")]
    if BASE not in runs:
        sys.exit(f"pool_runs: {path}: no table row for the exporter {BASE!r}")
    return runs


def report(label, runs):
    base = upper_median([r["p99"] for r in runs[BASE]])
    for k, rs in runs.items():
        if k != BASE:
            lo, hi = ratio_interval(runs, BASE, k)
            print(f"{label}: {k}: {upper_median([r['p99'] for r in rs]) / base:.3f}x "
                  f"(95% interval {lo:.2f}x to {hi:.2f}x, {len(rs)} rounds)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pooled = {}
    for path in sys.argv[1:]:
        runs = read_runs(path)
        report(os.path.basename(path), runs)
        for k, rs in runs.items():
            pooled.setdefault(k, []).extend(rs)
    if len(sys.argv) > 2:
        report("pooled", pooled)


if __name__ == "__main__":
    main()
