"""Slurm attribution (issue 20 item 3): GPU processes in slurmstepd's job cgroups carry their job id
and step in `gpulse ps`, and `gpulse exporter --slurm-jobs` labels each GPU's series hpc_job, from the fixture procfs tree tests/testdata/procfs/slurm-8xH100 (cgroup v2
slurmstepd.scope and cgroup v1 /slurm/uid_U/job_N forms) on the 8xH100 scenario. Run with Debian's
/usr/bin/python3."""
import json
import os
import shutil
import tempfile
import time
import unittest

from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, scenario_variant, validate

PROCFS = os.path.join(SOURCE_DIR, "tests", "testdata", "procfs", "slurm-8xH100")


def shared_gpu0(directory):
    """8xH100 with GPU 0 shared by job 4242 (PID 52001, 60 % SM) and job 4244 (PID 52009, 20 %), and
    the slurm-8xH100 procfs tree with PID 52009 in job 4244's cgroup."""
    scenario = scenario_variant(directory, "8xH100", "  - {idle_temp_c: 31, processes: [{pid: 52001, used_memory_mib: 73900}]}",
                                "  - {idle_temp_c: 31, processes: [{pid: 52001, used_memory_mib: 50000, sm_util: 60},"
                                " {pid: 52009, used_memory_mib: 20000, sm_util: 20}]}", "8xH100-shared")
    procfs = os.path.join(directory, "proc")
    shutil.copytree(PROCFS, procfs)
    os.makedirs(os.path.join(procfs, "52009"))
    for name, content in (("comm", "python3\n"), ("status", "Name:\tpython3\nUid:\t1003\t1003\t1003\t1003\n"),
                          ("cgroup", "0::/system.slice/slurmstepd.scope/job_4244/step_0/user/task_0\n")):
        with open(os.path.join(procfs, "52009", name), "w", encoding="utf-8") as f:
            f.write(content)
    return scenario, procfs


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


class SlurmPsTotals(GpulseTestCase):
    """Per-job totals in `gpulse ps` (issue 46), as for pods: memory summed, SM% summed per GPU and
    capped at 100 there, a job's steps together."""

    def test_each_job_has_its_processes_gpus_and_sums(self):
        doc = json.loads(self.run_ok("ps", "--simulate", "8xH100", "--procfs-root", PROCFS, "--json").stdout)
        validate(doc, "ps.schema.json")
        jobs = {j["job_id"]: j for j in doc["slurm_jobs"]}
        self.assertEqual(sorted(jobs), ["4242", "4243", "4300"], "52008 is in no job")
        self.assertEqual(sorted(jobs["4242"]["pids"]), [52001, 52002, 52003, 52004])
        self.assertEqual([g["index"] for g in jobs["4242"]["gpus"]], [0, 1, 2, 3])
        self.assertEqual(jobs["4242"]["used_memory_bytes"], 4 * 73900 * 1024 * 1024)
        self.assertEqual(sorted(jobs["4243"]["pids"]), [52005, 52006], "the batch step and step 0 are one job")
        out = self.run_ok("ps", "--simulate", "8xH100", "--procfs-root", PROCFS).stdout
        table = out.split("Per Slurm job", 1)[1].splitlines()
        self.assertRegex(table[2], r"^4242\s+4\s+0,1,2,3\s+295600MiB\s+N/A$")

    def test_two_jobs_sharing_a_gpu_each_get_their_own_share(self):
        with tempfile.TemporaryDirectory() as d:
            scenario, procfs = shared_gpu0(d)
            doc = json.loads(self.run_ok("ps", "--simulate", scenario, "--procfs-root", procfs, "--json").stdout)
        jobs = {j["job_id"]: j for j in doc["slurm_jobs"]}
        self.assertEqual(jobs["4244"]["pids"], [52009])
        self.assertEqual(jobs["4244"]["sm_util"], 20)
        self.assertEqual(jobs["4244"]["used_memory_bytes"], 20000 * 1024 * 1024)
        gpu0 = [g for g in jobs["4242"]["gpus"] if g["index"] == 0][0]
        self.assertEqual((gpu0["sm_util"], gpu0["used_memory_bytes"]), (60, 50000 * 1024 * 1024))


class SlurmExporter(GpulseTestCase):
    def test_series_carry_the_jobs_using_the_gpu(self):
        from exporter_e2e import parse_families
        p = self.run_ok("exporter", "--simulate", "8xH100", "--procfs-root", PROCFS, "--slurm-jobs", "--once")
        temps = parse_families(p.stdout)["DCGM_FI_DEV_GPU_TEMP"]
        jobs = {int(l["gpu"]): l.get("hpc_job") for l, _ in temps}
        self.assertEqual(jobs, {0: "4242", 1: "4242", 2: "4242", 3: "4242", 4: "4243", 5: "4243", 6: "4300",
                                7: None})
        self.assertEqual(len(temps), 8, "one series per GPU: one job each here")

    def test_jobs_sharing_a_gpu_get_its_power_and_energy_in_their_sm_shares(self):
        from exporter_e2e import Exporter, parse_families
        with tempfile.TemporaryDirectory() as tmp:
            scenario, procfs = shared_gpu0(tmp)
            p = self.run_ok("exporter", "--simulate", scenario, "--procfs-root", procfs, "--slurm-jobs", "--once")
            fams = parse_families(p.stdout)
            power = {l["gpu"]: v for l, v in fams["DCGM_FI_DEV_POWER_USAGE"]}
            mem = {(l["gpu"], l["hpc_job"]): v for l, v in fams["gpulse_job_gpu_memory_used_bytes"]}
            watts = {(l["gpu"], l["hpc_job"]): v for l, v in fams["gpulse_job_power_estimate_watts"]}
            self.assertEqual(mem[("0", "4242")], 50000 * 2**20)
            self.assertEqual(mem[("0", "4244")], 20000 * 2**20)
            self.assertNotIn("7", {gpu for gpu, _ in mem}, "a login session is no job")
            self.assertAlmostEqual(watts[("0", "4242")], power["0"] * 60 / 80, places=3)
            self.assertAlmostEqual(watts[("0", "4244")], power["0"] * 20 / 80, places=3)
            self.assertNotIn("gpulse_job_energy_estimate_joules", fams, "--once integrates nothing")
            with Exporter("--simulate", scenario, "--procfs-root", procfs, "--slurm-jobs") as e:
                def energy():
                    rows = parse_families(e.get("/metrics")[2].decode()).get("gpulse_job_energy_estimate_joules", [])
                    return {l["hpc_job"]: v for l, v in rows if l["gpu"] == "0"}
                first = energy()
                time.sleep(1.2)
                second = energy()
        self.assertEqual(set(first), {"4242", "4244"})
        grown = {job: second[job] - first[job] for job in second}
        self.assertGreater(grown["4244"], 0)
        self.assertAlmostEqual(grown["4242"] / grown["4244"], 3, places=6)

    def test_slurm_and_kubernetes_modes_exclude_each_other(self):
        p = run("exporter", "--simulate", "8xH100", "--slurm-jobs", "-k", "--once")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--slurm-jobs", p.stderr)

    def test_without_the_flag_no_job_label(self):
        p = self.run_ok("exporter", "--simulate", "8xH100", "--procfs-root", PROCFS, "--once")
        self.assertNotIn("hpc_job", p.stdout)


if __name__ == "__main__":
    unittest.main()
