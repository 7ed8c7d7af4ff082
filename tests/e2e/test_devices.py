"""`gpulse devices` end to end, through the real NVML code path loading the simulator."""
import json
import os
import tempfile
import unittest

from gpulse_e2e import BUILTIN_SCENARIOS, NO_DRIVER_NVML, SOURCE_DIR, GpulseTestCase, run, validate


class DevicesTest(GpulseTestCase):
    def devices(self, scenario):
        p = self.run_ok("devices", "--simulate", scenario, "--json")
        doc = json.loads(p.stdout)
        validate(doc, "devices.schema.json")
        return doc

    def test_4xa40_tp2_lists_four_distinct_devices(self):
        doc = self.devices("4xA40-tp2")
        self.assertTrue(doc["simulated"])
        self.assertEqual(doc["scenario"], "4xA40-tp2")
        self.assertIsNotNone(doc["driver_version"])
        self.assertEqual(len(doc["devices"]), 4)
        self.assertEqual([d["index"] for d in doc["devices"]], [0, 1, 2, 3])
        self.assertEqual(len({d["uuid"] for d in doc["devices"]}), 4)
        self.assertEqual(len({d["pci_bus_id"] for d in doc["devices"]}), 4)
        for d in doc["devices"]:
            self.assertIn("A40", d["name"])
            self.assertGreater(d["memory_total_bytes"], 40 * 2**30)

    def test_every_builtin_scenario_validates(self):
        for scenario in BUILTIN_SCENARIOS:
            with self.subTest(scenario=scenario):
                doc = self.devices(scenario)
                self.assertGreater(len(doc["devices"]), 0)
                uuids = [d["uuid"] for d in doc["devices"]]
                self.assertEqual(len(uuids), len(set(uuids)))

    def test_mig_instances_are_listed(self):
        doc = self.devices("mig-a100")
        mig = [d for d in doc["devices"] if d["mig_enabled"]]
        self.assertGreater(len(mig), 0)
        instances = mig[0]["mig_instances"]
        self.assertGreater(len(instances), 1)
        self.assertTrue(all(i["uuid"].startswith("MIG-") for i in instances))
        self.assertTrue(all(i["profile"] for i in instances))

    def test_no_permission_index_is_skipped_with_reason(self):
        doc = self.devices("faults")
        self.assertTrue(doc["skipped"], "the faults scenario has a device without permission")
        self.assertIn("NVML_ERROR_NO_PERMISSION", doc["skipped"][0]["reason"])
        listed = {d["index"] for d in doc["devices"]}
        self.assertNotIn(doc["skipped"][0]["index"], listed)

    def test_text_output_says_simulated(self):
        p = self.run_ok("devices", "--simulate", "1xH200")
        self.assertIn("Simulated GPUs: scenario 1xH200", p.stdout)
        self.assertIn("GPU 0: NVIDIA H200", p.stdout)

    def test_no_driver_explains_and_exits_zero(self):
        p = run("devices", "--nvml-lib", NO_DRIVER_NVML)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.strip().splitlines()), 1, p.stdout)
        self.assertIn("No GPUs found: NVIDIA driver not loaded", p.stdout)
        p = run("devices", "--json", env={"GPULSE_NVML_LIBRARY": NO_DRIVER_NVML})
        self.assertEqual(p.returncode, 0)
        doc = json.loads(p.stdout)
        validate(doc, "devices.schema.json")
        self.assertEqual(doc["devices"], [])
        self.assertIn("not loaded", doc["error"])

    def test_an_unknown_subcommand_is_named(self):
        # Issue 40: `gpulse frobnicate` said "A subcommand is required".
        p = run("frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown subcommand 'frobnicate'", p.stderr)
        self.assertNotIn("A subcommand is required", p.stderr)
        self.assertEqual(run().returncode, 2, "no subcommand at all is still a usage error")
        p = run("stat", "-j", "x")  # issue 42: the closest subcommand is named
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown subcommand 'stat': did you mean 'stats'?", p.stderr)
        self.assertNotIn("did you mean", run("frobnicate").stderr)

    def test_a_named_nvml_library_that_does_not_load_is_a_usage_error(self):
        # Issue 40: it said "No GPUs found" and exited 0, and beside an AMD GPU showed only that one.
        amd = os.path.join(SOURCE_DIR, "tests", "testdata", "sysfs", "mi300x")
        for args, env, source in ((["--nvml-lib", "/nonexistent.so"], None, "--nvml-lib"),
                                  ([], {"GPULSE_NVML_LIBRARY": "/nonexistent.so"}, "$GPULSE_NVML_LIBRARY"),
                                  (["--nvml-lib", "/nonexistent.so", "--sysfs-root", amd], None, "--nvml-lib")):
            with self.subTest(args=args, env=env):
                p = run("devices", *args, env=env)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertIn(source + ": the NVML library cannot be loaded: /nonexistent.so", p.stderr)

    def test_unknown_scenario_is_a_usage_error_naming_it(self):
        p = run("devices", "--simulate", "16xB300")
        self.assertEqual(p.returncode, 2)
        self.assertIn("16xB300", p.stderr)
        self.assertIn("4xA40-tp2", p.stderr, "the message lists the built-in scenarios")

    def test_missing_scenario_file_is_a_usage_error(self):
        p = run("devices", "--simulate", "/nonexistent/scenario.yaml")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/scenario.yaml", p.stderr)

    def test_invalid_scenario_file_is_a_usage_error_naming_the_problem(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write("name: bad\ndevices:\n  - name: X\n    memory_total_mib: -5\n")
            p = run("devices", "--simulate", path)
            self.assertEqual(p.returncode, 2, p.stdout)
            self.assertIn("memory_total_mib", p.stderr)

    def test_custom_scenario_file_is_served(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "two.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(
                    "name: two-l4\n"
                    "devices:\n"
                    "  - {name: NVIDIA L4, memory_total_mib: 23034, power_limit_w: 72}\n"
                    "  - {name: NVIDIA L4, memory_total_mib: 23034, power_limit_w: 72}\n"
                )
            doc = self.devices(path)
            self.assertEqual(doc["scenario"], "two-l4")
            self.assertEqual([d["name"] for d in doc["devices"]], ["NVIDIA L4", "NVIDIA L4"])
            self.assertEqual(doc["devices"][0]["power_limit_watts"], 72)


if __name__ == "__main__":
    unittest.main()
