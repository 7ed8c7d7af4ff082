"""Agent history benchmark (bench/agent/README.md): `gpulse agent` keeping a watch of the full field
catalogue on 8 simulated H100s at 1 Hz for 4 simulated hours, side by side in the same run with a real
Prometheus server (Debian's /usr/bin/prometheus) holding the same series.

Two subcommands; bench/agent/run.sh runs both:

  measure  starts the agent on a simulated clock, adds the watch, advances the clock, then loads the
           agent's whole history into Prometheus over remote write (in time order, so that it ends
           in the state a server that scraped for 4 hours is in: a compacted 2-hour block and a
           2-hour head), takes a TSDB snapshot and starts a second Prometheus on it (all 4 hours in
           persistent blocks), then measures memory, bytes per stored value and the same 1-hour
           range query against all of them, interleaved. Writes the figures as JSON.
  write    prints the table "Agent history" of bench/RESULTS.md from that JSON (bench/results.py),
           and with --out writes it and every figure in detail to a markdown file.

Anchor: Prometheus live and Prometheus blocks, in the same run. Runs: memory and bytes per value are
one figure each (one 4-hour run); the 1-hour query runs --rounds rounds (default 500), split into 5
blocks of consecutive rounds for the spread of p50, p99 and their ratios; the checkpoint alone runs 3
times. Time: about 2 to 3 minutes. Usage: bench/agent/run.sh BUILD [measure options] (bench/run.sh
history), or report.py write --json FIGURES.json [--out FILE.md] for a saved run.

Everything listens on 127.0.0.1 (the agent's API also on a unix socket in the work directory).
Every process started here is stopped at the end, on error, and on SIGTERM; each one's pid is
also written to WORK/*.pid for run.sh's trap. Run with Debian's /usr/bin/python3.
"""
import argparse
import contextlib
import hashlib
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results import Table, judge, ratio, spread  # noqa: E402  (bench/results.py)

TICK = os.sysconf("SC_CLK_TCK")
QUERY_FIELD_ID = 155  # DCGM_FI_DEV_POWER_USAGE
QUERY_FIELD = "DCGM_FI_DEV_POWER_USAGE"
QUERY_GPU = 0


# ---------------------------------------------------------------- processes and /proc

