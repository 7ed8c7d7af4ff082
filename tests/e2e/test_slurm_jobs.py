"""Slurm attribution (issue 20 item 3): GPU processes in slurmstepd's job cgroups carry their job id
and step in `gpulse ps`, and `gpulse exporter --slurm-jobs` labels each GPU's series hpc_job, from the fixture procfs tree tests/testdata/procfs/slurm-8xH100 (cgroup v2
slurmstepd.scope and cgroup v1 /slurm/uid_U/job_N forms) on the 8xH100 scenario. Run with Debian's
/usr/bin/python3."""
import json
import os
import unittest

from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, validate

PROCFS = os.path.join(SOURCE_DIR, "tests", "testdata", "procfs", "slurm-8xH100")


class SlurmPs(GpulseTestCase):
    def test_processes_carry_their_job_and_step(self):
        doc = json.loads(self.run_ok("ps", "--simulate", "8xH100", "--procfs-root", PROCFS, "--json").stdout)
        validate(doc, "ps.schema.json")
        jobs = {r["pid"]: r["slurm_job"] for r in doc["processes"]}
        for pid in (52001, 52002, 52003, 52004):
            self.assertEqual(jobs[pid], {"job_id": "4242", "step": "0", "uid": None})
        self.assertEqual(jobs[52005], {"job_id": "4243", "step": "batch", "uid": None})
        self.assertEqual(jobs[52007], {"job_id": "4300", "step": "0", "uid": 1002}, "cgroup v1")
        self.assertIsNone(jobs[52008], "a login session is no job")
        self.assertTrue(all(r["pod"] is None for r in doc["processes"]))

    def test_the_table_shows_the_job(self):
        out = self.run_ok("ps", "--simulate", "8xH100", "--procfs-root", PROCFS).stdout
        rows = {line.split()[2]: line for line in out.splitlines()[2:] if line.strip() and line.split()[0].isdigit()}
        self.assertIn("slurm job 4242.0", rows["52001"])
        self.assertIn("slurm job 4243.batch", rows["52006"])
        self.assertIn("slurm job 4300.0", rows["52007"])
        self.assertNotIn("slurm job", rows["52008"])


class SlurmExporter(GpulseTestCase):
    def test_series_carry_the_jobs_using_the_gpu(self):
        from exporter_e2e import parse_families
        p = self.run_ok("exporter", "--simulate", "8xH100", "--procfs-root", PROCFS, "--slurm-jobs", "--once")
        temps = parse_families(p.stdout)["DCGM_FI_DEV_GPU_TEMP"]
        jobs = {int(l["gpu"]): l.get("hpc_job") for l, _ in temps}
        self.assertEqual(jobs, {0: "4242", 1: "4242", 2: "4242", 3: "4242", 4: "4243", 5: "4243", 6: "4300",
                                7: None})
        self.assertEqual(len(temps), 8, "one series per GPU: one job each here")

    def test_slurm_and_kubernetes_modes_exclude_each_other(self):
        p = run("exporter", "--simulate", "8xH100", "--slurm-jobs", "-k", "--once")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--slurm-jobs", p.stderr)

    def test_without_the_flag_no_job_label(self):
        p = self.run_ok("exporter", "--simulate", "8xH100", "--procfs-root", PROCFS, "--once")
        self.assertNotIn("hpc_job", p.stdout)


if __name__ == "__main__":
    unittest.main()
