"""bench/power/run.sh's table: validate-power on a generated package beside `wc -l` and
`openssl dgst -sha256` of the same file, round by round, and the in-memory pass (power_scan_bench), as
the table "validate-power" of bench/RESULTS.md (bench/results.py).

What it reads: --timings, one line per command per round (round, command, wall s, peak RSS KiB, exit
code, CPU s), commands wc, sha, vp1 (`--threads 1`), vpN (`--threads N`); --scan, power_scan_bench's
JSON with its repetitions. Values are medians with the min–max of the rounds; a ratio pairs round k
of validate-power with round k of its anchor (speed: the anchor's time ÷ validate-power's).
Usage: report.py --timings F --csv SAMPLES.csv --manifest MANIFEST.json --threads N [--scan SCAN.json]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from micro_report import rates  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

MIB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timings", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--scan")
    ap.add_argument("--command", default="bash bench/run.sh power", help="for the table's command column")
    a = ap.parse_args()
    runs = {}  # command -> [(wall, rss_kib, rc, cpu)] in round order
    with open(a.timings, encoding="utf-8") as f:
        for line in f:
            rnd, cmd, wall, rss, rc, cpu = line.split("\t")
            runs.setdefault(cmd, []).append((int(rnd), float(wall), int(rss), int(rc), float(cpu)))
    for cmd, rs in runs.items():
        rs.sort()
        bad = [r for r in rs if r[3] != 0]
        if bad:
            raise SystemExit(f"bench/power: {cmd} exited {bad[0][3]} in round {bad[0][0]}: the package does not validate?")
    wall = {c: [r[1] for r in rs] for c, rs in runs.items()}
    rss = {c: [r[2] / 1024 for r in rs] for c, rs in runs.items()}
    cpu = {c: [r[4] for r in rs] for c, rs in runs.items()}
    size = os.stat(a.csv).st_size
    with open(a.manifest, encoding="utf-8") as f:
        m = json.load(f)
    nodes = len({d["hostname"] for d in m["expected_devices"]})
    n = len(wall["wc"])

    def s(v):  # seconds, and the median's MB/s (MiB)
        med = statistics.median(v)
        return f"{spread(v, '{:.2f}', ' s')}, {size / MIB / med:,.0f} MB/s"

    speed = lambda anchor, ours: [x / y for x, y in zip(anchor, ours)]
    t = Table("validate-power on a 2 GB package (issue 6)", a.command,
              f"A generated valid package: {len(m['expected_devices'])} GPUs on {nodes} nodes, "
              f"{m['sample_interval_seconds']:g} s samples, {len(m['expected_windows'])} completed windows, "
              f"{m['sample_row_count']:,} rows, {size:,} bytes of samples.csv; {n} interleaved rounds (each "
              "command once per round), medians with the min–max of the rounds, page cache warm; a ratio is the "
              "anchor's time ÷ validate-power's in the same round. MB = MiB.")
    t.row("`validate-power --threads 1`, wall", s(wall["vp1"]), "`wc -l`", s(wall["wc"]),
          f"{ratio(speed(wall['wc'], wall['vp1']))} ({ratio(speed(wall['sha'], wall['vp1']))} of "
          f"`openssl dgst -sha256`: {s(wall['sha'])})", judge(speed(wall["wc"], wall["vp1"]), ">=", 0.5, "≥ 0.5× `wc -l`"))
    t.row(f"`validate-power --threads {a.threads}` (all cores), wall", s(wall["vpN"]), "`wc -l`", s(wall["wc"]),
          f"{ratio(speed(wall['wc'], wall['vpN']))} ({ratio(speed(wall['sha'], wall['vpN']))} of `openssl dgst`)",
          judge(speed(wall["wc"], wall["vpN"]), ">=", 0.5, "≥ 0.5× `wc -l`"))
    t.row(f"`validate-power --threads 1` / `--threads {a.threads}`, CPU (user + system)",
          f"{spread(cpu['vp1'], '{:.2f}', ' s')} / {spread(cpu['vpN'], '{:.2f}', ' s')}",
          "`openssl dgst -sha256`, CPU", spread(cpu["sha"], "{:.2f}", " s"),
          f"{ratio(speed(cpu['sha'], cpu['vp1']))} / {ratio(speed(cpu['sha'], cpu['vpN']))}")
    t.row(f"peak RSS, `--threads 1` / `--threads {a.threads}`",
          f"{spread(rss['vp1'], '{:.1f}', ' MiB')} / {spread(rss['vpN'], '{:.1f}', ' MiB')}", "", "", "",
          "bounded by devices and windows, not by the file: not judged here (compare a smaller package: "
          "`bash bench/power/run.sh build/bin/gpulse 256`)")
    if a.scan:
        with open(a.scan, encoding="utf-8") as f:
            r = rates(json.load(f))
        gbs = lambda v: spread(v, "{:.2f}", " GB/s")
        if "BM_Scan" in r and "BM_CountLines" in r:
            t.row("in memory, one-thread pass (parser + digest), 64 MiB", gbs(r["BM_Scan"]),
                  "memchr line count (the `wc -l` kernel)", gbs(r["BM_CountLines"]),
                  ratio(speed(r["BM_Scan"], r["BM_CountLines"])), "",
                  "`build/bin/power_scan_bench` (run by the same script)")
        if "BM_ScanThreads/2/real_time" in r and "BM_Sha256" in r:
            t.row("in memory, two threads (digest thread + parser thread), wall", gbs(r["BM_ScanThreads/2/real_time"]),
                  "SHA-256 alone (OpenSSL EVP)", gbs(r["BM_Sha256"]),
                  ratio(speed(r["BM_ScanThreads/2/real_time"], r["BM_Sha256"])), "", "as above")
    t.print()


if __name__ == "__main__":
    main()
