"""bench/run.sh live (bench/live/run.sh): live views on 8 simulated GPUs at 1 s, as the table "Live
views" of bench/RESULTS.md (bench/results.py).

What it measures:
1. One `gpulse agent --simulate 8xH100 --live-interval-ms 1000` with 0, 1, 10 and 100 concurrent
   `GET /api/v1/stream` viewers, each count for --seconds: device reads per second (counted by the
   simulator, GPULSE_SIM_CALL_COUNTS: one utilization call per GPU per read) and the agent's CPU.
2. `gpulse top` at its 1 s refresh on the same 8 GPUs, through the agent and reading the GPUs
   directly (each in its own tmux pane), beside the anchor: `gpulse dmon --simulate 8xH100 -c 1`
   spawned each second (`watch -n1`-style polling; its CPU is each child's, from wait4, over each
   one-second cycle). All three run at once and are measured over the same windows.
CPU is the processes' own (the sum of their threads' /proc/PID/task/TID/schedstat run time, to the
nanosecond; the children's rusage for the anchor), which other load on the machine disturbs little.
Runs: --rounds windows (default 3) of --seconds each (default 30) for `top` and its anchor, a ratio per
window; each viewer count's --seconds split into --rounds windows. Medians with the min–max.
Time: about 4 minutes (4 × (seconds + 6) + rounds × seconds + start-up). Loopback and a unix socket
only; every process stops by itself.
Usage: live_bench.py --gpulse BUILD/bin/gpulse --work DIR [--seconds S] [--rounds N] [--json FILE]
"""
import argparse
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from proccpu import cpu_between, cpu_ns  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

GPUS = 8


def util_calls(path):
    with open(path, "rb") as f:
        return struct.unpack("<3Q", f.read(24))[2]


