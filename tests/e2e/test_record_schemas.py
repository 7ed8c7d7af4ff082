"""run.json against its two contracts: docs/schema/run.schema.json (gpulse's own format, version 3)
and docs/schema/inferscope-resource-report.schema.json (inferscope's sample-only report, which
run.json extends). Real recordings from the simulator and from a machine without a GPU, plus
altered copies that each schema has to reject."""
import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import jsonschema

from gpulse_e2e import NO_DRIVER_NVML, GPULSE, GpulseTestCase, k8s_with_workload, run, schema, validate

RUN_SCHEMA = "run.schema.json"
INFERSCOPE_SCHEMA = "inferscope-resource-report.schema.json"
NO_GPU = "no-gpu"
# Scenarios whose run.json has to validate against run.schema.json.
RUN_SCHEMA_SCENARIOS = ["4xA40-tp2", "8xH100", "mig-a100", "faults", "sensorless", NO_GPU]
# Scenarios whose devices give every reading inferscope needs: only these can satisfy the
# inferscope schema (gpulse writes null for a missing reading, inferscope has only integers).
INFERSCOPE_SCENARIOS = ["4xA40-tp2", "8xH100"]

_tmp = None
_docs = {}


def setUpModule():
    global _tmp
    _tmp = tempfile.mkdtemp(prefix="gpulse-record-schemas-")


def tearDownModule():
    shutil.rmtree(_tmp, ignore_errors=True)


def is_valid(doc, schema_name):
    return jsonschema.Draft202012Validator(schema(schema_name)).is_valid(doc)


def errors(doc, schema_name):
    """Every error, the ones found inside oneOf/anyOf branches included."""
    out = []
    pending = list(jsonschema.Draft202012Validator(schema(schema_name)).iter_errors(doc))
    while pending:
        e = pending.pop()
        out.append(e)
        pending.extend(e.context or [])
    return out


