"""bench/run.sh record: `gpulse record`'s recorder, the end of a run and its energy, as the table
"gpulse record" of bench/RESULTS.md.

What it measures, in one invocation:
- BUILD/bin/record_bench (bench/record_bench.cc, one JSON object): the whole recorder at its 50 ms
  tick over 8 simulated H100s and a 51-process tree, journal on and off (CPU time of the process per
  tick; anchors: one `ps` of a 50-process tree, wall, and an empty loop on the same ticker); the
  sampler's reads alone; the end of a run of 1,000,000 samples (map the journal, derive, write
  run.json) against `cp` and `dd` of the file; the durable write against `cp` + `sync`; memory per
  sample while deriving, writing and rendering (one figure: peak RSS only grows in a process).
- --energy-runs runs of `BUILD/bin/gpulse record --simulate 1xH200 -i 100 -o DIR -- sleep 1`: the
  energy by the driver's counter against the trapezoid integral of the run's power samples, and the
  skipped ticks, from run.json (gpu.per_device[].energy_counter_millijoules,
  energy_integrated_millijoules; run.skipped_ticks).
Runs: --rounds rounds of each record_bench part (default 3), recordings --seconds long (default 10);
--energy-runs records (default 3). Values are medians with the min–max of the rounds; a ratio pairs
round k of a figure with round k of its anchor. Time: about 3 minutes.
Usage: /usr/bin/python3 bench/record_report.py BUILD [--rounds N] [--seconds S] [--energy-runs N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Table, judge, ratio, spread  # noqa: E402

PERIOD_S = 0.05


def record_bench(build, rounds, seconds):
    p = subprocess.run([os.path.join(build, "bin", "record_bench"), "--rounds", str(rounds), "--seconds",
                        str(seconds)], capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"bench/record: record_bench failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def energy_runs(build, runs):
    out = []
    with tempfile.TemporaryDirectory(prefix="gpulse-record-bench.") as tmp:
        for k in range(runs):
            d = os.path.join(tmp, f"run{k}")
            p = subprocess.run([os.path.join(build, "bin", "gpulse"), "record", "--simulate", "1xH200", "-i", "100",
                                "-o", d, "--", "sleep", "1"], capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                raise SystemExit(f"bench/record: gpulse record failed ({p.returncode}): {p.stderr[-2000:]}")
            with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
                doc = json.load(f)
            dev = doc["gpu"]["per_device"][0]
            out.append({"counter_mj": dev["energy_counter_millijoules"],
                        "integrated_mj": dev["energy_integrated_millijoules"],
                        "relative_difference": dev["energy_relative_difference"],
                        "skipped_ticks": doc["run"]["skipped_ticks"]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--energy-runs", type=int, default=3)
    a = ap.parse_args()
    build = os.path.abspath(a.build)

    extra = sys.argv[2:]
    command = ("bash bench/run.sh record" if not extra else
               " ".join(["/usr/bin/python3 bench/record_report.py BUILD", *extra]))
    t = Table("gpulse record: the recorder, the end of a run, energy (issues 12 and 40)", command,
              f"`build/bin/record_bench --rounds {a.rounds} --seconds {a.seconds}` and {a.energy_runs} runs of "
              "`gpulse record --simulate 1xH200 -i 100 -o DIR -- sleep 1` in the same invocation: medians with the "
              "min–max of the rounds; a ratio pairs round k with round k of its anchor.")
    d = record_bench(build, a.rounds, a.seconds)
    rec, smp, wr = d["recorder"], d["sampler"], d["write"]
    on = [r["journal_on"]["cpu_per_tick_s"] for r in rec["rounds"]]
    off = [r["journal_off"]["cpu_per_tick_s"] for r in rec["rounds"]]
    idle = [r["idle_cpu_per_tick_s"] for r in rec["rounds"]]
    journal = [r["journal_on"]["journal_bytes_per_tick"] for r in rec["rounds"]]
    ps = [r["ps_wall_s"] for r in smp["rounds"]]
    sampler = [r["cpu_per_tick_s"] for r in smp["rounds"]]
    procs = max(r["journal_on"]["processes"] for r in rec["rounds"])
    pct = lambda v: [x / PERIOD_S * 100 for x in v]
    us = lambda v: spread([x * 1e6 for x in v], "{:,.1f}", " µs")

    def core(v):
        return f"{spread(pct(v), '{:.3f}', ' %')} of a core ({sorted(v)[len(v) // 2] * 1e6:,.1f} µs)"

    t.row(f"the whole recorder at 50 ms, journal on ({rec['devices']}xH100 simulator + a {procs}-process tree, "
          f"{a.seconds} s recordings), CPU per tick", core(on), "one `ps` of a 50-process tree, wall", us(ps),
          ratio([p / o for p, o in zip(ps, on)], "{:,.0f}") + " (one `ps` against one tick)",
          judge(pct(on), "<=", 1, "≤ 1 % of a core"))
    t.row("the same, journal off", core(off), "an empty loop on the same 50 ms ticker (the wake-up alone)",
          f"{us(idle)}; {spread(pct(idle), '{:.3f}', ' %')} of a core")
    t.row("journal written, per tick", spread(journal, "{:,.0f}", " B"))
    t.row(f"the sampler's reads alone ({smp['devices']} GPUs + the {smp['processes']}-process tree, back to back, "
          "no ticker, no journal), CPU per tick", core(sampler), "one `ps` of the same tree, wall", us(ps),
          ratio([p / s for p, s in zip(ps, sampler)], "{:,.0f}"))

    rounds = wr["rounds"]
    mb = wr["run_json_bytes"] / 1e6
    end = [r["end_s"] for r in rounds]
    cp = [r["cp_s"] for r in rounds]
    dd = [r["dd_s"] for r in rounds]
    durable = [r["durable_s"] for r in rounds]
    cp_sync = [r["cp_sync_s"] for r in rounds]
    s = lambda v: spread(v, "{:.3f}", " s")
    rate = lambda v: f"{mb / sorted(v)[len(v) // 2]:,.0f} MB/s"
    cp_ratio = [c / e for c, e in zip(cp, end)]
    t.row(f"end of a run of {wr['samples']:,} samples: map the journal + derive + write run.json ({mb:.1f} MB)",
          f"{s(end)}, {rate(end)}", f"`cp` of run.json (`dd bs=1M`: {s(dd)}, {rate(dd)})", f"{s(cp)}, {rate(cp)}",
          f"{ratio(cp_ratio)} (vs dd: {ratio([x / e for x, e in zip(dd, end)])})",
          judge(cp_ratio, ">=", 0.3, "≥ 0.3× of `cp`"))
    t.row("the durable write as `record` does it (temp file, fsync, rename, dir fsync)", s(durable),
          "`cp` then `sync` of the copy", s(cp_sync), ratio([c / x for c, x in zip(cp_sync, durable)]))
    m = wr["memory"]
    t.row("peak memory per sample while deriving, writing run.json and rendering HTML (one figure: peak RSS)",
          f"{m['peak_bytes_per_sample']:.0f} B (holding the timeline: {m['held_bytes_per_sample']:.0f} B); "
          f"{m['anon_mapped_bytes_per_sample']:.0f} B anonymous with the journal mapped, plus "
          f"{m['file_mapped_bytes_per_sample']:.0f} B of its page cache",
          "`sizeof(GpuSample)`", f"{m['sizeof_gpu_sample']} B", "",
          judge([m["peak_bytes_per_sample"]], "<", 200, "< 200 B"))

    e = energy_runs(build, a.energy_runs)
    counter = [x["counter_mj"] / 1e3 for x in e]
    integ = [x["integrated_mj"] / 1e3 for x in e]
    skipped = sum(x["skipped_ticks"] for x in e)
    diff_pct = [abs(x["relative_difference"]) * 100 for x in e if x["relative_difference"] is not None]
    t.row(f"energy of a run on a GPM GPU (1xH200), by the driver's counter, {len(e)} runs",
          f"{spread(counter, '{:.1f}', ' J')}, {skipped} skipped ticks",
          "the trapezoid integral of the run's power samples", spread(integ, "{:.1f}", " J"),
          ratio([i / c for i, c in zip(integ, counter)], "{:.4f}") + " (integrated ÷ counter)",
          judge(diff_pct, "<=", 1, "within 1 %") + f"; no skipped tick: {'met' if skipped == 0 else '**not met**'}",
          "`gpulse record --simulate 1xH200 -i 100 -o DIR -- sleep 1` (figures from run.json)")
    t.print()


if __name__ == "__main__":
    main()
