"""bench/vendors: times rocm-smi on the fixture trees (the anchor) and prints the table of
bench/RESULTS.md, "AMD and Intel GPUs", from vendor_tick_bench's JSON of the same run.

rocm-smi runs as `unshare -m sh -c 'mount --bind TREE /sys && exec rocm-smi …'`; the same command
with `true` instead of rocm-smi is timed too and subtracted, so the figure is rocm-smi's own call.
Wall time and CPU time (user + system of the children) are both reported; medians of --calls runs."""
import argparse
import json
import os
import resource
import statistics
import subprocess
import time

ROCM = "rocm-smi --showuse --showpower --showmeminfo vram"


def timed(tree, command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind "$0" /sys && exec {command}', tree],
                       capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p


def median_call(tree, command, calls):
    walls, cpus = [], []
    for _ in range(calls):
        wall, cpu, p = timed(tree, command)
        if command != "true" and "GPU use" not in p.stdout:
            raise SystemExit(f"rocm-smi did not read {tree}: {p.stdout}{p.stderr}")
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--calls", type=int, default=15)
    a = ap.parse_args()
    with open(a.ticks, encoding="utf-8") as f:
        doc = json.load(f)
    med = {b["run_name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}

    def tick_us(name):
        return med[name]["ns_per_device_tick"] * 1e6  # inverted rate: seconds per device

    tree = os.path.join(os.path.abspath(a.fixtures), "rx7900")
    setup_wall, setup_cpu = median_call(tree, "true", a.calls)
    smi_wall, smi_cpu = median_call(tree, ROCM, a.calls)
    smi_wall_us = (smi_wall - setup_wall) * 1e6
    smi_cpu_us = (smi_cpu - setup_cpu) * 1e6
    ctx = doc["context"]
    print(f"host: {ctx.get('host_name')}, {ctx.get('num_cpus')} CPUs; gpulse RelWithDebInfo; "
          f"rocm-smi {a.calls} calls, medians")
    print()
    print("| measure (one device, one tick) | time | rocm-smi call ÷ this |")
    print("|---|---:|---:|")
    amd = tick_us("BM_VendorTick/amdgpu-rx7900")
    for name, label in (("BM_VendorTick/amdgpu-rx7900", "gpulse, amdgpu, RX 7900 fixture (every field amdgpu gives)"),
                        ("BM_VendorTick/amdgpu-mi300x", "gpulse, amdgpu, MI300X fixture"),
                        ("BM_VendorTick/intel-i915", "gpulse, i915, Arc A770 fixture"),
                        ("BM_VendorTick/intel-xe", "gpulse, xe, B580 fixture"),
                        ("BM_VendorTick/nvml-sim", "gpulse, NVML simulator, 1xH200 (full catalogue)")):
        us = tick_us(name)
        print(f"| {label} | {us:.1f} us | {smi_wall_us / us:,.0f}x |")
    print(f"| anchor: rocm-smi --showuse --showpower --showmeminfo vram, RX 7900 fixture, wall | "
          f"{smi_wall_us / 1000:.1f} ms | 1x |")
    print(f"| anchor: the same call, CPU (user + system) | {smi_cpu_us / 1000:.1f} ms | |")
    print(f"| (subtracted: unshare + bind mount + exec true) | {setup_wall * 1000:.1f} ms | |")
    print()
    print(f"Targets: >= 1,000x cheaper than the rocm-smi call: {smi_wall_us / amd:,.0f}x (wall), "
          f"{smi_cpu_us / amd:,.0f}x (CPU); <= 20 us per device: {amd:.1f} us (RX 7900), "
          f"{tick_us('BM_VendorTick/amdgpu-mi300x'):.1f} us (MI300X).")


if __name__ == "__main__":
    main()
