"""The network face against hostile and changing inputs (issue 39), on loopback with certificates made
at run time: a chunk-size line with a huge extension refused before it ends, without credentials; an
HTTP request to the TLS port answered 400; a rotated password and certificate taking effect without a
restart while a real Prometheus scrapes through the change; the management CLI over TLS with basic
auth and with client certificates; label values that are not UTF-8; the process and connection
self-metrics. Run with Debian's /usr/bin/python3."""
import crypt
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

from agent_e2e import Agent
from exporter_e2e import Exporter, parse_families, tls_context
from gpulse_e2e import GPULSE, GpulseTestCase
from test_exporter_prometheus import Prometheus
from test_exporter_security import auth


def bcrypt(password):
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))  # cost 4: cheap


def make_cert(directory, name, cn="127.0.0.1", ca=None):
    """A key and a certificate for 127.0.0.1 in `directory`: self-signed, or signed by `ca` (a name
    made before). Returns (cert path, key path)."""
    key, crt = os.path.join(directory, name + ".key"), os.path.join(directory, name + ".crt")
    if ca is None:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=" + cn, "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", crt], check=True, capture_output=True, timeout=60)
        return crt, key
    csr, ext = os.path.join(directory, name + ".csr"), os.path.join(directory, name + ".ext")
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn,
                    "-keyout", key, "-out", csr], check=True, capture_output=True, timeout=60)
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-days", "2", "-extfile", ext,
                    "-CA", os.path.join(directory, ca + ".crt"), "-CAkey", os.path.join(directory, ca + ".key"),
                    "-CAcreateserial", "-out", crt], check=True, capture_output=True, timeout=60)
    return crt, key


def read(path):
    with open(path) as f:
        return f.read()


def replace_file(path, data):
    """Writes `data` to `path` as rotation tools do: a new file renamed over the old one."""
    tmp = path + ".new"
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(tmp, path)


