"""The exporter's kubelet List (issue 20), off the scrape path: CPU per List of `gpulse exporter -k` on
a fake kubelet of 5,004 pods (tests/e2e/fake_kubelet.py, a 4.9 MB answer), with --kubelet-refresh-ms
250 and nobody scraping, so that the List is nearly all the exporter does. Given two gpulse binaries
(an older build beside a newer one, both in BUILD/bin so that each finds the simulator), they run
one after the other, alternating ROUNDS times, against the same kubelet: the first is the anchor.

Usage: /usr/bin/python3 bench/exporter/kubelet_list.py BUILD [--other NAME] [--seconds S] [--rounds N]
  --other NAME   a second binary in BUILD/bin (for example gpulse_before, a copy of an older build)
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kubernetes as k8s  # noqa: E402  (sets up the fake kubelet's import path)
from bench import free_port  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--other")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    binaries = [os.path.join(a.build, "bin", n) for n in (["gpulse"] + ([a.other] if a.other else []))]
    if a.other:
        binaries.reverse()  # the older build first: the anchor
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "kubelet.sock")
    kubelet = k8s.FakeKubelet(sock, k8s.node_pods(k8s.uuids(binaries[-1])) + k8s.filler_pods(k8s.PODS))
    per_list = {b: [] for b in binaries}
    try:
        for _ in range(a.rounds):
            for b in binaries:
                p = k8s.start(b, free_port(), ["-k", "--pod-resources-kubelet-socket", sock,
                                               "--kubelet-refresh-ms", "250"])
                try:
                    time.sleep(3)
                    c0, l0 = k8s.cpu_s(p.pid), kubelet.calls
                    time.sleep(a.seconds)
                    c1, l1 = k8s.cpu_s(p.pid), kubelet.calls
                finally:
                    p.terminate()
                    p.wait(timeout=30)
                per_list[b].append(1000 * (c1 - c0) / max(1, l1 - l0))
    finally:
        kubelet.stop()
        tmp.cleanup()
    anchor = sum(per_list[binaries[0]]) / len(per_list[binaries[0]])
    print(f"fake kubelet answer {kubelet.answer_size():,} B ({k8s.PODS + 4:,} pods); {a.rounds} alternating "
          f"rounds of {a.seconds:g} s each\n")
    print("| binary | CPU per List (each round) | mean | vs the first |")
    print("|---|---:|---:|---:|")
    for b, v in per_list.items():
        mean = sum(v) / len(v)
        print(f"| {os.path.basename(b)} | {', '.join(f'{x:.1f} ms' for x in v)} | {mean:.1f} ms | {mean / anchor:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
