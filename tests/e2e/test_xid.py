"""`gpulse xid` end to end (docs/faults.md): NVIDIA's Xid catalogue as a table, CSV or JSON that
validates against docs/schema/xid.schema.json, NVIDIA's buckets verbatim, the codes asked for in
the order given, an unknown code printed as unknown with exit status 1, a CODE that is not a number
a usage error (exit 2) naming it."""
import csv
import io
import json
import re
import unittest

from gpulse_e2e import GpulseTestCase, run, validate

# (code, mnemonic, immediate, investigatory) as NVIDIA's Xid-Catalog.xlsx has them.
NVIDIA_ROWS = [
    (13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "RESTART_APP", "WORKFLOW_XID_13"),
    (45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "WORKFLOW_XID_45", "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)"),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "CONTACT_SUPPORT"),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", "IGNORE (sympathetic)"),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "IGNORE (sympathetic)"),
    (154, "GPU_RECOVERY_ACTION_CHANGED", "XID_154", "N/A Informational only regarding another Xid"),
]


def xid_json(*args):
    p = run("xid", *args, "--format", "json")
    return p, json.loads(p.stdout)


class XidCatalogue(GpulseTestCase):
    @classmethod
    def setUpClass(cls):
        p = run("xid", "--format", "json")
        assert p.returncode == 0, p.stderr
        cls.doc = json.loads(p.stdout)
        cls.by_code = {x["xid"]: x for x in cls.doc["xids"]}

    def test_the_json_lists_every_code_in_order_and_follows_the_schema(self):
        validate(self.doc, "xid.schema.json")
        self.assertEqual([x["xid"] for x in self.doc["xids"]], list(range(1, 177)))
        self.assertTrue(all(x["known"] for x in self.doc["xids"]))
        catalogue = self.doc["catalogue"]
        self.assertEqual(catalogue["file"], "Xid-Catalog.xlsx")
        self.assertTrue(catalogue["url"].startswith("https://docs.nvidia.com/"))
        self.assertIn("nverror.h", catalogue["driver_header"])

    def test_each_entry_has_the_keys_the_issue_asks_for(self):
        for x in self.doc["xids"]:
            for key in ("xid", "mnemonic", "description", "immediate_action", "investigatory_action"):
                self.assertIn(key, x)

    def test_the_bucket_columns_are_nvidias_verbatim(self):
        for code, mnemonic, immediate, investigatory in NVIDIA_ROWS:
            with self.subTest(xid=code):
                x = self.by_code[code]
                self.assertEqual((x["mnemonic"], x["immediate_action"], x["investigatory_action"]),
                                 (mnemonic, immediate, investigatory))

    def test_the_recommended_action_is_gpulses_and_differs_only_where_it_should(self):
        self.assertEqual(self.by_code[79]["recommended_action"], "RESTART_BM")
        self.assertEqual(self.by_code[48]["recommended_action"], "RESET_GPU", "WORKFLOW_XID_48 alone: a reset")
        for x in self.doc["xids"]:
            if x["immediate_action"] is None:
                self.assertEqual(x["recommended_action"], "UNKNOWN", x["xid"])
            elif x["xid"] != 48:
                self.assertEqual(x["recommended_action"], x["immediate_action"], x["xid"])

    def test_missing_values_are_null_and_products_are_booleans(self):
        c2c = self.by_code[173]  # nverror.h only: a name and nothing else
        self.assertEqual(c2c["source"], "nverror.h")
        self.assertEqual(c2c["mnemonic"], "C2C_FATAL_LINK_FAILURE")
        for key in ("description", "applies_to", "immediate_action", "investigatory_action"):
            self.assertIsNone(c2c[key], key)
        self.assertIsNone(self.by_code[162]["immediate_action"], "NVIDIA gives Xid 162 no bucket")
        self.assertEqual(self.by_code[79]["applies_to"], {"A100": True, "H100": True, "B100": True, "GB200": True})
        self.assertEqual(self.by_code[93]["applies_to"], {"A100": True, "H100": False, "B100": False, "GB200": False})
        self.assertEqual(self.by_code[79]["source"], "catalog+archive")
        self.assertEqual(self.by_code[144]["source"], "catalog")

    def test_codes_asked_for_come_in_the_order_given(self):
        p, doc = xid_json("79", "94")
        self.assertEqual(p.returncode, 0, p.stderr)
        validate(doc, "xid.schema.json")
        self.assertEqual([x["xid"] for x in doc["xids"]], [79, 94])
        self.assertEqual(doc["xids"][0], self.by_code[79])
        p, doc = xid_json("94", "79", "94")
        self.assertEqual([x["xid"] for x in doc["xids"]], [94, 79, 94])

    def test_an_unknown_code_is_printed_as_unknown_and_exits_1(self):
        p, doc = xid_json("79", "999")
        self.assertEqual(p.returncode, 1)
        self.assertIn("999", p.stderr)
        self.assertIn("unknown", p.stderr)
        validate(doc, "xid.schema.json")
        self.assertEqual([x["xid"] for x in doc["xids"]], [79, 999], "the known one is printed too")
        self.assertEqual(doc["xids"][1], {
            "xid": 999, "mnemonic": None, "description": None, "applies_to": None,
            "immediate_action": None, "investigatory_action": None, "source": None,
            "known": False, "recommended_action": "UNKNOWN"})
        table = run("xid", "999")
        self.assertEqual(table.returncode, 1)
        self.assertRegex(table.stdout, r"(?m)^\s*999\s+-\s+-\s+-\s+\(unknown Xid\)$")
        self.assertEqual(run("xid", "0").returncode, 1, "Xid 0 is not a code NVIDIA lists")

    def test_a_code_that_is_not_a_number_is_a_usage_error_naming_it(self):
        for word in ("abc", "7x", "-1", "0x4f", "1.5", "99999999999999999999999"):
            with self.subTest(code=word):
                p = run("xid", "79", word)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"'{word}'", p.stderr)
                self.assertEqual(p.stdout, "", "nothing printed before the usage error")

    def test_the_table_has_a_header_and_a_row_per_code(self):
        p = self.run_ok("xid")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["XID", "MNEMONIC", "IMMEDIATE", "INVESTIGATORY", "DESCRIPTION"])
        self.assertEqual(len(lines), 1 + 176)
        row79 = [l for l in lines if re.match(r"\s*79\s", l)]
        self.assertEqual(len(row79), 1)
        self.assertEqual(row79[0].split(None, 4),
                         ["79", "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "CONTACT_SUPPORT",
                          "GPU has fallen off the bus"])
        row173 = next(l for l in lines if re.match(r"\s*173\s", l))
        self.assertEqual(row173.split(), ["173", "C2C_FATAL_LINK_FAILURE", "-", "-", "-"], "missing is -")
        self.assertEqual(self.run_ok("xid", "--format", "table").stdout, p.stdout, "table is the default")
        # The description is last and whole: columns line up, so it starts where the header's does.
        start = lines[0].index("DESCRIPTION")
        self.assertTrue(lines[45].startswith(" 45"))
        self.assertEqual(lines[45][start:], self.by_code[45]["description"])

    def test_csv_has_a_row_per_code_and_json_is_the_alias(self):
        rows = list(csv.DictReader(io.StringIO(self.run_ok("xid", "--format", "csv").stdout)))
        self.assertEqual([int(r["xid"]) for r in rows], list(range(1, 177)))
        self.assertEqual(rows[78]["immediate_action"], "RESTART_BM")
        self.assertEqual(rows[78]["applies_to.H100"], "true")
        self.assertEqual(json.loads(self.run_ok("xid", "--json", "79").stdout), xid_json("79")[1])
        self.assertEqual(run("xid", "--format", "xml").returncode, 2)

    def test_help_works_as_the_others(self):
        p = self.run_ok("xid", "--help")
        self.assertIn("--format", p.stdout)
        self.assertIn("Exit status", p.stdout)


if __name__ == "__main__":
    unittest.main()
