"""TLS and basic auth through --web-config-file (Prometheus exporter-toolkit format): a self-signed
certificate made at run time with the openssl command, bcrypt users, minimum TLS versions."""
import base64
import os
import shutil
import socket
import struct
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from exporter_e2e import Exporter, tls_context
from gpulse_e2e import GpulseTestCase

# bcrypt of "s3cret" (cost 4, cheap for tests), made with Python's crypt module.
HASH = "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6"


def auth(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


class SecurityTest(GpulseTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpulse-tls-")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", os.path.join(cls.dir, "server.key"), "-out", os.path.join(cls.dir, "server.crt")],
                       check=True, capture_output=True, timeout=60)
        cls.ca = os.path.join(cls.dir, "server.crt")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def web_config(self, text):
        path = os.path.join(self.dir, "web.yml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_tls_and_basic_auth(self):
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              f"basic_auth_users:\n  alice: {HASH}\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web) as e:
            self.assertTrue(e.url.startswith("https://"))
            ctx = tls_context(self.ca)
            self.assertEqual(e.get("/metrics", context=ctx)[0], 401)
            status, headers, _ = e.get("/metrics", auth("alice", "wrong"), context=ctx)
            self.assertEqual(status, 401)
            self.assertIn("Basic", headers.get("WWW-Authenticate", ""))
            self.assertEqual(e.get("/metrics", auth("bob", "s3cret"), context=ctx)[0], 401)
            status, _, body = e.get("/metrics", auth("alice", "s3cret"), context=ctx)
            self.assertEqual(status, 200)
            self.assertIn(b"DCGM_FI_DEV_GPU_TEMP", body)
            self.assertEqual(e.get("/health", auth("alice", "s3cret"), context=ctx)[0], 200)
            with self.assertRaises((ssl.SSLError, urllib.error.URLError)):
                e.get("/metrics", auth("alice", "s3cret"), context=ssl.create_default_context())  # untrusted CA

    def test_idle_connections_cannot_lock_out_scrapes(self):
        # Issue 13: connection slots were taken before TLS and authentication, so idle TCP
        # connections to the TLS port refused every scrape until the 30 s read timeout. Now one that
        # has never passed a request makes room at the limit, and its handshake deadline (5 s) closes
        # it long before the idle timeout.
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              f"basic_auth_users:\n  alice: {HASH}\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web, "--max-connections", "8") as e:
            idle = [socket.create_connection(("127.0.0.1", e.port), timeout=20) for _ in range(8)]
            try:
                ctx = tls_context(self.ca)
                for _ in range(3):
                    self.assertEqual(e.get("/metrics", auth("alice", "s3cret"), context=ctx)[0], 200)
                self.assertEqual(idle[-1].recv(1), b"", "closed by the handshake deadline, not after 30 s")
            finally:
                for s in idle:
                    s.close()

    def test_a_client_that_resets_during_a_response_does_not_kill_the_exporter(self):
        # Found by bench/exporter/hostile.py: OpenSSL wrote the socket with write(2), so a peer that
        # reset the connection while a response was being written raised SIGPIPE and the exporter
        # died. A small receive window keeps the response mid-write when the reset comes.
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
        with Exporter("--simulate", "8xH100", "--web-config-file", web) as e:
            for _ in range(3):
                raw = socket.socket()
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                raw.settimeout(20)
                raw.connect(("127.0.0.1", e.port))
                tls = tls_context(self.ca).wrap_socket(raw, server_hostname="127.0.0.1")
                tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertTrue(tls.recv(16).startswith(b"HTTP/1.1 200"))  # the response is being written
                tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                tls.close()  # RST with most of the 36 KB body unsent
            time.sleep(0.5)
            self.assertIsNone(e.proc.poll(), "the exporter is still running")
            self.assertEqual(e.get("/health", context=tls_context(self.ca))[0], 200)

    def test_connections_per_client_address_are_limited(self):
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web, "--max-connections-per-peer", "2") as e:
            port = e.port
            held = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(2)]
            try:
                third = socket.create_connection(("127.0.0.1", port), timeout=20)
                self.assertEqual(third.recv(1), b"", "the third from 127.0.0.1 is closed at once")
                third.close()
                other = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=("127.0.0.2", 0))
                tls = tls_context(self.ca).wrap_socket(other, server_hostname="127.0.0.1")
                tls.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertTrue(tls.recv(64).startswith(b"HTTP/1.1 200"))
                tls.close()
            finally:
                for s in held:
                    s.close()

    def test_min_version_refuses_older_clients(self):
        web = self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              "  min_version: TLS13\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web) as e:
            self.assertEqual(e.get("/metrics", context=tls_context(self.ca))[0], 200)
            with self.assertRaises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
                e.get("/metrics", context=tls_context(self.ca, ssl.TLSVersion.TLSv1_2))

    def test_basic_auth_without_tls(self):
        web = self.web_config(f"basic_auth_users:\n  alice: {HASH}\n")
        with Exporter("--simulate", "1xH200", "--web-config-file", web) as e:
            self.assertTrue(e.url.startswith("http://"))
            self.assertEqual(e.get("/metrics")[0], 401)
            self.assertEqual(e.get("/metrics", auth("alice", "s3cret"))[0], 200)
            # Authentication comes before method dispatch: an anonymous POST learns nothing.
            post = urllib.request.Request(e.url + "/metrics", data=b"x", method="POST")
            with self.assertRaises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(post, timeout=10)
            self.assertEqual(err.exception.code, 401)
            post = urllib.request.Request(e.url + "/metrics", data=b"x", method="POST", headers=auth("alice", "s3cret"))
            with self.assertRaises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(post, timeout=10)
            self.assertEqual(err.exception.code, 405)

    def test_a_duplicated_key_refuses_to_start_instead_of_dropping_tls_and_auth(self):
        # Empty tls_server_config and basic_auth_users first, the real ones further down: yaml-cpp keeps
        # the first, which used to serve plain HTTP without authentication, exit 0, no warning.
        web = self.web_config("tls_server_config:\nbasic_auth_users:\n"
                              "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                              f"basic_auth_users:\n  alice: {HASH}\n")
        p = subprocess.run([os.environ.get("GPULSE_BIN", "gpulse"), "exporter", "--simulate", "1xH200",
                            "-a", "127.0.0.1:0", "--web-config-file", web], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(':3: duplicate key "tls_server_config" (first at line 1)', p.stderr)

    def test_missing_certificate_is_a_clear_error(self):
        web = self.web_config("tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n")
        p = subprocess.run([os.environ.get("GPULSE_BIN", "gpulse"), "exporter", "--simulate", "1xH200",
                            "-a", "127.0.0.1:0", "--web-config-file", web], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("nope.crt", p.stderr)


if __name__ == "__main__":
    unittest.main()
