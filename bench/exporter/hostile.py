"""Exporter under hostile clients (issue 13): gpulse exporter with TLS and basic auth (bcrypt cost
10), 8 simulated H100s, on loopback.

1. Scrape latency: a paced wrk scraper with the right password (10 ms between requests, one
   keep-alive connection) against /metrics, quiet and then while 32 connections from 32 client
   addresses send wrong passwords as fast as they are answered (a fresh password every time, so no
   cache helps). Rounds alternate quiet and attack; medians are compared. The anchor is the same
   exporter's quiet p99 in the same run (target: attack p99 <= 2x quiet p99).
2. Memory: the exporter's RSS at rest, with 2,048 idle TLS connections (each finished its handshake
   and one authenticated request, then sits in keep-alive; from 16 client addresses), and 3 s after
   they close; then the same with 2,048 TCP connections that never start a handshake. Anchor: the
   RSS at rest (targets: < 64 MiB held, back within 2 MiB of the start).

Usage: /usr/bin/python3 bench/exporter/hostile.py BUILD_DIR [--duration SECONDS] [--rounds N]
"""
import base64
import multiprocessing
import os
import resource
import secrets
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from bench import bench_args, median_run, rss_kib, to_ms

PASSWORD = "s3cret"
ATTACKERS = 32
IDLE = 2048


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
    log = open(os.path.join(os.path.dirname(web), "exporter.log"), "w")
    p = subprocess.Popen([gpulse, "exporter", "--simulate", "8xH100", "-a", f"127.0.0.1:{port}",
                          "--web-config-file", web], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if request(tls_connect(port), "/health", PASSWORD).startswith("HTTP/1.1 200"):
                return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit("gpulse exporter with TLS and basic auth did not start")


def context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def tls_connect(port, source=None, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0) if source else None)
    return context().wrap_socket(s)


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


def wrk_with_header(url, duration, header):
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{duration}s", "--latency", "-s", f"{here}/paced.lua",
                          "-H", header, url], capture_output=True, text=True, timeout=duration + 60).stdout
    pct = {m.group(1): to_ms(m.group(2)) for m in re.finditer(r"^\s+(50|99)%\s+(\S+)$", out, re.M)}
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"p50": pct["50"], "p99": pct["99"], "errors": non2xx.group(1) if non2xx else "0",
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}


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
    start = rss_kib(pid)[0]
    socks = hold(port, IDLE, tls)
    time.sleep(0.5)
    held = rss_kib(pid)[0]
    # A scrape still gets in while they are held (TCP: they never proved themselves, so the oldest
    # make room at the limit).
    s = tls_connect(port)
    ok = request(s, "/health", PASSWORD).startswith("HTTP/1.1 200")
    s.close()
    for s in socks:
        s.close()
    time.sleep(3)
    after = rss_kib(pid)[0]
    return start, held, after, ok


def main():
    a, gpulse, load = bench_args()
    d = tempfile.mkdtemp(prefix="gpulse-hostile-")
    web = make_files(d)
    port = free_port()
    p = start(gpulse, web, port)
    quiet, attacked, counts = [], [], {}
    try:
        paced_scrape(port, 2)  # warm up: the scraper's credentials are verified once and cached
        for _ in range(a.rounds):
            quiet.append(paced_scrape(port, a.duration))
            out = multiprocessing.Queue()
            proc = multiprocessing.Process(target=attack_process, args=(port, a.duration + 2, out), daemon=True)
            proc.start()
            time.sleep(1)
            attacked.append(paced_scrape(port, a.duration))
            for k, v in out.get(timeout=a.duration + 30).items():
                counts[k] = counts.get(k, 0) + v
            proc.join(timeout=30)
        tls_mem = memory(p.pid, port, tls=True)
        tcp_mem = memory(p.pid, port, tls=False)
    finally:
        if p.poll() is not None:
            print(f"the exporter ended early (status {p.returncode}): see {d}/exporter.log", file=sys.stderr)
        p.terminate()
        p.wait()
    q, t = median_run(quiet), median_run(attacked)
    print(f"load average before: {load}; {a.rounds} rounds of {a.duration} s; cores: {os.cpu_count()}")
    print("| authenticated scrape (paced, 1 connection) | p50 ms | p99 ms | non-2xx | p99 ratio |")
    print("|---|---:|---:|---:|---:|")
    print(f"| quiet (anchor) | {q['p50']:.2f} | {q['p99']:.2f} | {q['errors']} | 1.00x |")
    print(f"| 32 connections sending wrong passwords | {t['p50']:.2f} | {t['p99']:.2f} | {t['errors']} | "
          f"{t['p99'] / q['p99']:.2f}x |")
    attempts = sum(counts.values())
    print(f"attack answers over {a.rounds * a.duration} s: " +
          ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f" ({attempts} in all)")
    print()
    print("| 2,048 idle connections | RSS at rest MiB | held MiB | KiB per connection | 3 s after close MiB | "
          "back within | scrape served meanwhile |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, (s0, held, after, ok) in (("TLS, handshake and one request done", tls_mem),
                                        ("TCP, no handshake", tcp_mem)):
        print(f"| {name} | {s0 / 1024:.1f} | {held / 1024:.1f} | {(held - s0) / IDLE:.1f} | {after / 1024:.1f} | "
              f"{(after - s0) / 1024:+.1f} MiB | {'yes' if ok else 'NO'} |")


if __name__ == "__main__":
    sys.exit(main())
