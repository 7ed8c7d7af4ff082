"""Why a collector cycle started late or wrote its requests slowly (issue 14), from a `bench.py
--per-cycle --perf-record FILE --json J` run: the context switches and CPU-clock samples perf
recorded over the measured seconds, per CPU. perf samples every CPU at 4,999 Hz, idle or not, so a
vCPU that the hypervisor did not run takes no samples in that time, whatever the guest's scheduler
believes it was running. A vCPU is counted as held when it took fewer than half the samples of a
window.

First, each cycle whose first request left more than --late-ms after its slot: per CPU, the samples
between the slot and that request against those the window should hold, and what the guest's
scheduler had running there. Then, for every cycle, the window from the slot to the cycle's p99
request: how many of the cycles whose p99 is over --slow-ms had a vCPU held, against the others.

Usage: /usr/bin/python3 bench/collector/late_slots.py FILE J [--late-ms 2] [--slow-ms 20]
"""
import argparse
import bisect
import collections
import json
import re
import subprocess
import sys

HZ = 4999
LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<t>\d+\.\d+):\s+(?P<event>[\w:-]+):(?P<rest>.*)$")
SWITCH = re.compile(r"next_comm=(?P<comm>.+?) next_pid=(?P<pid>\d+)")


def events(perf_data):
    """(samples per CPU: sorted times, switches per CPU: sorted (time, comm))."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,tid,cpu,time,event,trace", "--ns"],
                         capture_output=True, text=True, check=True).stdout
    samples, switches = collections.defaultdict(list), collections.defaultdict(list)
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cpu, t = int(m["cpu"]), float(m["t"])
        if m["event"].startswith("cpu-clock"):
            samples[cpu].append(t)
        elif m["event"] == "sched:sched_switch":
            s = SWITCH.search(m["rest"])
            if s:
                switches[cpu].append((t, s["comm"]))
    for v in samples.values():
        v.sort()
    for v in switches.values():
        v.sort()
    return samples, switches


def running(switches, begin, end):
    """{comm: seconds} the guest's scheduler had on one CPU between begin and end."""
    times = [t for t, _ in switches]
    i = max(0, bisect.bisect_right(times, begin) - 1)
    out = collections.Counter()
    while i < len(switches) and switches[i][0] < end:
        start = max(begin, switches[i][0])
        stop = min(end, switches[i + 1][0] if i + 1 < len(switches) else end)
        if stop > start and switches[i][0] <= end:
            out[switches[i][1]] += stop - start
        i += 1
    return out


def held(samples, begin, end):
    """The CPUs that took fewer than half the samples of [begin, end)."""
    want = (end - begin) * HZ
    return [cpu for cpu, v in samples.items() if bisect.bisect_left(v, end) - bisect.bisect_left(v, begin) < want / 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("perf_data")
    ap.add_argument("bench_json")
    ap.add_argument("--late-ms", type=float, default=2.0)
    ap.add_argument("--slow-ms", type=float, default=20.0)
    a = ap.parse_args()
    with open(a.bench_json) as f:
        c = json.load(f)["collector"]
    if "per_cycle" not in c or "unix_minus_monotonic_s" not in c:
        sys.exit("late_slots: the JSON has no per-cycle slots: run bench.py with --per-cycle and --perf-record")
    samples, switches = events(a.perf_data)
    if not samples:
        sys.exit("late_slots: no CPU-clock samples in " + a.perf_data)
    first = min(v[0] for v in samples.values())
    last = max(v[-1] for v in samples.values())
    offset = c["unix_minus_monotonic_s"]
    print(f"late_slots: cycles whose first request left more than {a.late_ms} ms after the slot; per CPU, "
          f"the CPU-clock samples perf took between the slot and that request against the {HZ} per second "
          f"it takes of a running vCPU, and what the guest's scheduler had running there")
    print("| cycle | first request after the slot | " + " | ".join(
        f"CPU {cpu}: samples / expected, running" for cpu in sorted(samples)) + " |")
    print("|---:|---:|" + "---|" * len(samples))
    covered, late, late_held = [], 0, 0
    for cyc in c["per_cycle"]:
        begin = cyc["slot_unix"] - offset
        if begin < first or begin + max(cyc["lag_min_ms"], cyc["lag_p99_ms"]) / 1000 > last:
            continue
        covered.append(cyc)
        if cyc["lag_min_ms"] <= a.late_ms:
            continue
        end = begin + cyc["lag_min_ms"] / 1000
        late += 1
        late_held += bool(held(samples, begin, end))
        cells = []
        for cpu in sorted(samples):
            v = samples[cpu]
            got = bisect.bisect_left(v, end) - bisect.bisect_left(v, begin)
            who = running(switches.get(cpu, []), begin, end)
            top = ", ".join(f"{k} {1000 * s:.1f} ms" for k, s in who.most_common(2))
            cells.append(f"{got} / {(end - begin) * HZ:.0f}, {top}")
        print(f"| {cyc['cycle']} | {cyc['lag_min_ms']:.1f} ms | " + " | ".join(cells) + " |")
    print(f"\n{late} of {len(covered)} recorded cycles started late; in {late_held} of them a vCPU was held "
          f"between the slot and the first request")
    slow = [x for x in covered if x["lag_p99_ms"] > a.slow_ms]
    rest = [x for x in covered if x["lag_p99_ms"] <= a.slow_ms]
    count = lambda cycles: sum(bool(held(samples, x["slot_unix"] - offset,
                                         x["slot_unix"] - offset + x["lag_p99_ms"] / 1000)) for x in cycles)
    print(f"{len(slow)} of {len(covered)} recorded cycles had a p99 over {a.slow_ms:g} ms; a vCPU was held between "
          f"the slot and the p99 request in {count(slow)} of them, and in {count(rest)} of the {len(rest)} others")


if __name__ == "__main__":
    main()
