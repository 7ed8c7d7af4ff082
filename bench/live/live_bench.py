"""Live-views benchmark (bench/live/run.sh): one `gpulse agent` on 8 simulated GPUs at a 1 s live
interval, with 0, 1, 10 and 100 concurrent /api/v1/stream viewers: device reads per second (counted by
the simulator, GPULSE_SIM_CALL_COUNTS) and the agent's CPU; then `gpulse top` at 1 s refresh on the same
8 GPUs (through the agent, and reading directly), side by side with the spawn-per-refresh anchor
`watch -n1`-style polling that runs `gpulse dmon -c 1` each second. Loopback and a unix socket only;
every process stops by itself. Prints a markdown table; --json writes the figures."""
import argparse
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")
GPUS = 8


def cpu_seconds(pid, children=False):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime (waited-for children)
    return ticks / TICK


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


def measure_viewers(agent, port, calls, n, seconds):
    viewers = [Viewer(port) for _ in range(n)]
    for v in viewers:
        v.start()
    time.sleep(3)  # every viewer connected and past its first frame
    c0, u0, e0 = cpu_seconds(agent.pid), util_calls(calls), sum(v.events for v in viewers)
    t0 = time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    c1, u1, e1 = cpu_seconds(agent.pid), util_calls(calls), sum(v.events for v in viewers)
    for v in viewers:
        v.stop = True
    for v in viewers:
        v.join(5)
    time.sleep(2.5)  # the hub notices the viewers are gone
    return {"viewers": n, "seconds": dt, "reads_per_s": (u1 - u0) / GPUS / dt,
            "agent_cpu_pct": 100 * (c1 - c0) / dt, "frames_per_viewer_per_s": (e1 - e0) / max(n, 1) / dt}


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True)


def measure_top(gpulse, work, args, seconds, name):
    sock = os.path.join(work, "tmux-" + name)
    env = "TERM=xterm-256color"
    tmux(sock, "new-session", "-d", "-x", "160", "-y", "60", f"env {env} {gpulse} top {' '.join(args)}")
    try:
        time.sleep(3)
        pid = int(tmux(sock, "list-panes", "-F", "#{pane_pid}").stdout.split()[0])
        # The pane runs env, which execs gpulse: the same pid.
        c0, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        c1, dt = cpu_seconds(pid), time.monotonic() - t0
        screen = tmux(sock, "capture-pane", "-p").stdout
        if "GPU 7" not in screen:
            raise SystemExit(f"bench/live: top ({name}) did not draw 8 GPUs:\n{screen}")
        return {"name": name, "seconds": dt, "cpu_pct": 100 * (c1 - c0) / dt}
    finally:
        tmux(sock, "kill-server")


def measure_anchor(gpulse, seconds):
    loop = subprocess.Popen(["bash", "-c", f"while :; do {gpulse} dmon --simulate 8xH100 -c 1 >/dev/null; sleep 1; done"])
    time.sleep(2)
    c0, t0 = cpu_seconds(loop.pid, children=True), time.monotonic()
    time.sleep(seconds)
    c1, dt = cpu_seconds(loop.pid, children=True), time.monotonic() - t0
    loop.send_signal(signal.SIGTERM)
    loop.wait()
    return {"name": "anchor: gpulse dmon -c 1 spawned each second", "seconds": dt, "cpu_pct": 100 * (c1 - c0) / dt}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpulse", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    agent, port, calls = start_agent(a.gpulse, a.work)
    try:
        rows = [measure_viewers(agent, port, calls, n, a.seconds) for n in (0, 1, 10, 100)]
        tops = [measure_top(a.gpulse, a.work, ["--host", "unix://" + os.path.join(a.work, "agent.sock")], a.seconds, "via-agent"),
                measure_top(a.gpulse, a.work, ["--simulate", "8xH100"], a.seconds, "direct"),
                measure_anchor(a.gpulse, a.seconds)]
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)
    base = rows[0]["agent_cpu_pct"]
    print("| stream viewers | device reads/s (simulator count) | frames/s per viewer | agent CPU, % of a core | over 0 viewers |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['viewers']} | {r['reads_per_s']:.2f} | {r['frames_per_viewer_per_s']:.2f} | {r['agent_cpu_pct']:.2f} | "
              f"{r['agent_cpu_pct'] - base:+.2f} |")
    anchor = tops[-1]["cpu_pct"]
    print()
    print("| 8 GPUs, 1 s refresh | CPU, % of a core | ratio to the anchor |")
    print("|---|---:|---:|")
    for t in tops:
        print(f"| {t['name']} | {t['cpu_pct']:.3f} | {t['cpu_pct'] / anchor:.3f}× |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"viewers": rows, "top": tops}, f, indent=2)


if __name__ == "__main__":
    main()
