"""dcgm-exporter's command line in `gpulse exporter` (issue 20 item 4, ADR 0015): every flag and
variable of dcgm-exporter (its pkg/cmd/app.go) takes effect or stops gpulse at start naming it, never
silently ignored; the flag wins over its variable; a `dcgm-exporter` link runs the exporter; Go's
single-dash long flags work. Run with Debian's /usr/bin/python3."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from exporter_e2e import LISTEN_RE, Exporter, parse_families, tls_context
from gpulse_e2e import GPULSE, GpulseTestCase, run
from test_exporter_security import HASH, auth

# dcgm-exporter's options gpulse accepts only at their default: (flag, short, variable, a value that is
# not the default, the default). From dcgm-exporter's pkg/cmd/app.go (research/dcgm.md section 4).
# -k and its socket, GPU id type and resource names are honoured: test_exporter_kubernetes.py.
DEFAULT_ONLY = [
    ("--cpu-devices", "-p", "DCGM_EXPORTER_CPU_DEVICES_STR", "g", "f"),
    ("--configmap-data", "-m", "DCGM_EXPORTER_CONFIGMAP_DATA", "ns:cm", "none"),
    ("--remote-hostengine-info", "-r", "DCGM_REMOTE_HOSTENGINE_INFO", "localhost:5555", None),
    ("--kubernetes-enable-pod-labels", None, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "true", "false"),
    ("--kubernetes-enable-pod-uid", None, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", "true", "false"),
    ("--kubernetes-pod-label-allowlist-regex", None, "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", "app.*",
     None),
    ("--switch-devices", "-s", "DCGM_EXPORTER_OTHER_DEVICES_STR", "g", "f"),
    ("--fake-gpus", None, "DCGM_EXPORTER_USE_FAKE_GPUS", "true", "false"),
    ("--xid-count-window-size", "-x", "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", "60000", "300000"),
    ("--debug", None, "DCGM_EXPORTER_DEBUG", "true", "false"),
    ("--clock-events-count-window-size", None, "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", "60000", "300000"),
    ("--enable-dcgm-log", None, "DCGM_EXPORTER_ENABLE_DCGM_LOG", "true", "false"),
    ("--dcgm-log-level", None, "DCGM_EXPORTER_DCGM_LOG_LEVEL", "DEBUG", "NONE"),
    ("--log-format", None, "DCGM_EXPORTER_LOG_FORMAT", "json", "text"),
    ("--kubernetes-virtual-gpus", None, "KUBERNETES_VIRTUAL_GPUS", "true", "false"),
    ("--dump-enabled", None, "DCGM_EXPORTER_DUMP_ENABLED", "true", "false"),
    ("--dump-directory", None, "DCGM_EXPORTER_DUMP_DIRECTORY", "/tmp/d", "/tmp/dcgm-exporter-debug"),
    ("--dump-retention", None, "DCGM_EXPORTER_DUMP_RETENTION", "48", "24"),
    ("--dump-compression", None, "DCGM_EXPORTER_DUMP_COMPRESSION", "false", "true"),
    ("--kubernetes-enable-dra", None, "KUBERNETES_ENABLE_DRA", "true", "false"),
    ("--disable-startup-validate", None, "DISABLE_STARTUP_VALIDATE", "true", "false"),
    ("--enable-gpu-bind-unbind-watch", None, "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", "true", "false"),
    ("--gpu-bind-unbind-poll-interval", None, "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", "5s", "1s"),
    ("--enable-pprof", None, "DCGM_EXPORTER_ENABLE_PPROF", "true", "false"),
    ("--web-systemd-socket", None, "DCGM_EXPORTER_SYSTEMD_SOCKET", "true", "false"),
]
BOOL_VALUES = ("true", "false")


def once(*args, env=None):
    return run("exporter", "--simulate", "1xH200", "--once", "--hostname", "h", *args, env=env)


class RefusedOrDefault(GpulseTestCase):
    def test_each_variable_off_its_default_stops_gpulse_naming_it(self):
        for flag, _, var, value, _ in DEFAULT_ONLY:
            with self.subTest(var=var):
                p = once(env={var: value})
                self.assertEqual(p.returncode, 2, p.stdout[:200])
                self.assertIn(var, p.stderr)
                self.assertIn(flag, p.stderr)
                self.assertEqual(p.stdout, "", "nothing is served")

    def test_each_flag_off_its_default_stops_gpulse_naming_it(self):
        for flag, short, var, value, _ in DEFAULT_ONLY:
            for spelling in filter(None, (flag, short)):
                if value in BOOL_VALUES:
                    args = [spelling] if value == "true" else [f"{spelling}={value}"]
                else:
                    args = [spelling, value]
                with self.subTest(flag=spelling):
                    p = once(*args)
                    self.assertEqual(p.returncode, 2, p.stdout[:200])
                    self.assertIn(flag, p.stderr)

    def test_each_option_at_its_default_changes_nothing(self):
        plain = once().stdout
        for flag, _, var, _, default in DEFAULT_ONLY:
            if default is None:
                continue
            with self.subTest(var=var):
                p = once(env={var: default})
                self.assertEqual(p.returncode, 0, p.stderr)
            args = [f"{flag}={default}"]
            with self.subTest(flag=flag):
                p = once(*args)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(len(p.stdout.splitlines()), len(plain.splitlines()))

    def test_the_flag_wins_over_its_variable(self):
        p = once("--kubernetes=false", env={"DCGM_EXPORTER_KUBERNETES": "true"})
        self.assertEqual(p.returncode, 0, p.stderr)
        with tempfile.TemporaryDirectory() as d:
            only_temp = os.path.join(d, "c.csv")
            with open(only_temp, "w") as f:
                f.write("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n")
            p = once("-f", only_temp, env={"DCGM_EXPORTER_COLLECTORS": "/nonexistent.csv"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("DCGM_FI_DEV_GPU_TEMP", p.stdout)
        self.assertNotIn("DCGM_FI_DEV_POWER_USAGE", p.stdout)


class Honoured(GpulseTestCase):
    def test_collectors_variable_chooses_the_counters_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            with open(path, "w") as f:
                f.write("DCGM_FI_DEV_POWER_USAGE, gauge, power\n")
            p = once(env={"DCGM_EXPORTER_COLLECTORS": path})
        self.assertEqual(p.returncode, 0, p.stderr)
        families = parse_families(p.stdout)
        self.assertIn("DCGM_FI_DEV_POWER_USAGE", families)
        self.assertNotIn("DCGM_FI_DEV_GPU_TEMP", families)

    def test_no_hostname_variable_drops_the_label(self):
        p = run("exporter", "--simulate", "1xH200", "--once", env={"DCGM_EXPORTER_NO_HOSTNAME": "true"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("Hostname=", p.stdout)
        p = run("exporter", "--simulate", "1xH200", "--once", env={"DCGM_EXPORTER_NO_HOSTNAME": "false"})
        self.assertIn("Hostname=", p.stdout)

    def test_replace_blanks_in_model_name_in_each_spelling(self):
        for args, env in ((["--replace-blanks-in-model-name"], None), (["-rbmn"], None), (["--rbmn"], None),
                          ([], {"DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME": "true"})):
            with self.subTest(args=args, env=env):
                p = run("exporter", "--simulate", "8xH100", "--once", *args, env=env)
                self.assertEqual(p.returncode, 0, p.stderr)
                models = set(re.findall(r'modelName="([^"]*)"', p.stdout))
                self.assertEqual(models, {"NVIDIA-H100-80GB-HBM3"})
        p = run("exporter", "--simulate", "8xH100", "--once")
        self.assertEqual(set(re.findall(r'modelName="([^"]*)"', p.stdout)), {"NVIDIA H100 80GB HBM3"})

    def test_collect_interval_is_the_read_sharing_window(self):
        self.assertEqual(once("-c", "1000").returncode, 0)
        self.assertEqual(once(env={"DCGM_EXPORTER_INTERVAL": "30000"}).returncode, 0)
        p = once("-c", "1000", "--min-refresh-ms", "10")
        self.assertEqual(p.returncode, 2)
        self.assertIn("give one", p.stderr)
        p = once("--min-refresh-ms", "10", env={"DCGM_EXPORTER_INTERVAL": "30000"})
        self.assertEqual(p.returncode, 0, "the flag wins over the pod's variable: " + p.stderr)
        p = once("-c", "600000")
        self.assertEqual(p.returncode, 2)
        self.assertIn("0..60000", p.stderr)
        # Two scrapes 1 s apart inside a 30 s interval share one read, as dcgm-exporter's 30 s watch does.
        with Exporter("--simulate", "1xH200", env={"DCGM_EXPORTER_INTERVAL": "30000"}) as e:
            first = parse_families(e.get("/metrics")[2].decode())["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
            time.sleep(1.0)
            second = parse_families(e.get("/metrics")[2].decode())["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
            self.assertEqual(first, second, "the same read")
            self.assertEqual(e.get("/health")[0], 200, "a read younger than the interval is not stale")

    def test_devices_selects_gpus_or_instances(self):
        def fb_used(*args, env=None):
            p = run("exporter", "--simulate", "mig-a100", "--once", "-n", *args, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            return sorted((l["gpu"], l.get("GPU_I_ID", "")) for l, _ in parse_families(p.stdout)["DCGM_FI_DEV_FB_USED"])
        # mig-a100: GPU 0 is MIG-enabled with instances 2, 3, 9 and 10; GPU 1 is not.
        flex = [("0", "10"), ("0", "2"), ("0", "3"), ("0", "9"), ("1", "")]
        self.assertEqual(fb_used(), flex)
        self.assertEqual(fb_used("-d", "f"), flex)
        self.assertEqual(fb_used("-d", "g"), [("0", ""), ("1", "")], "a MIG GPU keeps its whole-GPU memory")
        self.assertEqual(fb_used("-d", "g:1"), [("1", "")])
        self.assertEqual(fb_used("--devices", "g:0-1"), [("0", ""), ("1", "")])
        self.assertEqual(fb_used(env={"DCGM_EXPORTER_DEVICES_STR": "i"}), flex[:4])
        self.assertEqual(fb_used("-d", "g:0", env={"DCGM_EXPORTER_DEVICES_STR": "i"}), [("0", "")], "flag wins")
        for bad in ("x", "i:1", "g:2-1", "g:a"):
            with self.subTest(devices=bad):
                p = run("exporter", "--simulate", "mig-a100", "--once", "-d", bad)
                self.assertEqual(p.returncode, 2)
                self.assertIn("--devices (-d) / $DCGM_EXPORTER_DEVICES_STR", p.stderr)

    def test_old_namespace_and_1x_family_names(self):
        # A counters file in dcgm-exporter 1.x's names (its etc/1.x-compatibility-metrics.csv style).
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "1x.csv")
            with open(path, "w") as f:
                f.write("dcgm_sm_clock, gauge, SM clock\ndcgm_fb_used, gauge, FB used\n"
                        "dcgm_fi_prof_gr_engine_active, gauge, GR\ndcgm_xid_errors, gauge, XID\n")
            for args, env in ((["-o"], None), (["--use-old-namespace"], None),
                              ([], {"DCGM_EXPORTER_USE_OLD_NAMESPACE": "true"})):
                with self.subTest(args=args, env=env):
                    p = run("exporter", "--simulate", "1xH200", "--once", "-n", "-f", path, *args, env=env)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    families = parse_families(p.stdout)
                    for name in ("dcgm_sm_clock", "dcgm_fb_used", "dcgm_fi_prof_gr_engine_active"):
                        self.assertIn(name, families)
                        labels = families[name][0][0]
                        self.assertIn("uuid", labels)
                        self.assertNotIn("UUID", labels)
            p = run("exporter", "--simulate", "1xH200", "--once", "-n", "-f", path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("UUID", parse_families(p.stdout)["dcgm_sm_clock"][0][0], "without -o: today's labels")

    def test_listen_variable_chooses_the_address(self):
        proc = subprocess.Popen([GPULSE, "exporter", "--simulate", "1xH200"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, DCGM_EXPORTER_LISTEN="127.0.0.1:0"))
        try:
            url = None
            for _ in range(20):
                line = proc.stderr.readline()
                m = LISTEN_RE.search(line)
                if m:
                    url = m.group(1)
                    break
            self.assertIsNotNone(url)
            self.assertTrue(url.startswith("http://127.0.0.1:"), url)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            proc.stderr.close()

    def test_web_config_variable_enables_tls_and_auth(self):
        d = tempfile.mkdtemp(prefix="gpulse-dcgmvars-")
        try:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", os.path.join(d, "server.key"), "-out", os.path.join(d, "server.crt")],
                           check=True, capture_output=True, timeout=60)
            web = os.path.join(d, "web.yml")
            with open(web, "w") as f:
                f.write(f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                        f"basic_auth_users:\n  alice: {HASH}\n")
            with Exporter("--simulate", "1xH200", env={"DCGM_EXPORTER_WEB_CONFIG_FILE": web}) as e:
                self.assertTrue(e.url.startswith("https://"), e.url)
                ctx = tls_context(os.path.join(d, "server.crt"))
                self.assertEqual(e.get("/metrics", context=ctx)[0], 401)
                self.assertEqual(e.get("/metrics", auth("alice", "s3cret"), context=ctx)[0], 200)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class Invocation(GpulseTestCase):
    def test_a_dcgm_exporter_link_runs_the_exporter_with_its_flags(self):
        with tempfile.TemporaryDirectory() as d:
            link = os.path.join(d, "dcgm-exporter")
            os.symlink(GPULSE, link)
            p = subprocess.run([link, "--simulate", "1xH200", "--once", "-f",
                                os.path.join(os.path.dirname(__file__), "..", "..", "deploy", "default-counters.csv")],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("DCGM_FI_DEV_GPU_TEMP", p.stdout)

    def test_version_through_the_link_and_the_subcommand(self):
        # Issue 40: `dcgm-exporter --version` through the link was refused (exit 2).
        with tempfile.TemporaryDirectory() as d:
            link = os.path.join(d, "dcgm-exporter")
            os.symlink(GPULSE, link)
            for flag in ("--version", "-v"):
                p = subprocess.run([link, flag], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stdout, r"^dcgm-exporter version gpulse \S+ \(commit \w+\)\n$")
        p = subprocess.run([GPULSE, "exporter", "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^gpulse \S+ \(commit \w+\)\n$")

    def test_go_style_short_flag_with_equals(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            with open(path, "w") as f:
                f.write("DCGM_FI_DEV_POWER_USAGE, gauge, power\n")
            p = run("exporter", "--simulate", "1xH200", "--once", f"-f={path}", "-k=false")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("DCGM_FI_DEV_POWER_USAGE", p.stdout)
        self.assertNotIn("DCGM_FI_DEV_GPU_TEMP", p.stdout)

    def test_a_value_that_looks_like_a_flag_is_left_alone(self):
        # "-once" here is the Hostname label's value, not Go's spelling of --once.
        p = run("exporter", "--simulate", "1xH200", "--once", "--hostname", "-once")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('Hostname="-once"', p.stdout)
        p = run("exporter", "--simulate", "1xH200", "--once", "-hostname", "-debug")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('Hostname="-debug"', p.stdout)

    def test_go_style_single_dash_long_flags(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.csv")
            with open(path, "w") as f:
                f.write("DCGM_FI_DEV_POWER_USAGE, gauge, power\n")
            p = run("exporter", "--simulate", "1xH200", "--once", "-collectors", path, "-kubernetes=false",
                    "-no-hostname")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("DCGM_FI_DEV_POWER_USAGE", p.stdout)
        self.assertNotIn("DCGM_FI_DEV_GPU_TEMP", p.stdout)
        self.assertNotIn("Hostname=", p.stdout)


if __name__ == "__main__":
    unittest.main()
