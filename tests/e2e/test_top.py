"""`gpulse top` end to end: the real binary in a real terminal (tmux, detached, on a private server
socket), reading a real agent's stream on simulated GPUs.

The agents run with a frozen simulated clock (GPULSE_SIM_CLOCK=0, agent_e2e.Agent's default), so
every reading stands still and the bars can be compared with /api/v1/snapshot exactly; the faults
scenario's GPU 3 falls off the bus at simulated second 1.5, which the test reaches with
Agent.advance. Screens are read with `tmux capture-pane -p` until what is expected appears (a
generous deadline, never a timed assertion); keys go in with `tmux send-keys`. Also: --once as text
and as JSON (checked against docs/schema/live-frame.schema.json), NO_COLOR, TERM=dumb, resizes, q,
Ctrl-C and SIGTERM (exit 0, terminal restored), bad flags (exit 2) and an unreachable agent (exit 1).
Run with Debian's /usr/bin/python3 (standard library and python3-jsonschema)."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from agent_e2e import Agent
from gpulse_e2e import DEVICE_SELECTION_VARS, GPULSE, GpulseTestCase, run, validate

TMUX = shutil.which("tmux", path="/usr/bin:/bin") or "tmux"
DEADLINE_S = 60  # for anything to appear on screen: generous, machines are shared
GIB = 1024 ** 3

BAR = r"\s+\[[^\]]*\]\s+"
PATTERNS = {
    "util": re.compile(r"\bUTIL" + BAR + r"(N/A|(\d+)%)"),
    "mem": re.compile(r"\bMEM" + BAR + r"(N/A|([\d.]+)(?:/([\d.]+))? GiB)"),
    "power": re.compile(r"\bPWR" + BAR + r"(N/A|([\d.]+)(?:/([\d.]+))? W)"),
    "temp": re.compile(r"\bTEMP" + BAR + r"(N/A|(\d+) ?\S*C)"),
    "sm": re.compile(r"\bSM" + BAR + r"(N/A|(\d+)(?:/(\d+))? MHz)"),
    "mclk": re.compile(r"\bMCLK" + BAR + r"(N/A|(\d+)(?:/(\d+))? MHz)"),
}
PANEL_HEADER = re.compile(r"^(?:\S+ )?GPU (\d+)(?:/GI (\d+))?\s")


def panels(screen):
    """{gpu index: [lines of its panel]} for the whole-GPU panels on a captured screen."""
    out, current = {}, None
    for line in screen.splitlines():
        m = PANEL_HEADER.match(line)
        if m:
            current = int(m.group(1)) if m.group(2) is None else None
            if current is not None:
                out[current] = [line]
            continue
        if not line.startswith("  ") or line.strip() == "":
            current = None
        elif current is not None:
            out[current].append(line)
    return out


def bar_values(panel_lines):
    """{name: match} of the bars found on a panel's lines."""
    text = "\n".join(panel_lines)
    return {name: p.search(text) for name, p in PATTERNS.items()}