def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile of a process, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "Threads"):
                out[k] = int(v.split()[0])
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def io_write_bytes(pid):
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("write_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def du_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """The processes this run started: stopped (TERM, then KILL) in reverse order on exit."""

    def __init__(self, work):
        self.work, self.items, self.procs = work, {}, []

    def start(self, name, argv, env=None, log=None):
        out = open(log, "w") if log else subprocess.DEVNULL
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
        with open(os.path.join(self.work, f"{name}.pid"), "w") as f:
            f.write(f"{p.pid}\n")
        self.items[p.pid] = name
        self.procs.append(p)
        return p

    def stop(self, p, timeout=60):
        """SIGTERM and wait; returns (exit code, seconds to exit)."""
        t0 = time.monotonic()
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        name = self.items.pop(p.pid, None)
        if name:  # gone: run.sh's trap must not signal a pid that may be reused
            try:
                os.unlink(os.path.join(self.work, f"{name}.pid"))
            except OSError:
                pass
        return p.returncode, time.monotonic() - t0

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p, timeout=30)


# ---------------------------------------------------------------- HTTP

class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def connect(where, timeout=120):
    """`unix:PATH` or `HOST:PORT` -> a keep-alive HTTP connection."""
    if where.startswith("unix:"):
        return UnixConnection(where[5:], timeout)
    host, port = where.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def request(conn, method, path, body=None, headers=None):
    """(status, body bytes) over `conn`, reconnecting once if the server had closed it."""
    for attempt in (0, 1):
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            conn.close()
            if attempt:
                raise
        except BaseException:
            conn.close()  # else http.client refuses the next request on this connection object
            raise
    raise AssertionError


def get_json(conn, path):
    status, body = request(conn, "GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    return json.loads(body)


def post_json(conn, path, obj):
    status, body = request(conn, "POST", path, json.dumps(obj).encode(), {"Content-Type": "application/json"})
    if status != 200:
        raise RuntimeError(f"POST {path}: {status} {body[:300]!r}")
    return json.loads(body)


def wait_for(what, predicate, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = predicate()
            if v:
                return v
        except (OSError, http.client.HTTPException, ValueError, RuntimeError):
            pass
        if proc is not None and proc.poll() is not None:
            sys.exit(f"bench/agent: {what}: the process exited ({proc.returncode})")
        if time.monotonic() > deadline:
            sys.exit(f"bench/agent: {what}: not within {timeout} s")
        time.sleep(0.1)


def prom_metrics(conn):
    status, body = request(conn, "GET", "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):  # a metric with labels: the sum over them
            name, _, value = line.rpartition(" ")
            try:
                out[name.split("{")[0]] = out.get(name.split("{")[0], 0.0) + float(value)
            except ValueError:
                pass
    return out


# ---------------------------------------------------------------- Prometheus remote write, by hand
# WriteRequest{repeated TimeSeries timeseries = 1}, TimeSeries{repeated Label labels = 1;
# repeated Sample samples = 2}, Label{string name = 1; string value = 2}, Sample{double value = 1;
# int64 timestamp = 2} (prometheus/prompb), snappy block format with literals only (valid snappy,
# no compression: nothing to install).

def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def pb_bytes(field, data):
    return uvarint(field << 3 | 2) + uvarint(len(data)) + data


def pb_labels(labels):
    return b"".join(pb_bytes(1, pb_bytes(1, k.encode()) + pb_bytes(2, v.encode())) for k, v in sorted(labels.items()))


_SAMPLE_HEAD = struct.Struct("<BBBdB").pack  # TimeSeries.samples tag, length, Sample.value tag, value, timestamp tag


def pb_series(label_bytes, points):
    """One TimeSeries of the present points [(t_ms, value)], absent (None) points left out."""
    parts = [label_bytes]
    for t, v in points:
        if v is None:
            continue
        ts = uvarint(t)
        parts.append(_SAMPLE_HEAD(0x12, 10 + len(ts), 0x09, v, 0x10) + ts)
    return pb_bytes(1, b"".join(parts)), len(parts) - 1


def snappy_literal(data):
    out = [uvarint(len(data))]
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        n = len(chunk) - 1
        out.append(bytes([n << 2]) if n < 60 else bytes([61 << 2]) + struct.pack("<H", n))
        out.append(chunk)
    return b"".join(out)


REMOTE_WRITE_HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                        "X-Prometheus-Remote-Write-Version": "0.1.0"}


# ---------------------------------------------------------------- percentiles

def pct(values, q):
    s = sorted(values)
    if not s:
        return None
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def lat_summary(ms):
    return {"n": len(ms), "p50_ms": pct(ms, 0.5), "p90_ms": pct(ms, 0.9), "p99_ms": pct(ms, 0.99),
            "min_ms": min(ms), "max_ms": max(ms), "mean_ms": statistics.fmean(ms)}


# ---------------------------------------------------------------- the run

def machine():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"nproc": os.cpu_count(), "cpu_model": model, "mem_gib": round(mem_kib / 2**20, 1),
            "kernel": os.uname().release}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def version_of(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def start_prometheus(procs, a, name, data_dir, port, extra):
    cfg = os.path.join(a.work, "prometheus-empty.yml")
    with open(cfg, "w") as f:
        f.write("# nothing is scraped: the series arrive over remote write or from blocks\n"
                "global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    p = procs.start(name, [a.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={data_dir}",
                           f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=10y",
                           *extra], log=os.path.join(a.work, f"{name}.log"))
    conn = connect(f"127.0.0.1:{port}")
    wait_for(f"{name} ready", lambda: request(conn, "GET", "/-/ready")[0] == 200, 180, p)
    return p, conn


def export_to_prometheus(agent, prom, field_ids, t0_s, t_end_s, window_s, labels_extra):
    """Reads the agent's whole history (per field and time window, every entity) and remote-writes
    it to Prometheus in time order. Returns counts."""
    points = present = requests = 0
    t_read = t_write = 0.0
    windows = list(range(t0_s, t_end_s + 1, window_s))
    seen, total = {}, {}  # (entity, field) -> present values, points
    for w0 in windows:
        w1 = min(w0 + window_s, t_end_s + 1)
        for fid in field_ids:
            r0 = time.perf_counter()
            d = get_json(agent, f"/api/v1/history?fields={fid}&since={w0}&until={w1}&format=json")
            r1 = time.perf_counter()
            t_read += r1 - r0
            body, n_series = [], 0
            for e in d["entities"]:
                for s in e["series"]:
                    pts = s.get("points") or []
                    points += len(pts)
                    if not pts:
                        continue
                    labels = {"__name__": s["field"], "gpu": str(e["gpu"]), "UUID": e["uuid"], **labels_extra}
                    ts, n = pb_series(pb_labels(labels), pts)
                    present += n
                    key = (e["entity"], s["field_id"])
                    seen[key] = seen.get(key, 0) + n
                    total[key] = total.get(key, 0) + len(pts)
                    if n:
                        body.append(ts)
                        n_series += 1
            if body:
                payload = snappy_literal(b"".join(body))
                status, text = request(prom, "POST", "/api/v1/write", payload, REMOTE_WRITE_HEADERS)
                if status not in (200, 204):
                    sys.exit(f"bench/agent: remote write refused: {status} {text[:400]!r}")
                requests += 1
            t_write += time.perf_counter() - r1
    absent_only = sorted(k for k, n in seen.items() if n == 0)
    partly = sorted(k for k, n in seen.items() if 0 < n < total[k])
    return {"agent_points_read": points, "present_values_written": present, "remote_write_requests": requests,
            "series_with_points": len(seen), "series_absent_only": len(absent_only),
            "fields_absent_only": sorted({f for _, f in absent_only}), "series_partly_absent": len(partly),
            "windows": len(windows), "window_s": window_s, "agent_read_s": t_read, "encode_and_write_s": t_write}


def prom_state(p, conn, data_dir):
    m = prom_metrics(conn)
    st = get_json(conn, "/api/v1/status/tsdb")["data"]["headStats"]
    blocks = []
    for name in sorted(os.listdir(data_dir)):
        meta = os.path.join(data_dir, name, "meta.json")
        if os.path.isfile(meta):
            with open(meta) as f:
                mj = json.load(f)
            blocks.append({"ulid": name, "min_time": mj["minTime"], "max_time": mj["maxTime"],
                           "samples": mj["stats"]["numSamples"], "series": mj["stats"]["numSeries"],
                           "chunks": mj["stats"]["numChunks"], "bytes": du_bytes(os.path.join(data_dir, name))})
    return {"mem": proc_status(p.pid), "cpu_s": cpu_seconds(p.pid),
            "go_heap_inuse_bytes": m.get("go_memstats_heap_inuse_bytes"),
            "go_sys_bytes": m.get("go_memstats_sys_bytes"),
            "head_series": m.get("prometheus_tsdb_head_series"), "head_chunks": m.get("prometheus_tsdb_head_chunks"),
            "head_samples_appended": m.get("prometheus_tsdb_head_samples_appended_total"),
            "compactions": m.get("prometheus_tsdb_compactions_total"),
            "head_min_time": st.get("minTime"), "head_max_time": st.get("maxTime"),
            "blocks": blocks, "disk_bytes": du_bytes(data_dir),
            "wal_bytes": du_bytes(os.path.join(data_dir, "wal")),
            "chunks_head_bytes": du_bytes(os.path.join(data_dir, "chunks_head"))}


def malloc_probe(pid, log):
    """glibc's own account of the agent's heap (malloc_stats, printed to the agent's stderr), then
    malloc_trim(0) and the VmRSS after it: how much of the RSS is memory malloc holds but the agent
    has freed. Attaches gdb for a moment (opt-in: --malloc-probe)."""
    before = proc_status(pid)
    with open(log) as f:
        start = len(f.read())
    for _ in range(3):
        r = subprocess.run(["gdb", "-batch", "-p", str(pid), f"/proc/{pid}/exe", "-ex", "call (void)malloc_stats()",
                            "-ex", "call (int)malloc_trim(0)"], capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            break
        time.sleep(1)
    time.sleep(0.5)
    with open(log) as f:
        text = f.read()[start:]
    arenas = [{"system": int(a), "in_use": int(b)} for a, b in
              re.findall(r"Arena \d+:\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*(\d+)", text)]
    total = re.search(r"Total \(incl\. mmap\):\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*(\d+)", text)
    return {"gdb_rc": r.returncode, "gdb_tail": (r.stdout + r.stderr)[-600:], "mem_before": before, "mem_after_trim": proc_status(pid), "arenas": arenas,
            "total_system": int(total[1]) if total else None, "total_in_use": int(total[2]) if total else None}


def agent_status(agent):
    return get_json(agent, "/api/v1/status")


def copy_binary(gpulse, work):
    """The gpulse binary and the simulator library next to it (where --simulate looks), copied into
    the work directory: a rebuild during the run cannot change what is measured halfway."""
    src = os.path.dirname(os.path.abspath(gpulse))
    dst = os.path.join(work, "bin")
    os.makedirs(dst, exist_ok=True)
    for name in (os.path.basename(gpulse), "libgpulse-nvml-sim.so"):
        shutil.copy2(os.path.join(src, name), os.path.join(dst, name))
    h = hashlib.sha256()
    with open(os.path.join(dst, os.path.basename(gpulse)), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    info = {"path": os.path.abspath(gpulse), "sha256": h.hexdigest(),
            "mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(os.stat(gpulse).st_mtime))}
    return os.path.join(dst, os.path.basename(gpulse)), info


def measure(a):
    os.makedirs(a.work, exist_ok=True)
    a.gpulse, binary = copy_binary(a.gpulse, a.work)
    procs = Procs(a.work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench/agent: terminated"))
    out = {"started_unix": time.time(), "load_before": loadavg(), "machine": machine(),
           "binary": binary,
           "versions": {"gpulse": version_of([a.gpulse, "--version"]),
                        "prometheus": version_of([a.prometheus, "--version"])},
           "params": {"hours": a.hours, "step_s": a.step_s, "rounds": a.rounds, "settle_s": a.settle_s, "interval_ms": 1000,
                      "keep_age_s": int(a.hours * 3600), "scenario": "8xH100",
                      "warmup": a.warmup, "extra_args": a.extra_args, "query": f"fields={QUERY_FIELD_ID}&entities={QUERY_GPU}&since=1h"}}
    try:
        run(a, procs, out)
    finally:
        procs.stop_all()
    out["load_after"] = loadavg()
    out["wall_s"] = time.time() - out["started_unix"]
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"bench/agent: figures in {a.json}", file=sys.stderr)


def sim_start_s(arg):
    """Where the simulated clock starts. "auto": 100 days (2026-04-11T00:00Z), or past the machine's
    uptime on a 2-hour boundary if that is later.
    Why: the backend primes its GPM (profiling) readers with the real monotonic clock but reads them
    on the simulated one (src/gpu/nvml/nvml_backend.cc, PrimeGpm), so while the simulated time is
    below the uptime every profiling field of every tick reads absent. Starting above it gives the
    watch the values a real node would have; the count of all-absent series is reported either way."""
    if arg != "auto":
        return int(arg)
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return max(100 * 86400, (int(up + 86400) // 7200 + 1) * 7200)


def run(a, procs, out):
    sock = os.path.join(a.work, "agent.sock")
    start_s = sim_start_s(a.sim_start_s)
    out["params"]["sim_start_s"] = start_s
    env = dict(os.environ, GPULSE_SIM_CLOCK=str(start_s))
    agent_log = os.path.join(a.work, "agent.log")
    agent_p = procs.start("agent", [a.gpulse, "agent", "--simulate", "8xH100", "--state-dir",
                                    os.path.join(a.work, "state"), "--socket", sock, "-a", "127.0.0.1:0",
                                    "--checkpoint-s", "86400"], env=env, log=agent_log)

    def agent_url():
        with open(agent_log) as f:
            m = re.search(r"on http://(127\.0\.0\.1:\d+)/metrics", f.read())
        return m and os.path.exists(sock) and m[1]

    tcp = wait_for("agent start", agent_url, 60, agent_p)
    agent = connect("unix:" + sock)
    wait_for("agent API", lambda: agent_status(agent), 30, agent_p)
    ag = out["agent"] = {"pid": agent_p.pid, "tcp": tcp}
    ag["mem_idle"] = proc_status(agent_p.pid)

    # The watch, through the CLI as a user adds it.
    keep = int(a.hours * 3600)
    w = subprocess.run([a.gpulse, "watch", "--host", "unix://" + sock, "-g", "0", "-e", "all", "-i", "1000",
                        "--keep-age", str(keep)], capture_output=True, text=True, timeout=60)
    if w.returncode != 0:
        sys.exit("bench/agent: gpulse watch failed: " + w.stderr)
    ag["watch_cli"] = w.stdout.strip()
    watches = get_json(agent, "/api/v1/watches")["watches"]
    field_ids = [f["id"] for f in watches[0]["fields"]]
    ag["fields"] = len(field_ids)
    ag["mem_watch"] = proc_status(agent_p.pid)
    st = agent_status(agent)
    ag["status_watch"] = st["history"]
    t0_s = st["now_unix_ns"] // 10**9

    # Advance the simulated clock in steps; each step runs its due ticks and one checkpoint.
    steps = []
    left = keep
    while left > 0:
        step = min(a.step_s, left)
        c0, io0, w0 = cpu_seconds(agent_p.pid), io_write_bytes(agent_p.pid), time.perf_counter()
        r = post_json(agent, "/api/v1/clock", {"advance_s": step})
        wall = time.perf_counter() - w0
        c1, io1 = cpu_seconds(agent_p.pid), io_write_bytes(agent_p.pid)
        left -= step
        h = agent_status(agent)["history"]
        steps.append({"simulated_s": keep - left, "advance_s": step, "ticks": r.get("ticks"),
                      "checkpoint": r.get("checkpoint"), "wall_s": wall, "agent_cpu_s": c1 - c0,
                      "write_bytes": None if io0 is None else io1 - io0, "mem": proc_status(agent_p.pid),
                      "points": h["points"], "bytes": h["bytes"]})
    ag["steps"] = steps
    ag["mem_4h"] = proc_status(agent_p.pid)
    st = agent_status(agent)
    ag["status_4h"] = st
    t_end_s = st["now_unix_ns"] // 10**9
    # A checkpoint alone (advance 0 s: no tick is due), three times.
    cps = []
    for _ in range(3):
        io0, w0 = io_write_bytes(agent_p.pid), time.perf_counter()
        post_json(agent, "/api/v1/clock", {"advance_s": 0})
        cps.append({"wall_s": time.perf_counter() - w0,
                    "write_bytes": None if io0 is None else io_write_bytes(agent_p.pid) - io0})
    ag["checkpoint_only"] = cps
    ag["state_dir_bytes"] = du_bytes(os.path.join(a.work, "state"))
    ag["mem_after_checkpoints"] = proc_status(agent_p.pid)

    # Prometheus A: the same series over remote write, in time order.
    port_a = free_port()
    prom_a_dir = os.path.join(a.work, "prom-live")
    prom_a_p, prom_a = start_prometheus(procs, a, "prometheus-live", prom_a_dir, port_a,
                                        ["--web.enable-remote-write-receiver", "--web.enable-admin-api"])
    time.sleep(2)
    pa = out["prometheus_live"] = {"pid": prom_a_p.pid, "state_start": prom_state(prom_a_p, prom_a, prom_a_dir)}
    pa["mem_start"] = pa["state_start"]["mem"]
    t = time.perf_counter()
    pa["ingest"] = export_to_prometheus(agent, prom_a, field_ids, t0_s, t_end_s, a.window_s,
                                        {"job": "gpulse-agent", "instance": "127.0.0.1:9400"})
    pa["ingest"]["wall_s"] = time.perf_counter() - t
    ag["mem_after_export"] = proc_status(agent_p.pid)
    present = pa["ingest"]["present_values_written"]

    def compacted():
        s = prom_state(prom_a_p, prom_a, prom_a_dir)
        # Past 3 hours of head, Prometheus compacts its oldest 2 hours into a block.
        return s if (s["head_samples_appended"] or 0) >= present and (s["blocks"] or a.hours <= 3) else None

    wait_for("Prometheus head compaction", compacted, 120, prom_a_p)
    time.sleep(a.settle_s)
    pa["state_ingested"] = prom_state(prom_a_p, prom_a, prom_a_dir)

    # Snapshot (head included) = all hours in persistent blocks; Prometheus B starts on it.
    snap = post_json(prom_a, "/api/v1/admin/tsdb/snapshot", {})  # POST with an empty JSON body
    snap_dir = os.path.join(prom_a_dir, "snapshots", snap["data"]["name"])
    prom_b_dir = os.path.join(a.work, "prom-blocks")
    os.rename(snap_dir, prom_b_dir)
    port_b = free_port()
    blocks_bytes = du_bytes(prom_b_dir)
    prom_b_p, prom_b = start_prometheus(procs, a, "prometheus-blocks", prom_b_dir, port_b, [])
    time.sleep(a.settle_s)
    pb = out["prometheus_blocks"] = {"pid": prom_b_p.pid, "snapshot_bytes": blocks_bytes,
                                     "state_start": prom_state(prom_b_p, prom_b, prom_b_dir)}

    # The 1-hour range query, interleaved round by round over every path.
    since = t_end_s - 3600
    agent_q = f"/api/v1/history?fields={QUERY_FIELD_ID}&entities={QUERY_GPU}&since=1h&format=json"
    promql = urllib.parse.quote(f'{QUERY_FIELD}{{gpu="{QUERY_GPU}"}}')
    prom_q = f"/api/v1/query_range?query={promql}&start={since}&end={t_end_s}&step=1s"
    paths = {
        "agent_tcp_keepalive": (lambda: connect(tcp), agent_q, True),
        "agent_unix_keepalive": (lambda: connect("unix:" + sock), agent_q, True),
        "agent_tcp_new_connection": (lambda: connect(tcp), agent_q, False),
        "prometheus_live_keepalive": (lambda: connect(f"127.0.0.1:{port_a}"), prom_q, True),
        "prometheus_live_new_connection": (lambda: connect(f"127.0.0.1:{port_a}"), prom_q, False),
        "prometheus_blocks_keepalive": (lambda: connect(f"127.0.0.1:{port_b}"), prom_q, True),
    }
    conns = {k: mk() for k, (mk, _, _) in paths.items()}
    bodies = {}
    for k, (mk, q, keepalive) in paths.items():  # warm-up, and the answers to compare
        for _ in range(a.warmup):
            status, bodies[k] = request(conns[k], "GET", q)
            if status != 200:
                sys.exit(f"bench/agent: {k}: {status} {bodies[k][:300]!r}")
    times = {k: [] for k in paths}
    sizes = {k: len(bodies[k]) for k in paths}
    rng = random.Random(1)
    order = list(paths)
    for _ in range(a.rounds):
        rng.shuffle(order)  # no path always first after the idle gap, or always after another
        for k in order:
            mk, q, keepalive = paths[k]
            c = conns[k] if keepalive else mk()
            t = time.perf_counter_ns()
            status, body = request(c, "GET", q, headers=None if keepalive else {"Connection": "close"})
            times[k].append((time.perf_counter_ns() - t) / 1e6)
            if not keepalive:
                c.close()
            if status != 200:
                sys.exit(f"bench/agent: {k}: {status}")
    # Every request's time, in round order: write() splits the rounds into runs (blocks of consecutive
    # rounds, the same span of time for every path) for the spread of p50, p99 and their ratios.
    out["query"] = {k: dict(lat_summary(v), response_bytes=sizes[k], times_ms=[round(x, 4) for x in v])
                    for k, v in times.items()}
    out["query"]["agent_path"] = agent_q
    out["query"]["prometheus_path"] = prom_q

    # Same answer?
    ad = json.loads(bodies["agent_unix_keepalive"])
    apts = ad["entities"][0]["series"][0]["points"]
    cmp = {"agent_points": len(apts), "agent_absent": sum(1 for _, v in apts if v is None)}
    for k in ("prometheus_live_keepalive", "prometheus_blocks_keepalive"):
        res = json.loads(bodies[k])["data"]["result"]
        vals = res[0]["values"] if res else []
        agent_map = {t: v for t, v in apts if v is not None}
        prom_map = {round(float(t) * 1000): float(v) for t, v in vals}
        same = sum(1 for t, v in prom_map.items() if agent_map.get(t) == v)
        cmp[k] = {"series": len(res), "points": len(vals), "equal_to_agent": same,
                  "only_in_prometheus": sum(1 for t in prom_map if t not in agent_map),
                  "only_in_agent": sum(1 for t in agent_map if t not in prom_map)}
    out["query"]["compare"] = cmp

    ag["mem_after_queries"] = proc_status(agent_p.pid)
    pa["state_after_queries"] = prom_state(prom_a_p, prom_a, prom_a_dir)
    pb["state_after_queries"] = prom_state(prom_b_p, prom_b, prom_b_dir)

    if a.malloc_probe:
        ag["malloc_probe_after_queries"] = malloc_probe(agent_p.pid, agent_log)

    # One large answer: every field of every GPU over the last 10 minutes, once each.
    big_since = t_end_s - 600
    fields_csv = ",".join(str(f) for f in field_ids)
    big = {}
    big_agent = f"/api/v1/history?fields={fields_csv}&since={big_since}&until={t_end_s + 1}&format=json"
    big_prom = ("/api/v1/query_range?query=" + urllib.parse.quote('{__name__=~"DCGM_FI_.+"}') +
                f"&start={big_since}&end={t_end_s}&step=1s")
    for k, where, q, pid in (("agent", "unix:" + sock, big_agent, agent_p.pid),
                             ("prometheus_live", f"127.0.0.1:{port_a}", big_prom, prom_a_p.pid),
                             ("prometheus_blocks", f"127.0.0.1:{port_b}", big_prom, prom_b_p.pid)):
        c = connect(where)  # its own keep-alive connection, closed after the first reading
        t = time.perf_counter()
        status, body = request(c, "GET", q)
        dt = time.perf_counter() - t
        if status != 200:
            sys.exit(f"bench/agent: large answer from {k}: {status} {body[:300]!r}")
        d = json.loads(body)
        npts = d["points"] if k == "agent" else sum(len(r["values"]) for r in d["data"]["result"])
        del d, body
        time.sleep(1)
        open_mem = proc_status(pid)
        c.close()
        time.sleep(1)
        big[k] = {"wall_s": dt, "points": npts, "mem_after": open_mem, "mem_after_close": proc_status(pid)}
    out["large_answer"] = big
    time.sleep(a.settle_s)
    big["agent"]["mem_after_settle"] = proc_status(agent_p.pid)
    if a.malloc_probe:
        ag["malloc_probe_after_large_answer"] = malloc_probe(agent_p.pid, agent_log)

    # The agent stops cleanly (its final checkpoint).
    code, secs = procs.stop(agent_p)
    ag["shutdown"] = {"exit_code": code, "seconds": secs}


# ---------------------------------------------------------------- markdown

def mib(kib):
    return kib / 1024


def fmt_ratio(x):
    if x is None:
        return "–"
    return f"{x:.2f}×" if x < 10 else f"{x:,.0f}×"


def details(d):
    """The markdown of every figure the run took (the RESULTS.md table's rows come from results_table)."""
    P = d["params"]
    ag, pa, pb, q = d["agent"], d["prometheus_live"], d["prometheus_blocks"], d["query"]
    hist = ag["status_4h"]["history"]
    ing = pa["ingest"]
    present = ing["present_values_written"]
    hours = P["hours"]
    H = f"{hours:g} h"
    pa_s, pb_s = pa["state_ingested"], pb["state_start"]
    ag_m, pa_m, pb_m = ag["mem_4h"], pa_s["mem"], pb_s["mem"]
    agent_rss, pa_rss, pb_rss = mib(ag_m["VmRSS"]), mib(pa_m["VmRSS"]), mib(pb_m["VmRSS"])
    agent_hwm, pa_hwm, pb_hwm = mib(ag_m["VmHWM"]), mib(pa_m["VmHWM"]), mib(pb_m["VmHWM"])
    agent_rss_q = mib(ag["mem_after_queries"]["VmRSS"])
    pa_rss_q, pb_rss_q = mib(pa["state_after_queries"]["mem"]["VmRSS"]), mib(pb["state_after_queries"]["mem"]["VmRSS"])
    agent_bpv = hist["bytes"] / present
    agent_bpp = hist["bytes"] / hist["points"]
    snap_samples = sum(b["samples"] for b in pb_s["blocks"])
    snap_bytes = sum(b["bytes"] for b in pb_s["blocks"])
    blocks_bpv = snap_bytes / snap_samples
    live_blocks = pa_s["blocks"]
    live_bpv = (sum(b["bytes"] for b in live_blocks) / sum(b["samples"] for b in live_blocks)) if live_blocks else None
    agent_rss_bpv = (ag_m["VmRSS"] - ag["mem_watch"]["VmRSS"]) * 1024 / present
    pa_rss_bpv = (pa_m["VmRSS"] - pa["mem_start"]["VmRSS"]) * 1024 / present
    pa_heap_bpv = (pa_s["go_heap_inuse_bytes"] - pa["state_start"]["go_heap_inuse_bytes"]) / present
    ka = lambda k, f: q[k][f]
    a50, a99 = ka("agent_tcp_keepalive", "p50_ms"), ka("agent_tcp_keepalive", "p99_ms")
    l50, l99 = ka("prometheus_live_keepalive", "p50_ms"), ka("prometheus_live_keepalive", "p99_ms")
    b50, b99 = ka("prometheus_blocks_keepalive", "p50_ms"), ka("prometheus_blocks_keepalive", "p99_ms")
    steps = ag["steps"]
    adv_wall = sum(s["wall_s"] for s in steps)
    adv_cpu = sum(s["agent_cpu_s"] for s in steps)
    cp = ag["checkpoint_only"]
    cp_ms = sorted(c["wall_s"] * 1000 for c in cp)[len(cp) // 2]
    cp_w = sorted(c["write_bytes"] for c in cp if c["write_bytes"] is not None)
    m = d["machine"]
    when = time.strftime("%Y-%m-%d", time.localtime(d["started_unix"]))
    met = lambda ok: "met" if ok else "**missed**"
    queries = (P["rounds"] + P.get("warmup", 5)) * len([k for k in q if isinstance(q[k], dict) and "p50_ms" in q[k]])
    L = []
    L.append(f"## Agent history: the full catalogue on 8 GPUs at 1 Hz for {H} (agent issue)")
    L.append("")
    cmd = " ".join(["bench/agent/run.sh build", *P.get("extra_args", [])])
    L.append(f"Command: `{cmd}` (bench/agent/run.sh, bench/agent/report.py; {d['wall_s'] / 60:.1f} "
             f"minutes). Measured {when} on {m['nproc']} × {m['cpu_model']}, {m['mem_gib']} GiB, load average "
             f"{d['load_before']} before and {d['load_after']} after. {d['versions']['gpulse']}; "
             f"{d['versions']['prometheus']}. Binary {d['binary']['path']} of {d['binary']['mtime']}, sha256 "
             f"{d['binary']['sha256'][:16]}….")
    L.append("")
    L.append(f"What runs: `gpulse agent --simulate 8xH100` on its simulated clock and `gpulse watch -g 0 -e all -i 1000 "
             f"--keep-age {P['keep_age_s']}`: {ag['fields']} fields × 8 GPUs, {hist['series']} series, "
             f"{ing['series_with_points']} of them with points; the clock advanced {H} in {P['step_s']} s steps "
             f"({hist['points']:,} points, {present:,} of them present values). Anchor in the same run: Debian's "
             "Prometheus given the same series, the agent's whole history read back over its API and remote-written "
             "in time order (absent points are not written), so that it ends as a server that scraped them for "
             f"{H} would: {'a compacted 2-hour block and the rest in its head' if live_blocks else 'all of it in its head'} "
             "(*Prometheus live*). Its TSDB "
             f"snapshot then starts a second server with all {H} in persistent blocks (*Prometheus blocks*, its "
             f"leanest state). Query: the last hour of `{QUERY_FIELD}` on GPU {QUERY_GPU} "
             f"(`/api/v1/history?{P['query']}`; PromQL `{QUERY_FIELD}{{gpu=\"{QUERY_GPU}\"}}` over the same hour at a "
             f"1 s step), {P['rounds']} rounds, the paths in a shuffled order each round, HTTP/1.1 from Python's "
             "http.client, timed from the request to the last byte of the answer.")
    L.append("")
    L.append("| figure | gpulse agent | Prometheus live | Prometheus blocks | agent ÷ live | agent ÷ blocks | target |")
    L.append("|---|---:|---:|---:|---:|---:|---|")
    L.append(f"| VmRSS after {H} | {agent_rss:.1f} MiB | {pa_rss:.1f} MiB | {pb_rss:.1f} MiB | "
             f"{fmt_ratio(agent_rss / pa_rss)} | {fmt_ratio(agent_rss / pb_rss)} | < 32 MiB: {met(agent_rss < 32)} |")
    L.append(f"| peak RSS so far (VmHWM) | {agent_hwm:.1f} MiB | {pa_hwm:.1f} MiB | {pb_hwm:.1f} MiB | "
             f"{fmt_ratio(agent_hwm / pa_hwm)} | {fmt_ratio(agent_hwm / pb_hwm)} | < 32 MiB: {met(agent_hwm < 32)} |")
    L.append(f"| VmRSS after the {queries:,} one-hour queries | {agent_rss_q:.1f} MiB | {pa_rss_q:.1f} MiB | "
             f"{pb_rss_q:.1f} MiB | {fmt_ratio(agent_rss_q / pa_rss_q)} | {fmt_ratio(agent_rss_q / pb_rss_q)} | |")
    L.append(f"| bytes per stored value (agent: history bytes ÷ present values; Prometheus: block bytes ÷ samples) | "
             f"{agent_bpv:.3f} | {'–' if live_bpv is None else f'{live_bpv:.3f} (its 2 h block)'} | {blocks_bpv:.3f} | "
             f"{'–' if live_bpv is None else fmt_ratio(agent_bpv / live_bpv)} | {fmt_ratio(agent_bpv / blocks_bpv)} | |")
    L.append(f"| RSS growth ÷ present values (agent: since the watch; live: since its start) | {agent_rss_bpv:.2f} B | "
             f"{pa_rss_bpv:.2f} B | – | {fmt_ratio(agent_rss_bpv / pa_rss_bpv)} | – | |")
    L.append(f"| 1-hour range query, p50 (TCP, keep-alive) | {a50:.2f} ms | {l50:.2f} ms | {b50:.2f} ms | "
             f"{fmt_ratio(a50 / l50)} | {fmt_ratio(a50 / b50)} | < 5 ms: {met(a50 < 5)} |")
    L.append(f"| 1-hour range query, p99 (TCP, keep-alive) | {a99:.2f} ms | {l99:.2f} ms | {b99:.2f} ms | "
             f"{fmt_ratio(a99 / l99)} | {fmt_ratio(a99 / b99)} | < 5 ms: {met(a99 < 5)} |")
    c = q["compare"]
    cl, cb = c["prometheus_live_keepalive"], c["prometheus_blocks_keepalive"]
    L.append("")
    verdict = (f"Targets: agent RSS under 32 MiB {met(agent_rss < 32 and agent_hwm < 32)} ({agent_rss:.1f} MiB "
               f"after {H}, peak {agent_hwm:.1f} MiB); the 1-hour query under 5 ms {met(a99 < 5)} (p50 {a50:.2f} ms, "
               f"p99 {a99:.2f} ms). ")
    mp = ag.get("malloc_probe_after_queries")
    if mp and mp.get("total_in_use"):
        held = (mp["total_system"] - mp["total_in_use"]) / 2**20
        verdict += (f"Where the agent's {mib(mp['mem_before']['VmRSS']):.1f} MiB go: {mib(mp['mem_before']['RssFile']):.1f} "
                    f"MiB file-backed (its binary and libraries); {mp['total_in_use'] / 2**20:.1f} MiB in use by malloc, "
                    f"{hist['bytes'] / 2**20:.1f} MiB of it the history; {held:.1f} MiB freed but kept by malloc — "
                    f"malloc_trim(0) brings VmRSS to {mib(mp['mem_after_trim']['VmRSS']):.1f} MiB.")
    L.append(verdict)
    L.append("")
    L.append(f"Ratios below 1 favour the agent. Same answer: the agent returned {c['agent_points']:,} points "
             f"({c['agent_absent']} absent); Prometheus live {cl['points']:,}, {cl['equal_to_agent']:,} of them equal "
             f"to the agent's bit for bit; Prometheus blocks {cb['points']:,}, {cb['equal_to_agent']:,} equal.")
    L.append("")
    L.append("Every query path, same run:")
    L.append("")
    L.append("| path | p50 | p90 | p99 | max | answer bytes | p50 ÷ Prometheus live keep-alive |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    names = {"agent_tcp_keepalive": "agent, TCP, keep-alive", "agent_unix_keepalive": "agent, unix socket, keep-alive",
             "agent_tcp_new_connection": "agent, TCP, a new connection each (as the CLI does)",
             "prometheus_live_keepalive": "Prometheus live, keep-alive",
             "prometheus_live_new_connection": "Prometheus live, a new connection each",
             "prometheus_blocks_keepalive": "Prometheus blocks, keep-alive"}
    for k, label in names.items():
        s = q[k]
        L.append(f"| {label} | {s['p50_ms']:.2f} ms | {s['p90_ms']:.2f} ms | {s['p99_ms']:.2f} ms | "
                 f"{s['max_ms']:.2f} ms | {s['response_bytes']:,} | {fmt_ratio(s['p50_ms'] / l50)} |")
    L.append("")
    L.append("Memory and storage in detail:")
    L.append("")
    L.append("| | value |")
    L.append("|---|---:|")
    L.append(f"| agent VmRSS: idle / with the watch / after {H} / after {len(cp)} more checkpoints / after the "
             f"export read-back | {mib(ag['mem_idle']['VmRSS']):.1f} / {mib(ag['mem_watch']['VmRSS']):.1f} / "
             f"{agent_rss:.1f} / {mib(ag['mem_after_checkpoints']['VmRSS']):.1f} / "
             f"{mib(ag['mem_after_export']['VmRSS']):.1f} MiB |")
    L.append(f"| agent after {H}: RssAnon / RssFile | {mib(ag_m['RssAnon']):.1f} / {mib(ag_m['RssFile']):.1f} MiB |")
    L.append(f"| agent history (/api/v1/status): series / points / bytes / bytes per point | {hist['series']:,} / "
             f"{hist['points']:,} / {hist['bytes']:,} / {agent_bpp:.3f} |")
    L.append(f"| agent series holding only absent points | {ing['series_absent_only']} (fields "
             f"{', '.join(str(f) for f in ing['fields_absent_only']) or 'none'}); "
             f"{ing['series_partly_absent']} partly absent |")
    L.append(f"| agent history bound (status bound_bytes) | {hist['bound_bytes'] / 2**20:.1f} MiB |")
    L.append(f"| agent state directory (SQLite database + WAL) | {ag['state_dir_bytes'] / 2**20:.1f} MiB |")
    L.append(f"| Prometheus live VmRSS: at start / after the ingest; RssAnon / RssFile | "
             f"{mib(pa['mem_start']['VmRSS']):.1f} / {pa_rss:.1f} MiB; {mib(pa_m['RssAnon']):.1f} / "
             f"{mib(pa_m['RssFile']):.1f} MiB |")
    L.append(f"| Prometheus live Go heap in use: at start / after the ingest; growth ÷ values | "
             f"{pa['state_start']['go_heap_inuse_bytes'] / 2**20:.1f} / {pa_s['go_heap_inuse_bytes'] / 2**20:.1f} MiB; "
             f"{pa_heap_bpv:.2f} B |")
    L.append(f"| Prometheus live: head series / head chunks / blocks | {pa_s['head_series']:.0f} / "
             f"{pa_s['head_chunks']:.0f} / {len(live_blocks)} |")
    L.append(f"| Prometheus live on disk (blocks, chunks_head, WAL) | {pa_s['disk_bytes'] / 2**20:.1f} MiB, "
             f"{pa_s['disk_bytes'] / present:.2f} B per value |")
    L.append(f"| Prometheus blocks: blocks / samples / bytes | {len(pb_s['blocks'])} / {snap_samples:,} / {snap_bytes:,} |")
    L.append(f"| Prometheus blocks VmRSS after start: RssAnon / RssFile | {mib(pb_m['RssAnon']):.1f} / "
             f"{mib(pb_m['RssFile']):.1f} MiB |")
    L.append("")
    L.append("The agent's own work, timed (CPU from /proc/PID/stat, bytes written from /proc/PID/io):")
    L.append("")
    L.append("| step | value |")
    L.append("|---|---:|")
    L.append(f"| advancing {H} in {P['step_s']} s steps: every tick, and one checkpoint per step ({len(steps)}) | "
             f"{adv_wall:.2f} s wall, "
             f"{adv_cpu:.2f} s agent CPU, {adv_cpu * 1e9 / hist['points']:.0f} ns CPU per point |")
    L.append(f"| one checkpoint alone after {H} (median of {len(cp)}) | {cp_ms:.0f} ms"
             + (f", {cp_w[len(cp_w) // 2] / 2**20:.1f} MiB written |" if cp_w else " |"))
    written = [s["write_bytes"] for s in steps if s["write_bytes"] is not None]
    if written:
        L.append(f"| written to disk by the agent while advancing {H} | {sum(written) / 2**30:.2f} GiB "
                 f"({sum(written) / hist['bytes']:.0f}× the history it ended with) |")
    L.append(f"| reading the whole history back ({ing['windows']} windows × {ag['fields']} fields, one request each) | "
             f"{ing['agent_read_s']:.1f} s |")
    L.append(f"| shutdown (final checkpoint) | {ag['shutdown']['seconds']:.2f} s, exit code {ag['shutdown']['exit_code']} |")
    L.append("")
    L.append(f"Growth over the run (after the {P['step_s']} s step ending each half hour):")
    L.append("")
    L.append("| simulated time | points | history bytes | VmRSS | VmHWM | step wall | step agent CPU |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    for s in steps:
        if s["simulated_s"] % 1800 and s is not steps[-1]:
            continue
        L.append(f"| {s['simulated_s'] / 3600:.1f} h | {s['points']:,} | {s['bytes']:,} | {mib(s['mem']['VmRSS']):.1f} MiB | "
                 f"{mib(s['mem']['VmHWM']):.1f} MiB | {s['wall_s'] * 1000:.0f} ms | {s['agent_cpu_s'] * 1000:.0f} ms |")
    big = d["large_answer"]
    L.append("")
    L.append("One large answer afterwards (every field of every GPU over the last 10 minutes; Prometheus "
             "`{__name__=~\"DCGM_FI_.+\"}` at a 1 s step), then VmRSS:")
    L.append("")
    L.append("| | points | time | VmRSS before | VmRSS after, connection open | after it is closed |")
    L.append("|---|---:|---:|---:|---:|---:|")
    before = {"agent": agent_rss_q, "prometheus_live": pa_rss_q, "prometheus_blocks": pb_rss_q}
    for k, label in (("agent", "agent"), ("prometheus_live", "Prometheus live"), ("prometheus_blocks", "Prometheus blocks")):
        L.append(f"| {label} | {big[k]['points']:,} | {big[k]['wall_s'] * 1000:.0f} ms | {before[k]:.1f} MiB | "
                 f"{mib(big[k]['mem_after']['VmRSS']):.1f} MiB | {mib(big[k]['mem_after_close']['VmRSS']):.1f} MiB |")
    L.append(f"| agent, {P.get('settle_s', 5):g} s later | | | | | {mib(big['agent']['mem_after_settle']['VmRSS']):.1f} MiB |")
    for key, when_ in (("malloc_probe_after_queries", "after the one-hour queries"),
                       ("malloc_probe_after_large_answer", "after the large answer, its connection closed")):
        mp = ag.get(key)
        if not mp:
            continue
        if len(L) and not any("malloc_stats" in x for x in L):
            L.append("")
            L.append("glibc's account of the agent's heap (`--malloc-probe`: gdb calls malloc_stats() and then "
                     "malloc_trim(0) in the agent):")
            L.append("")
            L.append("| when | VmRSS | malloc system bytes | malloc in use | arenas (system / in use, MiB) | VmRSS after malloc_trim(0) |")
            L.append("|---|---:|---:|---:|---|---:|")
        ar = ", ".join(f"{x['system'] / 2**20:.1f} / {x['in_use'] / 2**20:.1f}" for x in mp["arenas"])
        L.append(f"| {when_} | {mib(mp['mem_before']['VmRSS']):.1f} MiB | {(mp['total_system'] or 0) / 2**20:.1f} MiB | "
                 f"{(mp['total_in_use'] or 0) / 2**20:.1f} MiB | {ar} | {mib(mp['mem_after_trim']['VmRSS']):.1f} MiB |")
    return "\n".join(L) + "\n"


def query_runs(q, key, runs):
    """p50 and p99 of each run of a query path: its rounds split into `runs` blocks of consecutive
    rounds (the paths were shuffled within each round, so block k is the same span of time for every
    path). An older JSON without the times gives its whole-run p50 and p99 as one run."""
    times = q[key].get("times_ms")
    if not times:
        return [q[key]["p50_ms"]], [q[key]["p99_ms"]]
    n = len(times)
    blocks = [times[k * n // runs:(k + 1) * n // runs] for k in range(runs)]
    blocks = [b for b in blocks if b]
    return [pct(b, 0.5) for b in blocks], [pct(b, 0.99) for b in blocks]


def memory_and_bytes(d):
    """One run's VmRSS and VmHWM (MiB) of the agent and both Prometheus, and bytes per stored value:
    {key: (agent, live, blocks)}, live None when the live Prometheus has no block yet."""
    ag, pa, pb = d["agent"], d["prometheus_live"], d["prometheus_blocks"]
    ag_m, pa_m, pb_m = ag["mem_4h"], pa["state_ingested"]["mem"], pb["state_start"]["mem"]
    out = {k: (mib(ag_m[k]), mib(pa_m[k]), mib(pb_m[k])) for k in ("VmRSS", "VmHWM")}
    live_blocks, blocks = pa["state_ingested"]["blocks"], pb["state_start"]["blocks"]
    per = lambda bs: sum(b["bytes"] for b in bs) / sum(b["samples"] for b in bs)
    out["bpv"] = (ag["status_4h"]["history"]["bytes"] / pa["ingest"]["present_values_written"],
                  per(live_blocks) if live_blocks else None, per(blocks))
    return out


def results_table(d, others=()):
    """The table "Agent history" of bench/RESULTS.md (bench/results.py). Memory and bytes per value
    come with the spread of the runs (d and others: whole runs, ratios run by run); the range
    query's p50 and p99 with the spread of the first run's blocks of consecutive rounds, the
    checkpoint with the spread of its repeats."""
    P = d["params"]
    ag, pa, q = d["agent"], d["prometheus_live"], d["query"]
    hist = ag["status_4h"]["history"]
    H = f"{P['hours']:g} h"
    live_blocks = pa["state_ingested"]["blocks"]
    extra = P.get("extra_args") or []
    command = "bash bench/run.sh history" if not extra else " ".join(["bash bench/agent/run.sh BUILD", *extra])
    rounds = P["rounds"]
    runs = 5 if rounds >= 100 else 3
    v = re.search(r"version (\d[\w.]*)", d["versions"]["prometheus"])
    prom = f"Debian's Prometheus {v[1]}" if v else d["versions"]["prometheus"]
    t = Table(f"Agent history: the full catalogue on 8 GPUs at 1 Hz for {H} (issue 16)", command,
              f"`gpulse agent --simulate 8xH100` on its simulated clock with `gpulse watch -g 0 -e all -i 1000 "
              f"--keep-age {P['keep_age_s']}`: {ag['fields']} fields × 8 GPUs, {hist['series']} series, advanced "
              f"{H} ({hist['points']:,} points). Anchor: {prom} given the same series (*live*: "
              f"{'a 2-hour block and its head' if live_blocks else 'all of it in its head'}; *blocks*: restarted from "
              "its snapshot). Query: the last hour of "
              f"`{QUERY_FIELD}` on GPU {QUERY_GPU}, {rounds} rounds, the paths shuffled in each round; its runs are "
              f"{runs} blocks of consecutive rounds (median and min–max of their p50 and p99, ratios block by block). "
              f"Memory and bytes per value: {1 + len(others)} whole run{'s' if others else ''}, ratios run by run.")
    t.date = time.strftime("%Y-%m-%d", time.localtime(d["started_unix"]))
    t.machine = f"ref. ({d['machine']['nproc']} vCPUs), load average {d['load_before'].split()[0]} at start"
    mb = lambda kib: f"{mib(kib):.1f}"
    m = [memory_and_bytes(x) for x in (d, *others)]
    col = lambda key, i: [x[key][i] for x in m]
    one = lambda vs, fmt, unit="": spread(vs, fmt, unit) if len(vs) > 1 else fmt.format(vs[0]) + unit
    for label, key in ((f"VmRSS after {H}", "VmRSS"), ("peak RSS (VmHWM)", "VmHWM")):
        a_, l_, b_ = col(key, 0), col(key, 1), col(key, 2)
        t.row(label, one(a_, "{:.1f}", " MiB"), "Prometheus live / blocks",
              f"{one(l_, '{:.1f}', ' MiB')} / {one(b_, '{:.1f}', ' MiB')}",
              f"{ratio([x / y for x, y in zip(a_, l_)])} / {ratio([x / y for x, y in zip(a_, b_)])}",
              judge(a_, "<", 32, "< 32 MiB"))
    a_, l_, b_ = col("bpv", 0), col("bpv", 1), col("bpv", 2)
    if all(v is not None for v in l_):
        t.row("bytes per stored value", one(a_, "{:.3f}"), "Prometheus live (its 2 h block) / blocks",
              f"{one(l_, '{:.3f}')} / {one(b_, '{:.3f}')}",
              f"{ratio([x / y for x, y in zip(a_, l_)])} / {ratio([x / y for x, y in zip(a_, b_)])}")
    else:
        t.row("bytes per stored value", one(a_, "{:.3f}"), "Prometheus blocks (live: no block yet)",
              one(b_, "{:.3f}"), ratio([x / y for x, y in zip(a_, b_)]))
    a50, a99 = query_runs(q, "agent_tcp_keepalive", runs)
    l50, l99 = query_runs(q, "prometheus_live_keepalive", runs)
    ms = lambda v: spread(v, "{:.2f}")
    t.row("1-hour range query p50 / p99, TCP keep-alive", f"{ms(a50)} / {ms(a99)} ms", "Prometheus live",
          f"{ms(l50)} / {ms(l99)} ms", f"{ratio([x / y for x, y in zip(a50, l50)])} / "
          f"{ratio([x / y for x, y in zip(a99, l99)])}", judge(a99, "<", 5, "p99 < 5 ms"))
    cp = ag["checkpoint_only"]
    cp_w = [c["write_bytes"] / 2**20 for c in cp if c["write_bytes"] is not None]
    t.row(f"one checkpoint after {H} (rewrites the whole history)",
          spread([c["wall_s"] * 1000 for c in cp], "{:.0f}", " ms") +
          (f", {spread(cp_w, '{:.1f}', ' MiB')} written" if cp_w else ""))
    big = d["large_answer"]
    t.row("one large answer (every field of every GPU, last 10 minutes)",
          f"{big['agent']['points']:,} points in {big['agent']['wall_s'] * 1000:.0f} ms; VmRSS "
          f"{mb(big['agent']['mem_after_close']['VmRSS'])} MiB after it closes", "Prometheus live",
          f"{big['prometheus_live']['points']:,} points in {big['prometheus_live']['wall_s'] * 1000:.0f} ms; "
          f"{mb(big['prometheus_live']['mem_after_close']['VmRSS'])} MiB after")
    return t


def write(a):
    runs = []
    for path in a.json:
        with open(path) as f:
            runs.append(json.load(f))
    d = runs[0]
    t = results_table(d, runs[1:])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        t.print()
    text = buf.getvalue()
    print(text, end="", flush=True)
    if a.out:  # the table, then every figure in detail
        with open(a.out, "w") as f:
            f.write(text + "\n" + details(d))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--gpulse", required=True)
    m.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    m.add_argument("--work", required=True, help="an empty directory for state, sockets, TSDBs, logs")
    m.add_argument("--json", required=True, help="write the figures here")
    m.add_argument("--hours", type=float, default=4)
    m.add_argument("--step-s", type=int, default=60,
                   help="simulated seconds per clock advance; each advance ends with a checkpoint, so 60 "
                        "gives the agent's default checkpoint cadence (--checkpoint-s 60)")
    m.add_argument("--window-s", type=int, default=1800, help="history read per request for the export")
    m.add_argument("--rounds", type=int, default=500)
    m.add_argument("--warmup", type=int, default=5)
    m.add_argument("--settle-s", type=float, default=5)
    m.add_argument("--malloc-probe", action="store_true",
                   help="at the end, attach gdb to the agent: malloc_stats and malloc_trim (needs gdb)")
    m.add_argument("--sim-start-s", default="auto", help="simulated seconds the clock starts at (see sim_start_s)")
    w = sub.add_parser("write")
    w.add_argument("--json", required=True, action="append", help="a run's figures (repeat for more runs)")
    w.add_argument("--out")
    a = ap.parse_args()
    if a.cmd == "measure":  # the options given beyond run.sh's own, for the record
        a.extra_args = [x for x in sys.argv[2:] if x not in (a.gpulse, a.work, a.json)
                        and x not in ("--gpulse", "--work", "--json")]
        measure(a)
    else:
        write(a)


if __name__ == "__main__":
    main()
