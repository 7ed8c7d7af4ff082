"""Turns tick_bench's JSON into the table of bench/RESULTS.md (medians of the repetitions)."""
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    doc = json.load(f)
med = {b["run_name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}


def per_device_ns(name):
    return med[name]["ns_per_device_tick"] * 1e9  # the counter is an inverted rate: seconds per device


null_ns = per_device_ns("BM_Tick/null")
sim_ns = per_device_ns("BM_Tick/sim")
sim_only_ns = per_device_ns("BM_SimCallsOnly")
spawn_ns = med["BM_ProcessSpawnAnchor"]["real_time"] * 1000  # reported in us
own_by_difference = sim_ns - sim_only_ns
SMI_1GPU_NS = 7e6          # nvidia-smi --query-gpu, 1 GPU (research/perf.md, netdata #10362)
SMI_8GPU_PER_DEV_NS = 71e6 / 8  # 71 ms for 8 GPUs (telegraf #8534)

ctx = doc["context"]
print(f"host: {ctx.get('host_name')}, {ctx.get('num_cpus')} CPUs, {ctx.get('mhz_per_cpu')} MHz, "
      f"gpulse built RelWithDebInfo (-O2)")
print()
print("| measure (per device per tick, full catalogue) | time | ratio |")
print("|---|---:|---:|")
print(f"| gpulse's own work (backend over a null NVML) | {null_ns:.0f} ns | target 5,000 ns: {5000/null_ns:.1f}x under |")
print(f"| gpulse + simulator (real loader, 8xH100) | {sim_ns:.0f} ns | |")
print(f"| simulator calls alone (same calls, no gpulse) | {sim_only_ns:.0f} ns | |")
print(f"| gpulse's own work by difference (sim − sim calls) | {own_by_difference:.0f} ns | |")
print(f"| anchor, same run: spawn+reap /bin/true | {spawn_ns/1000:.0f} us | {spawn_ns/null_ns:,.0f}x gpulse's own work |")
print(f"| published: nvidia-smi --query-gpu, 1 GPU (7 ms) | 7,000 us | {SMI_1GPU_NS/null_ns:,.0f}x gpulse's own work |")
print(f"| published: nvidia-smi --query-gpu, 8 GPUs (71 ms, per GPU) | {SMI_8GPU_PER_DEV_NS/1000:,.0f} us | {SMI_8GPU_PER_DEV_NS/null_ns:,.0f}x gpulse's own work |")

if "BM_TickEntities/sim-mig/0" in med:
    ent = med["BM_TickEntities/sim-mig/0"]
    ent_ns = ent["ns_per_entity_tick"] * 1e9
    parents_ns = med["BM_TickEntities/sim-mig/1"]["ns_per_entity_tick"] * 1e9
    instances_ns = med["BM_TickEntities/sim-mig/2"]["ns_per_entity_tick"] * 1e9
    print()
    print("Per entity on a MIG node (issue 11), same run:")
    print()
    print("| measure (per entity per tick, full catalogue) | time | ratio to BM_Tick/sim per device |")
    print("|---|---:|---:|")
    print(f"| gpulse + simulator, 8xH100 (per device, the earlier figure) | {sim_ns:.0f} ns | 1.00x |")
    print(f"| gpulse + simulator, mig-8xA100 ({ent['entities']:.0f} entities: 8 GPUs + 56 GPU instances) "
          f"| {ent_ns:.0f} ns | {ent_ns / sim_ns:.2f}x (target <= 1.5x) |")
    print(f"| of which: a MIG-enabled GPU (8) | {parents_ns:.0f} ns | {parents_ns / sim_ns:.2f}x |")
    print(f"| of which: a GPU instance (56: one memory call through its handle) | {instances_ns:.0f} ns | "
          f"{instances_ns / sim_ns:.2f}x |")

if "BM_TickProfiling/null/0" in med:
    off = med["BM_TickProfiling/null/0"]
    on = med["BM_TickProfiling/null/1"]
    off_ns = off["ns_per_device_tick"] * 1e9
    on_ns = on["ns_per_device_tick"] * 1e9
    print()
    print("Profiling fields through GPM (issue 15), same run: one device's tick through DeviceReader over")
    print("the null NVML, 1 s ticks (a GPM sample and a metrics computation every tick):")
    print()
    print("| measure (per device per tick) | time | ratio |")
    print("|---|---:|---:|")
    print(f"| without the profiling fields ({off['fields']:.0f} fields) | {off_ns:.0f} ns | 1.00x |")
    print(f"| with all {on['fields'] - off['fields']:.0f} profiling fields ({on['fields']:.0f} fields) | {on_ns:.0f} ns | "
          f"{on_ns / off_ns:.2f}x |")
    print(f"| what GPM adds | {on_ns - off_ns:.0f} ns | target <= 2,000 ns: "
          f"{'met' if on_ns - off_ns <= 2000 else 'NOT met'} |")
