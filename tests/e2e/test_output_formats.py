"""One output convention (issue 42): the listing commands take `--format table|csv|json`, `--json`
stays the alias of `--format json`, the JSON validates against the command's schema, and the CSV
has a row for every GPU the table shows, the skipped ones too. Covered: devices, ps and the agent's
listing verbs (group, watch, stats, health, policy, diag, config)."""
import csv
import io
import json
import tempfile
import unittest

from agent_e2e import Agent
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

    def test_the_field_catalogue_in_each_format(self):
        doc = json.loads(self.run_ok("fields", "--format", "json").stdout)
        validate(doc, "fields.schema.json")
        rows = list(csv.DictReader(io.StringIO(self.run_ok("fields", "--format", "csv").stdout)))
        self.assertEqual([int(r["id"]) for r in rows], [f["id"] for f in doc])
        self.assertEqual([r["backends.amdgpu"] for r in rows], [f["backends"]["amdgpu"] or "" for f in doc])
        self.assertIn("DCGM_FI_DEV_POWER_USAGE", self.run_ok("fields").stdout)
        self.assertEqual(run("fields", "--format", "xml").returncode, 2)

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
                self.assertRegex(p.stderr, r"--(json|format) excludes --(format|json)")


class EveryListingCommand(GpulseTestCase):
    """No command that prints JSON is left out of the convention: each subcommand whose --help
    offers JSON offers --format with table, csv and json. `top --once --json` is a live view's frame,
    not a list, and `report` renders a run document (text, html, json): both keep their own."""

    EXEMPT = {"top", "report"}

    def test_each_command_with_json_has_the_three_formats(self):
        import re
        top = run("--help").stdout.split("Subcommands:", 1)[1]
        names = re.findall(r"^  ([a-z][\w-]*)\s", top, re.M)
        checked = 0
        for name in names:
            text = run(name, "--help").stdout
            if name in self.EXEMPT or ("--json" not in text and "--format" not in text):
                continue
            with self.subTest(command=name):
                m = re.search(r"--format TEXT:\{([^}]*)\}", text)
                self.assertIsNotNone(m, f"gpulse {name} has no --format with choices")
                self.assertLessEqual({"table", "csv", "json"}, set(m.group(1).split(",")))
                checked += 1
        self.assertGreaterEqual(checked, 12)


class AgentVerbFormats(GpulseTestCase):
    """The agent's verbs on health-trips with a group, a watch, a job, a health watch, a policy and
    a configuration target set: each answer as table, CSV rows and schema-valid JSON."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="gpulse-formats-")
        cls.agent = Agent(cls.tmp.name, "health-trips")
        a = cls.agent
        created = a.cli("group", "-c", "two", "--json")
        if created.returncode != 0:
            raise AssertionError(created.stderr)
        g = str(json.loads(created.stdout)["id"])
        cls.VERBS = [([x if x != "G" else g for x in args], *rest) for args, *rest in cls.VERBS]
        for verb, *args in (("group", "-g", g, "-a", "0,1"),
                            ("watch", "-g", g, "-e", "POWER", "-i", "1000", "--keep-age", "60"),
                            ("stats", "-g", g, "-s", "job-1"), ("health", "-g", g, "--set", "a"),
                            ("policy", "-g", g, "--set", "0,0", "-T", "80"),
                            ("config", "-g", g, "--set", "-P", "500")):
            p = a.cli(verb, *args)
            if p.returncode != 0:
                raise AssertionError(f"{verb} {args}: {p.stderr}")
        a.advance(5)

    @classmethod
    def tearDownClass(cls):
        cls.agent.stop()
        cls.tmp.cleanup()

    # (verb and arguments, schema, the CSV's rows: how many, and a column every row has)
    VERBS = [
        (["group", "-l"], "agent-groups.schema.json", 2, "id"),
        (["watch", "-l"], "agent-watches.schema.json", None, "id"),
        (["stats", "--list"], "agent-jobs.schema.json", 1, "id"),
        (["stats", "-j", "job-1"], "agent-job.schema.json", 2, "device_index"),
        (["health", "-g", "G", "--check"], "agent-health.schema.json", 2, None),
        (["health", "-g", "G", "--fetch"], "agent-health-watch.schema.json", 1, "systems"),
        (["policy", "-g", "G", "--get"], "agent-policy.schema.json", 1, "group"),
        (["diag", "-g", "G", "-r", "1"], "agent-diag.schema.json", None, None),
        (["config", "-g", "G", "--get"], "agent-config.schema.json", 2, None),
    ]

    def test_each_verb_answers_in_the_three_formats(self):
        for args, schema, rows_expected, column in self.VERBS:
            with self.subTest(verb=" ".join(args)):
                table = self.agent.cli(*args)
                self.assertIn(table.returncode, (0, 1), table.stderr)  # health --check: 1 while failing
                self.assertFalse(table.stdout.lstrip().startswith("{"), "table is the default")
                as_json = self.agent.cli(*args, "--format", "json")
                doc = json.loads(as_json.stdout)
                validate(doc, schema)
                self.assertEqual(json.loads(self.agent.cli(*args, "--json").stdout), doc, "--json is --format json")
                rows = list(csv.DictReader(io.StringIO(self.agent.cli(*args, "--format", "csv").stdout)))
                self.assertGreater(len(rows), 0)
                if rows_expected is not None:
                    self.assertEqual(len(rows), rows_expected)
                if column is not None:
                    self.assertTrue(all(r.get(column, "") != "" for r in rows), column)

    def test_reg_streams_no_csv(self):
        p = self.agent.cli("policy", "-g", "0", "--reg", "--format", "csv")
        self.assertEqual(p.returncode, 2)
        self.assertIn("not csv", p.stderr)


if __name__ == "__main__":
    unittest.main()
