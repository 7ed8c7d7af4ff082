"""A loopback Prometheus endpoint that answers late exactly once, for the collector tests.

`late_server.py PORT_FILE UPSTREAM_URL TRIGGER_FILE` serves every GET by fetching UPSTREAM_URL (a
real `gpulse exporter --simulate`) and returning its body. The first request that arrives once
TRIGGER_FILE exists is answered DELAY_SECONDS late (default 0.28); every other request at once.
When the late answer has gone out, TRIGGER_FILE + ".answered" holds the Unix time it was sent.
Writes its port to PORT_FILE, serves until killed, and exits by itself after LIFETIME seconds
(default 120) so a failed test never leaves it behind. Run with Debian's /usr/bin/python3."""
import http.server
import os
import sys
import threading
import time
import urllib.request

DELAY_SECONDS = float(os.environ.get("DELAY_SECONDS", "0.28"))
LIFETIME = float(os.environ.get("LIFETIME", "120"))
state = {"late_sent": False}
lock = threading.Lock()


def take_the_late_turn(trigger):
    """True for exactly one request: the first one after TRIGGER appeared."""
    if not os.path.exists(trigger):
        return False
    with lock:
        if state["late_sent"]:
            return False
        state["late_sent"] = True
        return True


def make_handler(upstream, trigger):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            late = take_the_late_turn(trigger)
            if late:
                time.sleep(DELAY_SECONDS)
            with urllib.request.urlopen(upstream, timeout=10) as r:
                body = r.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if late:
                with open(trigger + ".answered.tmp", "w") as f:
                    f.write(repr(time.time()))
                os.rename(trigger + ".answered.tmp", trigger + ".answered")

    return Handler


def main():
    port_file, upstream, trigger = sys.argv[1:4]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(upstream, trigger))
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
