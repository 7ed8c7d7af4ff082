"""Every gpulse verb that mirrors a dcgmi verb gives dcgmi's flags dcgmi's meanings (issue 40).

A table: each row is a dcgmi command as the management transcripts of the seed show it (DCGM's own
help text and session: `dcgmi group -c NAME`, `config --set -c 2`, `policy --set 0,0 -T 50`, …),
the gpulse command that mirrors it against one agent, and what the command must have meant, read
back from the agent's API, never from the CLI's own output. A flag whose meaning differs from
dcgmi's (as `config -c 2` did: Prohibited in gpulse, Exclusive Process in dcgmi) fails its row.
Run with Debian's /usr/bin/python3."""
import json
import re

from test_agent import AgentTestCase


def group_id(agent, name):
    groups = agent.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]
    return next(g["id"] for g in groups if g["name"] == name)


def entity_labels(agent, gid):
    g = agent.api("GET", f"/api/v1/groups/{gid}", schema="agent-group.schema.json")
    return [e["label"] for e in g["entities"]]


def settings(agent, gid):
    cfg = agent.api("GET", f"/api/v1/config?group={gid}", schema="agent-config.schema.json")
    return {s["setting"]: s for s in cfg["gpus"][0]["settings"]}


def policy(agent, gid):
    return agent.api("GET", f"/api/v1/policy?group={gid}", schema="agent-policy.schema.json")["policy"]


