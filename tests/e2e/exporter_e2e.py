"""Helpers for the exporter's end-to-end tests: start `gpulse exporter` on a free loopback port, fetch
its endpoints, mask what varies between runs in an exposition. Run with Debian's /usr/bin/python3."""
import os
import re
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request

from gpulse_e2e import GPULSE, SOURCE_DIR

GOLDEN_DIR = os.path.join(SOURCE_DIR, "tests", "testdata", "exporter")
GOLDEN_CLOCK = "5"  # simulator seconds at which golden files are taken (GPULSE_SIM_CLOCK)
LISTEN_RE = re.compile(r"on (https?://\S+)/metrics")

# Values that differ from run to run: the read duration, sample ages, the build's commit.
_VARYING = re.compile(r"^((?:gpulse_scrape_duration_seconds|gpulse_device_sample_age_seconds)(?:\{[^}]*\})?) \S+$",
                      re.M)
_COMMIT = re.compile(r'(gpulse_build_info\{version="[^"]*",commit=")[^"]*(")')


def mask(exposition):
    text = _VARYING.sub(r"\1 <varies>", exposition)
    return _COMMIT.sub(r"\1<commit>\2", text)


def golden_exposition(scenario, *extra):
    env = dict(os.environ, GPULSE_SIM_CLOCK=GOLDEN_CLOCK)
    host = [] if "-n" in extra else ["--hostname", "testhost"]
    p = subprocess.run([GPULSE, "exporter", "--simulate", scenario, "--once", *host, *extra],
                       capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise AssertionError(f"gpulse exporter --once failed: {p.stderr}")
    return p.stdout


class Exporter:
    """A running `gpulse exporter` on 127.0.0.1 with a port chosen by the kernel."""

    def __init__(self, *args, env=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.stderr_lines = []
        self.proc = subprocess.Popen([GPULSE, "exporter", "-a", "127.0.0.1:0", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=full_env)
        self.url = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.stderr_lines.append(line)
            m = LISTEN_RE.search(line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.stop()
            raise AssertionError("exporter did not start: " + "".join(self.stderr_lines))
        self.port = int(self.url.rsplit(":", 1)[1])

    def read_stderr_line(self, timeout=20):
        """The next stderr line (blocking, bounded by the caller's expectations)."""
        line = self.proc.stderr.readline()
        self.stderr_lines.append(line)
        return line

    def get(self, path, headers=None, context=None):
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=20, context=context) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def signal(self, signo):
        self.proc.send_signal(signo)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def parse_families(text):
    """{family name: [(labels dict, value)]} through python3-prometheus-client's parser."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = [(dict(s.labels), s.value) for s in fam.samples]
    return out


def tls_context(ca_file, max_version=None):
    ctx = ssl.create_default_context(cafile=ca_file)
    if max_version is not None:
        ctx.maximum_version = max_version
    return ctx
