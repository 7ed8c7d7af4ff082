"""bench/run.sh tick: the sampling tick's cost, from tick_bench's JSON (bench/tick_bench.cc), as three
tables of bench/RESULTS.md: "Sampling tick cost", "Profiling fields through NVML GPM" and the tick
rows of "Entities on a MIG node" (its scrape rows come from bench/exporter/mig.py, `run.sh mig`).

What it measures: one device's tick for the full field catalogue as gpulse's own work (BM_Tick/null,
a null NVML), through the real loader and the NVML simulator (BM_Tick/sim) beside the simulator's
calls alone (BM_SimCallsOnly); what the GPM profiling fields add (BM_TickProfiling/null/0 vs /1); the
tick per entity on mig-8xA100 (BM_TickEntities). gpulse's figures are CPU time per device or entity
(Google Benchmark rate counters run on CPU time), so a busy machine slows them less than wall time.
Anchors: spawn+reap /bin/true in the same run (BM_ProcessSpawnAnchor, wall: the child's work is not
the parent's CPU) and the *published* nvidia-smi --query-gpu times (7 ms for 1 GPU, 71 ms for 8).
Runs: each benchmark's repetitions (bench/run.sh: 5); a value is their median with the min–max, and
a ratio pairs repetition k of one benchmark with repetition k of the other.
Time: about a minute for the benchmark. Usage: tick_report.py TICK.json (Google Benchmark JSON with
the individual repetitions, as bench/run.sh tick writes it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gbench import load, pairs  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

SMI_1GPU_NS = 7e6            # nvidia-smi --query-gpu, 1 GPU (research/perf.md, netdata #10362)
SMI_8GPU_PER_DEV_NS = 71e6 / 8  # 71 ms for 8 GPUs (telegraf #8534)
COMMAND = "bash bench/run.sh tick"
NS = "{:,.0f}"


def ns(values):
    return spread(values, NS, " ns")


def main():
    b = load(sys.argv[1])
    per_dev = lambda name: b.values(name, "ns_per_device_tick", 1e9)  # CPU seconds per device -> ns

    null, sim, calls = per_dev("BM_Tick/null"), per_dev("BM_Tick/sim"), per_dev("BM_SimCallsOnly")
    spawn = b.time("BM_ProcessSpawnAnchor", "real_time")
    fields = b.first("BM_Tick/null", "fields", None)  # older builds' tick_bench has no such counter
    catalogue = f"full catalogue ({fields:.0f} fields)" if fields else "full catalogue"

    t = Table("Sampling tick cost (foundation issue)", COMMAND,
              "gpulse's figures are CPU time per device per tick (the median of the benchmark's repetitions, "
              "min–max in brackets); each ratio pairs repetition k with repetition k of its anchor.")
    t.row(f"gpulse's own work per device per tick, {catalogue}, `BM_Tick/null` (a null NVML: entry points "
          "that return constants)", ns(null), "spawn+reap `/bin/true`, wall", spread([s / 1e3 for s in spawn], NS, " µs"),
          ratio(pairs(spawn, null, lambda s, n: s / n), NS), judge(null, "<=", 5000, "≤ 5,000 ns"))
    t.row("the same, against one `nvidia-smi --query-gpu` call", ns(null),
          "*published*: nvidia-smi, 1 GPU (7 ms) / 8 GPUs (71 ms, per GPU)",
          f"{SMI_1GPU_NS / 1e3:,.0f} µs / {SMI_8GPU_PER_DEV_NS / 1e3:,.0f} µs",
          ratio([SMI_1GPU_NS / n for n in null], NS) + " / " + ratio([SMI_8GPU_PER_DEV_NS / n for n in null], NS),
          judge([SMI_1GPU_NS / n for n in null], ">=", 1000, "≥ 1,000× cheaper than one nvidia-smi call"))
    t.row(f"gpulse + simulator (real loader, 8xH100), per device, {catalogue}, `BM_Tick/sim`", ns(sim),
          "the simulator's calls alone, made straight to it (`BM_SimCallsOnly`)", ns(calls),
          ratio(pairs(sim, calls, lambda s, c: s / c)))
    t.row("of which gpulse's own work, by difference (`BM_Tick/sim` − `BM_SimCallsOnly`)",
          ns(pairs(sim, calls, lambda s, c: s - c)))
    t.print()

    if b.has("BM_TickProfiling/null/0") and b.has("BM_TickProfiling/null/1"):
        off, on = per_dev("BM_TickProfiling/null/0"), per_dev("BM_TickProfiling/null/1")
        f_off = b.first("BM_TickProfiling/null/0", "fields")
        f_on = b.first("BM_TickProfiling/null/1", "fields")
        added = pairs(on, off, lambda x, y: x - y)
        t = Table("Profiling fields through NVML GPM (issue 15)", COMMAND,
                  "One device's tick through DeviceReader over the null NVML, the simulated clock 1 s further at "
                  "every tick (a GPM sample and a metrics computation each time); CPU time, medians of the "
                  "repetitions, differences and ratios per repetition pair.")
        t.row(f"what GPM adds per device per tick (one sample call, one metrics call for {f_on - f_off:.0f} metrics, "
              "range checks and scaling), null NVML", ns(added),
              f"the same tick without the profiling fields ({f_off:.0f} fields)", ns(off), "",
              judge(added, "<=", 2000, "≤ 2 µs of gpulse's own work"))
        t.row(f"the tick with all {f_on - f_off:.0f} profiling fields ({f_on:.0f} fields)", ns(on),
              "the same tick without them", ns(off), ratio(pairs(on, off, lambda x, y: x / y)))
        t.print()

    if all(b.has(f"BM_TickEntities/sim-mig/{k}") for k in range(3)):
        ent = [b.values(f"BM_TickEntities/sim-mig/{k}", "ns_per_entity_tick", 1e9) for k in range(3)]
        count = [b.first(f"BM_TickEntities/sim-mig/{k}", "entities") for k in range(3)]
        t = Table("Entities on a MIG node: tick and scrape with 8 GPUs × 7 instances (issue 11)", COMMAND,
                  "Scenario `mig-8xA100`: 8 A100s, each split into seven 1g.5gb MIG instances (8 GPUs and 56 GPU "
                  "instances with readings of their own). The tick rows (CPU time per entity, ratios per repetition "
                  "pair); the scrape rows: `bash bench/run.sh mig`.")
        labels = (f"tick per entity, {catalogue}, mig-8xA100 ({count[0]:.0f} entities: {count[1]:.0f} GPUs + "
                  f"{count[2]:.0f} GPU instances), gpulse + simulator",
                  f"of which a MIG-enabled GPU ({count[1]:.0f})",
                  f"of which a GPU instance ({count[2]:.0f}: one memory call through its handle)")
        for k, label in enumerate(labels):
            r = pairs(ent[k], sim, lambda e, s: e / s)
            t.row(label, ns(ent[k]), "`BM_Tick/sim`, per 8xH100 device" if k == 0 else "as above", ns(sim),
                  ratio(r), judge(r, "<=", 1.5, "≤ 1.5×") if k == 0 else "")
        t.print()


if __name__ == "__main__":
    main()