def process_pids(screen):
    """The PIDs of the process list, top to bottom."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s+PID USER\s+GPU", line):
            pids = []
            for row in lines[i + 1:]:
                m = re.match(r"^\s*(\d+) ", row)
                if not m:
                    break
                pids.append(int(m.group(1)))
            return pids
    return None


def top_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in DEVICE_SELECTION_VARS}
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)
    env["LANG"] = "C.UTF-8"
    env.update(extra or {})
    return env


class Tmux:
    """One detached tmux server on a private socket, one window running one command."""

    def __init__(self, directory, width=120, height=40):
        self.dir = directory
        self.socket = os.path.join(directory, "tmux.sock")
        self.status_path = os.path.join(directory, "status")
        self.width, self.height = width, height
        conf = os.path.join(directory, "tmux.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write("set -g remain-on-exit on\nset -g default-terminal tmux-256color\n"
                    "set -g status off\nset -g history-limit 0\n")
        self.conf = conf

    def tmux(self, *args, check=True):
        p = subprocess.run([TMUX, "-u", "-S", self.socket, "-f", self.conf, *args], capture_output=True,
                           text=True, timeout=30)
        if check and p.returncode != 0:
            raise AssertionError("tmux %s failed: %s" % (" ".join(args), p.stderr))
        return p

    def start(self, args, env_overrides=None):
        """Runs `gpulse ARGS` in a new session; its exit status goes to the status file."""
        env = top_env(env_overrides)
        assigns = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted((env_overrides or {}).items()))
        command = "%s %s %s; echo \"exit=$?\" > %s; echo top-exited" % (
            "env " + assigns if assigns else "", shlex.quote(GPULSE), " ".join(shlex.quote(a) for a in args),
            shlex.quote(self.status_path))
        subprocess.run([TMUX, "-u", "-S", self.socket, "-f", self.conf, "new-session", "-d", "-s", "top",
                        "-x", str(self.width), "-y", str(self.height), "bash", "-c", command],
                       check=True, env=env, timeout=30)

    def capture(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "top"] + (["-e"] if escapes else [])
        return self.tmux(*args).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def resize(self, width, height):
        self.tmux("resize-window", "-t", "top", "-x", str(width), "-y", str(height))

    def pane_pid(self):
        return int(self.tmux("display-message", "-p", "-t", "top", "#{pane_pid}").stdout.strip())

    def top_pid(self):
        """The gpulse process: the child of the pane's shell."""
        shell = self.pane_pid()
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % entry, encoding="utf-8") as f:
                        stat = f.read()
                except OSError:
                    continue
                fields = stat[stat.rindex(")") + 2:].split()
                if int(fields[1]) == shell:
                    return int(entry)
            time.sleep(0.05)
        raise AssertionError("no child of the pane's shell %d" % shell)

    def wait_for(self, predicate, what, escapes=False, running=True):
        """Captures the pane until predicate(screen) is true; returns that screen. With `running`,
        fails as soon as gpulse has exited without the screen showing it."""
        deadline = time.monotonic() + DEADLINE_S
        screen = ""
        while time.monotonic() < deadline:
            exited = running and self.exit_status() is not None
            screen = self.capture(escapes)
            if predicate(screen):
                return screen
            if exited:
                raise AssertionError("gpulse top exited (%s) while waiting for %s:\n%s" %
                                     (self.exit_status(), what, screen))
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s; the screen:\n%s" % (what, screen))

    def exit_status(self):
        try:
            with open(self.status_path, encoding="utf-8") as f:
                text = f.read().strip()
        except OSError:
            return None
        m = re.match(r"exit=(\d+)$", text)
        return int(m.group(1)) if m else None

    def wait_exit(self):
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            status = self.exit_status()
            if status is not None:
                return status
            time.sleep(0.05)
        raise AssertionError("gpulse top did not exit; the screen:\n%s" % self.capture())

    def close(self):
        self.tmux("kill-server", check=False)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def four_panels(screen):
    """Whether GPUs 0-3 each have a panel with bars (escape sequences, when captured, ignored)."""
    p = panels(ANSI.sub("", screen))
    return all(i in p and len(p[i]) > 1 for i in range(4))


class TopTestCase(GpulseTestCase):
    def make_tmux(self, width=120, height=40):
        d = tempfile.mkdtemp(prefix="gpulse-top-tmux-")
        self.addCleanup(shutil.rmtree, d, True)
        t = Tmux(d, width, height)
        self.addCleanup(t.close)
        return t


