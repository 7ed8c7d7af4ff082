"""Every GPU accounted for (docs/adr/0010-entities.md): MIG instances, lost, skipped and partly
readable GPUs are entities in every output - record, dmon, devices, the exporter - and none falls out
of one output while staying in another."""
import json
import os
import shutil
import tempfile
import time
import unittest

from exporter_e2e import Exporter, golden_exposition, parse_families
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, run, validate

LOST_PROCFS = os.path.join(SOURCE_DIR, "tests", "testdata", "procfs", "lost-at-start")
LOST_UUID = "GPU-8b7e6d5c-4a3b-4c2d-9e1f-7a6b5c4d3e2f"


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def mig_uuids(scenario="mig-a100"):
    p = run("devices", "--simulate", scenario, "--json")
    return [m["uuid"] for m in json.loads(p.stdout)["devices"][0]["mig_instances"]]


class RecordEntitiesTest(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-entities-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mig_with_workload(self):
        """mig-a100 with the recorded workload on GPU 0's instances 2 and 3 and on GPU 1 (`pid:
        workload`, sim/README.md): the scenario's own PIDs are no job's that gpulse started."""
        with open(os.path.join(SOURCE_DIR, "sim", "scenarios", "mig-a100.yaml"), encoding="utf-8") as f:
            text = f.read()
        gi3 = "      - {pid: 7102, used_memory_mib: 5900, gpu_instance_id: 3, compute_instance_id: 0}\n"
        self.assertIn(gi3, text)
        text = text.replace(gi3, gi3 + "      - {pid: workload, used_memory_mib: 700, gpu_instance_id: 3}\n")
        text = text.replace("processes: [{pid: 7200, used_memory_mib: 31500}]",
                            "processes: [{pid: 7200, used_memory_mib: 31500}, {pid: workload, used_memory_mib: 900}]")
        path = os.path.join(self.tmp, "mig-workload.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def record(self, scenario, seconds="1", env=None, name=None):
        out = os.path.join(self.tmp, name or scenario)
        p = run("record", "--simulate", scenario, "-o", out, "--", "sleep", seconds, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = load_json(os.path.join(out, "run.json"))
        validate(doc, "run.schema.json")
        with open(os.path.join(out, "report.txt"), encoding="utf-8") as f:
            return doc, f.read()

    def test_mig_a100_reports_both_gpus_instances_with_memory_and_energy_of_gpu0(self):
        doc, text = self.record("mig-a100")
        per = {d["device_index"]: d for d in doc["gpu"]["per_device"]}
        self.assertEqual(sorted(per), [0, 1], "the MIG-enabled GPU is not dropped")
        self.assertGreater(per[0]["sample_count"], 10)
        self.assertEqual(per[0]["utilization_sample_count"], 0, "no utilization on a MIG parent, and none invented")
        self.assertIsNone(per[0]["utilization_mean_percent"])
        self.assertEqual(per[0]["power_sample_count"], per[0]["sample_count"])
        self.assertGreater(per[0]["energy_millijoules"], 0, "GPU 0's energy counts")
        self.assertAlmostEqual(doc["gpu"]["energy_millijoules"],
                               per[0]["energy_millijoules"] + per[1]["energy_millijoules"])
        # Utilization aggregates over the samples that have it (GPU 1's), and say so.
        self.assertEqual(doc["gpu"]["utilization_sample_count"], per[1]["sample_count"])
        self.assertIn(f"({per[1]['sample_count']} of {doc['gpu']['sample_count']} samples)", text)
        samples0 = [s for s in doc["gpu_timeline"]["samples"] if s["device_index"] == 0]
        self.assertTrue(all(s["utilization_percent"] is None for s in samples0))
        self.assertTrue(all(s["power_draw_milliwatts"] > 0 for s in samples0))
        absent = {a["device_index"]: a for a in doc["gpu_timeline"]["absent"]}
        self.assertIn("utilization_percent", absent[0]["unsupported"])
        # The MIG instances are entities with their own memory.
        gis = [e for e in doc["entities"] if e["kind"] == "gpu_instance"]
        self.assertEqual([(e["gpu"], e["gpu_instance_id"], e["profile"]) for e in gis],
                         [(0, 2, "3g.20gb"), (0, 3, "2g.10gb"), (0, 9, "1g.5gb"), (0, 10, "1g.5gb")])
        cis = [e for e in doc["entities"] if e["kind"] == "compute_instance"]
        self.assertEqual(sorted(e["uuid"] for e in cis), sorted(mig_uuids()))
        inst = {i["gpu_instance_id"]: i for i in doc["gpu"]["per_instance"]}
        mib = 1 << 20
        self.assertEqual(inst[2]["memory_used_max_bytes"], 15210 * mib)
        self.assertEqual(inst[2]["memory_total_bytes"], 19968 * mib)
        self.assertEqual(inst[10]["memory_used_max_bytes"], 0, "an idle instance reads 0, a real reading")
        self.assertLessEqual(sum(i["memory_used_max_bytes"] for i in inst.values()), per[0]["memory_used_max_bytes"])
        timeline = doc["instance_timeline"]["samples"]
        self.assertEqual({s["gpu_instance_id"] for s in timeline}, {2, 3, 9, 10})
        self.assertEqual(doc["gpu_processes"], [], "the scenario's processes are not the workload's")
        self.assertIn("MIG GPU instances", text)
        self.assertIn("3g.20gb", text)

    def test_a_mig_uuid_mask_records_its_instance_and_parent_and_says_so(self):
        uuid = mig_uuids()[1]  # 2g.10gb, GI 3
        doc, text = self.record("mig-a100", "0.5", env={"CUDA_VISIBLE_DEVICES": uuid})
        self.assertEqual(doc["run"]["device_selection"], "visible: physical GPU 0 (MIG 2g.10gb GI 3 CI 0)")
        self.assertGreater(doc["gpu"]["sample_count"], 0, "no longer 'no GPU samples collected'")
        self.assertEqual([(e["kind"], e["gpu_instance_id"]) for e in doc["entities"]],
                         [("gpu", None), ("gpu_instance", 3), ("compute_instance", 3)])
        self.assertEqual([i["gpu_instance_id"] for i in doc["gpu"]["per_instance"]], [3])
        self.assertEqual(doc["gpu_processes"], [], "7102 runs in GI 3 but is not the workload's")

    def test_the_workloads_processes_carry_their_mig_instance(self):
        doc, _ = self.record(self.mig_with_workload(), "1.2", name="all")
        procs = {(p["device_index"], p["pid"]): p for p in doc["gpu_processes"]}
        pid = doc["pid"]
        self.assertEqual(set(procs), {(0, pid), (1, pid)})
        self.assertEqual((procs[(0, pid)]["gpu_instance_id"], procs[(0, pid)]["compute_instance_id"]), (3, 0))
        self.assertEqual(procs[(0, pid)]["max_memory_bytes"], 700 << 20)
        self.assertIsNone(procs[(1, pid)]["gpu_instance_id"])
        self.assertEqual(procs[(1, pid)]["name"], "sleep")
        # Seen only through GI 3: with a mask on GI 2 the workload's process there is not the run's.
        uuid_gi2 = mig_uuids()[0]
        doc, _ = self.record(self.mig_with_workload(), "0.5", env={"CUDA_VISIBLE_DEVICES": uuid_gi2}, name="gi2")
        self.assertEqual(doc["gpu_processes"], [], "GI 3's process is not charged to a run on GI 2")

    def test_a_mask_that_hides_every_gpu_samples_none(self):
        doc, text = self.record("mig-a100", "0.3", env={"CUDA_VISIBLE_DEVICES": "-1"})
        self.assertEqual(doc["run"]["device_selection"], "visible: none (CUDA_VISIBLE_DEVICES hides every GPU)")
        self.assertEqual(doc["entities"], [])
        self.assertEqual(doc["gpu_timeline"]["samples"], [])
        self.assertEqual(doc["instance_timeline"]["samples"], [])
        self.assertIn("the workload sees no GPU", text)

    def test_sensorless_gpus_keep_their_samples_with_null_readings(self):
        doc, text = self.record("sensorless", "0.6")
        per = {d["device_index"]: d for d in doc["gpu"]["per_device"]}
        self.assertEqual(sorted(per), [0, 1, 2, 3])
        counts = {i: d["sample_count"] for i, d in per.items()}
        self.assertEqual(len(set(counts.values())), 1, f"every GPU sampled every tick: {counts}")
        self.assertIsNone(per[1]["temperature_max_celsius"])
        self.assertEqual(per[1]["temperature_sample_count"], 0)
        self.assertIsNotNone(per[1]["utilization_mean_percent"])
        self.assertIsNone(per[2]["utilization_mean_percent"])
        self.assertIsNotNone(per[2]["temperature_max_celsius"])
        self.assertIsNone(per[3]["power_mean_milliwatts"])
        self.assertIsNone(per[3]["energy_millijoules"], "no power and no counter: no energy, not 0")
        self.assertIsNotNone(per[3]["memory_used_max_bytes"])
        for s in doc["gpu_timeline"]["samples"]:
            if s["device_index"] == 1:
                self.assertIsNone(s["temperature_celsius"])
            if s["device_index"] == 3:
                self.assertEqual([s["utilization_percent"], s["temperature_celsius"], s["power_draw_milliwatts"]],
                                 [None, None, None])
                self.assertGreater(s["memory_used_bytes"], 0)
        absent = {a["device_index"]: a for a in doc["gpu_timeline"]["absent"]}
        # L40S (Ada) has no GPM: the profiling readings are unsupported on every GPU, and GPU 0 lacks
        # nothing else.
        profiling = ["gr_engine_active", "sm_active", "tensor_active", "dram_active", "pcie_tx_bytes_per_second",
                     "pcie_rx_bytes_per_second"]
        self.assertEqual(absent[0]["unsupported"], profiling)
        self.assertEqual(absent[1]["unsupported"], ["temperature_celsius"] + profiling)
        self.assertIn("power_draw_milliwatts", absent[3]["unsupported"])
        self.assertIn("GPU 1:  VRAM", text)
        self.assertIn("temp peak n/a", text)

    def test_faults_run_names_the_skipped_and_the_lost_gpu_with_reason_and_time(self):
        doc, text = self.record("faults", "2.2")
        ents = {e["gpu"]: e for e in doc["entities"] if e["kind"] == "gpu"}
        self.assertEqual(sorted(ents), [0, 1, 2, 3])
        self.assertEqual(ents[1]["state"], "skipped")
        self.assertIn("NO_PERMISSION", ents[1]["reason"])
        self.assertEqual(ents[3]["state"], "lost")
        self.assertIn("GPU_IS_LOST", ents[3]["reason"])
        self.assertGreaterEqual(ents[3]["lost_elapsed_ns"], 1_400_000_000)
        self.assertLess(ents[3]["lost_elapsed_ns"], 2_200_000_000)
        last3 = max(s["elapsed_ns"] for s in doc["gpu_timeline"]["samples"] if s["device_index"] == 3)
        self.assertLess(last3, ents[3]["lost_elapsed_ns"], "no sample after the loss")
        self.assertEqual([x["xid"] for x in doc["xid_events"] if x["device_index"] == 3], [79],
                         "the XID raised at the loss is recorded")
        self.assertEqual(ents[0]["state"], "present")
        self.assertIn("GPUs skipped or lost:", text)
        self.assertRegex(text, r"GPU 1  skipped: no permission")
        self.assertRegex(text, r"GPU 3 \(GPU-[0-9a-f-]+\)  lost at 1\.[45]\d\d s")

    def test_a_gpu_lost_before_start_is_named_from_the_driver_listing(self):
        doc, text = self.record("lost-at-start", "0.3", env={"GPULSE_PROCFS_ROOT": LOST_PROCFS})
        lost = [e for e in doc["entities"] if e["state"] == "lost"]
        self.assertEqual(len(lost), 1)
        self.assertEqual((lost[0]["gpu"], lost[0]["uuid"], lost[0]["pci_bus_id"]),
                         (1, LOST_UUID, "00000000:2A:00.0"))
        self.assertIn(LOST_UUID, text)
        self.assertIn("lost before start: GPU is lost", text)

    def test_report_rerenders_entities_from_run_json(self):
        out = os.path.join(self.tmp, "faults")
        self.record("faults", "1.8")
        p = run("report", os.path.join(out, "run.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "report.txt"), encoding="utf-8") as f:
            self.assertEqual(p.stdout, f.read())


class DmonEntitiesTest(GpulseTestCase):
    def rows(self, *args, env=None):
        p = run("dmon", "--format", "json", "-c", "1", "-d", "10", *args, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(l) for l in p.stdout.splitlines()]
        for r in rows:
            validate(r, "dmon-record.schema.json")
        return rows, p

    def test_instance_rows_have_their_memory_and_no_parent_readings(self):
        rows, _ = self.rows("--simulate", "mig-a100", "-e", "POWER,FBUSD,FBTTL")
        keys = [(r["gpu"], r.get("gpu_instance_id")) for r in rows]
        self.assertEqual(keys, [(0, None), (0, 2), (0, 3), (0, 9), (0, 10), (1, None)])
        gi2 = rows[1]
        self.assertEqual(gi2["gpu_instance_profile"], "3g.20gb")
        self.assertEqual(gi2["fields"]["DCGM_FI_DEV_FB_USED"], 15210)
        self.assertEqual(gi2["fields"]["DCGM_FI_DEV_FB_TOTAL"], 19968)
        self.assertIsNone(gi2["fields"]["DCGM_FI_DEV_POWER_USAGE"], "the parent's power is not copied")
        self.assertGreater(rows[0]["fields"]["DCGM_FI_DEV_POWER_USAGE"], 0)

    def test_i_takes_instance_uuids_and_gpu_gi_ci_forms(self):
        uuids = mig_uuids()
        rows, _ = self.rows("--simulate", "mig-a100", "-e", "FBUSD", "-i", f"{uuids[1]},0:9,0:10:0,1")
        self.assertEqual([(r["gpu"], r.get("gpu_instance_id")) for r in rows], [(0, 3), (0, 9), (0, 10), (1, None)])
        table = self.run_ok("dmon", "--simulate", "mig-a100", "-c", "1", "-e", "FBUSD", "-i", uuids[0])
        self.assertIn("GPU 0/GI 2", table.stdout)
        self.assertIn("15210", table.stdout)
        bad = run("dmon", "--simulate", "mig-a100", "-c", "1", "-i", "MIG-00000000-0000-0000-0000-000000000000")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("MIG-00000000-0000-0000-0000-000000000000", bad.stderr)

    def test_skipped_and_lost_gpus_keep_rows_with_reasons(self):
        rows, p = self.rows("--simulate", "lost-at-start", "-e", "POWER", env={"GPULSE_PROCFS_ROOT": LOST_PROCFS})
        self.assertEqual([(r["gpu"], r["state"]) for r in rows], [(0, "ok"), (1, "lost")])
        self.assertEqual(rows[1]["uuid"], LOST_UUID)
        self.assertIn("GPU_IS_LOST", rows[1]["reason"])
        self.assertIn("GPU 1 lost before start", p.stderr)
        rows, _ = self.rows("--simulate", "faults", "-e", "POWER")
        self.assertEqual(rows[1]["state"], "skipped")
        self.assertIn("NO_PERMISSION", rows[1]["reason"])


class PsAndDevicesEntitiesTest(GpulseTestCase):
    def test_ps_and_devices_name_the_lost_and_the_skipped_gpu(self):
        env = {"GPULSE_PROCFS_ROOT": LOST_PROCFS}
        p = run("ps", "--simulate", "lost-at-start", "--json", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        validate(doc, "ps.schema.json")
        self.assertEqual([(g["index"], g["state"], g["uuid"]) for g in doc["unreadable_gpus"]], [(1, "lost", LOST_UUID)])
        self.assertIn("GPU 1 lost before start", p.stderr)
        p = run("ps", "--simulate", "faults", "--json")
        doc = json.loads(p.stdout)
        validate(doc, "ps.schema.json")
        self.assertEqual([(g["index"], g["state"]) for g in doc["unreadable_gpus"]], [(1, "skipped")])
        p = run("devices", "--simulate", "lost-at-start", "--json", env=env)
        doc = json.loads(p.stdout)
        validate(doc, "devices.schema.json")
        self.assertEqual((doc["skipped"][0]["state"], doc["skipped"][0]["uuid"], doc["skipped"][0]["identity_source"]),
                         ("lost", LOST_UUID, "procfs"))
        text = run("devices", "--simulate", "lost-at-start", env=env).stdout
        self.assertIn(f"GPU 1: lost ({LOST_UUID}, from procfs)", text)


class ExporterEntitiesTest(GpulseTestCase):
    def test_mig_a100_one_series_per_gpu_instance_and_no_double_counting(self):
        fam = parse_families(golden_exposition("mig-a100"))
        used = {(l["gpu"], l.get("GPU_I_ID")): (l.get("GPU_I_PROFILE"), v) for l, v in fam["DCGM_FI_DEV_FB_USED"]}
        self.assertEqual(used, {("0", "2"): ("3g.20gb", 15210), ("0", "3"): ("2g.10gb", 6100),
                                ("0", "9"): ("1g.5gb", 3050), ("0", "10"): ("1g.5gb", 0),
                                ("1", None): (None, 31800)})
        for name in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK",
                     "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
            gpus = [(l["gpu"], l.get("GPU_I_ID")) for l, _ in fam[name]]
            self.assertEqual(gpus, [("0", None), ("1", None)], f"{name}: device-level, once per GPU")
        info = [l.get("GPU_I_ID") for l, _ in fam["gpulse_device_info"] if l["gpu"] == "0"]
        self.assertEqual(info, [None, "2", "3", "9", "10"])

    def test_instance_memory_never_exceeds_the_parent_and_health_is_ok(self):
        with Exporter("--simulate", "mig-a100") as e:
            snap = json.loads(e.get("/api/v1/snapshot")[2])
            validate(snap, "exporter-snapshot.schema.json")
            parent = [d for d in snap["devices"] if d["gpu"] == 0 and d["kind"] == "gpu"][0]
            inst = [d for d in snap["devices"] if d["kind"] == "gpu_instance"]
            self.assertEqual(len(inst), 4)
            self.assertLessEqual(sum(d["fields"]["DCGM_FI_DEV_FB_USED"] for d in inst),
                                 parent["fields"]["DCGM_FI_DEV_FB_USED"])
            self.assertTrue(all(d["fields"]["DCGM_FI_DEV_POWER_USAGE"] is None for d in inst))
            devices = json.loads(e.get("/api/v1/devices")[2])
            validate(devices, "exporter-devices.schema.json")
            kinds = [x["kind"] for x in devices["entities"]]
            self.assertEqual(kinds.count("gpu_instance"), 4)
            self.assertEqual(kinds.count("compute_instance"), 4)
            self.assertEqual(e.get("/health")[0], 200)

    def test_a_gpu_lost_before_start_is_exported_lost_and_fails_health(self):
        env = {"GPULSE_PROCFS_ROOT": LOST_PROCFS}
        with Exporter("--simulate", "lost-at-start", env=env) as e:
            fam = parse_families(e.get("/metrics")[2].decode())
            lost = {l["gpu"]: (l["UUID"], l.get("pci_bus_id"), v) for l, v in fam["gpulse_device_lost"]}
            self.assertEqual(lost["1"], (LOST_UUID, "00000000:2A:00.0", 1))
            self.assertEqual(lost["0"][2], 0)
            status, _, body = e.get("/health")
            self.assertEqual(status, 503)
            self.assertIn(b"GPU 1 (" + LOST_UUID.encode() + b") is lost", body)
            devices = json.loads(e.get("/api/v1/devices")[2])
            validate(devices, "exporter-devices.schema.json")
            self.assertEqual(devices["skipped"][0]["identity_source"], "procfs")
            snap = json.loads(e.get("/api/v1/snapshot")[2])
            validate(snap, "exporter-snapshot.schema.json")
            self.assertEqual([(d["gpu"], d["state"]) for d in snap["devices"]], [(0, "ok"), (1, "lost")])
        # Without the driver's listing the GPU is still there, identified by its index alone.
        fam = parse_families(golden_exposition("lost-at-start"))
        self.assertEqual([(l["gpu"], l["UUID"], v) for l, v in fam["gpulse_device_lost"]], [("0", "GPU-4f1c2a90-7d3e-4b6a-9c21-0a5e7f3d8b11", 0), ("1", "", 1)])

    def test_lost_gpu_keeps_xid_counters_across_the_loss(self):
        with Exporter("--simulate", "faults", "--min-refresh-ms", "0") as e:
            deadline = time.monotonic() + 30
            fam = {}
            while time.monotonic() < deadline:
                fam = parse_families(e.get("/metrics")[2].decode())
                if {l["gpu"]: v for l, v in fam.get("gpulse_device_lost", [])}.get("3") == 1:
                    break
                time.sleep(0.1)
            for _ in range(3):  # later scrapes keep the lost GPU's counter: no reset to Prometheus
                fam = parse_families(e.get("/metrics")[2].decode())
                xids = {(l["gpu"], l["xid"]): v for l, v in fam["gpulse_xid_errors"]}
                self.assertEqual(xids.get(("3", "79")), 1)


if __name__ == "__main__":
    unittest.main()
