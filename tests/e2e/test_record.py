"""`gpulse record` and `gpulse report` end to end: the real binary, the simulator, real child
processes, and a real headless browser for the HTML report."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from gpulse_e2e import NO_DRIVER_NVML, GPULSE, GpulseTestCase, k8s_with_workload, run, validate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def load(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class RecordTest(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-record-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, *args, scenario="4xA40-tp2", expect=0):
        out = os.path.join(self.tmp, "out")
        p = run("record", "--simulate", scenario, "-o", out, *args)
        self.assertEqual(p.returncode, expect, p.stderr)
        return out, p

    def test_4xa40_tp2_writes_three_files_and_shows_idle_devices(self):
        out, p = self.record("--", "sleep", "3")
        for name in ("run.json", "report.txt", "report.html"):
            self.assertTrue(os.path.isfile(os.path.join(out, name)), name)
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        gpu = doc["gpu"]
        self.assertEqual(gpu["device_count"], 4)
        per = {d["device_index"]: d for d in gpu["per_device"]}
        self.assertEqual(sorted(per), [0, 1, 2, 3])
        for i in (0, 1):
            self.assertGreaterEqual(per[i]["utilization_mean_percent"], 50)
            self.assertGreater(per[i]["power_mean_milliwatts"], 100_000)
        for i in (2, 3):
            self.assertLessEqual(per[i]["utilization_max_percent"], 5)
            self.assertLess(per[i]["power_mean_milliwatts"], 60_000)
        self.assertEqual(gpu["sample_count"], sum(d["sample_count"] for d in per.values()))
        self.assertGreater(gpu["sample_count"], 4 * 20, "3 s at 50 ms is about 60 ticks")
        self.assertEqual(gpu["energy_source"], "counter")
        self.assertEqual(doc["run"]["exit_code"], 0)
        self.assertTrue(doc["run"]["simulated"])
        self.assertEqual({s["device_index"] for s in doc["gpu_timeline"]["samples"]}, {0, 1, 2, 3})
        text = load(os.path.join(out, "report.txt"))
        self.assertIn("Per-device GPU usage:", text)
        self.assertEqual(len(re.findall(r"^  GPU \d:  VRAM", text, re.M)), 4)
        self.assertIn("GPU resource usage (", text)
        self.assertIn(", 4 devices)", text)
        self.assertIn(text, p.stdout, "the text report is printed")

    def test_single_gpu_has_no_per_device_block(self):
        out, _ = self.record("--", "sleep", "0.5", scenario="1xH200")
        text = load(os.path.join(out, "report.txt"))
        self.assertIn("GPU resource usage (", text)
        self.assertNotIn("Per-device GPU usage", text)
        self.assertNotIn("devices)", text)
        validate(json.loads(load(os.path.join(out, "run.json"))), "run.schema.json")

    def test_report_rerenders_identical_text_and_json(self):
        out, _ = self.record("--", "sleep", "1")
        p = self.run_ok("report", os.path.join(out, "run.json"))
        self.assertEqual(p.stdout, load(os.path.join(out, "report.txt")))
        p = self.run_ok("report", os.path.join(out, "run.json"), "--format", "json")
        self.assertEqual(json.loads(p.stdout), json.loads(load(os.path.join(out, "run.json"))))
        p = self.run_ok("report", os.path.join(out, "run.json"), "--format", "html")
        self.assertEqual(p.stdout, load(os.path.join(out, "report.html")))

    def test_report_rejects_a_damaged_file(self):
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            f.write('{"schema_version": 1, "run": {"command": 5}}')
        p = run("report", bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.json", p.stderr)
        p = run("report", os.path.join(self.tmp, "missing.json"))
        self.assertEqual(p.returncode, 2)

    def test_exit_code_is_the_commands(self):
        out, _ = self.record("--", "sh", "-c", "exit 3", expect=3)
        doc = json.loads(load(os.path.join(out, "run.json")))
        self.assertEqual(doc["run"]["exit_code"], 3)
        self.assertEqual(doc["run"]["gpulse_exit_code"], 3)

    def test_command_killed_by_signal_gives_128_plus_n(self):
        out, _ = self.record("--", "sh", "-c", "kill -KILL $$", expect=128 + 9)
        doc = json.loads(load(os.path.join(out, "run.json")))
        self.assertEqual(doc["run"]["exit_signal"], 9)
        self.assertIsNone(doc["run"]["exit_code"])

    def test_command_not_found_is_127_and_not_executable_126(self):
        p = run("record", "--simulate", "1xH200", "-o", os.path.join(self.tmp, "o"), "--", "/nonexistent/cmd")
        self.assertEqual(p.returncode, 127)
        self.assertIn("/nonexistent/cmd", p.stderr)
        script = os.path.join(self.tmp, "noexec.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(script, 0o644)
        p = run("record", "--simulate", "1xH200", "-o", os.path.join(self.tmp, "o2"), "--", script)
        self.assertEqual(p.returncode, 126)

    def test_unwritable_output_directory_fails_before_the_command_starts(self):
        marker = os.path.join(self.tmp, "marker")
        blocker = os.path.join(self.tmp, "file")
        with open(blocker, "w", encoding="utf-8") as f:
            f.write("x")
        p = run("record", "--simulate", "1xH200", "-o", os.path.join(blocker, "sub"), "--", "touch", marker)
        self.assertEqual(p.returncode, 125)
        self.assertIn("output directory", p.stderr)
        self.assertFalse(os.path.exists(marker), "the command must not have run")

    def precious(self):
        outside = os.path.join(self.tmp, "outside")
        os.makedirs(outside, exist_ok=True)
        path = os.path.join(outside, "precious.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("precious\n")
        return path

    def test_planted_links_in_the_run_directory_are_refused_before_the_command_starts(self):
        """Issue 13: run.json, report.txt and report.html are never written through a link."""
        precious = self.precious()
        for name in ("run.json", "report.txt", "report.html"):
            with self.subTest(name=name):
                out = os.path.join(self.tmp, "out-" + name)
                os.makedirs(out)
                link = os.path.join(out, name)
                os.symlink(precious, link)
                marker = os.path.join(self.tmp, "ran-" + name)
                p = run("record", "--simulate", "1xH200", "-o", out, "--", "touch", marker)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn(f"{link} is a symbolic link", p.stderr)
                self.assertFalse(os.path.exists(marker), "the command must not have run")
                self.assertEqual(load(precious), "precious\n", "the link's target is unchanged")
                self.assertTrue(os.path.islink(link))

    def test_a_link_planted_while_the_command_runs_is_refused_and_the_other_files_written(self):
        precious = self.precious()
        out = os.path.join(self.tmp, "out")
        link = os.path.join(out, "report.txt")
        p = run("record", "--simulate", "1xH200", "-o", out, "--", "ln", "-s", precious, link)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(f"{link} is a symbolic link", p.stderr)
        self.assertEqual(load(precious), "precious\n")
        validate(json.loads(load(os.path.join(out, "run.json"))), "run.schema.json")
        self.assertTrue(os.path.isfile(os.path.join(out, "report.html")))
        self.assertTrue(os.path.islink(link), "refused, not replaced")

    def test_every_file_is_0644_whatever_the_umask(self):
        out = os.path.join(self.tmp, "out")
        p = subprocess.run([GPULSE, "record", "--simulate", "1xH200", "-o", out, "--", "true"], capture_output=True,
                           text=True, timeout=60, preexec_fn=lambda: os.umask(0o077))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["report.html", "report.txt", "run.json"], "no probe or temp file left")
        for name in os.listdir(out):
            self.assertEqual(oct(os.stat(os.path.join(out, name)).st_mode & 0o777), "0o644", name)

    def test_bad_flags_and_fields_are_rejected(self):
        p = run("record", "--simulate", "1xH200", "-o", self.tmp, "--fields", "DCGM_FI_DEV_XID_BOGUS", "--", "true")
        self.assertEqual(p.returncode, 125)
        self.assertIn("DCGM_FI_DEV_XID_BOGUS", p.stderr)
        p = run("record", "--simulate", "1xH200", "-o", self.tmp, "--fields", "DCGM_FI_DEV_RETIRED_SBE", "--", "true")
        self.assertEqual(p.returncode, 125)
        self.assertIn("cannot be recorded", p.stderr)
        p = run("record", "-i", "0", "--", "true")
        self.assertNotEqual(p.returncode, 0)

    def test_sigterm_is_forwarded_and_the_report_still_written(self):
        out = os.path.join(self.tmp, "out")
        started = os.path.join(self.tmp, "started")
        script = f"trap 'exit 42' TERM; touch {started}; while true; do sleep 0.05; done"
        proc = subprocess.Popen([GPULSE, "record", "--simulate", "4xA40-tp2", "-o", out, "--", "sh", "-c", script],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(600):  # bounded wait for the child to install its trap
                if os.path.exists(started):
                    break
                time.sleep(0.05)
            self.assertTrue(os.path.exists(started))
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 42, stderr)
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        self.assertEqual(doc["run"]["exit_code"], 42)
        self.assertIn("exit code 42", stdout)

    def test_descendants_are_summed_with_the_flag(self):
        cmd = ["sh", "-c", "sleep 1 & sleep 1 & wait"]
        out, _ = self.record("--include-descendants", "--", *cmd, scenario="1xH200")
        doc = json.loads(load(os.path.join(out, "run.json")))
        counts = [s["process_count"] for s in doc["resource_timeline"]["samples"]]
        self.assertEqual(max(counts), 3, counts)
        self.assertTrue(doc["run"]["include_descendants"])
        shutil.rmtree(out)
        out, _ = self.record("--", *cmd, scenario="1xH200")
        doc = json.loads(load(os.path.join(out, "run.json")))
        self.assertEqual({s["process_count"] for s in doc["resource_timeline"]["samples"]}, {1})

    def test_the_header_quotes_the_commands_arguments(self):
        # Issue 40: `sh -c "exit 0"` printed as `sh -c exit 0`.
        out, _ = self.record("--", "sh", "-c", "exit 0", scenario="1xH200")
        text = load(os.path.join(out, "report.txt"))
        self.assertIn("gpulse record: sh -c 'exit 0'\n", text)
        self.assertIn("sh -c &#39;exit 0&#39;", load(os.path.join(out, "report.html")))

    def test_a_sensorless_gpu_says_why_it_has_no_energy(self):
        # Issue 40: it said "fewer than 2 samples" for a GPU that never had a power reading.
        out, _ = self.record("--", "sleep", "0.5", scenario="sensorless")
        text = load(os.path.join(out, "report.txt"))
        self.assertRegex(text, r"GPU 3 +n/a \(the GPU gave no power reading and no energy counter\)")
        self.assertNotIn("fewer than 2 samples", text)

    def test_procfs_root_is_taken_and_checked(self):
        # Issue 40: record refused the --procfs-root that docs/vendors.md documents.
        out, _ = self.record("--procfs-root", self.tmp, "--", "sleep", "0.2", scenario="1xH200")
        self.assertTrue(os.path.isfile(os.path.join(out, "run.json")))
        p = run("record", "--simulate", "1xH200", "--procfs-root", "/nonexistent/procfs",
                "-o", os.path.join(self.tmp, "bad"), "--", "true")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--procfs-root: ", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad")), "nothing written, CMD not run")

    def test_no_gpu_still_records_the_process(self):
        out = os.path.join(self.tmp, "out")
        p = run("record", "--nvml-lib", NO_DRIVER_NVML, "-o", out, "--", "sleep", "0.3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no GPU samples collected", p.stdout)
        self.assertIn("NVIDIA driver not loaded", p.stdout)
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        self.assertIsNone(doc["gpu"], "inferscope writes gpu: null when no GPU sample was taken")
        self.assertGreater(doc["resource"]["sample_count"], 0)
        self.assertIn("NVIDIA driver not loaded", doc["run"]["gpu_unavailable_reason"])

    def test_only_the_gpus_the_workload_sees_are_sampled(self):
        out = os.path.join(self.tmp, "out")
        p = run("record", "--simulate", "4xA40-tp2", "-o", out, "--", "sleep", "0.5",
                env={"CUDA_VISIBLE_DEVICES": "GPU-9743,1"})
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        self.assertEqual([d["index"] for d in doc["devices"]], [3, 1])
        self.assertEqual({s["device_index"] for s in doc["gpu_timeline"]["samples"]}, {1, 3})
        self.assertEqual(doc["run"]["cuda_visible_devices"], "GPU-9743,1")
        self.assertEqual(doc["run"]["device_selection"], "visible: physical GPU 3, 1")
        self.assertTrue(all(d["uuid"].startswith("GPU-") for d in doc["devices"]))

    def test_an_unresolvable_mask_samples_every_gpu_and_says_why(self):
        out = os.path.join(self.tmp, "out")
        p = run("record", "--simulate", "4xA40-tp2", "-o", out, "--", "sleep", "0.3",
                env={"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "SLOWEST_FIRST"})
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(load(os.path.join(out, "run.json")))
        self.assertEqual(len(doc["devices"]), 4)
        self.assertTrue(doc["run"]["device_selection"].startswith("all: CUDA_VISIBLE_DEVICES cannot be resolved"))
        self.assertIn("SLOWEST_FIRST", p.stdout)

    def test_cpu_of_exited_children_is_conserved_like_usr_bin_time(self):
        """The issue's case: the busy child exits after 2 s, then the shell sleeps. /usr/bin/time
        runs as CMD itself, so both measure the same processes in the same run."""
        if not os.path.exists("/usr/bin/time"):
            self.skipTest("/usr/bin/time is not installed")
        timing = os.path.join(self.tmp, "time.txt")
        out, _ = self.record("--include-descendants", "-i", "100", "--", "/usr/bin/time", "-o", timing, "-f",
                             "%U %S", "sh", "-c", 'timeout 2 sh -c "while :; do :; done"; sleep 1', scenario="1xH200")
        user, system = (float(x) for x in load(timing).split())
        doc = json.loads(load(os.path.join(out, "run.json")))
        hz = doc["clock_ticks_per_second"]
        last = doc["resource_timeline"]["samples"][-1]
        gpulse_s = (last["cpu_user_jiffies"] + last["cpu_system_jiffies"]) / hz
        self.assertGreater(user + system, 0.2, "the loop ran")
        # One clock tick per figure (user, system) plus /usr/bin/time's own CPU, at most one more.
        self.assertLessEqual(abs(gpulse_s - (user + system)), 3 / hz, (gpulse_s, user, system))
        self.assertAlmostEqual(doc["resource"]["cpu_seconds"], gpulse_s)
        jiffies = [s["cpu_user_jiffies"] + s["cpu_system_jiffies"] for s in doc["resource_timeline"]["samples"]]
        self.assertEqual(jiffies, sorted(jiffies), "CPU time never goes backwards when children exit")
        self.assertGreater(doc["resource"]["cpu_mean_percent"], 100 * (user + system) / doc["run"]["duration_ns"] * 1e9 - 5)

    def test_a_coarse_interval_still_brackets_the_energy_window(self):
        out, _ = self.record("-i", "5000", "--", "sleep", "1", scenario="1xH200")
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        samples = doc["gpu_timeline"]["samples"]
        self.assertEqual(len(samples), 2, "one at start, one at exit")
        # The exit sample closes the run (both stamps are the recorder's own): it is at most the
        # end's bookkeeping before the run's end, and after most of `sleep 1`. Not ">= 1 s": the
        # recorder's clock starts around the command's exec, on either side of it (issue 43's run).
        self.assertGreater(samples[-1]["elapsed_ns"], doc["run"]["duration_ns"] - 100_000_000)
        self.assertGreater(samples[-1]["elapsed_ns"], 900_000_000)
        self.assertIsInstance(doc["gpu"]["energy_millijoules"], int)
        self.assertGreater(doc["gpu"]["energy_millijoules"], 0)
        self.assertEqual(doc["gpu"]["energy_source"], "counter")
        self.assertEqual(doc["gpu_timeline"]["energy"],
                         [{"device_index": 0, "energy_millijoules": doc["gpu"]["energy_millijoules"], "source": "counter"}])
        self.assertEqual(len(doc["resource_timeline"]["samples"]), 2)

    def test_counter_and_integrated_energy_agree_on_hopper_from_the_first_interval(self):
        # Issue 40: the first read primed GPM with a 100 ms sleep after the sample's stamp, so the
        # counter missed the first 100 ms (+13% integrated over 1 s) and a 100 ms tick was skipped.
        out, _ = self.record("-i", "100", "--", "sleep", "1", scenario="1xH200")
        doc = json.loads(load(os.path.join(out, "run.json")))
        dev = doc["gpu"]["per_device"][0]
        self.assertEqual(dev["energy_source"], "counter")
        self.assertLess(abs(dev["energy_relative_difference"]), 0.01, dev)
        # Issue 44: each figure carries its bound, and counter and integral agree within them.
        self.assertEqual(dev["energy_bound_millijoules"], dev["energy_counter_bound_millijoules"])
        self.assertGreater(dev["energy_bound_millijoules"], 0)
        self.assertGreater(dev["energy_integrated_bound_millijoules"], 0)
        self.assertFalse(dev["energy_disagreement"])
        self.assertEqual(doc["gpu"]["energy_bound_millijoules"], dev["energy_bound_millijoules"])
        self.assertRegex(load(os.path.join(out, "report.txt")), r"GPU 0 +[0-9.]+ J ± [0-9.]+ J \(counter")
        first = doc["gpu_timeline"]["samples"][0]
        self.assertLess(first["elapsed_ns"], 100_000_000, "the first reading is stamped when it was read")
        self.assertIn("power_draw_milliwatts", first)
        self.assertNotIn("sm_active", first, "a GPM ratio needs two samples: absent at the first")
        self.assertIn("sm_active", doc["gpu_timeline"]["samples"][-1])
        self.assertEqual(doc["gpu_timeline"].get("absent", []), [], "absent at the first read is not a failure")

    def test_text_report_separates_sections_and_warns_about_a_wrapper(self):
        out, p = self.record("--", "sleep", "0.4", scenario="1xH200")
        text = load(os.path.join(out, "report.txt"))
        blocks = text.split("\n\n")
        self.assertTrue(blocks[0].startswith("gpulse record: sleep 0.4"))
        self.assertTrue(blocks[1].startswith("Process resource usage"))
        self.assertTrue(blocks[2].startswith("GPU resource usage"))
        self.assertTrue(any(b.startswith("Energy (source: counter)") for b in blocks))
        self.assertIn("looks like a wrapper", blocks[1])
        self.assertIn("--include-descendants", blocks[1])
        doc = json.loads(load(os.path.join(out, "run.json")))
        self.assertIn("pid %d," % doc["pid"], blocks[0])
        for key in ("pid", "include_descendants", "sample_period_ms", "duration_secs", "reference_instant_unix_ns"):
            self.assertIn(key, doc)
        self.assertEqual(doc["sample_period_ms"], 50)
        self.assertEqual(doc["duration_secs"], 1, "0.4 s rounds up to a whole second")
        busy, _ = self.record("--force", "--", "sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
                              scenario="1xH200")
        self.assertNotIn("looks like a wrapper", load(os.path.join(busy, "report.txt")), "it used CPU")

    def test_sm_means_agree_between_blocks(self):
        out, _ = self.record("--", "sleep", "1", scenario="k8s-8xH100")
        doc = json.loads(load(os.path.join(out, "run.json")))
        text = load(os.path.join(out, "report.txt"))
        for d in doc["gpu"]["per_device"]:
            mean = d["utilization_mean_percent"]
            self.assertRegex(text, r"GPU %d:  VRAM [^|]+\| SM mean %d%%" % (d["device_index"], mean))
        stats = re.findall(r"SM utilization     (\d+)/(\d+)/(\d+)%", text)
        means = [d["utilization_mean_percent"] for d in doc["gpu"]["per_device"]]
        self.assertEqual([int(m) for _, m, _ in stats], means, "job statistics print the same floor mean")

    def test_job_statistics_list_only_the_workloads_processes(self):
        scenario = k8s_with_workload(self.tmp)
        out, p = self.record("--include-descendants", "--", "sh", "-c", "sleep 2.5; true", scenario=scenario)
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        other_pods = {41001, 41002, 41003, 41004, 42001, 42002, 43001, 45001, 45002, 46001, 46501, 47001, 47002}
        procs = [q for s in doc["job_statistics"] for q in s["processes"]]
        self.assertTrue(procs, "the workload's processes on GPU 0 are listed")
        self.assertFalse({q["pid"] for q in procs} & other_pods, "no other pod's process is the job's")
        self.assertEqual({q["device_index"] for q in procs}, {0})
        pids = {q["pid"]: q for q in procs}
        self.assertIn(doc["pid"], pids, "the workload's own PID")
        self.assertEqual(pids[doc["pid"]]["name"], "sh")
        self.assertIn("sleep", {q["name"] for q in procs}, "its descendant, with its name")
        for q in procs:
            self.assertEqual(q["max_memory_bytes"], 512 << 20)
            self.assertEqual(q["sm_utilization_mean_percent"], 40)
            self.assertLessEqual(q["first_seen_ns"], q["last_seen_ns"])
        self.assertRegex(load(os.path.join(out, "report.txt")), r"Process \d+ +sh +peak memory 512 MiB  SM mean 40%")

    def test_job_statistics_without_descendants_list_the_pid_alone(self):
        scenario = k8s_with_workload(self.tmp)
        out, _ = self.record("--", "sh", "-c", "sleep 1.2; true", scenario=scenario)
        doc = json.loads(load(os.path.join(out, "run.json")))
        procs = [q for s in doc["job_statistics"] for q in s["processes"]]
        self.assertEqual([q["pid"] for q in procs], [doc["pid"]])

    def test_faults_scenario_records_xids_lost_device_and_no_zero_fill(self):
        out, _ = self.record("--", "sleep", "2.5", scenario="faults")
        doc = json.loads(load(os.path.join(out, "run.json")))
        validate(doc, "run.schema.json")
        self.assertTrue(doc["xid_events"], "the faults scenario injects an XID")
        counts = {d["device_index"]: d["sample_count"] for d in doc["gpu"]["per_device"]}
        self.assertNotIn(1, counts, "the no-permission device is never sampled")
        self.assertLess(min(counts.values()), max(counts.values()), "the lost GPU stops contributing")
        stats = {s["device_index"]: s for s in doc["job_statistics"]}
        xid_devices = {x["device_index"] for x in doc["xid_events"]}
        for dev in xid_devices:
            self.assertTrue(stats[dev]["xid_errors"])


@unittest.skipIf(CHROMIUM is None, "chromium is not installed (scripts/install-deps.sh installs it)")
class HtmlReportBrowserTest(GpulseTestCase):
    def chromium(self, path):
        p = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                            "--v=0", "--user-data-dir=" + os.path.join(os.path.dirname(path), "chrome-profile"),
                            "--dump-dom", "file://" + path], capture_output=True, text=True, timeout=120)
        console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
        return p.stdout, console

    def test_console_errors_would_be_caught(self):
        with tempfile.TemporaryDirectory() as d:
            page = os.path.join(d, "broken.html")
            with open(page, "w", encoding="utf-8") as f:
                f.write("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
            _, console = self.chromium(page)
            self.assertTrue(console, "the console check must be able to fail")

    def test_report_loads_clean_with_one_plot_group_per_device(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            self.run_ok("record", "--simulate", "4xA40-tp2", "-o", out, "--", "sleep", "1")
            dom, console = self.chromium(os.path.join(out, "report.html"))
            self.assertEqual(console, [])
            self.assertIn('data-ready="1"', dom, "the page finished loading")
            self.assertIn('data-plot-groups="4"', dom)
            for dev in range(4):
                group = re.search(rf'<section class="plot-group device" data-device="{dev}">(.*?)</section>', dom, re.S)
                self.assertIsNotNone(group, dev)
                self.assertEqual(group.group(1).count('<svg class="plot"'), 4)
                self.assertGreaterEqual(group.group(1).count("<polyline"), 4)
            self.assertIn('class="process"', dom)
            self.assertNotIn("http://", load(os.path.join(out, "report.html")).replace("http://www.w3.org", ""))


if __name__ == "__main__":
    unittest.main()