class TopThroughAgentTest(TopTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpulse-top-agent-")
        cls.agent = Agent(cls.dir, scenario="4xA40-tp2")

    @classmethod
    def tearDownClass(cls):
        cls.agent.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start_top(self, *args, width=120, height=40, env=None):
        t = self.make_tmux(width, height)
        t.start(["top", "--host", self.agent.host, *args], env)
        return t

    def test_bars_match_the_snapshot(self):
        t = self.start_top()
        screen = t.wait_for(four_panels, "four GPU panels")
        r = self.agent.get("/api/v1/snapshot")
        self.assertEqual(r.status, 200, r)
        validate(r.json, "exporter-snapshot.schema.json")
        devices = {d["gpu"]: d for d in r.json["devices"] if d["kind"] == "gpu"}
        self.assertEqual(sorted(devices), [0, 1, 2, 3])
        got = panels(screen)
        self.assertIn("via agent", screen.splitlines()[0])
        self.assertIn("simulated: 4xA40-tp2", screen.splitlines()[0])
        self.assertIn("4 GPUs", screen.splitlines()[0])
        for gpu, device in devices.items():
            with self.subTest(gpu=gpu):
                fields = device["fields"]
                bars = bar_values(got[gpu])
                self.assertIn("NVIDIA A40", got[gpu][0])
                self.assertTrue(got[gpu][0].rstrip().endswith("ok"), got[gpu][0])
                self.check_number(bars, "util", fields.get("DCGM_FI_DEV_GPU_UTIL"), lambda v: "%d" % round(v))
                self.check_number(bars, "power", fields.get("DCGM_FI_DEV_POWER_USAGE"), lambda v: "%.1f" % v)
                self.check_number(bars, "temp", fields.get("DCGM_FI_DEV_GPU_TEMP"), lambda v: "%d" % round(v))
                self.check_number(bars, "sm", fields.get("DCGM_FI_DEV_SM_CLOCK"), lambda v: "%d" % round(v))
                self.check_number(bars, "mclk", fields.get("DCGM_FI_DEV_MEM_CLOCK"), lambda v: "%d" % round(v))
                self.check_number(bars, "mem", fields.get("DCGM_FI_DEV_FB_USED"),
                                  lambda mib: "%.1f" % (mib / 1024.0))
                # The scales: the A40's 300 W limit, 46068 MiB, 1740 / 7251 MHz.
                self.assertEqual(bars["power"].group(3), "300.0")
                self.assertEqual(bars["mem"].group(3), "%.1f" % (46068 / 1024.0))
                self.assertEqual(bars["sm"].group(3), "1740")
                self.assertEqual(bars["mclk"].group(3), "7251")
        # Busy shards and idle GPUs, as the scenario says.
        self.assertGreaterEqual(int(bar_values(got[0])["util"].group(2)), 90)
        self.assertLessEqual(int(bar_values(got[2])["util"].group(2)), 5)
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def check_number(self, bars, name, value, fmt):
        m = bars[name]
        self.assertIsNotNone(m, "no %s bar" % name)
        if value is None:
            self.assertEqual(m.group(1), "N/A", name)
        else:
            self.assertEqual(m.group(2), fmt(value), "%s: %s on screen, %r in the snapshot" % (name, m.group(1), value))

    def test_the_bars_match_the_frame_when_the_server_has_one(self):
        r = self.agent.get("/api/v1/frame")
        if r.status == 404:
            self.skipTest("the agent has no /api/v1/frame")
        self.assertEqual(r.status, 200, r)
        validate(r.json, "live-frame.schema.json")
        t = self.start_top()
        got = panels(t.wait_for(four_panels, "four GPU panels"))
        for e in r.json["entities"]:
            if e["kind"] != "gpu":
                continue
            bars = bar_values(got[e["gpu"]])
            self.check_number(bars, "util", e["utilization_percent"], lambda v: "%d" % round(v))
            self.check_number(bars, "power", e["power_watts"], lambda v: "%.1f" % v)
            self.check_number(bars, "mem", e["memory_used_bytes"], lambda v: "%.1f" % (v / GIB))
            self.check_number(bars, "temp", e["temperature_celsius"], lambda v: "%d" % round(v))
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_s_and_r_change_the_process_order(self):
        t = self.start_top()
        t.wait_for(lambda s: process_pids(s) == [4242, 4243], "the processes 4242 and 4243")
        steps = [
            ("s", "sort: sm (descending)", [4242, 4243]),  # no SM% for either: by GPU, then PID
            ("s", "sort: pid (ascending)", [4242, 4243]),
            ("r", "sort: pid (descending)", [4243, 4242]),
            ("s", "sort: gpu (ascending)", [4242, 4243]),
            ("r", "sort: gpu (descending)", [4243, 4242]),
            ("s", "sort: memory (descending)", [4242, 4243]),
            ("r", "sort: memory (ascending)", [4242, 4243]),  # equal memory: by GPU, then PID
        ]
        for key, title, order in steps:
            with self.subTest(key=key, title=title):
                t.keys(key)
                screen = t.wait_for(lambda s: title in s, title)
                self.assertEqual(process_pids(screen), order, screen)
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_selecting_a_gpu_filters_the_processes(self):
        t = self.start_top()
        t.wait_for(lambda s: process_pids(s) == [4242, 4243], "both processes")
        t.keys("1")
        screen = t.wait_for(lambda s: "GPU 1 only" in s, "the GPU 1 filter")
        self.assertEqual(process_pids(screen), [4243])
        t.keys("a")
        screen = t.wait_for(lambda s: "all GPUs" in s, "all GPUs again")
        self.assertEqual(process_pids(screen), [4242, 4243])
        t.keys("p")
        t.wait_for(lambda s: "PAUSED" in s, "PAUSED")
        t.keys("p")
        t.wait_for(lambda s: "PAUSED" not in s, "resumed")
        t.keys("h")
        t.wait_for(lambda s: "reverse the sort order" in s, "the help")
        t.keys("h")
        t.wait_for(lambda s: "reverse the sort order" not in s and four_panels(s), "the panels again")
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_resize_redraws_and_keeps_running(self):
        t = self.start_top()
        t.wait_for(four_panels, "four GPU panels")
        for width, height in [(60, 20), (20, 5), (100, 30), (120, 40)]:
            with self.subTest(size="%dx%d" % (width, height)):
                t.resize(width, height)

                def redrawn(s, width=width, height=height):
                    lines = s.split("\n")
                    if lines and lines[-1] == "":
                        lines.pop()
                    return (len(lines) == height and lines[0].startswith("gpulse top")
                            and lines[-1].startswith("q quit") and all(len(l) <= width for l in lines)
                            and "GPU 0" in s)

                t.wait_for(redrawn, "a %dx%d screen" % (width, height))
                self.assertIsNone(t.exit_status(), "still running")
        t.wait_for(four_panels, "four panels at 120x40 again")
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_q_ctrl_c_and_sigterm_exit_0_and_restore_the_terminal(self):
        for how in ("q", "C-c", "SIGTERM"):
            with self.subTest(how=how):
                t = self.start_top()
                t.wait_for(four_panels, "four GPU panels")
                if how == "SIGTERM":
                    os.kill(t.top_pid(), signal.SIGTERM)
                else:
                    t.keys(how)
                self.assertEqual(t.wait_exit(), 0)
                # The terminal is restored: tmux says the pane left the alternate screen, and the
                # main screen does not show top's panels.
                deadline = time.monotonic() + DEADLINE_S
                while t.tmux("display-message", "-p", "-t", "top", "#{alternate_on}").stdout.strip() != "0":
                    self.assertLess(time.monotonic(), deadline, "the pane is still in the alternate screen")
                    time.sleep(0.1)
                self.assertNotIn("PROCESSES", t.capture(), "the alternate screen is gone")
                t.close()

    def test_no_color_draws_without_colours(self):
        t = self.start_top()
        coloured = t.wait_for(four_panels, "four GPU panels", escapes=True)
        self.assertRegex(coloured, r"\x1b\[(?:[0-9;]*;)?3[0-7](?:;[0-9;]*)?m", "colours by default")
        t.keys("q")
        t.wait_exit()
        t = self.start_top(env={"NO_COLOR": "1"})
        plain = t.wait_for(four_panels, "four GPU panels", escapes=True)
        self.assertNotRegex(plain, r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|38;[25];[0-9;]+)(?:;[0-9;]*)?m", "no colour")
        self.assertRegex(plain, r"\x1b\[[0-9;]*1[;m]", "bold stays")
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_dumb_terminal_prints_frames_as_text(self):
        t = self.start_top(env={"TERM": "dumb"})
        # A frame, a blank line, the next frame's header (the first may have scrolled away).
        screen = t.wait_for(lambda s: "\n\ngpulse top  " in s, "a second frame after a blank line")
        self.assertIn("UTIL [", screen)
        self.assertNotIn("\x1b", screen)
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_a_background_job_prints_frames_and_stops_on_a_signal(self):
        # `gpulse top &` from an interactive shell: its process group is not the terminal's
        # foreground, where setting the terminal up would stop it (SIGTTOU; the shell's `wait`
        # would then say 150). It prints frames as text instead, reads no keys, and ends on SIGINT.
        # tmux's panes inherit SIGTTOU and SIGTTIN ignored; a login shell's jobs have them default.
        t = self.make_tmux()
        pid_path = os.path.join(t.dir, "pid")
        command = "set -m; %s top --host %s & echo $! > %s; wait $!; echo \"exit=$?\" > %s" % (
            shlex.quote(GPULSE), shlex.quote(self.agent.host), shlex.quote(pid_path),
            shlex.quote(t.status_path))
        subprocess.run([TMUX, "-u", "-S", t.socket, "-f", t.conf, "new-session", "-d", "-s", "top",
                        "-x", "120", "-y", "40", "env", "--default-signal=TTOU,TTIN", "bash", "-c", command],
                       check=True, env=top_env(), timeout=30)
        screen = t.wait_for(lambda s: "UTIL [" in s, "a frame as text")
        self.assertNotIn("\x1b", t.capture(escapes=True).replace("\x1b[0m", ""), "no ncurses screen")
        self.assertEqual(t.tmux("display-message", "-p", "-t", "top", "#{alternate_on}").stdout.strip(), "0",
                         screen)
        with open(pid_path, encoding="utf-8") as f:
            os.kill(int(f.read()), signal.SIGINT)
        self.assertEqual(t.wait_exit(), 0)

    def test_once_through_the_agent(self):
        p = self.run_ok("top", "--once", "--host", self.agent.host, env={"COLUMNS": "120"})
        self.assertEqual(sorted(panels(p.stdout)), [0, 1, 2, 3], p.stdout)
        self.assertIn("via agent", p.stdout.splitlines()[0])
        p = self.run_ok("top", "--once", "--json", "--host", self.agent.host)
        frame = json.loads(p.stdout)
        validate(frame, "live-frame.schema.json")
        self.assertIn(frame["source"], ("agent", "exporter"))


class TopLostGpuTest(TopTestCase):
    def test_a_lost_gpu_shows_as_lost(self):
        d = tempfile.mkdtemp(prefix="gpulse-top-faults-")
        self.addCleanup(shutil.rmtree, d, True)
        agent = Agent(d, scenario="faults")
        self.addCleanup(agent.close)
        t = self.make_tmux()
        t.start(["top", "--host", agent.host])
        screen = t.wait_for(lambda s: 3 in panels(s), "GPU 3's panel")
        self.assertNotIn("LOST", panels(screen)[3][0], "GPU 3 is lost at 1.5 s, the clock is at 0")
        agent.advance(3)  # past the loss at 1.5 s (and the ticks on the way)

        def lost(s):
            p = panels(s)
            return 3 in p and "LOST" in p[3][0]

        # A frame is built per read: the agent reads again as its clock moves on, until a frame
        # after the loss reaches top.
        deadline = time.monotonic() + DEADLINE_S
        screen = t.capture()
        while not lost(screen):
            if time.monotonic() > deadline:
                raise AssertionError("GPU 3 never showed as LOST:\n" + screen)
            agent.advance(1)
            time.sleep(0.2)
            screen = t.capture()
        self.assertEqual(len(panels(screen)[3]), 1, "no bars for a lost GPU:\n" + screen)
        self.assertNotIn("LOST", panels(screen)[0][0])
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)


