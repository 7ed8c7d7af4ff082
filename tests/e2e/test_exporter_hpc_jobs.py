"""dcgm-exporter's HPC job mapping directory in `gpulse exporter` (issue 46 item 2):
--hpc-job-mapping-dir DIR / $DCGM_HPC_JOB_MAPPING_DIR. A Slurm prolog writes one file per GPU (`N`)
or MIG GPU instance (`N.GI`) holding the job ids using it; every series of that GPU goes out once
per job with hpc_job="JOB"; the directory is read again at every device read, so rewritten and
deleted files show in the next scrape. Run with Debian's /usr/bin/python3."""
import os
import signal
import tempfile
import unittest

from agent_e2e import Agent
from exporter_e2e import Exporter, parse_families
from gpulse_e2e import GpulseTestCase, run

POWER = "DCGM_FI_DEV_POWER_USAGE"
# gpulse_hpc_job_mapping_failures_total: the client library's parser names a counter's family without _total.
FB_USED = "DCGM_FI_DEV_FB_USED"


def prolog(directory, name, jobs):
    """What a Slurm prolog does: write the file whole, then rename it into place (never a half file)."""
    tmp = os.path.join(directory, "." + name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(jobs)
    os.rename(tmp, os.path.join(directory, name))


def jobs_by(families, family, *keys):
    """{(label values of keys...): sorted hpc_job values ('-' for a series without the label)}."""
    out = {}
    for labels, _ in families[family]:
        key = tuple(labels.get(k, "") for k in keys)
        out.setdefault(key, []).append(labels.get("hpc_job", "-"))
    return {k: sorted(v) for k, v in out.items()}


class MappingDirectory(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpulse-hpc-")
        self.dir = os.path.join(self.tmp.name, "jobs")
        os.mkdir(self.dir)

    def tearDown(self):
        self.tmp.cleanup()

    def scrape(self, exporter):
        status, _, body = exporter.get("/metrics")
        self.assertEqual(status, 200)
        return parse_families(body.decode("utf-8"))

    def test_prolog_files_label_series_and_labels_follow_the_files(self):
        prolog(self.dir, "0", "1001\n")
        prolog(self.dir, "3", "2001\n2002\n")
        prolog(self.dir, "5", 'odd"job\\id\n')
        # Names that match no GPU's label, a subdirectory under a GPU's name: ignored.
        for name in ("00", "03", "1.0", "gpu1", "2 "):
            prolog(self.dir, name, "999\n")
        os.mkdir(os.path.join(self.dir, "7"))
        with Exporter("--simulate", "8xH100", "--hostname", "h", "--min-refresh-ms", "0",
                      "--hpc-job-mapping-dir", self.dir) as e:
            f = self.scrape(e)
            by_gpu = jobs_by(f, POWER, "gpu")
            self.assertEqual(by_gpu, {("0",): ["1001"], ("1",): ["-"], ("2",): ["-"], ("3",): ["2001", "2002"],
                                      ("4",): ["-"], ("5",): ['odd"job\\id'], ("6",): ["-"], ("7",): ["-"]})
            # The copies are identical but for hpc_job, which comes after dcgm-exporter's labels.
            gpu3 = [labels for labels, _ in f[POWER] if labels["gpu"] == "3"]
            self.assertEqual([{k: v for k, v in l.items() if k != "hpc_job"} for l in gpu3][0],
                             [{k: v for k, v in l.items() if k != "hpc_job"} for l in gpu3][1])
            self.assertEqual(list(gpu3[0])[-1], "hpc_job")
            # gpulse's own families keep one series per GPU.
            self.assertTrue(all("hpc_job" not in labels for labels, _ in f["gpulse_device_info"]))
            self.assertEqual(f["gpulse_hpc_job_mapping_dir_present"][0][1], 1)
            self.assertEqual(f["gpulse_hpc_job_mapping_failures"][0][1], 0)

            # The epilog of job 1001 and the prolog of 1005 on GPU 0; job 2001 leaves GPU 3 and
            # 2002 stays; GPU 5's job ends and its file goes; GPU 6 gets a file with the empty job.
            prolog(self.dir, "0", "1005\r\n")
            prolog(self.dir, "3", "2002\n")
            os.unlink(os.path.join(self.dir, "5"))
            prolog(self.dir, "6", "\n")
            by_gpu = jobs_by(self.scrape(e), POWER, "gpu")
            self.assertEqual(by_gpu[("0",)], ["1005"])
            self.assertEqual(by_gpu[("3",)], ["2002"])
            self.assertEqual(by_gpu[("5",)], ["-"])
            self.assertEqual(by_gpu[("6",)], [""], 'an empty line is the job ""')

            # An emptied file and a removed one: unlabelled again.
            prolog(self.dir, "0", "")
            os.unlink(os.path.join(self.dir, "3"))
            by_gpu = jobs_by(self.scrape(e), POWER, "gpu")
            self.assertEqual(by_gpu[("0",)], ["-"])
            self.assertEqual(by_gpu[("3",)], ["-"])

    def test_mig_instances_have_files_of_their_own(self):
        prolog(self.dir, "0", "500\n")          # GPU 0 (MIG enabled): its own series only
        prolog(self.dir, "0.2", "601\n602\n")   # GPU instance 2 of GPU 0
        prolog(self.dir, "0.9", "")             # empty: unlabelled
        prolog(self.dir, "0.03", "999\n")       # not GPU_I_ID="3"
        prolog(self.dir, "1", "700\n")
        p = run("exporter", "--simulate", "mig-a100", "--once", "--hostname", "h",
                env={"DCGM_HPC_JOB_MAPPING_DIR": self.dir})
        self.assertEqual(p.returncode, 0, p.stderr)
        f = parse_families(p.stdout)
        self.assertEqual(jobs_by(f, POWER, "gpu"), {("0",): ["500"], ("1",): ["700"]})
        self.assertEqual(jobs_by(f, FB_USED, "gpu", "GPU_I_ID"),
                         {("0", "2"): ["601", "602"], ("0", "3"): ["-"], ("0", "9"): ["-"], ("0", "10"): ["-"],
                          ("1", ""): ["700"]})

        # On a server, the instance's labels follow its file too.
        with Exporter("--simulate", "mig-a100", "--min-refresh-ms", "0", "--hpc-job-mapping-dir", self.dir) as e:
            prolog(self.dir, "0.10", "800\n")
            os.unlink(os.path.join(self.dir, "0.2"))
            fb = jobs_by(self.scrape(e), FB_USED, "gpu", "GPU_I_ID")
            self.assertEqual(fb[("0", "2")], ["-"])
            self.assertEqual(fb[("0", "10")], ["800"])

    def test_the_variable_names_the_directory_and_the_flag_wins(self):
        prolog(self.dir, "2", "42\n")
        with Exporter("--simulate", "8xH100", "--min-refresh-ms", "0",
                      env={"DCGM_HPC_JOB_MAPPING_DIR": self.dir}) as e:
            self.assertEqual(jobs_by(self.scrape(e), POWER, "gpu")[("2",)], ["42"])
        other = os.path.join(self.tmp.name, "other")
        os.mkdir(other)
        prolog(other, "2", "43\n")
        p = run("exporter", "--simulate", "8xH100", "--once", "--hpc-job-mapping-dir", other,
                env={"DCGM_HPC_JOB_MAPPING_DIR": self.dir})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(jobs_by(parse_families(p.stdout), POWER, "gpu")[("2",)], ["43"])
        # dcgm-exporter's default (empty): off, no mapping families.
        p = run("exporter", "--simulate", "8xH100", "--once", env={"DCGM_HPC_JOB_MAPPING_DIR": ""})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("hpc_job", p.stdout)

    def test_a_missing_directory_is_said_once_and_picked_up_when_it_comes(self):
        later = os.path.join(self.tmp.name, "later")
        with Exporter("--simulate", "8xH100", "--min-refresh-ms", "0", "--hpc-job-mapping-dir", later) as e:
            said = "".join(e.stderr_lines)
            self.assertIn(later, said)
            self.assertIn("no such directory", said)
            f = self.scrape(e)
            self.assertEqual(f["gpulse_hpc_job_mapping_dir_present"][0][1], 0)
            self.assertTrue(all("hpc_job" not in labels for labels, _ in f[POWER]))
            os.mkdir(later)
            prolog(later, "1", "77\n")
            f = self.scrape(e)
            self.assertEqual(f["gpulse_hpc_job_mapping_dir_present"][0][1], 1)
            self.assertEqual(jobs_by(f, POWER, "gpu")[("1",)], ["77"])
            os.unlink(os.path.join(later, "1"))
            os.rmdir(later)
            f = self.scrape(e)
            self.assertEqual(f["gpulse_hpc_job_mapping_dir_present"][0][1], 0)
            self.assertTrue(all("hpc_job" not in labels for labels, _ in f[POWER]))

    def test_a_path_that_is_not_a_directory_and_slurm_jobs_too_are_refused(self):
        path = os.path.join(self.tmp.name, "file")
        with open(path, "w") as f:
            f.write("0\n")
        for args, env in ((["--hpc-job-mapping-dir", path], None), ([], {"DCGM_HPC_JOB_MAPPING_DIR": path})):
            with self.subTest(args=args, env=env):
                p = run("exporter", "--simulate", "8xH100", "--once", *args, env=env)
                self.assertEqual(p.returncode, 2, p.stdout[:200])
                self.assertIn(path, p.stderr)
                self.assertIn("not a directory", p.stderr)
                self.assertEqual(p.stdout, "")
        p = run("exporter", "--simulate", "8xH100", "--once", "--slurm-jobs", "--hpc-job-mapping-dir", self.dir)
        self.assertEqual(p.returncode, 2)
        self.assertIn("give one", p.stderr)

    def test_a_file_that_cannot_be_used_leaves_its_gpu_unlabelled_and_is_counted(self):
        os.mkfifo(os.path.join(self.dir, "1"))                  # would block a reader
        prolog(self.dir, "2", "x" * (64 * 1024 + 1))             # over the size bound
        prolog(self.dir, "3", "".join(f"{i}\n" for i in range(129)))  # over the jobs bound
        prolog(self.dir, "4", "44\n")
        e = Exporter("--simulate", "8xH100", "--min-refresh-ms", "0", "--hpc-job-mapping-dir", self.dir)
        try:
            for n in range(1, 4):
                f = self.scrape(e)
                by_gpu = jobs_by(f, POWER, "gpu")
                self.assertEqual([by_gpu[(g,)] for g in "1234"], [["-"], ["-"], ["-"], ["44"]])
                self.assertEqual(f["gpulse_hpc_job_mapping_failures"][0][1], 3 * n)
            status, _, _ = e.get("/health")
            self.assertEqual(status, 200, "a mapping file is no GPU's health")
        finally:
            e.signal(signal.SIGTERM)
            rest = e.proc.stderr.read()
            self.assertEqual(e.stop(), 0)
        said = "".join(e.stderr_lines) + rest
        for name, why in (("1", "not a regular file"), ("2", "larger than 65536 bytes"), ("3", "more than 128 jobs")):
            lines = [l for l in said.splitlines() if f"{self.dir}/{name}:" in l]
            self.assertEqual(len(lines), 1, f"said once: {lines}")
            self.assertIn(why, lines[0])

    def test_help_lists_it_among_the_honoured_options(self):
        text = self.run_ok("exporter", "--help").stdout
        honoured, _, refused = text.partition("dcgm-exporter options gpulse does not implement")
        self.assertIn("--hpc-job-mapping-dir", honoured)
        self.assertIn("DCGM_HPC_JOB_MAPPING_DIR", honoured)
        self.assertNotIn("--hpc-job-mapping-dir", refused)
        self.assertIn("--hpc-job-mapping-dir", self.run_ok("agent", "--help").stdout)

    def test_the_agent_takes_it_too(self):
        prolog(self.dir, "4", "9001\n")
        agent = Agent(self.tmp.name, "8xH100", args=["--hpc-job-mapping-dir", self.dir, "--min-refresh-ms", "0"])
        try:
            f = parse_families(agent.tcp_request("GET", "/metrics").text)
            self.assertEqual(jobs_by(f, POWER, "gpu")[("4",)], ["9001"])
            prolog(self.dir, "4", "9002\n")
            f = parse_families(agent.tcp_request("GET", "/metrics").text)
            self.assertEqual(jobs_by(f, POWER, "gpu")[("4",)], ["9002"])
        finally:
            agent.stop()


if __name__ == "__main__":
    unittest.main()
