"""Where a read-starting scrape's time goes (issue 20): the exporter without -k, the same exporter
given as many more device fields as make its page as large as Kubernetes mode's (the same-size
anchor of kubernetes.py), and -k on a fake kubelet of the node's 4 GPU pods, each scraped N times
one after the other, 105 ms apart, so that every scrape starts a device read (--min-refresh-ms 100).
perf records, per scrape, the request's read (recvfrom), the read starting (Exporter::ReadNow),
Kubernetes and Slurm attribution starting (Exporter::AddUsage), the page being rendered
(PageCache::Render) and the answer's sendmsg returning, through uprobes on the binary; the steps'
p50/p90/p99 in microseconds are printed per exporter.

Needs perf and the right to add uprobes (root); loopback only; every process stops by itself.
Usage: /usr/bin/python3 bench/exporter/read_timeline.py BUILD [--scrapes N]
"""
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kubernetes as k8s  # noqa: E402  (sets up the fake kubelet's import path)
from bench import bench_args, fetch, free_port  # noqa: E402

PROBES = {"rn": "Exporter7ReadNow", "au": "Exporter8AddUsage", "pr": "PageCache6Render"}
STEPS = [("request read -> read starts", 0, 1), ("device read", 1, 2), ("attribution", 2, 3),
         ("render, hand-back, send", 3, 4), ("whole scrape", 0, 4)]


def add_probes(gpulse):
    symbols = subprocess.run(["nm", gpulse], capture_output=True, text=True, check=True).stdout
    subprocess.run(["perf", "probe", "-q", "-d", "probe_gpulse:*"], capture_output=True)
    for name, part in PROBES.items():
        mangled = re.search(r" T (\S*" + part + r"\S*)$", symbols, re.M)
        if not mangled:
            sys.exit(f"read_timeline: no symbol for {part} in {gpulse}")
        r = subprocess.run(["perf", "probe", "-q", "-x", gpulse, "-a", f"{name}={mangled.group(1)}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"read_timeline: perf probe failed (root and uprobes are needed): {r.stderr.strip()}")


def record(pid, port, n, out, events=("probe_gpulse:*", "syscalls:sys_enter_recvfrom,syscalls:sys_exit_sendmsg")):
    """perf records `events` of process `pid` into `out` while /metrics on `port` is scraped n
    times, 105 ms apart, on one connection."""
    perf = subprocess.Popen(["perf", "record", "-q", *[x for e in events for x in ("-e", e)], "-o", out, "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(n):
        c.request("GET", "/metrics")
        c.getresponse().read()
        time.sleep(0.105)
    c.close()
    perf.send_signal(2)
    perf.wait(timeout=60)


def steps(data):
    """Per scrape whose five events came in order: the steps' durations in microseconds."""
    text = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True).stdout
    events = [(float(m.group(1)), m.group(2).split(":")[-1])
              for m in re.finditer(r"\s(\d+\.\d+):\s+(\S+):", text)]
    order = ["sys_enter_recvfrom", "rn", "au", "pr", "sys_exit_sendmsg"]
    out = {name: [] for name, _, _ in STEPS}
    for i in range(len(events) - 4):
        if [e[1] for e in events[i:i + 5]] == order:
            t = [e[0] for e in events[i:i + 5]]
            for name, a, b in STEPS:
                out[name].append((t[b] - t[a]) * 1e6)
    return out


def main():
    a, gpulse, _ = bench_args(lambda ap: ap.add_argument("--scrapes", type=int, default=300))
    add_probes(gpulse)
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "kubelet.sock")
    kubelet = k8s.FakeKubelet(sock, k8s.node_pods(k8s.uuids(gpulse)))
    procs = {}
    try:
        modes = {"without -k": [], "-k, 4 pods": ["-k", "--pod-resources-kubelet-socket", sock]}
        ports = {}
        for name, extra in modes.items():
            ports[name] = free_port()
            procs[name] = k8s.start(gpulse, ports[name], extra)
        served = {k: len(fetch(f"http://127.0.0.1:{p}/metrics")[1]) for k, p in ports.items()}
        target = served["-k, 4 pods"] - (served["without -k"] - len(k8s.once(gpulse, [])))
        counters = os.path.join(tmp.name, "same-size.csv")
        added, _ = k8s.same_size_counters(gpulse, target, counters)
        same = f"without -k, {added} more fields"
        ports[same] = free_port()
        procs[same] = k8s.start(gpulse, ports[same], ["-f", counters])
        print(f"read-starting scrapes, {a.scrapes} per exporter, 105 ms apart; microseconds p50 / p90 / p99")
        for name in ["without -k", same, "-k, 4 pods"]:
            data = os.path.join(tmp.name, "perf.data")
            record(procs[name].pid, ports[name], a.scrapes, data)
            got = steps(data)
            body = len(fetch(f"http://127.0.0.1:{ports[name]}/metrics")[1])
            print(f"{name} ({body:,} B, {len(got['whole scrape'])} scrapes timed):")
            for step, v in got.items():
                v.sort()
                if v:
                    q = [v[min(len(v) - 1, int(p * len(v)))] for p in (0.5, 0.9, 0.99)]
                    print(f"  {step:28s} {q[0]:7.0f} {q[1]:7.0f} {q[2]:7.0f}")
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(timeout=30)
        kubelet.stop()
        subprocess.run(["perf", "probe", "-q", "-d", "probe_gpulse:*"], capture_output=True)
        tmp.cleanup()


if __name__ == "__main__":
    main()