class TopReconnectTest(TopTestCase):
    def test_an_agent_that_stops_is_shown_disconnected_and_reconnected(self):
        d = tempfile.mkdtemp(prefix="gpulse-top-restart-")
        self.addCleanup(shutil.rmtree, d, True)
        agent = Agent(d, scenario="4xA40-tp2")
        self.addCleanup(agent.close)
        t = self.make_tmux()
        t.start(["top", "--host", agent.host])
        t.wait_for(four_panels, "four GPU panels")
        self.assertEqual(agent.stop(), 0)
        screen = t.wait_for(lambda s: "disconnected: " in s, "the disconnected status")
        self.assertTrue(four_panels(screen), "the last frame stays on screen:\n" + screen)
        self.assertIsNone(t.exit_status(), "still running")
        agent.start()
        t.wait_for(lambda s: "disconnected" not in s and four_panels(s), "reconnected")
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)


class TopDirectTest(TopTestCase):
    def test_once_prints_four_panels(self):
        p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2")
        got = panels(p.stdout)
        self.assertEqual(sorted(got), [0, 1, 2, 3], p.stdout)
        for gpu, lines in got.items():
            bars = bar_values(lines)
            for name in ("util", "mem", "power", "temp", "sm", "mclk"):
                self.assertIsNotNone(bars[name], "GPU %d: no %s bar:\n%s" % (gpu, name, p.stdout))
        lines = p.stdout.splitlines()
        self.assertTrue(all(len(l) <= 100 for l in lines), "100 columns without $COLUMNS")
        self.assertIn("simulated: 4xA40-tp2", lines[0])
        self.assertIn("direct", lines[0])
        self.assertEqual(process_pids(p.stdout), [4242, 4243])
        self.assertNotIn("\x1b", p.stdout)
        self.assertNotIn("q quit", p.stdout, "no keys in plain text")

    def test_once_respects_columns_and_sort(self):
        p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2", "--sort", "pid", env={"COLUMNS": "72"})
        self.assertTrue(all(len(l) <= 72 for l in p.stdout.splitlines()), p.stdout)
        self.assertIn("sort: pid (ascending)", p.stdout)
        p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2", env={"COLUMNS": "20"})
        self.assertTrue(all(len(l) <= 20 for l in p.stdout.splitlines()), p.stdout)

    def test_once_json_validates(self):
        p = self.run_ok("top", "--once", "--json", "--simulate", "4xA40-tp2")
        frame = json.loads(p.stdout)
        validate(frame, "live-frame.schema.json")
        self.assertEqual(frame["source"], "direct")
        self.assertEqual(len([e for e in frame["entities"] if e["kind"] == "gpu"]), 4)
        self.assertEqual(p.stdout.count("\n"), 1, "one line of JSON")

    def test_once_no_color_and_dumb(self):
        for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
            with self.subTest(env=env):
                p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2", env=env)
                self.assertEqual(sorted(panels(p.stdout)), [0, 1, 2, 3])
                self.assertNotIn("\x1b", p.stdout)

    def test_ascii_without_a_utf8_locale(self):
        p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2", env={"LANG": "C", "LC_ALL": "C"})
        self.assertTrue(p.stdout.isascii(), p.stdout)
        p = self.run_ok("top", "--once", "--simulate", "4xA40-tp2", env={"LC_ALL": "C.UTF-8"})
        self.assertIn("\u00b0C", p.stdout)

    def test_interactive_direct_reads(self):
        t = self.make_tmux()
        t.start(["top", "--simulate", "4xA40-tp2", "-d", "200"])
        screen = t.wait_for(four_panels, "four GPU panels")
        self.assertIn("direct", screen.splitlines()[0])
        seq = re.search(r"seq (\d+)", screen.splitlines()[0])
        self.assertIsNotNone(seq, screen)
        t.wait_for(lambda s: (re.search(r"seq (\d+)", s) or seq).group(1) != seq.group(1), "a newer frame")
        t.keys("q")
        self.assertEqual(t.wait_exit(), 0)

    def test_piped_output_prints_frames_until_a_signal(self):
        p = subprocess.Popen([GPULSE, "top", "--simulate", "4xA40-tp2", "-d", "100"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=top_env())
        try:
            seen = ""
            deadline = time.monotonic() + DEADLINE_S
            while seen.count("gpulse top  ") < 3 and time.monotonic() < deadline:
                line = p.stdout.readline()
                if not line:
                    break
                seen += line
            self.assertGreaterEqual(seen.count("gpulse top  "), 3, seen)
            self.assertIn("\n\ngpulse top  ", seen, "frames separated by a blank line")
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=DEADLINE_S)
            self.assertEqual(p.returncode, 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_a_closed_pipe_ends_the_run(self):
        # `gpulse top | head`: once head has its lines and exits, top's next frame fails to write and
        # top ends by itself (exit 0) instead of printing into nothing for ever.
        p = subprocess.Popen([GPULSE, "top", "--simulate", "4xA40-tp2", "-d", "100"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=top_env())
        try:
            first = p.stdout.readline()
            self.assertIn(b"gpulse top  ", first)
            p.stdout.close()  # the reader goes away
            p.wait(timeout=DEADLINE_S)
            self.assertEqual(p.returncode, 0, p.stderr.read())
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_bad_flags_exit_2(self):
        for args in (["--sort", "cpu"], ["--delay", "5"], ["--delay", "60001"], ["--json"],
                     ["--direct", "--host", "unix:///nonexistent"], ["--bogus"],
                     ["--simulate", "4xA40-tp2", "--host", "unix:///nonexistent"],
                     ["--once", "--simulate", "no-such-scenario"], ["--once", "--host", "foo bar"],
                     ["--once", "--simulate", "4xA40-tp2", "--procfs-root", "/nonexistent/procfs"]):
            with self.subTest(args=args):
                p = run("top", *args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertNotEqual(p.stderr.strip(), "")

    def test_unreachable_agent_exits_1(self):
        d = tempfile.mkdtemp(prefix="gpulse-top-none-")
        self.addCleanup(shutil.rmtree, d, True)
        p = run("top", "--once", "--host", "unix://" + os.path.join(d, "no.sock"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertTrue(p.stderr.startswith("gpulse top: "), p.stderr)


if __name__ == "__main__":
    unittest.main()
