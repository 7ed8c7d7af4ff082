"""A deliberately misbehaving Prometheus endpoint for the collector tests (loopback only).

Paths: /ok (one good GPU), /ok/NAME (the same, its UUID GPU-NAME), /http500, /garbage, /dup (gpu 0 twice), /mig (MIG labels), /nan,
/noindex, /nouuid, /nometric, /slow (answers after SLOW_SECONDS), /flaky (HTTP 500 for the first
FLAKY_FAILURES requests, then good). Every path serves one GPU with index 0. Run with Debian's
/usr/bin/python3: `misbehaving_server.py PORT_FILE` writes its port to PORT_FILE and serves until
killed; it also exits by itself after LIFETIME seconds so a failed test never leaves it behind."""
import http.server
import os
import sys
import threading
import time

SLOW_SECONDS = float(os.environ.get("SLOW_SECONDS", "3"))
FLAKY_FAILURES = int(os.environ.get("FLAKY_FAILURES", "3"))
LIFETIME = float(os.environ.get("LIFETIME", "120"))
HEAD = "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"


def line(labels, value):
    return "DCGM_FI_DEV_POWER_USAGE{%s} %s\n" % (labels, value)


GOOD = 'gpu="0",UUID="GPU-%s",Hostname="exporter-lies"'
BODIES = {
    "/ok": lambda host: HEAD + line(GOOD % host, "101.500000"),
    "/dup": lambda host: HEAD + line(GOOD % host, "100.0") + line(GOOD % host, "200.0"),
    "/mig": lambda host: HEAD + line(GOOD % host + ',GPU_I_ID="1",GPU_I_PROFILE="1g.5gb"', "50.0"),
    "/nan": lambda host: HEAD + line(GOOD % host, "NaN"),
    "/noindex": lambda host: HEAD + line('UUID="GPU-%s"' % host, "100.0"),
    "/nouuid": lambda host: HEAD + line('gpu="0",UUID=""', "100.0"),
    "/nometric": lambda host: "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\nDCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1980\n",
    "/garbage": lambda host: "this is {not a metric line\n\x00\x01",
}
counts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, status, body):
        data = body.encode("utf-8", "replace")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        host = path.strip("/")
        with lock:
            counts[path] = counts.get(path, 0) + 1
            n = counts[path]
        if path == "/http500":
            return self.send_body(500, "internal error\n")
        if path == "/slow":
            time.sleep(SLOW_SECONDS)
            return self.send_body(200, BODIES["/ok"](host))
        if path == "/flaky":
            if n <= FLAKY_FAILURES:
                return self.send_body(500, "not yet\n")
            return self.send_body(200, BODIES["/ok"](host))
        if path in BODIES:
            return self.send_body(200, BODIES[path](host))
        if path.startswith("/ok/"):
            return self.send_body(200, BODIES["/ok"](path[len("/ok/"):]))
        return self.send_body(404, "no such path\n")


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 256  # not socketserver's 5: tests connect dozens of endpoints at once


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