def raw_exchange(port, data, context=None, limit=1 << 20):
    """Sends `data` on a new connection (TLS with `context`) and reads the answer until the server
    closes it (bounded by a 20 s timeout and `limit` bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    if context is not None:
        s = context.wrap_socket(s, server_hostname="127.0.0.1")
    try:
        try:
            s.sendall(data)
        except (OSError, ssl.SSLError):
            pass  # refused mid-send: the answer, if any, is already on its way
        got = b""
        while len(got) < limit:
            try:
                chunk = s.recv(65536)
            except (OSError, ssl.SSLError):
                break
            if not chunk:
                break
            got += chunk
        return got
    finally:
        s.close()


class NetworkLimitsTest(GpulseTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpulse-net-")
        cls.crt1, cls.key1 = make_cert(cls.dir, "one")
        cls.crt2, cls.key2 = make_cert(cls.dir, "two")
        with open(os.path.join(cls.dir, "both-ca.crt"), "w") as f:  # what the scraper trusts
            f.write(read(cls.crt1) + read(cls.crt2))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="case-", dir=self.dir)

    def web_config(self, text):
        path = os.path.join(self.work, "web.yml")
        replace_file(path, text)
        return path

    def served_cert(self, port):
        ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "both-ca.crt"))
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return tls.getpeercert(binary_form=True)

    @staticmethod
    def der(crt):
        return ssl.PEM_cert_to_DER_cert(read(crt))

    def test_a_chunk_extension_without_credentials_is_refused_before_it_ends(self):
        shutil.copy(self.crt1, os.path.join(self.work, "server.crt"))
        shutil.copy(self.key1, os.path.join(self.work, "server.key"))
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              f"basic_auth_users:\n  alice: {bcrypt('s3cret')}\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web) as e:
            ctx = tls_context(self.crt1)
            head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;"
            answer = raw_exchange(e.port, head + b"e" * (256 * 1024), context=ctx)
            self.assertRegex(answer[:12], rb"HTTP/1\.1 (400|431)", answer[:200])
            # An HTTP request to the TLS port: answered as Go's servers answer it.
            plain = raw_exchange(e.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(plain.startswith(b"HTTP/1.0 400 Bad Request"), plain)
            self.assertIn(b"HTTP request to an HTTPS server", plain)
            status, _, body = e.get("/metrics", auth("alice", "s3cret"), context=ctx)
            self.assertEqual(status, 200)
            fam = parse_families(body.decode())
            refused = {s[0]["reason"]: s[1] for s in fam["gpulse_http_requests_refused"]}
            self.assertEqual(refused["malformed"] + refused["header_too_large"], 2.0, refused)
            for name in ("process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds",
                         "process_start_time_seconds", "gpulse_http_connections"):
                self.assertIn(name, fam)
            self.assertLess(fam["process_resident_memory_bytes"][0][1], 256 << 20)

    def test_a_rotated_password_and_certificate_take_effect_while_prometheus_scrapes(self):
        crt, key = os.path.join(self.work, "server.crt"), os.path.join(self.work, "server.key")
        shutil.copy(self.crt1, crt)
        shutil.copy(self.key1, key)
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              f"basic_auth_users:\n  prometheus: {bcrypt('first')}\n")
        password_file = os.path.join(self.work, "password")
        replace_file(password_file, "first")
        with Exporter("--simulate", "1xH200", "--web-config-file", web) as e:
            prom = Prometheus([f"127.0.0.1:{e.port}"], scrape={
                "scheme": "https",
                "tls_config": {"ca_file": os.path.join(self.dir, "both-ca.crt")},
                "basic_auth": {"username": "prometheus", "password_file": password_file},
            })
            try:
                prom.wait_for('up{job="gpu"} == 1', 1)
                self.assertEqual(self.served_cert(e.port), self.der(self.crt1))
                pid = e.proc.pid
                # The certificate, then the password, rotated in place as cert-manager and a
                # secrets tool would: the scraper's password file and the exporter's hash together.
                replace_file(key, read(self.key2))
                replace_file(crt, read(self.crt2))
                self.assertEqual(self.served_cert(e.port), self.der(self.crt2), "new connections get the new certificate")
                replace_file(password_file, "second")
                self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                                f"basic_auth_users:\n  prometheus: {bcrypt('second')}\n")
                ctx = tls_context(os.path.join(self.dir, "both-ca.crt"))
                self.assertEqual(e.get("/health", auth("prometheus", "first"), context=ctx)[0], 401)
                self.assertEqual(e.get("/health", auth("prometheus", "second"), context=ctx)[0], 200)
                after = time.time() + 1
                prom.wait_for(f'up{{job="gpu"}} == 1 and timestamp(up{{job="gpu"}}) > {after}', 1)
                self.assertEqual(e.proc.pid, pid)
                self.assertIsNone(e.proc.poll(), "no restart: the same process serves")
                # A broken file keeps what is in force, and says so.
                self.web_config("tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n")
                self.assertEqual(e.get("/health", auth("prometheus", "second"), context=ctx)[0], 200)
                fam = parse_families(e.get("/metrics", auth("prometheus", "second"), context=ctx)[2].decode())
                self.assertEqual(fam["gpulse_web_config_last_reload_successful"][0][1], 0.0)
                reloads = {s[0]["result"]: s[1] for s in fam["gpulse_web_config_reloads"]}
                # At least the certificate and the password; a check between the key's and the
                # certificate's replacement fails (they do not match) and keeps the old pair.
                self.assertGreaterEqual(reloads["success"], 2.0, reloads)
                self.assertGreaterEqual(reloads["failure"], 1.0, reloads)
            finally:
                prom.stop()

    def test_the_management_cli_speaks_tls_with_basic_auth_and_client_certificates(self):
        make_cert(self.work, "ca", cn="gpulse test CA")
        server_crt, server_key = make_cert(self.work, "server", ca="ca")
        client_crt, client_key = make_cert(self.work, "client", cn="operator", ca="ca")
        ca = os.path.join(self.work, "ca.crt")
        web = self.web_config(f"tls_server_config:\n  cert_file: {server_crt}\n  key_file: {server_key}\n"
                              f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {ca}\n"
                              f"basic_auth_users:\n  ops: {bcrypt('pw')}\n")
        agent = Agent(self.work, args=["--web-config-file", web])
        try:
            self.assertTrue(agent.url.startswith("https://"), agent.url)
            host = "https://127.0.0.1:%d" % agent.port
            env = dict(os.environ, GPULSE_AGENT_USER="ops", GPULSE_AGENT_PASSWORD="pw")
            tls = ["--ca-file", ca, "--cert-file", client_crt, "--key-file", client_key]

            def cli(*args, extra_env=None):
                return subprocess.run([GPULSE, *args], capture_output=True, text=True, timeout=60,
                                      env=extra_env or env)

            made = cli("group", "--host", host, *tls, "-c", "remote")
            self.assertEqual(made.returncode, 0, made.stderr)
            listed = cli("group", "--host", host, *tls, "-l")
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertIn("remote", listed.stdout)
            # Verification is on by default: the system's CAs do not know this one.
            untrusted = cli("group", "--host", host, "--cert-file", client_crt, "--key-file", client_key, "-l")
            self.assertNotEqual(untrusted.returncode, 0)
            self.assertIn("not trusted", untrusted.stderr)
            insecure = cli("group", "--host", host, "--insecure", "--cert-file", client_crt,
                           "--key-file", client_key, "-l")
            self.assertEqual(insecure.returncode, 0, insecure.stderr)
            no_client_cert = cli("group", "--host", host, "--ca-file", ca, "-l")
            self.assertNotEqual(no_client_cert.returncode, 0)
            no_password = cli("group", "--host", host, *tls, "-l",
                              extra_env={k: v for k, v in env.items() if not k.startswith("GPULSE_AGENT_")})
            self.assertNotEqual(no_password.returncode, 0)
            self.assertIn("401", no_password.stderr)
        finally:
            agent.close()

    def test_a_hostname_that_is_not_utf8_is_refused_naming_its_source(self):
        bad = b"node-\xff".decode("utf-8", "surrogateescape")
        flag = subprocess.run([GPULSE, "exporter", "--simulate", "1xH200", "--once", "--hostname", bad],
                              capture_output=True, text=True, timeout=60, errors="replace")
        self.assertEqual(flag.returncode, 2, flag.stderr)
        self.assertIn("--hostname: the Hostname label value is not valid UTF-8", flag.stderr)
        env = dict(os.environ)
        env["NODE_NAME"] = bad
        var = subprocess.run([GPULSE, "exporter", "--simulate", "1xH200", "--once"], capture_output=True,
                             timeout=60, env={k: v.encode("utf-8", "surrogateescape") for k, v in env.items()})
        self.assertEqual(var.returncode, 2, var.stderr)
        self.assertIn(b"$NODE_NAME", var.stderr)

    def test_a_fifo_or_a_device_as_scenario_file_is_named_as_such(self):
        fifo = os.path.join(self.work, "scenario.fifo")
        os.mkfifo(fifo)
        for path in (fifo, "/dev/zero"):
            p = subprocess.run([GPULSE, "devices", "--simulate", path], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"scenario file {path} is not a regular file", p.stderr)

    def test_agent_request_bodies_with_a_repeated_key_or_bad_utf8_are_refused_by_name(self):
        agent = Agent(self.work)
        try:
            r = agent.request("POST", "/api/v1/groups", b'{"name": "a", "name": "b"}')
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.json["error"], 'the request body gives the key "name" twice in one object')
            r = agent.request("POST", "/api/v1/groups", b'{"name": "gr\xff"}')
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.json["error"], "the request body is not valid UTF-8")
        finally:
            agent.close()


if __name__ == "__main__":
    unittest.main()
