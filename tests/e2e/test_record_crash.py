"""`gpulse record` when things go wrong: the recorder SIGKILLed mid-run (recovered from its journal
by `gpulse report`), a full file system, an output directory that holds an earlier run or is a
symbolic link, a command that never starts, bad flags, a missing simulator library."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from gpulse_e2e import GPULSE, GpulseTestCase, run, validate


def load(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def journal_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().splitlines()]


class RecordCrashTest(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-crash-")
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *args):
        return subprocess.Popen([GPULSE, "record", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_for_journal(self, samples, timeout=30):
        """Until the journal holds `samples` flushed GPU samples (bounded; no timing assertion)."""
        path = os.path.join(self.out, "run.journal")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    if f.read().count('{"gpu":') >= samples:
                        return path
            time.sleep(0.05)
        self.fail("the journal never reached %d samples" % samples)

    def test_a_sigkilled_run_is_recovered_with_every_flushed_sample(self):
        p = self.start("--simulate", "4xA40-tp2", "-o", self.out, "--", "sleep", "30")
        try:
            path = self.wait_for_journal(4 * 30)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
            p.communicate()
        self.assertFalse(os.path.exists(os.path.join(self.out, "run.json")), "the recorder died before the end")
        flushed = [l for l in journal_lines(path) if "gpu" in l]
        resource = [l for l in journal_lines(path) if "resource" in l]
        self.assertGreaterEqual(len(flushed), 120)
        rec = run("report", self.out, "--format", "json")
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertIn("recovered from", rec.stderr)
        doc = json.loads(rec.stdout)
        validate(doc, "run.schema.json")
        self.assertFalse(doc["run"]["complete"])
        self.assertIn("stopped before the run ended", doc["run"]["incomplete_reason"])
        self.assertEqual(len(doc["gpu_timeline"]["samples"]), len(flushed), "every flushed sample")
        self.assertEqual(doc["gpu_timeline"]["samples"], [l["gpu"] for l in flushed])
        self.assertEqual(len(doc["resource_timeline"]["samples"]), len(resource))
        self.assertIsNone(doc["run"]["exit_code"])
        self.assertGreater(doc["gpu"]["energy_millijoules"], 0)
        text = run("report", self.out)
        self.assertIn("INCOMPLETE: recovered from", text.stdout)
        wrote = run("report", self.out, "--write")
        self.assertEqual(wrote.returncode, 0, wrote.stderr)
        for name in ("run.json", "report.txt", "report.html"):
            self.assertTrue(os.path.isfile(os.path.join(self.out, name)), name)
        again = run("report", self.out, "--write")
        self.assertNotEqual(again.returncode, 0, "a run.json is never replaced")
        self.assertFalse(json.loads(load(os.path.join(self.out, "run.json")))["run"]["complete"])

    def test_run_json_copied_from_the_journal_is_the_formatted_one_byte_for_byte(self):
        """At the end of a run the sample objects are copied from the journal instead of being
        formatted again; `gpulse report --format json` formats them from the samples: the same bytes."""
        for scenario, args in (("mig-a100", ["--include-descendants"]), ("faults", []), ("sensorless", [])):
            out = os.path.join(self.tmp, scenario)
            self.run_ok("record", "--simulate", scenario, "-o", out, *args, "--", "sh", "-c", "sleep 0.6")
            again = run("report", os.path.join(out, "run.json"), "--format", "json")
            self.assertEqual(again.returncode, 0, again.stderr)
            self.assertEqual(load(os.path.join(out, "run.json")), again.stdout, scenario)

    def test_a_torn_last_line_is_dropped_and_a_finished_journal_is_complete(self):
        out, _ = self.out, self.run_ok("record", "--simulate", "1xH200", "-o", self.out, "--", "sleep", "0.3")
        # A finished run removes its journal; rebuild one from the run.json's samples to check the
        # reader against a journal whose last line was cut mid-write.
        self.assertFalse(os.path.exists(os.path.join(out, "run.journal")), "run.json supersedes the journal")
        doc = json.loads(load(os.path.join(out, "run.json")))
        lines = [json.dumps({"gpulse_journal": 1, "schema_version": 3, "run": doc["run"], "devices": doc["devices"],
                             "entities": doc["entities"], "clock_ticks_per_second": doc["clock_ticks_per_second"]})]
        lines += [json.dumps({"gpu": s}) for s in doc["gpu_timeline"]["samples"]]
        journal = os.path.join(self.tmp, "run.journal")
        with open(journal, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n" + '{"gpu":{"elapsed_ns":9')
        rec = run("report", journal, "--format", "json")
        self.assertEqual(rec.returncode, 0, rec.stderr)
        got = json.loads(rec.stdout)
        self.assertEqual(got["gpu_timeline"]["samples"], doc["gpu_timeline"]["samples"])
        self.assertIn("torn last line was dropped", got["run"]["incomplete_reason"])
        with open(journal, "a", encoding="utf-8") as f:
            f.write("\n" + json.dumps({"end": doc["run"]}) + "\n")
        broken = run("report", journal)
        self.assertNotEqual(broken.returncode, 0, "a complete line that is not a record is an error")
        self.assertIn("line %d" % (len(lines) + 1), broken.stderr)
        with open(journal, "w", encoding="utf-8") as f:
            f.write("\n".join(lines + [json.dumps({"end": doc["run"]})]) + "\n")
        done = json.loads(run("report", journal, "--format", "json").stdout)
        self.assertTrue(done["run"]["complete"])
        self.assertEqual(done["run"]["exit_code"], 0)

    def test_a_full_file_system_exits_125_without_a_false_wrote_line(self):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        copy = os.path.join(self.tmp, "copy")
        script = (
            'mount -t tmpfs -o size=96k tmpfs "$1" || exit 200\n'
            '"$2" record --simulate 4xA40-tp2 -i 10 -o "$1/out" -- sleep 1.5 > "$3/stdout" 2> "$3/stderr"\n'
            'echo $? > "$3/rc"\n'
            'cp -a "$1/out" "$3/out"\n')
        os.mkdir(copy)
        try:
            p = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
                                mnt, os.path.abspath(GPULSE), copy], capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            self.skipTest("unshare(1) is not installed")
        if p.returncode == 200 or not os.path.exists(os.path.join(copy, "rc")):
            self.skipTest("cannot mount a tmpfs in a user namespace here: " + p.stderr.strip())
        rc = int(load(os.path.join(copy, "rc")))
        stdout, stderr = load(os.path.join(copy, "stdout")), load(os.path.join(copy, "stderr"))
        self.assertEqual(rc, 125, stderr)
        self.assertNotIn("Wrote", stdout)
        self.assertIn("No space left on device", stderr)
        self.assertRegex(stderr, r"(run\.json|run\.journal|report\.txt|report\.html)")
        for name in os.listdir(os.path.join(copy, "out")):
            path = os.path.join(copy, "out", name)
            self.assertFalse(name.startswith(".") and name != ".gpulse-write-test", "temp file left: " + name)
            if name == "run.json":
                json.loads(load(path))  # whole, or not there at all
            if name == "report.html":
                self.assertTrue(load(path).rstrip().endswith("</html>"), "no truncated report.html")
        self.assertIn("run.journal", os.listdir(os.path.join(copy, "out")), "what was flushed stays")

    def test_an_earlier_run_is_refused_unless_force(self):
        self.run_ok("record", "--simulate", "1xH200", "-o", self.out, "--", "true")
        first = load(os.path.join(self.out, "run.json"))
        p = run("record", "--simulate", "1xH200", "-o", self.out, "--", "true")
        self.assertEqual(p.returncode, 125)
        self.assertIn("holds an earlier run (run.json)", p.stderr)
        self.assertIn("--force", p.stderr)
        self.assertEqual(load(os.path.join(self.out, "run.json")), first, "nothing of it was touched")
        self.run_ok("record", "--simulate", "1xH200", "-o", self.out, "--force", "--", "true")
        self.assertNotEqual(load(os.path.join(self.out, "run.json")), first)
        # Through a symbolic link to the same directory: still refused, and the link is named.
        link = os.path.join(self.tmp, "link")
        os.symlink(self.out, link)
        p = run("record", "--simulate", "1xH200", "-o", link, "--", "true")
        self.assertEqual(p.returncode, 125)
        self.assertIn("is a symbolic link to", p.stderr)
        self.assertIn("holds an earlier run", p.stderr)

    def test_a_symlinked_output_directory_is_said_out_loud(self):
        target = os.path.join(self.tmp, "target")
        os.mkdir(target)
        link = os.path.join(self.tmp, "link")
        os.symlink(target, link)
        p = self.run_ok("record", "--simulate", "1xH200", "-o", link, "--", "true")
        self.assertIn("output directory %s is a symbolic link to %s" % (link, target), p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(target, "run.json")))

    def test_a_command_that_never_starts_leaves_no_directory(self):
        p = run("record", "--simulate", "1xH200", "-o", self.out, "--", "/nonexistent/program")
        self.assertEqual(p.returncode, 127)
        self.assertFalse(os.path.exists(self.out), "the directory it made is removed")
        os.mkdir(self.out)
        p = run("record", "--simulate", "1xH200", "-o", self.out, "--", "/nonexistent/program")
        self.assertEqual(p.returncode, 127)
        self.assertEqual(os.listdir(self.out), [], "a directory the user made stays, empty")

    def test_bad_flags_exit_125(self):
        for args in (["--interval", "abc"], ["--no-such-flag"], ["-i", "0"]):
            p = run("record", *args, "-o", self.out, "--", "true")
            self.assertEqual(p.returncode, 125, (args, p.stderr))
            self.assertFalse(os.path.exists(self.out))

    def test_a_missing_simulator_library_says_so(self):
        p = run("record", "--simulate", "1xH200", "-o", self.out, "--", "true",
                env={"GPULSE_SIM_LIBRARY": "/nonexistent/libgpulse_sim.so"})
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("NVML simulator library cannot be loaded", p.stderr)
        self.assertIn("/nonexistent/libgpulse_sim.so", p.stderr)
        self.assertNotIn("NVML library not found", p.stderr)


if __name__ == "__main__":
    unittest.main()