class RecordSchemaTest(GpulseTestCase):
    def record(self, scenario):
        """run.json of `gpulse record [--simulate SCENARIO] -i 100 -- sleep 1`, recorded once per
        module. NO_GPU: without --simulate and with an NVML library whose driver is not loaded, so there is
        no GPU whatever the machine has."""
        if scenario not in _docs:
            out = os.path.join(_tmp, scenario)
            source = (["--nvml-lib", NO_DRIVER_NVML] if scenario == NO_GPU
                      else ["--simulate", scenario])
            p = run("record", *source, "-i", "100", "-o", out, "--", "sleep", "1")
            self.assertEqual(p.returncode, 0, f"record {scenario} failed:\n{p.stderr}")
            with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
                _docs[scenario] = json.load(f)
        return copy.deepcopy(_docs[scenario])

    # ------------------------------------------------------------------ real outputs

    def test_every_scenario_validates_against_the_run_schema(self):
        for scenario in RUN_SCHEMA_SCENARIOS:
            with self.subTest(scenario=scenario):
                doc = self.record(scenario)
                validate(doc, RUN_SCHEMA)
                self.assertEqual(doc["schema_version"], 3)

    def test_inferscope_top_level_keys_restate_the_run_section(self):
        for scenario in RUN_SCHEMA_SCENARIOS:
            with self.subTest(scenario=scenario):
                doc = self.record(scenario)
                r = doc["run"]
                self.assertEqual(doc["reference_instant_unix_ns"], r["start_unix_ns"])
                self.assertEqual(doc["pid"], r["pid"])
                self.assertGreater(doc["pid"], 0, "sleep started")
                self.assertEqual(doc["include_descendants"], r["include_descendants"])
                self.assertEqual(doc["sample_period_ms"], 100)
                self.assertEqual(doc["sample_period_ms"], r["sample_period_ns"] // 1_000_000)
                self.assertEqual(doc["duration_secs"], -(-r["duration_ns"] // 1_000_000_000), "rounded up")
                self.assertGreaterEqual(doc["duration_secs"], 1)
                self.assertTrue(r["complete"])
                self.assertIsNone(r["incomplete_reason"])

    def test_no_gpu_run_has_null_gpu_and_a_resource_section(self):
        doc = self.record(NO_GPU)
        validate(doc, RUN_SCHEMA)
        self.assertIsNone(doc["gpu"])
        self.assertIsNotNone(doc["resource"])
        self.assertGreater(doc["resource"]["sample_count"], 0)
        self.assertIsNotNone(doc["run"]["gpu_unavailable_reason"])
        self.assertEqual(doc["gpu_timeline"]["samples"], [])
        self.assertNotIn("energy", doc["gpu_timeline"], "left out when no device has energy")
        self.assertEqual(doc["job_statistics"], [])

    def test_runs_with_every_reading_validate_against_the_inferscope_schema(self):
        for scenario in INFERSCOPE_SCENARIOS:
            with self.subTest(scenario=scenario):
                doc = self.record(scenario)
                validate(doc, INFERSCOPE_SCHEMA)
                self.assertIsInstance(doc["gpu"]["energy_millijoules"], int)
                self.assertIn(doc["gpu"]["energy_source"], ("counter", "integrated_fallback"))
                self.assertTrue(doc["gpu_timeline"]["energy"])

    def test_no_gpu_run_validates_against_the_inferscope_schema(self):
        doc = self.record(NO_GPU)
        validate(doc, INFERSCOPE_SCHEMA)
        self.assertIsNone(doc["gpu"])
        self.assertIsNotNone(doc["resource"])

    def test_timeline_energy_is_the_per_device_energy(self):
        for scenario in ("4xA40-tp2", "faults"):
            with self.subTest(scenario=scenario):
                doc = self.record(scenario)
                want = [{"device_index": d["device_index"], "energy_millijoules": d["energy_millijoules"],
                         "source": d["energy_source"]}
                        for d in doc["gpu"]["per_device"] if d["energy_millijoules"] is not None]
                self.assertTrue(want)
                self.assertEqual(doc["gpu_timeline"]["energy"], want)
                self.assertEqual(doc["gpu"]["energy_millijoules"], sum(e["energy_millijoules"] for e in want))
        sources = {e["source"] for e in self.record("faults")["gpu_timeline"]["energy"]}
        self.assertEqual(sources, {"counter", "integrated_fallback"},
                         "the faults scenario has a GPU without an energy counter")
        self.assertEqual(self.record("faults")["gpu"]["energy_source"], "integrated_fallback",
                         "the weakest source governs the total")

    def test_sensorless_run_fails_the_inferscope_schema(self):
        doc = self.record("sensorless")
        validate(doc, RUN_SCHEMA)
        # The documented difference (docs/record.md): sensorless GPUs give no temperature or power
        # reading. gpulse writes null for a reading a device did not give (never a fake 0), while
        # inferscope's GpuSample and GpuMetrics have only non-optional integers, so this run.json
        # cannot satisfy the inferscope schema, and the schema must not be loosened to let it.
        with self.assertRaises(jsonschema.ValidationError):
            validate(doc, INFERSCOPE_SCHEMA)
        null_readings = {e.absolute_path[-1] for e in errors(doc, INFERSCOPE_SCHEMA)
                         if e.instance is None and list(e.absolute_path)[:2] == ["gpu_timeline", "samples"]}
        self.assertTrue({"temperature_celsius", "power_draw_milliwatts"} <= null_readings, null_readings)

    def test_a_process_on_the_gpu_validates_with_its_new_keys(self):
        # k8s-8xH100 with one more process on GPU 0 that the simulator reports as the workload's.
        path = k8s_with_workload(_tmp, "k8s-8xH100-schemas")
        out = os.path.join(_tmp, "k8s-workload")
        p = run("record", "--simulate", path, "-i", "100", "-o", out, "--", "sh", "-c", "sleep 1; true")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        validate(doc, RUN_SCHEMA)
        procs = doc["gpu_processes"] + [q for s in doc["job_statistics"] for q in s["processes"]]
        self.assertTrue(procs, "the workload's process on GPU 0 is listed")
        for q in procs:
            self.assertEqual(q["name"], "sh")
            self.assertEqual(q["sm_utilization_mean_percent"], 40)
            self.assertGreater(q["sm_utilization_samples"], 0)
            self.assertLessEqual(q["first_seen_ns"], q["last_seen_ns"])
        bad = copy.deepcopy(doc)
        del bad["gpu_processes"][0]["first_seen_ns"]
        self.assertFalse(is_valid(bad, RUN_SCHEMA), "first_seen_ns is required")
        bad = copy.deepcopy(doc)
        bad["gpu_processes"][0]["sm_utilization_mean_percent"] = 140
        self.assertFalse(is_valid(bad, RUN_SCHEMA), "a percentage over 100")

    def test_a_run_recovered_from_its_journal_validates_and_says_it_is_incomplete(self):
        out = os.path.join(_tmp, "killed")
        recorder = subprocess.Popen([GPULSE, "record", "--simulate", "1xH200", "-i", "100", "-o", out, "--",
                                     "sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # The journal is flushed about once a second: wait (bounded) until it holds a sample.
            journal = os.path.join(out, "run.journal")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if os.path.exists(journal):
                    with open(journal, encoding="utf-8") as f:
                        if '{"gpu":' in f.read():
                            break
                time.sleep(0.05)
        finally:
            recorder.kill()  # SIGKILL: the recorder dies without writing run.json
            recorder.wait()
        self.assertFalse(os.path.exists(os.path.join(out, "run.json")))
        p = self.run_ok("report", out, "--format", "json")
        doc = json.loads(p.stdout)
        validate(doc, RUN_SCHEMA)
        self.assertFalse(doc["run"]["complete"])
        self.assertIn("recovered from", doc["run"]["incomplete_reason"])
        self.assertEqual(doc["duration_secs"], -(-doc["run"]["duration_ns"] // 1_000_000_000))
        self.assertEqual(doc["reference_instant_unix_ns"], doc["run"]["start_unix_ns"])
        self.assertIsNotNone(doc["gpu"], "the flushed samples are kept")

    # ------------------------------------------------------------------ honesty: the schemas reject

    def assert_rejected(self, schema_name, scenario, change, why):
        doc = self.record(scenario)
        self.assertTrue(is_valid(doc, schema_name), f"{scenario} must validate before the change")
        change(doc)
        self.assertFalse(is_valid(doc, schema_name), f"{schema_name} accepts {why}")

    def test_inferscope_schema_rejects_what_inferscope_cannot_read(self):
        def set_gpu(key, value):
            return lambda d: d["gpu"].__setitem__(key, value)

        def set_sample(key, value):
            return lambda d: d["gpu_timeline"]["samples"][0].__setitem__(key, value)

        cases = [
            ("energy_source \"integrated\" (not an EnergySource)", set_gpu("energy_source", "integrated")),
            ("a fractional gpu.energy_millijoules (u64)", set_gpu("energy_millijoules", 1.5)),
            ("utilization_percent 300 in a timeline sample (u8)", set_sample("utilization_percent", 300)),
            ("a null memory_used_bytes in a sample (not an Option)", set_sample("memory_used_bytes", None)),
            ("a document without pid", lambda d: d.pop("pid")),
            ("a negative pid (u32)", lambda d: d.__setitem__("pid", -1)),
            ("a pid over u32", lambda d: d.__setitem__("pid", 1 << 32)),
            ("a null per-device memory_total_bytes", lambda d: d["gpu"]["per_device"][0].__setitem__("memory_total_bytes", None)),
            ("a timeline energy entry without source", lambda d: d["gpu_timeline"]["energy"][0].pop("source")),
            ("a resource sample without thread_count", lambda d: d["resource_timeline"]["samples"][0].pop("thread_count")),
            ("a missing gpu_timeline", lambda d: d.pop("gpu_timeline")),
            ("a string include_descendants", lambda d: d.__setitem__("include_descendants", "false")),
        ]
        for why, change in cases:
            with self.subTest(why):
                self.assert_rejected(INFERSCOPE_SCHEMA, "4xA40-tp2", change, why)

    def test_run_schema_rejects_what_version_3_forbids(self):
        def extra_energy_key(d):
            d["gpu_timeline"]["energy"][0]["joules"] = 1

        cases = [
            ("schema_version 2", lambda d: d.__setitem__("schema_version", 2)),
            ("a gpu_timeline.energy entry with an extra key", extra_energy_key),
            ("an empty gpu_timeline.energy (it is left out instead)", lambda d: d["gpu_timeline"].__setitem__("energy", [])),
            ("energy_source \"integrated\"", lambda d: d["gpu"].__setitem__("energy_source", "integrated")),
            ("energy_source \"mixed\"", lambda d: d["gpu"].__setitem__("energy_source", "mixed")),
            ("a fractional per-device energy_millijoules",
             lambda d: d["gpu"]["per_device"][0].__setitem__("energy_millijoules", 1.5)),
            ("a fractional energy_counter_millijoules",
             lambda d: d["job_statistics"][0].__setitem__("energy_counter_millijoules", 2.5)),
            ("a missing duration_secs", lambda d: d.pop("duration_secs")),
            ("a missing run.complete", lambda d: d["run"].pop("complete")),
            ("a resource section without cpu_seconds", lambda d: d["resource"].pop("cpu_seconds")),
            ("an empty gpu object instead of null", lambda d: d.__setitem__("gpu", {})),
        ]
        for why, change in cases:
            with self.subTest(why):
                self.assert_rejected(RUN_SCHEMA, "4xA40-tp2", change, why)

    # ------------------------------------------------------------------ the schemas themselves

    def test_schemas_are_draft_2020_12_with_every_property_described(self):
        for name in (RUN_SCHEMA, INFERSCOPE_SCHEMA):
            with self.subTest(name):
                s = schema(name)
                self.assertEqual(s["$schema"], "https://json-schema.org/draft/2020-12/schema")
                jsonschema.Draft202012Validator.check_schema(s)
                undocumented = []

                def walk(node, where):
                    if isinstance(node, dict):
                        if isinstance(node.get("properties"), dict):
                            undocumented.extend(f"{where}/{k}" for k, v in node["properties"].items()
                                                if not v.get("description"))
                        for k, v in node.items():
                            walk(v, f"{where}/{k}")
                    elif isinstance(node, list):
                        for i, v in enumerate(node):
                            walk(v, f"{where}/{i}")
                walk(s, "")
                self.assertEqual(undocumented, [])


if __name__ == "__main__":
    unittest.main()