class Viewer(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.events = port, False, 0

    def run(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"GET /api/v1/stream HTTP/1.1\r\nHost: b\r\n\r\n")
        s.settimeout(1)
        while not self.stop:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                continue
            if not data:
                break
            self.events += data.count(b"\nevent: frame\n")
        s.close()


def start_agent(gpulse, work):
    calls = os.path.join(work, "calls")
    log = open(os.path.join(work, "agent.log"), "w")
    env = dict(os.environ, GPULSE_SIM_CALL_COUNTS=calls)
    env.pop("GPULSE_SIM_CLOCK", None)
    p = subprocess.Popen([gpulse, "agent", "--simulate", "8xH100", "--state-dir", os.path.join(work, "state"),
                          "--socket", os.path.join(work, "agent.sock"), "-a", "127.0.0.1:0",
                          "--live-interval-ms", "1000"], stdout=subprocess.DEVNULL, stderr=log, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(os.path.join(work, "agent.log")) as f:
            m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", f.read())
        if m and os.path.exists(os.path.join(work, "agent.sock")):
            return p, int(m.group(1)), calls
        time.sleep(0.1)
    p.kill()
    raise SystemExit("bench/live: the agent did not start")


def measure_viewers(agent, port, calls, n, seconds, windows):
    """Per window: device reads per GPU, reads per second, agent CPU (% of a core), frames per viewer
    per second."""
    viewers = [Viewer(port) for _ in range(n)]
    for v in viewers:
        v.start()
    time.sleep(3)  # every viewer connected and past its first frame
    out = []
    c, u, e, t = cpu_ns(agent.pid), util_calls(calls), sum(v.events for v in viewers), time.monotonic()
    for _ in range(windows):
        time.sleep(seconds / windows)
        c1, u1, e1, t1 = cpu_ns(agent.pid), util_calls(calls), sum(v.events for v in viewers), time.monotonic()
        dt = t1 - t
        out.append({"seconds": dt, "reads_per_gpu": (u1 - u) / GPUS, "reads_per_s": (u1 - u) / GPUS / dt,
                    "agent_cpu_pct": 100 * cpu_between(c, c1) / dt, "frames_per_viewer_per_s": (e1 - e) / max(n, 1) / dt})
        c, u, e, t = c1, u1, e1, t1
    for v in viewers:
        v.stop = True
    for v in viewers:
        v.join(5)
    time.sleep(2.5)  # the hub notices the viewers are gone
    return {"viewers": n, "windows": out}


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True)


class Top:
    """`gpulse top ARGS` in a tmux pane of its own (a terminal 160 × 60)."""

    def __init__(self, gpulse, work, args, name):
        self.name, self.sock = name, os.path.join(work, "tmux-" + name)
        tmux(self.sock, "new-session", "-d", "-x", "160", "-y", "60",
             f"env TERM=xterm-256color {gpulse} top {' '.join(args)}")
        self.pid = None

    def started(self):
        # The pane runs env, which execs gpulse: the same pid.
        self.pid = int(tmux(self.sock, "list-panes", "-F", "#{pane_pid}").stdout.split()[0])
        return self.pid

    def check(self):
        screen = tmux(self.sock, "capture-pane", "-p").stdout
        if "GPU 7" not in screen:
            raise SystemExit(f"bench/live: top ({self.name}) did not draw 8 GPUs:\n{screen}")

    def stop(self):
        tmux(self.sock, "kill-server")


class Anchor(threading.Thread):
    """`gpulse dmon --simulate 8xH100 -c 1` spawned, waited for, then a 1 s sleep, over and over (what
    `watch -n1` does). Each cycle: its start, the child's CPU (wait4's rusage), its length."""

    def __init__(self, gpulse):
        super().__init__(daemon=True)
        self.argv = [gpulse, "dmon", "--simulate", "8xH100", "-c", "1"]
        self.cycles, self.stop, self.failed = [], threading.Event(), None

    def run(self):
        actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
        while not self.stop.is_set():
            t0 = time.monotonic()
            pid = os.posix_spawn(self.argv[0], self.argv, os.environ, file_actions=actions)
            _, status, ru = os.wait4(pid, 0)
            if status != 0:
                self.failed = f"exit status {status}"
                return
            cpu = ru.ru_utime + ru.ru_stime
            self.stop.wait(1.0)
            self.cycles.append((t0, cpu, time.monotonic() - t0))

    def cpu_pct(self, t0, t1):
        """CPU of the cycles that started in [t0, t1), over their length: % of a core."""
        cs = [c for c in self.cycles if t0 <= c[0] < t1]
        return 100 * sum(c[1] for c in cs) / sum(c[2] for c in cs) if cs else float("nan")


def measure_tops(gpulse, work, sock, seconds, rounds):
    tops = [Top(gpulse, work, ["--host", "unix://" + sock], "via-agent"),
            Top(gpulse, work, ["--simulate", "8xH100"], "direct")]
    anchor = Anchor(gpulse)
    anchor.start()
    try:
        time.sleep(3)
        pids = [t.started() for t in tops]
        windows = []
        c, t = [cpu_ns(p) for p in pids], time.monotonic()
        for _ in range(rounds):
            time.sleep(seconds)
            c1, t1 = [cpu_ns(p) for p in pids], time.monotonic()
            time.sleep(1.5)  # the anchor's cycle that started last in the window has ended
            windows.append({"seconds": t1 - t, "via_agent_pct": 100 * cpu_between(c[0], c1[0]) / (t1 - t),
                            "direct_pct": 100 * cpu_between(c[1], c1[1]) / (t1 - t),
                            "anchor_pct": anchor.cpu_pct(t, t1)})
            c, t = [cpu_ns(p) for p in pids], time.monotonic()
        for top in tops:
            top.check()
        if anchor.failed:
            raise SystemExit(f"bench/live: gpulse dmon -c 1 failed: {anchor.failed}")
        return windows
    finally:
        anchor.stop.set()
        for top in tops:
            top.stop()
        anchor.join(30)


def command():
    """bench/run.sh's line, or bench/live/run.sh's with the options given to it."""
    argv, extra = sys.argv[1:], []
    while argv:
        x = argv.pop(0)
        if x in ("--gpulse", "--work"):
            argv = argv[1:]
        elif not x.startswith(("--gpulse=", "--work=")):
            extra.append(x)
    return " ".join(["bash bench/live/run.sh BUILD", *extra]) if extra else "bash bench/run.sh live"


def table(viewers, tops, a):
    t = Table("Live views: stream viewers and `gpulse top` on 8 GPUs at 1 s (issue 18)", command(),
              f"One agent on 8 simulated H100s at a 1 s live interval; each viewer count held for {a.seconds:g} s in "
              f"{a.rounds} windows; `gpulse top` (through the agent, and reading the GPUs directly) and the anchor run "
              f"at once over {a.rounds} windows of {a.seconds:g} s, a ratio per window. CPU: the processes' own "
              "(threads' schedstat; the anchor's children from wait4). Medians with the min–max of the windows.")
    by_n = {v["viewers"]: v["windows"] for v in viewers}
    watched = [n for n in sorted(by_n) if n]
    reads = lambda n: sum(w["reads_per_gpu"] for w in by_n[n])  # over the whole time the count was held
    held = lambda n: sum(w["seconds"] for w in by_n[n])
    # Exactly one read per interval: a window of T seconds holds floor(T) or ceil(T) reads per GPU (its
    # edges fall between reads); how far each window is outside that.
    misses = [max(0.0, math.floor(w["seconds"]) - w["reads_per_gpu"], w["reads_per_gpu"] - math.ceil(w["seconds"]))
              for n in watched for w in by_n[n]]
    t.row(f"device reads per second with {', '.join(map(str, watched))} `GET /api/v1/stream` viewers (simulator "
          "call count; reads per GPU over the time each count was held)",
          " / ".join(f"{reads(n) / held(n):.2f}" for n in watched) +
          f" ({' / '.join(f'{reads(n):.0f} in {held(n):.1f} s' for n in watched)})",
          "no viewer", f"{reads(0) / held(0):.2f} ({reads(0):.0f} in {held(0):.1f} s)", "",
          judge(misses, "<=", 0, "exactly one read per interval"))
    cpu = lambda n: [w["agent_cpu_pct"] for w in by_n[n]]
    top_n = max(watched)
    t.row(f"agent CPU with {top_n} viewers", spread(cpu(top_n), "{:.2f}", " %") + " of a core",
          "the agent with no viewer", spread(cpu(0), "{:.2f}", " %"), "", judge(cpu(top_n), "<", 5, "< 5 % of a core"))
    anchor = [w["anchor_pct"] for w in tops]
    for key, label in (("via_agent_pct", "`gpulse top` through the agent, CPU"),
                       ("direct_pct", "`gpulse top` reading the GPUs directly, CPU")):
        v = [w[key] for w in tops]
        t.row(label, spread(v, "{:.3f}", " %") + " of a core",
              "`gpulse dmon -c 1` spawned each second (`watch -n1`-style)" if key == "via_agent_pct" else "as above",
              spread(anchor, "{:.3f}", " %"), ratio([x / y for x, y in zip(v, anchor)], "{:.3f}"),
              judge(v, "<", 0.5, "< 0.5 %"))
    t.print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpulse", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    a.rounds = max(a.rounds, 3)
    os.makedirs(a.work, exist_ok=True)
    agent, port, calls = start_agent(a.gpulse, a.work)
    try:
        viewers = [measure_viewers(agent, port, calls, n, a.seconds, a.rounds) for n in (0, 1, 10, 100)]
        tops = measure_tops(a.gpulse, a.work, os.path.join(a.work, "agent.sock"), a.seconds, a.rounds)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)
    table(viewers, tops, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"viewers": viewers, "top": tops}, f, indent=2)


if __name__ == "__main__":
    main()
