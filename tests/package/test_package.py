"""The Debian package and the container image (issue 41, items 2 and 3), as `make image` left them in
the build tree (`make test` runs it first):

- the package passes lintian with no error; its control data has computed library dependencies, the
  conffiles, the maintainer scripts; its files are /usr and /etc only, man pages compressed, units
  installed but not enabled;
- installed with dpkg into a clean Debian 12 root (the image's base: minbase plus the package's
  dependencies, nothing of gpulse), `gpulse --version` and `gpulse devices --simulate 1xH200` work
  from the installed paths and the gpulse user exists; removed, only the conffiles stay; purged,
  nothing of the package stays;
- the OCI image agrees with deploy/container/Containerfile (user, entrypoint, port), its exporter,
  run from the image's root filesystem as the image's user in a network namespace of its own, is
  scraped, and its compressed size is within the 60 MB target.

The root filesystem steps need root (device nodes, file owners), as `make image` does."""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

BUILD_DIR = os.environ.get("GPULSE_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("GPULSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
IMAGE_DIR = os.path.join(BUILD_DIR, "image")
TARGET_COMPRESSED_BYTES = 60 * 1000 * 1000


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(gpulse VERSION (\S+)", f.read()).group(1)


def the_deb():
    debs = glob.glob(os.path.join(BUILD_DIR, "gpulse_*.deb"))
    if len(debs) != 1:
        raise AssertionError(f"expected one gpulse_*.deb in {BUILD_DIR} (make deb), found {debs}")
    return debs[0]


def run(args, **kw):
    kw.setdefault("text", True)
    return subprocess.run(args, capture_output=True, timeout=kw.pop("timeout", 300), **kw)


def package_files(deb):
    """The paths a package installs (files and links, not directories), without the leading '.'."""
    p = run(["dpkg-deb", "--fsys-tarfile", deb], text=False)
    with tempfile.TemporaryFile() as f:
        f.write(p.stdout)
        f.seek(0)
        with tarfile.open(fileobj=f) as t:
            return sorted(m.name[1:] for m in t.getmembers() if not m.isdir())


def in_root(root, *cmd, user=None):
    """CMD run chrooted in ROOT, in PID and mount namespaces of its own with its own /proc (gpulse
    finds the simulator through /proc/self/exe)."""
    chroot = ["chroot"] + ([f"--userspec={user}"] if user else []) + [root]
    return run(["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc", *chroot, *cmd])


def need_root(test):
    if os.geteuid() != 0:
        test.skipTest("root filesystems need root (make image does too)")


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = the_deb()
        cls.files = package_files(cls.deb)

    def field(self, name):
        return run(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def test_lintian_reports_no_error(self):
        if not shutil.which("lintian"):
            self.fail("lintian is not installed (scripts/install-deps.sh installs it)")
        p = run(["lintian", "--fail-on", "error", "--no-tag-display-limit", self.deb], timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotRegex(p.stdout, r"(?m)^E: ", p.stdout)

    def test_control_data(self):
        self.assertEqual(self.field("Package"), "gpulse")
        self.assertEqual(self.field("Version"), project_version())
        self.assertEqual(os.path.basename(self.deb),
                         f"gpulse_{project_version()}_{run(['dpkg', '--print-architecture']).stdout.strip()}.deb")
        depends = [d.strip().split(" ")[0] for d in self.field("Depends").split(",")]
        for lib in ("libc6", "libstdc++6", "libssl3", "adduser"):
            self.assertIn(lib, depends)
        self.assertTrue(any(d.startswith("libgrpc++") for d in depends), "computed by dpkg-shlibdeps: " + str(depends))
        with tempfile.TemporaryDirectory() as tmp:
            run(["dpkg-deb", "--control", self.deb, tmp]).check_returncode()
            with open(os.path.join(tmp, "conffiles"), encoding="utf-8") as f:
                self.assertEqual(f.read().split(), ["/etc/gpulse/default-counters.csv", "/etc/gpulse/web.yml"])
            for script in ("postinst", "postrm"):
                self.assertTrue(os.access(os.path.join(tmp, script), os.X_OK), script)

    def test_files_are_under_usr_and_etc_and_man_pages_compressed(self):
        self.assertIn("/usr/bin/gpulse", self.files)
        self.assertIn("/usr/lib/gpulse/libgpulse-nvml-sim.so", self.files)
        self.assertIn("/usr/share/doc/gpulse/copyright", self.files)
        self.assertIn("/usr/share/doc/gpulse/changelog.gz", self.files)
        self.assertIn("/usr/share/bash-completion/completions/gpulse", self.files)
        for path in self.files:
            self.assertTrue(path.startswith(("/usr/", "/etc/gpulse/")), path)
            self.assertFalse(path.startswith("/usr/local/"), path)
        pages = [p for p in self.files if p.startswith("/usr/share/man/")]
        self.assertIn("/usr/share/man/man1/gpulse.1.gz", pages)
        self.assertTrue(all(p.endswith(".1.gz") for p in pages), pages)

    def test_units_are_installed_not_enabled(self):
        units = [p for p in self.files if p.endswith(".service")]
        self.assertEqual(sorted(os.path.basename(u) for u in units), ["gpulse-agent.service", "gpulse-exporter.service"])
        self.assertFalse([p for p in self.files if p.startswith("/etc/systemd/")], "nothing enables them")
        with tempfile.TemporaryDirectory() as tmp:
            run(["dpkg-deb", "-x", self.deb, tmp]).check_returncode()
            for unit in units:
                with open(tmp + unit, encoding="utf-8") as f:
                    text = f.read()
                self.assertRegex(text, r"(?m)^ExecStart=/usr/bin/gpulse ")
                self.assertIn("/etc/gpulse/default-counters.csv", text)
                self.assertRegex(text, r"(?m)^User=gpulse$")

    def test_changelog_names_the_version(self):
        with gzip.open(os.path.join(BUILD_DIR, "changelog.gz"), "rt", encoding="utf-8") as f:
            self.assertTrue(f.readline().startswith(f"gpulse ({project_version()}) "))

    def test_install_run_remove_purge_in_a_clean_debian_root(self):
        need_root(self)
        base = os.path.join(IMAGE_DIR, "base.tar")
        self.assertTrue(os.path.isfile(base), f"{base} missing: make image builds it")
        with tempfile.TemporaryDirectory(prefix="gpulse-deb-") as tmp:
            root = os.path.join(tmp, "root")
            os.mkdir(root)
            run(["tar", "-C", root, "--numeric-owner", "-xpf", base]).check_returncode()
            self.assertFalse(os.path.exists(os.path.join(root, "usr", "bin", "gpulse")), "the base is clean")
            for f in glob.glob(os.path.join(root, "etc", "dpkg", "dpkg.cfg.d", "*")):
                os.remove(f)  # the image leaves out man pages and docs; this root installs everything
            shutil.copy(self.deb, os.path.join(root, "tmp", "gpulse.deb"))
            p = in_root(root, "dpkg", "-i", "/tmp/gpulse.deb")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

            p = in_root(root, "gpulse", "--version")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(project_version(), p.stdout)
            p = in_root(root, "gpulse", "devices", "--simulate", "1xH200")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("GPU 0: NVIDIA H200", p.stdout)
            self.assertIn("/usr/lib/gpulse/libgpulse-nvml-sim.so", p.stdout)
            self.assertEqual(in_root(root, "getent", "passwd", "gpulse").returncode, 0, "the system user")
            for path in self.files:
                self.assertTrue(os.path.lexists(root + path), path)

            p = in_root(root, "dpkg", "-r", "gpulse")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            left = [path for path in self.files if os.path.lexists(root + path)]
            self.assertEqual(left, ["/etc/gpulse/default-counters.csv", "/etc/gpulse/web.yml"])

            p = in_root(root, "dpkg", "-P", "gpulse")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertFalse(os.path.lexists(os.path.join(root, "etc", "gpulse")))
            self.assertEqual(in_root(root, "dpkg-query", "-W", "gpulse").returncode, 1, "not known to dpkg")


class ContainerImage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        layout = os.path.join(IMAGE_DIR, "oci")
        if not os.path.isfile(os.path.join(layout, "index.json")):
            raise AssertionError(f"{layout} missing: make image builds it")
        cls.layout = layout
        with open(os.path.join(layout, "index.json"), encoding="utf-8") as f:
            index = json.load(f)
        tags = {m.get("annotations", {}).get("org.opencontainers.image.ref.name"): m for m in index["manifests"]}
        cls.tags = sorted(t for t in tags if t)
        cls.manifest = cls.blob(tags["latest"]["digest"])
        cls.config = cls.blob(cls.manifest["config"]["digest"])["config"]

    @classmethod
    def blob(cls, digest):
        with open(os.path.join(cls.layout, "blobs", *digest.split(":")), encoding="utf-8") as f:
            return json.load(f)

    def containerfile(self):
        with open(os.path.join(SOURCE_DIR, "deploy", "container", "Containerfile"), encoding="utf-8") as f:
            lines = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
        return {l.split(None, 1)[0]: l.split(None, 1)[1] for l in lines if l.split(None, 1)[0] in
                ("USER", "EXPOSE", "ENTRYPOINT")}

    def test_tags_are_the_version_and_latest(self):
        self.assertEqual(self.tags, sorted([project_version(), "latest"]))

    def test_config_agrees_with_the_containerfile(self):
        cf = self.containerfile()
        self.assertEqual(self.config["Entrypoint"], json.loads(cf["ENTRYPOINT"]))
        self.assertEqual(sorted(self.config["ExposedPorts"]), [cf["EXPOSE"]])
        self.assertEqual(cf["USER"], "gpulse")
        uid, gid = self.config["User"].split(":")
        self.assertNotEqual(uid, "0", "not root")
        self.assertTrue(uid.isdigit() and gid.isdigit(), "numeric, so runAsNonRoot can check it")

    def test_compressed_size_is_within_target(self):
        size = sum(l["size"] for l in self.manifest["layers"])
        self.assertLessEqual(size, TARGET_COMPRESSED_BYTES, f"{size} bytes compressed")

    def test_the_exporter_runs_from_the_image_and_is_scraped(self):
        need_root(self)
        with tempfile.TemporaryDirectory(prefix="gpulse-image-") as tmp:
            bundle = os.path.join(tmp, "bundle")
            p = run(["umoci", "unpack", "--image", self.layout + ":latest", bundle])
            self.assertEqual(p.returncode, 0, p.stderr)
            root = os.path.join(bundle, "rootfs")
            cmd = " ".join(self.config["Entrypoint"]) + " --simulate 8xH100"
            # The image's own network namespace: its :9400 clashes with nothing; curl is the host's.
            script = (f"ip link set lo up && chroot --userspec={self.config['User']} {root} {cmd} "
                      f"> {tmp}/exporter.log 2>&1 & "
                      "for _ in $(seq 600); do curl -sf http://127.0.0.1:9400/metrics && exit 0; sleep 0.05; done; "
                      f"cat {tmp}/exporter.log >&2; exit 1")
            p = run(["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child",
                     f"--mount-proc={root}/proc", "sh", "-c", script])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r'DCGM_FI_DEV_GPU_TEMP\{gpu="7",')
            self.assertIn('modelName="NVIDIA H100 80GB HBM3"', p.stdout)


if __name__ == "__main__":
    unittest.main()