class DcgmiMeanings(AgentTestCase):
    """The rows run in order on one agent: the transcript creates a group, fills it, configures it,
    sets its policy and checks it, as an operator following DCGM's documentation would."""

    scenario = "8xH100"

    def row(self, dcgmi, gpulse_args, meaning, code=0):
        """Runs `gpulse ARGS` on the agent; `meaning(agent, stdout)` asserts what it did (stderr
        where the command fails)."""
        with self.subTest(dcgmi=dcgmi):
            p = self.agent.cli(*gpulse_args)
            self.assertEqual(p.returncode, code, f"gpulse {' '.join(gpulse_args)} for `{dcgmi}`:\n{p.stderr}")
            meaning(self.agent, p.stdout if code == 0 else p.stderr)

    def test_the_transcripts_commands_mean_what_they_mean_in_dcgmi(self):
        ids = {}

        def created(agent, out):
            ids["g"] = group_id(agent, "GPU_GROUP")
            self.assertRegex(out, r'Successfully created group "GPU_GROUP" with a group ID of %d' % ids["g"])
            self.assertEqual(entity_labels(agent, ids["g"]), [], "dcgmi -c creates an empty group")

        def listed(agent, out):
            self.assertIn("GPU_GROUP", out)
            self.assertRegex(out, r"\d+ groups? found")

        def added(agent, out):
            self.assertEqual(entity_labels(agent, ids["g"]), ["GPU 0", "GPU 1"])

        def info(agent, out):
            self.assertRegex(out, r"Entities\s+\|\s+GPU 0, GPU 1")

        def removed(agent, out):
            self.assertEqual(entity_labels(agent, ids["g"]), [])

        def deleted(agent, out):
            groups = agent.api("GET", "/api/v1/groups", schema="agent-groups.schema.json")["groups"]
            self.assertNotIn("GPU_GROUP", [g["name"] for g in groups])

        g = lambda: str(ids["g"])
        self.row("dcgmi group -c GPU_GROUP", ["group", "-c", "GPU_GROUP"], created)
        self.row("dcgmi group -l", ["group", "-l"], listed)
        self.row("dcgmi group -g 2 -a 0,1", ["group", "-g", g(), "-a", "0,1"], added)
        self.row("dcgmi group -g 2 -i", ["group", "-g", g(), "-i"], info)
        self.row("dcgmi group -g 2 -r 0,1", ["group", "-g", g(), "-r", "0,1"], removed)
        self.row("dcgmi group -d 2", ["group", "-d", g()], deleted)

        # The session's second group: every GPU, then stats, config, policy, health and diag on it.
        self.row("dcgmi group -c GPU_GROUP", ["group", "-c", "GPU_GROUP"], created)
        self.row("dcgmi group -g 3 -a 0,1,2,3", ["group", "-g", g(), "-a", "0,1,2,3"],
                 lambda a, out: self.assertEqual(entity_labels(a, ids["g"]), ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]))

        def stats_enabled(agent, out):
            watches = agent.api("GET", "/api/v1/watches", schema="agent-watches.schema.json")["watches"]
            self.assertTrue(any(w["group"] == ids["g"] for w in watches), watches)

        self.row("dcgmi stats -g 3 --enable", ["stats", "-g", g(), "--enable"], stats_enabled)

        def no_such_pid(agent, err):
            self.assertIn("no process 41861 was seen on the GPUs of group %d" % ids["g"], err)

        self.row("dcgmi stats -g 3 -p 41861 -v", ["stats", "-g", g(), "-p", "41861", "-v"], no_such_pid, code=2)

        mode = lambda want_nvml: lambda a, out: self.assertEqual(settings(a, ids["g"])["compute_mode"]["target"], want_nvml)
        # dcgmi config -h: "-c --compmode mode ... 0 - Unrestricted 1 - Prohibited 2 - Exclusive Process".
        # The agent's API speaks NVML's nvmlComputeMode_t: 0 default, 2 prohibited, 3 exclusive process.
        self.row("dcgmi config -g 3 --set -c 0", ["config", "-g", g(), "--set", "-c", "0"], mode(0))
        self.row("dcgmi config -g 3 --set -c 1", ["config", "-g", g(), "--set", "-c", "1"], mode(2))
        self.row("dcgmi config -g 3 --set -c 2", ["config", "-g", g(), "--set", "-c", "2"], mode(3))
        self.row("dcgmi config -g 3 --get", ["config", "-g", g(), "--get"],
                 lambda a, out: self.assertRegex(out, r"\| Compute Mode +\| E\. Process +\| E\. Process +\|"))
        self.row("dcgmi config --set -c 3 (no such mode in dcgmi)", ["config", "-g", g(), "--set", "-c", "3"],
                 lambda a, err: self.assertRegex(err, r"compmode.*3 not in range"), code=2)
        self.row("dcgmi config --set -P 500", ["config", "-g", g(), "--set", "-P", "500"],
                 lambda a, out: self.assertEqual(settings(a, ids["g"])["power_limit_w"]["target"], 500))
        self.row("dcgmi config --set -e 1", ["config", "-g", g(), "--set", "-e", "1"],
                 lambda a, out: self.assertIs(settings(a, ids["g"])["ecc"]["target"], True))

        def temp_policy(agent, out):
            p = policy(agent, ids["g"])
            self.assertEqual(p["conditions"], ["thermal"])
            self.assertEqual(p["max_temp_c"], 50)
            self.assertEqual((p["action"], p["validation"]), (0, 0), "0,0: no action, no validation")

        self.row("dcgmi policy -g 3 --set 0,0 -T 50", ["policy", "-g", g(), "--set", "0,0", "-T", "50"], temp_policy)

        def reset_policy(agent, out):
            p = policy(agent, ids["g"])
            self.assertEqual(sorted(p["conditions"]), ["dbe", "pcie", "xid"])
            self.assertEqual((p["action"], p["validation"]), (1, 1), "1,1: GPU reset, then short validation")

        self.row("dcgmi policy -g 3 --set 1,1 -e -p -x", ["policy", "-g", g(), "--set", "1,1", "-e", "-p", "-x"],
                 reset_policy)
        self.row("dcgmi policy -g 2 --get", ["policy", "-g", g(), "--get"],
                 lambda a, out: self.assertIn("Reset GPU", out))

        def health_watch(agent, out):
            w = agent.api("GET", f"/api/v1/health/watch?group={ids['g']}", schema="agent-health-watch.schema.json")
            self.assertEqual(w["systems"], "pm", "dcgmi health -s pm: PCIe and memory")

        self.row("dcgmi health -g 1 -s pm", ["health", "-g", g(), "-s", "pm"], health_watch)
        self.row("dcgmi health --check -g 1", ["health", "--check", "-g", g()],
                 lambda a, out: self.assertIn("Overall Health: Healthy", out))

        def diag_level_1(agent, out):
            self.assertRegex(out, r"Successfully ran diagnostic for group")
            self.assertNotRegex(out, r"(?i)level 2|medium")

        self.row("dcgmi diag -g 3 -r 1", ["diag", "-g", g(), "-r", "1"], diag_level_1)


if __name__ == "__main__":
    import unittest
    unittest.main()
