"""Where a Kubernetes-mode exporter lists the GPUs' processes (issue 20): inside a scrape's read, or
between reads. `gpulse exporter --simulate k8s-8xH100 -k` on a fake kubelet of the node's 4 GPU pods
is scraped N times, 105 ms apart (so each scrape starts a read, --min-refresh-ms 100), while perf's
uprobes mark each read (Exporter::ReadNow up to Exporter::AddUsage, where the device readings and
process lists are taken) and each call of the simulator's nvmlDeviceGetRunningProcessDetailList.
Prints the reads and the list calls made inside and outside them, for BUILD/bin/gpulse and, with
--other NAME, for BUILD/bin/NAME (an older build copied there) the same way.

Needs perf and the right to add uprobes (root); loopback only; every process stops by itself.
Usage: /usr/bin/python3 bench/exporter/lists_in_reads.py BUILD [--reads N] [--other NAME]
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kubernetes as k8s  # noqa: E402  (sets up the fake kubelet's import path)
import read_timeline  # noqa: E402
from bench import bench_args, free_port  # noqa: E402
from fake_kubelet import FakeKubelet  # noqa: E402

LIST_CALL = "nvmlDeviceGetRunningProcessDetailList"


def probe(args):
    r = subprocess.run(["perf", "probe", "-q", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"lists_in_reads: perf probe failed (root and uprobes are needed): {r.stderr.strip()}")


def add_probes(binary, sim):
    subprocess.run(["perf", "probe", "-q", "-d", "probe_*:*"], capture_output=True)
    symbols = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    for name, part in (("rn", "Exporter7ReadNowEv"), ("au", "Exporter8AddUsage")):
        m = re.search(r" T (\S*" + part + r"\S*)$", symbols, re.M)
        if not m:
            sys.exit(f"lists_in_reads: no symbol for {part} in {binary}")
        probe(["-x", binary, "-a", f"{name}={m.group(1)}"])
    probe(["-x", sim, "-a", f"pl={LIST_CALL}"])


def count(binary, sim, socket, reads, tmp):
    add_probes(binary, sim)
    port = free_port()
    exporter = k8s.start(binary, port, ["-k", "--pod-resources-kubelet-socket", socket])
    data = os.path.join(tmp, "perf.data")
    try:
        read_timeline.record(exporter.pid, port, reads, data, events=("probe_*:*",))
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
        subprocess.run(["perf", "probe", "-q", "-d", "probe_*:*"], capture_output=True)
    out = subprocess.run(["perf", "script", "-i", data, "-F", "event"], capture_output=True, text=True).stdout
    n_reads = inside = outside = 0
    reading = False
    for line in out.split():
        event = line.rstrip(":").split(":")[-1]
        if event == "rn":
            reading, n_reads = True, n_reads + 1
        elif event == "au":
            reading = False
        elif event == "pl":
            inside, outside = (inside + 1, outside) if reading else (inside, outside + 1)
    return n_reads, inside, outside


def main():
    def more(ap):
        ap.add_argument("--reads", type=int, default=100)
        ap.add_argument("--other", help="another gpulse binary in BUILD/bin, counted the same way")

    a, gpulse, _ = bench_args(more)
    sim = os.path.join(os.path.dirname(gpulse), "libgpulse-nvml-sim.so")
    binaries = [gpulse] + ([os.path.join(os.path.dirname(gpulse), a.other)] if a.other else [])
    tmp = tempfile.TemporaryDirectory()
    socket = os.path.join(tmp.name, "kubelet.sock")
    kubelet = FakeKubelet(socket, k8s.node_pods(k8s.uuids(gpulse)))
    try:
        rows = [(b, *count(b, sim, socket, a.reads, tmp.name)) for b in binaries]
    finally:
        kubelet.stop()
    print(f"-k on 4 pods, {a.reads} scrapes 105 ms apart; calls of {LIST_CALL} (25 make one list of the 8 GPUs)\n")
    print("| exporter | reads | list calls inside a read | list calls between reads |")
    print("|---|---:|---:|---:|")
    for b, n, inside, outside in rows:
        print(f"| {os.path.basename(b)} | {n} | {inside} | {outside} |")


if __name__ == "__main__":
    sys.exit(main())
