"""Exporter under hostile clients (issue 13), part of `bench/run.sh network`: gpulse exporter with TLS
(a P-256 certificate) and basic auth (bcrypt cost 10), 8 simulated H100s, on loopback.

1. Scrape latency under a password flood: a paced wrk scraper with the right password (10 ms between
   requests, one keep-alive connection) against /metrics, quiet and then while 32 connections from
   32 client addresses send wrong passwords as fast as they are answered (a fresh password every
   time, so no cache helps). Anchor: the same exporter quiet, in the same run; each round is one
   quiet and one attacked scrape of DURATION seconds, back to back, so machine load falls on both
   alike. Figures: the p50 and p99 ratio of each round (attacked / quiet), median and spread over
   the rounds (target: <= 2x), and the exporter's CPU over each scrape (/proc/PID/stat), its ratio
   per round and its CPU per wrong password answered.
2. Memory: the exporter's RSS at rest, with 2,048 TCP connections to the TLS port from 16 client
   addresses that never start a handshake, and 3 s after they close; a scrape must still get in
   while they are held. Anchor: the RSS at rest (targets: < 64 MiB held, back within 2 MiB).
   (2,000 idle TLS connections are network.py's.)

Runs: --rounds (default 3) rounds of 2 x --duration (default 10) s, then the memory step: about
1.5 minutes with the defaults.

Prints the rows that continue the table network.py starts (bench/results.py's columns, no heading);
--head prints the heading and columns too, for a run on its own. Details go to stderr.

Usage: /usr/bin/python3 bench/exporter/hostile.py BUILD_DIR [--duration SECONDS] [--rounds N] [--head]
"""
import base64
import multiprocessing
import os
import re
import resource
import secrets
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from bench import bench_args, rss_kib  # noqa: F401 (network.py takes rss_kib from here)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results import Table, cpu_seconds, judge, ratio, spread  # noqa: E402

PASSWORD = "s3cret"
ATTACKERS = 32
IDLE = 2048
SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# The one table of the network area (bench/run.sh network): network.py prints its heading and first
# rows, hostile.py and bench/agent/soak.py continue it.
TITLE = "The network face: hostile clients, attacks, a 10^6-scrape soak (issues 13 and 39)"
NOTE = ("One `gpulse exporter --simulate 8xH100` with TLS (a P-256 certificate) and basic auth (bcrypt\n"
        "cost 10); scrapes are a paced wrk scraper with the right password on one keep-alive TLS connection.\n"
        "Each round scrapes the exporter quiet (the anchor) and then under each attack, back to back; a ratio\n"
        "is taken per round, and the median and the spread of the rounds are given.")


def command_line():
    """This script's command line as one to paste from the source directory."""
    words = ["/usr/bin/python3"]
    for w in sys.argv:
        p = os.path.abspath(w)
        if os.path.exists(w) and (p == SOURCE or p.startswith(SOURCE + os.sep)):
            w = os.path.relpath(p, SOURCE)
        words.append(w)
    return shlex.join(words)


def to_ms(text):
    """wrk's '812.00us', '1.20ms', '2.00s' in ms."""
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def make_files(d):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    import crypt  # Debian's Python 3.11 still has it (libxcrypt's bcrypt)
    bhash = crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
    with open(f"{d}/web.yml", "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {d}/cert.pem\n  key_file: {d}/key.pem\n"
                f"basic_auth_users:\n  alice: '{bhash}'\n")
    return f"{d}/web.yml"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(gpulse, web, port):
    log_file = open(os.path.join(os.path.dirname(web), "exporter.log"), "w")
    p = subprocess.Popen([gpulse, "exporter", "--simulate", "8xH100", "-a", f"127.0.0.1:{port}",
                          "--web-config-file", web], stdout=subprocess.DEVNULL, stderr=log_file)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if request(tls_connect(port), "/health", PASSWORD).startswith("HTTP/1.1 200"):
                return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit("gpulse exporter with TLS and basic auth did not start")


_context = None


def context():
    """One client context for every connection, that checks nothing (the certificate is the run's own).
    Not ssl.create_default_context(): that reads the system's CA bundle, about 0.7 MiB and some ms a
    context, which made holding 2,000 connections take minutes and GiBs of the harness."""
    global _context
    if _context is None:
        _context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        _context.check_hostname = False
        _context.verify_mode = ssl.CERT_NONE
    return _context


def tls_connect(port, source=None, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0) if source else None)
    # Without it the request after the handshake waits for the server's delayed ACK (Nagle): 40 ms a
    # connection, and 2,000 of them take longer than the idle timeout, which then closes the first
    # ones before the RSS is read (an early run of (d) read 5 KiB a connection that way).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return context().wrap_socket(s)


