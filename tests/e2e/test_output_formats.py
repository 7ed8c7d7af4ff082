"""One output convention (issue 42): the listing commands take `--format table|csv|json`, `--json`
stays the alias of `--format json`, the JSON validates against the command's schema, and the CSV
has a row for every GPU the table shows, the skipped ones too. Covered so far: devices, ps."""
import csv
import io
import json
import unittest

from gpulse_e2e import GpulseTestCase, run, validate

COMMANDS = [  # (arguments, schema, the CSV column naming the GPU)
    (["devices", "--simulate", "faults"], "devices.schema.json", "index"),
    (["ps", "--simulate", "faults"], "ps.schema.json", "gpu.index"),
]


class OutputFormats(GpulseTestCase):
    def test_each_command_takes_the_three_formats(self):
        for args, schema, gpu_column in COMMANDS:
            with self.subTest(command=args[0]):
                table = run(*args, "--format", "table")
                self.assertEqual(table.stdout, run(*args).stdout, "table is the default")
                doc = json.loads(run(*args, "--format", "json").stdout)
                validate(doc, schema)
                self.assertEqual(json.loads(run(*args, "--json").stdout), doc, "--json is --format json")
                rows = list(csv.DictReader(io.StringIO(run(*args, "--format", "csv").stdout)))
                self.assertEqual(sorted({r[gpu_column] for r in rows}), ["0", "1", "2", "3"],
                                 "every GPU of the table, the skipped GPU 1 too")
                skipped = [r for r in rows if r[gpu_column] == "1"]
                self.assertEqual([r.get("state") or r.get("gpu_state") for r in skipped], ["skipped"])
                self.assertIn("no permission", skipped[0]["reason"])

    def test_absent_readings_are_empty_cells_and_cells_are_quoted(self):
        rows = list(csv.DictReader(io.StringIO(run("devices", "--simulate", "mig-a100", "--format", "csv").stdout)))
        self.assertEqual(len(rows), 2)
        self.assertTrue(rows[0]["mig_instances"].startswith("[{"), "a list is its JSON text, one quoted cell")
        doc = json.loads(run("devices", "--simulate", "mig-a100", "--json").stdout)
        for row, d in zip(rows, doc["devices"]):
            self.assertEqual(row["uuid"], d["uuid"])
            self.assertEqual(row["backend_index"], "" if d.get("backend_index") is None else str(d["backend_index"]))

    def test_bad_and_contradicting_formats_are_usage_errors(self):
        for args, _, _ in COMMANDS:
            with self.subTest(command=args[0]):
                p = run(*args, "--format", "xml")
                self.assertEqual(p.returncode, 2)
                self.assertIn("--format", p.stderr)
                p = run(*args, "--json", "--format", "csv")
                self.assertEqual(p.returncode, 2)
                self.assertIn("contradict", p.stderr)


if __name__ == "__main__":
    unittest.main()
