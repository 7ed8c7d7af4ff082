#!/usr/bin/env python3
"""Formats identity_bench's JSON (Google Benchmark, aggregates) as the table in bench/RESULTS.md.
Usage: identity_report.py RESULT.json"""
import json
import sys

PUBLISHED_GRAPHICS_PROCESSES_US = 4491  # MangoHud#2104, research/vendors.md section 2


def medians(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    out = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6}[b.get("time_unit", "ns")]
        out[b["run_name"]] = {"real_ns": b["real_time"] * unit, "cpu_ns": b["cpu_time"] * unit,
                              "per_device_ns": b["ns_per_device"] * 1e9 if "ns_per_device" in b else None}
    return out


def main():
    m = medians(sys.argv[1])
    resolve = m["BM_ResolveCuda"]["real_ns"]
    attr = m["BM_AttributeProcess"]["real_ns"]
    cat = m["BM_CatCgroupAnchor"]["real_ns"]
    plist = m["BM_ProcessList/gpulse"]["per_device_ns"]
    calls = m["BM_ProcessList/calls"]["per_device_ns"]
    print("| measure | time (median, wall) | ratio |")
    print("|---|---:|---:|")
    print(f"| resolve CUDA_VISIBLE_DEVICES, 8 GPUs, 4 entries, FASTEST_FIRST proof | {resolve/1e3:.1f} us | |")
    print(f"| attribute one PID (comm, status, cgroup → container, pod) | {attr/1e3:.1f} us | |")
    print(f"| anchor, same run: spawn+reap `cat PID/cgroup` | {cat/1e3:,.0f} us | {cat/attr:,.0f}x one attribution |")
    print(f"| one device's process list + utilization, gpulse + simulator | {plist:.0f} ns | |")
    print(f"| the same NVML calls alone, no gpulse | {calls:.0f} ns | gpulse's share {max(plist-calls,0):.0f} ns |")
    print(f"| published: one nvmlDeviceGetGraphicsRunningProcesses on a real driver | "
          f"{PUBLISHED_GRAPHICS_PROCESSES_US:,} us | {PUBLISHED_GRAPHICS_PROCESSES_US*1e3/max(plist-calls,1):,.0f}x gpulse's share |")


if __name__ == "__main__":
    main()
