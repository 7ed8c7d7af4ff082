"""Helpers for the node agent's end-to-end tests: start `gpulse agent` in a temporary directory on a
simulated scenario, talk HTTP to it over its unix socket (and TCP), drive its simulated clock, stop
it cleanly (SIGTERM) or not (SIGKILL) and start it again on the same state directory.
Run with Debian's /usr/bin/python3 (only its standard library and python3-jsonschema)."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

from gpulse_e2e import DEVICE_SELECTION_VARS, GPULSE, run, validate

LISTEN_RE = re.compile(r"serving .* on (https?://127\.0\.0\.1:(\d+))/metrics")
START_TIMEOUT_S = 30
REQUEST_TIMEOUT_S = 120


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix stream socket (the agent's management socket)."""

    def __init__(self, path, timeout=REQUEST_TIMEOUT_S):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Reply:
    """One HTTP answer: status, headers (lower-case names), body bytes, and the JSON when it is JSON."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.json = None
        if headers.get("content-type", "").startswith("application/json"):
            self.json = json.loads(body.decode("utf-8"))

    @property
    def text(self):
        return self.body.decode("utf-8")

    def __repr__(self):
        return "HTTP %d %s" % (self.status, self.body[:400])


def _request(conn, method, path, body=None, headers=None):
    try:
        hdrs = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        data = r.read()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()


def agent_env(sim_clock="0", env=None):
    """The agent's environment: ours without the device-selection variables, GPULSE_SIM_CLOCK set to
    `sim_clock` (None: unset, so the agent runs on the real clock)."""
    full = {k: v for k, v in os.environ.items() if k not in DEVICE_SELECTION_VARS and k != "GPULSE_SIM_CLOCK"}
    if sim_clock is not None:
        full["GPULSE_SIM_CLOCK"] = str(sim_clock)
    full.update(env or {})
    return full


class Agent:
    """A `gpulse agent` on a simulated scenario, with its state directory and socket in `directory`.

    The TCP listener is 127.0.0.1 on a port the kernel picks; `host` is what CLI verbs take."""

    def __init__(self, directory, scenario="8xH100", args=(), sim_clock="0", env=None, start=True):
        self.dir = directory
        self.state_dir = os.path.join(directory, "state")
        self.socket = os.path.join(directory, "agent.sock")
        self.host = "unix://" + self.socket
        self.scenario = scenario
        self.args = list(args)
        self.sim_clock = sim_clock
        self.env = env
        self.proc = None
        self.url = None
        self.port = None
        self.starts = 0
        self.log_path = None
        if start:
            self.start()

    # ---- process ----

    def command(self):
        return [GPULSE, "agent", "--simulate", self.scenario, "--state-dir", self.state_dir,
                "--socket", self.socket, "-a", "127.0.0.1:0", *self.args]

    def launch(self):
        """Starts the process without waiting for it (its stderr goes to a log file in the directory)."""
        self.starts += 1
        self.log_path = os.path.join(self.dir, "agent-%d.log" % self.starts)
        log = open(self.log_path, "w", encoding="utf-8")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=log,
                                         env=agent_env(self.sim_clock, self.env))
        finally:
            log.close()
        return self.proc

    def log(self):
        if self.log_path is None or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def start(self):
        """Starts the agent and waits (bounded) until it names its TCP address and answers
        GET /api/v1/status on its socket."""
        self.launch()
        deadline = time.monotonic() + START_TIMEOUT_S
        self.url = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gpulse agent exited with %s before serving:\n%s" % (self.proc.returncode, self.log()))
            if self.url is None:
                m = LISTEN_RE.search(self.log())
                if m:
                    self.url, self.port = m.group(1), int(m.group(2))
            if self.url is not None and os.path.exists(self.socket):
                try:
                    r = self.get("/api/v1/status")
                    if r.status == 200:
                        validate(r.json, "agent-status.schema.json")
                        return r.json
                except OSError:
                    pass  # a socket left by a killed agent, or not listening yet
            time.sleep(0.02)
        self.kill9()
        raise AssertionError("gpulse agent did not start within %d s:\n%s" % (START_TIMEOUT_S, self.log()))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM (a clean shutdown) and wait; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("gpulse agent did not stop within %d s of SIGTERM:\n%s" % (timeout, self.log()))
        return self.proc.returncode

    def kill9(self):
        """SIGKILL (no shutdown at all) and wait; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        return self.proc.returncode

    def restart(self, kill=False):
        """Stops the agent (SIGTERM, or SIGKILL with kill=True) and starts it again on the same
        state directory and clock variable; returns the status answer of the new process."""
        if kill:
            self.kill9()
        else:
            rc = self.stop()
            if rc != 0:
                raise AssertionError("gpulse agent exited %s on SIGTERM:\n%s" % (rc, self.log()))
        return self.start()

    def close(self):
        if self.running():
            try:
                self.stop()
            except AssertionError:
                pass

    # ---- HTTP ----

    def request(self, method, path, body=None, headers=None):
        """One request over the unix socket."""
        return _request(UnixHTTPConnection(self.socket), method, path, body, headers)

    def tcp_request(self, method, path, body=None, headers=None):
        """One request over TCP (the exporter's address)."""
        return _request(http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S),
                        method, path, body, headers)

    def get(self, path):
        return self.request("GET", path)

    def api(self, method, path, body=None, status=200, schema=None):
        """A request that must answer `status` with JSON; validates the body against `schema` (a file
        in docs/schema; default: agent-error.schema.json for a 4xx/5xx answer) and returns it."""
        r = self.request(method, path, body)
        if r.status != status:
            raise AssertionError("%s %s answered %d, not %d: %s" % (method, path, r.status, status, r.body[:2000]))
        if r.json is None:
            raise AssertionError("%s %s: not a JSON answer (%s): %s" % (method, path, r.headers.get("content-type"), r.body[:400]))
        if schema is None and status >= 400:
            schema = "agent-error.schema.json"
        if schema is not None:
            validate(r.json, schema)
        return r.json

    def status(self):
        return self.api("GET", "/api/v1/status", schema="agent-status.schema.json")

    def advance(self, seconds):
        """Moves the simulated clock on by `seconds`, running every tick due meanwhile."""
        return self.api("POST", "/api/v1/clock", {"advance_s": seconds}, schema="agent-clock.schema.json")

    def now_ns(self):
        return self.api("GET", "/api/v1/clock", schema="agent-clock.schema.json")["now_unix_ns"]

    # ---- the CLI ----

    def cli(self, verb, *args, timeout=60):
        """`gpulse VERB --host unix://SOCKET ARGS...` (a CompletedProcess)."""
        return run(verb, "--host", self.host, *args, timeout=timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