def established(port):
    """Connections the server on `port` holds open now (ss): a reading of RSS per connection is only
    worth something when they are all still there."""
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def request(s, path, password):
    auth = base64.b64encode(f"alice:{password}".encode()).decode()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed")
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed")
        body += chunk
    return head.decode()


def attacker(port, source, deadline, counts):
    """Wrong passwords as fast as they are answered, reconnecting when the server closes, until the
    deadline (so the harness always ends, whatever the exporter does)."""
    while time.monotonic() < deadline:
        try:
            s = tls_connect(port, source, timeout=5)
            while time.monotonic() < deadline:
                status = request(s, "/metrics", secrets.token_hex(8))[9:12]
                counts[status] = counts.get(status, 0) + 1
                if status != "401":
                    break  # 429 and 503 close the connection
            s.close()
        except OSError:
            time.sleep(0.01)


def attack_process(port, seconds, out):
    import threading
    counts = {}
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=attacker, args=(port, f"127.0.1.{i + 1}", deadline, counts), daemon=True)
               for i in range(ATTACKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(counts)


def paced_scrape(port, duration):
    auth = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    return wrk_with_header(f"https://127.0.0.1:{port}/metrics", duration, f"Authorization: Basic {auth}")


def timed_scrape(pid, port, duration):
    """paced_scrape, with the exporter's CPU seconds over it ("cpu_s") and its wall ("wall_s")."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    r = paced_scrape(port, duration)
    r["cpu_s"], r["wall_s"] = cpu_seconds(pid) - c0, time.monotonic() - t0
    return r


def wrk_with_header(url, duration, header):
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{duration}s", "--latency", "-s", f"{here}/paced.lua",
                          "-H", header, url], capture_output=True, text=True, timeout=duration + 60).stdout
    pct = {m.group(1): to_ms(m.group(2)) for m in re.finditer(r"^\s+(50|99)%\s+(\S+)$", out, re.M)}
    done = re.search(r"(\d+) requests in", out)
    if "50" not in pct or "99" not in pct or not done:
        raise SystemExit("wrk printed no latency distribution:\n" + out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    r = {"p50": pct["50"], "p99": pct["99"], "errors": int(non2xx.group(1)) if non2xx else 0,
         "requests": int(done.group(1)), "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
         "unanswered": False}
    if r["requests"] == 0:
        # Not one answer in the whole run (wrk then prints zeros): the whole duration is a lower bound
        # of every latency, and the run is counted as such, not dropped.
        r.update(p50=duration * 1000.0, p99=duration * 1000.0, unanswered=True)
    return r


def hold(port, n, tls):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 256)), hard))
    socks = []
    for i in range(n):
        source = f"127.0.2.{i % 16 + 1}"
        if tls:
            s = tls_connect(port, source)
            request(s, "/health", PASSWORD)
        else:
            s = socket.create_connection(("127.0.0.1", port), source_address=(source, 0))
        socks.append(s)
    return socks


def memory(pid, port, tls):
    start_rss = rss_kib(pid)[0]
    socks = hold(port, IDLE, tls)
    time.sleep(0.5)
    held = rss_kib(pid)[0]
    open_now = established(port)
    # A scrape still gets in while they are held (TCP: they never proved themselves, so the oldest
    # make room at the limit).
    try:
        s = tls_connect(port, timeout=10)
        ok = request(s, "/health", PASSWORD).startswith("HTTP/1.1 200")
        s.close()
    except OSError:
        ok = False
    for s in socks:
        s.close()
    time.sleep(3)
    after = rss_kib(pid)[0]
    return start_rss, held, after, ok, open_now


def unanswered(runs, duration):
    """'; 1 of 3 scrapes answered nothing in 2 s (taken as 2 s)', or '' when every one was answered."""
    n = sum(1 for r in runs if r["unanswered"])
    return f"; {n} of {len(runs)} scrapes answered nothing in {duration} s (taken as {duration} s)" if n else ""


def ms(values, fmt="{:.2f}"):
    return spread(values, fmt, " ms")


def main():
    def more(ap):
        ap.add_argument("--head", action="store_true",
                        help="print the table's heading and columns too (a run on its own, not after network.py)")
    a, gpulse, load = bench_args(more)
    if a.rounds < 1 or a.duration < 1:
        raise SystemExit("hostile: --rounds and --duration must be at least 1")
    table = Table(TITLE, command_line(), NOTE)
    d = tempfile.mkdtemp(prefix="gpulse-hostile-")
    web = make_files(d)
    port = free_port()
    p = start(gpulse, web, port)
    quiet, attacked, counts = [], [], {}
    try:
        paced_scrape(port, 2)  # warm up: the scraper's credentials are verified once and cached
        for _ in range(a.rounds):
            quiet.append(timed_scrape(p.pid, port, a.duration))
            out = multiprocessing.Queue()
            proc = multiprocessing.Process(target=attack_process, args=(port, a.duration + 2, out), daemon=True)
            c0 = cpu_seconds(p.pid)
            proc.start()
            time.sleep(1)
            attacked.append(timed_scrape(p.pid, port, a.duration))
            got = out.get(timeout=a.duration + 30)
            # The exporter's CPU over the attack's whole life, against the wrong passwords answered in it.
            attacked[-1]["attack_cpu_s"], attacked[-1]["answers"] = cpu_seconds(p.pid) - c0, sum(got.values())
            for k, v in got.items():
                counts[k] = counts.get(k, 0) + v
            proc.join(timeout=30)
        tcp_mem = memory(p.pid, port, tls=False)
    finally:
        if p.poll() is not None:
            print(f"the exporter ended early (status {p.returncode}): see {d}/exporter.log", file=sys.stderr)
        p.terminate()
        p.wait()

    log(f"hostile.py: load average before {load}; {a.rounds} rounds of {a.duration} s")
    for i, (q, t) in enumerate(zip(quiet, attacked)):
        log(f"  round {i + 1}: quiet p50/p99 {q['p50']:.2f}/{q['p99']:.2f} ms, CPU {q['cpu_s']:.2f} s; "
            f"wrong passwords p50/p99 {t['p50']:.2f}/{t['p99']:.2f} ms, CPU {t['cpu_s']:.2f} s, "
            f"{t['answers']} answered; scraper non-2xx {q['errors']}/{t['errors']}")
    log("  attack answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))

    col = lambda rs, k: [r[k] for r in rs]
    pct = lambda rs: [r["cpu_s"] / r["wall_s"] * 100 for r in rs]
    attempts = sum(counts.values())
    answered = ", ".join(f"{k} ×{v:,}" for k, v in sorted(counts.items()))
    non2xx = sum(col(attacked, "errors")) + sum(col(quiet, "errors"))
    rounds = f"{a.rounds} round{'s' if a.rounds > 1 else ''} of {a.duration} s"
    p50_ratios = [t["p50"] / q["p50"] for q, t in zip(quiet, attacked)]
    p99_ratios = [t["p99"] / q["p99"] for q, t in zip(quiet, attacked)]
    table.row(f"authenticated scrape p50 while {ATTACKERS} TLS connections from {ATTACKERS} addresses send wrong "
              f"passwords ({attempts:,} answered: {answered}; {rounds}; scraper non-2xx: {non2xx}"
              f"{unanswered(attacked + quiet, a.duration)})",
              ms(col(attacked, "p50")), "the same exporter quiet", ms(col(quiet, "p50")),
              ratio(p50_ratios), judge(p50_ratios, "<=", 2, "≤ 2×"))
    table.row("the same, p99", ms(col(attacked, "p99")), "quiet", ms(col(quiet, "p99")),
              ratio(p99_ratios), judge(p99_ratios, "<=", 2, "≤ 2×"))
    cpu_per_answer = [t["attack_cpu_s"] / t["answers"] * 1000 for t in attacked if t["answers"]]
    table.row("the exporter's CPU over those scrapes, % of a core (per wrong password answered: "
              f"{spread(cpu_per_answer, '{:.2f}', ' ms')})",
              spread(pct(attacked), "{:.1f}", " %"), "quiet", spread(pct(quiet), "{:.1f}", " %"),
              ratio([t / q for t, q in zip(pct(attacked), pct(quiet)) if q > 0]), "")
    s0, held, after, ok, open_now = tcp_mem
    table.row(f"RSS with {IDLE:,} TCP connections to the TLS port that never start a handshake (from 16 addresses; "
              f"{open_now:,} open at the reading), and 3 s after they close",
              f"{held / 1024:.1f} MiB ({(held - s0) / IDLE:.1f} KiB each); {after / 1024:.1f} MiB after "
              f"({(after - s0) / 1024:+.1f})", "RSS at rest", f"{s0 / 1024:.1f} MiB", "",
              f"{judge([held / 1024], '<', 64, '< 64 MiB held')}; "
              f"{judge([(after - s0) / 1024], '<=', 2, 'back within 2 MiB')}; "
              f"{judge([1 if ok else 0], '==', 1, 'a scrape served while they are held')}")
    table.print(head=a.head, end=False)
    shutil.rmtree(d, ignore_errors=True)  # kept when the run failed: its exporter.log


if __name__ == "__main__":
    sys.exit(main())
