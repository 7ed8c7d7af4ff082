"""Docs that cannot drift (issue 40): every command README.md and docs/*.md show runs here, against
the simulator and the repository's fixtures, and the output they show is compared with what runs.

What a fenced block is, and what is done with it:
- a **transcript**: lines starting with `$ ` are commands, the lines after each its output. The
  command runs from the repository root (`gpulse` is the binary under test) and its stdout and stderr
  together must match the lines shown, where a line `...` stands for any number of lines and `...`
  within a line for any characters (a path that differs between machines). The simulator's clock
  is frozen (`GPULSE_SIM_CLOCK=0`): its readings move with time since it was loaded, so on a busy
  machine an unfrozen clock changes more than a last digit. A number with a fractional part may
  differ from the one shown by 0.05 % of it (a reading rounded on another machine); every other
  character is compared exactly.
- a **script** (```sh, or lines starting with `gpulse`): the whole block runs as one bash script in
  a network, mount and PID namespace of its own (its /tmp, /run and /var/lib are empty directories of
  the test, its loopback its own, nothing it starts outliving it), NVML being the simulator (`GPULSE_NVML_LIBRARY`, scenario 8xH100),
  with the simulator's clock frozen (`GPULSE_SIM_CLOCK=0`). Each command must exit 0, or N where its
  comment says `# exit N`; a comment `# prints: TEXT` must appear in its output. A line ending in
  `&` starts a server and the next line waits until its socket or port answers. A command that runs
  until stopped (`exporter`/`agent` in the foreground, `top` without `--once`, `policy --reg` without
  `--count`) runs for a few seconds and must still be running or have exited 0 then.
- an HTML comment `<!-- doc-test: ... -->` right before a block says otherwise:
  `usage` (a synopsis: every flag it names must be one its subcommand takes),
  `skip REASON` (not run, with the reason; flags still checked as for `usage`),
  `layout REASON` (the shape of an output, with placeholders: not a command), or
  `output-of` followed by lines of a script: the block is the output of the script's last command.
- Every other block (file contents, layouts) is not a command.

Also checked: every `gpulse SUB ...` shown inline names a subcommand and only flags it takes; every
link and every repository path named in backticks exists; nothing points outside the repository.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from agent_e2e import Agent
from gpulse_e2e import BUILTIN_SCENARIOS, DEVICE_SELECTION_VARS, GPULSE, SOURCE_DIR, default_job_control_signals

ROOT = os.path.abspath(SOURCE_DIR)
BIN_DIR = os.path.dirname(os.path.abspath(GPULSE))
SIM_LIB = os.path.join(BIN_DIR, "libgpulse-nvml-sim.so")
TOP_DIRS = ("bench", "deploy", "docs", "packaging", "scripts", "sim", "src", "tests", "tools")
DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(\w[\w-]*)\s*(.*?)-->", re.S)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def doc_files():
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


class Block:
    def __init__(self, path, line, lang, text, kind, arg):
        self.path, self.line, self.lang, self.text, self.kind, self.arg = path, line, lang, text, kind, arg

    def where(self):
        return f"{self.path}:{self.line}"


def blocks(rel):
    text = read(rel)
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip()
        kind, arg = None, ""
        if before.endswith("-->"):
            d = None
            for d in DIRECTIVE.finditer(before):
                pass
            if d and d.end() == len(before):
                kind, arg = d.group(1), d.group(2).strip()
        out.append(Block(rel, text[:m.start()].count("\n") + 1, m.group(1), m.group(2), kind, arg))
    return out


def is_command_block(b):
    lines = [re.sub(r"^\s*(\w+=\S*\s+)*", "", l) for l in logical_lines(b.text)]
    return b.lang in ("sh", "console", "bash") or any(l.startswith(("$ ", "gpulse ")) for l in lines)


def logical_lines(text):
    """The block's lines with backslash continuations joined; comments and blank lines kept apart."""
    out, cur = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        out.append(cur + raw)
        cur = ""
    if cur:
        out.append(cur)
    return out


def split_comment(line):
    """(command, comment): the comment is what follows the first ` # ` outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


# ---- flags named in synopses and inline commands ------------------------------------------------

_help_cache = {}


def help_text(words):
    key = tuple(words)
    if key not in _help_cache:
        p = subprocess.run([GPULSE, *words, "--help"], capture_output=True, text=True, timeout=30)
        _help_cache[key] = p.stdout if p.returncode == 0 else None
    return _help_cache[key]


def help_flags(text):
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)", text))


def command_words(span):
    """[(words, flags)] for a shown command `gpulse A|B [C|D] FLAGS...`: the subcommand paths it names
    (alternatives expanded) and the flags it names before a standalone `--`."""
    span = span.replace("\\|", "|")
    tokens = span.split()
    assert tokens[0] == "gpulse", span
    if len(tokens) > 1 and tokens[1].endswith(":"):
        return [], []  # a message gpulse prints, not a command
    subs = tokens[1].split("|") if len(tokens) > 1 else []
    rest = tokens[2:]
    paths = [[s] for s in subs if s]
    if rest and re.fullmatch(r"[a-z]+(\|[a-z]+)*", rest[0]) and subs and help_text([subs[0], rest[0].split("|")[0]]):
        paths = [[s, t] for s in subs for t in rest[0].split("|")]
        rest = rest[1:]
    flags = []
    for t in rest:
        if t == "--" or t in ("|", "&&", ";"):
            break
        for f in re.findall(r"(?:^|[\[(|/])(--?[A-Za-z][\w-]*)", t):
            flags.append(f)
    return paths, flags


class DocsTest(unittest.TestCase):
    maxDiff = None

    # -- what the docs point at ------------------------------------------------------------------
    def test_no_path_outside_the_repository(self):
        bad = []
        for rel in doc_files() + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "adr", "*.md"))):
            for n, line in enumerate(read(rel).splitlines(), 1):
                if re.search(r"(?<![\w.-])(\.\./)*shared/(seeds|research|ARCHITECTURE|STYLE)|\.\./\.library", line):
                    bad.append(f"{rel}:{n}: {line.strip()[:100]}")
        self.assertEqual(bad, [], "paths outside the repository")

    def test_every_link_and_named_path_exists(self):
        missing = []
        for rel in doc_files():
            base = os.path.dirname(os.path.join(ROOT, rel))
            text = read(rel)
            for m in re.finditer(r"\]\(([^)\s#]+)(#[^)]*)?\)", text):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(base, target))):
                    missing.append(f"{rel}: link {target}")
            for m in re.finditer(r"(?<![\w./-])((?:%s)/[\w./+-]*[\w/])" % "|".join(TOP_DIRS), text):
                path = m.group(1)
                if re.search(r"[<>*{}…]|\.\.\.|/[A-Z]+(/|$)|\bN\b", path):
                    continue
                if not os.path.exists(os.path.join(ROOT, path)):
                    missing.append(f"{rel}: {path}")
        self.assertEqual(sorted(set(missing)), [], "named in the docs but not in the repository")

    def test_builtin_scenario_list_is_whole(self):
        m = re.search(r"a built-in scenario —(.*?)— or a scenario YAML file", read("README.md"), re.S)
        self.assertIsNotNone(m, "README.md no longer lists the built-in scenarios")
        listed = sorted(re.findall(r"`([\w-]+)`", m.group(1)))
        files = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "sim", "scenarios", "*.yaml")))
        self.assertEqual(listed, files)
        self.assertEqual(listed, sorted(BUILTIN_SCENARIOS))

    def test_metrics_page_names_every_family_served(self):
        """docs/metrics.md (generated from the catalogue) names every family the exporter's and the
        agent's /metrics serve, with a health watch, a policy and an Alertmanager configured."""
        with tempfile.TemporaryDirectory(prefix="gpulse-docs-") as tmp:
            agent = Agent(tmp, "health-trips", args=["--alertmanager", "http://127.0.0.1:9"])
            try:
                agent.cli("health", "-g", "0", "--set", "a")
                agent.cli("policy", "-g", "0", "--set", "0,0", "-x")
                text = agent.tcp_request("GET", "/metrics").text
            finally:
                agent.stop()
        once = subprocess.run([GPULSE, "exporter", "--simulate", "faults", "--once"], capture_output=True,
                              text=True, timeout=60).stdout
        served = set(re.findall(r"^# TYPE (\S+)", text + once, re.M))
        documented = set(re.findall(r"^\|[^|\n]*\| `([\w:]+)` \||^\| `([\w:]+)` \|", read("docs/metrics.md"), re.M))
        documented = {a or b for a, b in documented}
        self.assertGreater(len(served), 50)
        self.assertEqual(sorted(served - documented), [], "served but not in docs/metrics.md")

    # -- commands shown inline and in synopses -------------------------------------------------
    def check_flags(self, where, span, problems):
        paths, flags = command_words(span)
        if not paths:
            return
        for words in paths:
            text = help_text(words)
            if text is None:
                problems.append(f"{where}: `gpulse {' '.join(words)}` is not a subcommand ({span})")
                continue
            known = help_flags(text)
            for f in flags:
                if f not in known:
                    problems.append(f"{where}: `gpulse {' '.join(words)}` takes no {f} ({span})")

    def test_inline_commands_name_real_subcommands_and_flags(self):
        problems = []
        for rel in doc_files():
            text = FENCE.sub("", read(rel))
            for m in re.finditer(r"`(gpulse [^`]+)`", text):
                self.check_flags(rel, m.group(1), problems)
        self.assertEqual(problems, [])

    def test_usage_and_skipped_blocks_name_real_flags(self):
        problems, seen = [], 0
        for rel in doc_files():
            for b in blocks(rel):
                if b.kind in ("skip", "layout"):
                    self.assertTrue(b.arg, f"{b.where()}: doc-test: {b.kind} needs its reason")
                if b.kind not in ("usage", "skip"):
                    continue
                for line in logical_lines(b.text):
                    cmd, _ = split_comment(line)
                    for part in re.split(r"&&|\|(?= *gpulse)|;", cmd):
                        part = part.strip()
                        part = re.sub(r"^(\w+=\S+\s+)+", "", part)
                        if part.startswith("gpulse "):
                            seen += 1
                            self.check_flags(b.where(), part, problems)
        self.assertEqual(problems, [])
        self.assertGreater(seen, 0)

    def test_every_command_block_is_run_or_says_why_not(self):
        loose = [b.where() for rel in doc_files() for b in blocks(rel)
                 if b.kind is None and is_command_block(b) and b.lang not in ("sh", "console", "bash", "text")
                 and not b.text.startswith("$ ")]
        self.assertEqual(loose, [], "command blocks without a language or a doc-test directive")
        unknown = [f"{b.where()}: {b.kind}" for rel in doc_files() for b in blocks(rel)
                   if b.kind not in (None, "usage", "skip", "output-of", "layout")]
        self.assertEqual(unknown, [])

    # -- transcripts -----------------------------------------------------------------------------
    def transcripts(self):
        for rel in doc_files():
            for b in blocks(rel):
                if b.kind is None and b.text.startswith("$ "):
                    yield b

    def test_transcripts(self):
        n = 0
        for b in self.transcripts():
            for cmd, shown in split_transcript(b.text):
                n += 1
                with self.subTest(block=b.where(), command=cmd):
                    env = dict(clean_env(), GPULSE_SIM_CLOCK="0")
                    p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=120)
                    got = p.stdout
                    self.assertEqual(p.returncode, 0, f"{b.where()}: `{cmd}` exited {p.returncode}:\n{got}")
                    mismatch = compare_output(shown, got.splitlines())
                    self.assertIsNone(mismatch, f"{b.where()}: `{cmd}` no longer prints what the doc shows:\n"
                                                f"{mismatch}\n--- it printed:\n{got}")
        self.assertGreater(n, 5)

    # -- scripts ---------------------------------------------------------------------------------
    def test_scripts(self):
        if not namespaces_work():
            self.skipTest("unshare(1) cannot make a user, network and mount namespace here")
        n = 0
        for rel in doc_files():
            for b in blocks(rel):
                if b.kind == "output-of":
                    n += 1
                    with self.subTest(block=b.where()):
                        self.run_script(b, b.arg, expect=b.text)
                elif b.kind is None and is_command_block(b) and not b.text.startswith("$ ") and b.lang != "text":
                    n += 1
                    with self.subTest(block=b.where()):
                        self.run_script(b, b.text)
        self.assertGreater(n, 5)

    def run_script(self, b, text, expect=None):
        with tempfile.TemporaryDirectory(prefix="gpulse-docs-") as tmp:
            script, last = make_script(text)
            with open(os.path.join(tmp, "doc.sh"), "w", encoding="utf-8") as f:
                f.write(script)
            for d in ("tmp", "run", "varlib"):
                os.mkdir(os.path.join(tmp, d))
            shutil.copy(os.path.join(tmp, "doc.sh"), os.path.join(tmp, "tmp", "doc.sh"))
            # The checkout and the build may themselves live under /tmp (CI clones there): each is bound
            # into the fresh directory first, so the recursive bind over /tmp keeps it in its place.
            keep = "".join(f'mkdir -p "$1/{d}{rel}" && mount --bind "{path}" "$1/{d}{rel}" && '
                           for path, d, rel in shadowed_paths())
            inner = (keep + "mount --rbind \"$1/run\" /run && mount --rbind \"$1/varlib\" /var/lib && "
                     "mount --rbind \"$1/tmp\" /tmp && ip link set lo up && cd \"$2\" && exec bash /tmp/doc.sh")
            # A PID namespace too, whose first process dies with unshare (--kill-child): a block that
            # hangs past the timeout takes every server it started with it.
            p = subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--mount", "--propagation",
                                "private", "--pid", "--fork", "--kill-child", "bash", "-c", inner, "doc", tmp, ROOT],
                               env=clean_env(script=True), capture_output=True, text=True, timeout=240,
                               preexec_fn=default_job_control_signals)
            self.assertEqual(p.returncode, 0, f"{b.where()}: the block failed:\n{p.stderr[-4000:]}")
            if expect is not None:
                with open(os.path.join(tmp, "tmp", f"out.{last}"), encoding="utf-8") as f:
                    got = f.read()
                mismatch = compare_output(expect.splitlines(), got.splitlines())
                self.assertIsNone(mismatch, f"{b.where()}: the output shown drifted:\n{mismatch}\n--- it printed:\n{got}")


SHADOWED = (("/tmp", "tmp"), ("/run", "run"), ("/var/lib", "varlib"))


def shadowed_paths():
    """(path, directory in the block's temp dir, path below it) for the checkout and the build
    directory where they sit under a directory a block gets a fresh one of; outermost only."""
    out = []
    for path in sorted({os.path.realpath(ROOT), os.path.realpath(BIN_DIR)}):
        if any(path.startswith(p + "/") for p, _, _ in out):
            continue
        for base, d in SHADOWED:
            if path.startswith(base + "/"):
                out.append((path, d, path[len(base):]))
    return out


def split_transcript(text):
    out = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


NUMBER = re.compile(r"-?\d+\.\d+|-?\d+|[^\d-]+|-")


def line_matches(shown, got):
    if shown.rstrip() == got.rstrip():
        return True
    if "..." in shown:  # an elided part of the line (a path that differs between machines)
        return re.fullmatch(".*".join(re.escape(p) for p in shown.rstrip().split("...")), got.rstrip()) is not None
    a, b = NUMBER.findall(shown.rstrip()), NUMBER.findall(got.rstrip())
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if "." in x and "." in y and len(x.split(".")[1]) == len(y.split(".")[1]):
            try:
                if abs(float(x) - float(y)) <= 5e-4 * abs(float(x)):
                    continue
            except ValueError:
                pass
        return False
    return True


def compare_output(shown, got):
    """None when GOT matches SHOWN (a `...` line in SHOWN: any lines), else what differs."""
    shown = [l for l in shown]
    while shown and not shown[-1].strip():
        shown.pop()

    def match(i, j):
        if i == len(shown):
            return j == len(got)
        if shown[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and line_matches(shown[i], got[j]) and match(i + 1, j + 1)

    if match(0, 0):
        return None
    for i, line in enumerate(shown):
        if line.strip() != "..." and not any(line_matches(line, g) for g in got):
            return f"shown line {i + 1} not printed: {line!r}"
    return "the lines shown are printed in another order or with others between them"


def clean_env(script=False):
    env = {k: v for k, v in os.environ.items()
           if k not in DEVICE_SELECTION_VARS and not k.startswith(("GPULSE_", "SLURM_", "NVIDIA_"))}
    env["PATH"] = BIN_DIR + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["NO_COLOR"] = "1"
    env.pop("XDG_RUNTIME_DIR", None)
    if script:
        env.update(GPULSE_NVML_LIBRARY=SIM_LIB, GPULSE_SIM_SCENARIO="8xH100", GPULSE_SIM_CLOCK="0",
                   TERM="xterm", HOME="/tmp", SHELL="/bin/sh")  # script(1) runs $SHELL; dash forks
    return env


def runs_until_stopped(line):
    return any(command_runs_until_stopped(part) for part in re.split(r"&&|\|\||;|\|", line))


def command_runs_until_stopped(cmd):
    words = re.sub(r"^\s*(\w+=\S*\s+)*", "", cmd).split()
    if not words or words[0] != "gpulse" or len(words) < 2:
        return False
    sub = words[1]
    if sub in ("exporter", "agent"):
        return "--once" not in words
    if sub == "top":
        return "--once" not in words
    if sub == "policy":
        return "--reg" in words and "--count" not in words
    return False


def wait_target(cmd):
    m = re.search(r"--socket[ =](\S+)", cmd)
    if m:
        return f"test -S {m.group(1)}"
    m = re.search(r"(?:-a|--address|--web\.listen-address)[ =](\S*):(\d+)", cmd)
    host, port = (m.group(1) or "127.0.0.1", m.group(2)) if m else ("127.0.0.1", "9400")
    return f"curl -sf -o /dev/null http://{host}:{port}/metrics"


PREAMBLE = r"""set -u
__fail() { echo "doc-test: $*" >&2; for f in /tmp/out.*; do echo "--- $f" >&2; tail -n 20 "$f" >&2; done; exit 99; }
__wait() { for _ in $(seq 1200); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; __fail "not ready: $1"; }
__stop() { local p; for p in $(jobs -p); do kill -INT "$p" 2>/dev/null; done; wait; }
trap __stop EXIT
"""


def make_script(text):
    """The bash script that runs a block's commands and checks each (see the module's docstring), and
    the number of its last command, whose output is /tmp/out.N."""
    out, n = [PREAMBLE], 0
    for line in logical_lines(text):
        cmd, comment = split_comment(line)
        if not cmd.strip():
            continue
        cmd = cmd.replace("/etc/gpulse/", "/tmp/etc-gpulse/")
        n += 1
        m = re.match(r"exit (\d+)\b", comment)
        code = m.group(1) if m else "0"
        q = cmd.replace("'", "'\\''")
        if cmd.endswith("&"):
            out.append(f"{cmd[:-1].rstrip()} > /tmp/out.{n} 2>&1 &")
            out.append(f"__wait '{wait_target(cmd)}'")
            continue
        if runs_until_stopped(cmd):
            inner = f"timeout -s INT -k 5 3 bash -c '{q}'"
            if re.search(r"\bgpulse top\b", cmd):
                inner = "script -qec " + "'" + inner.replace("'", "'\\''") + "' /dev/null"
            out.append(f"{{ {inner} ; }} > /tmp/out.{n} 2>&1; rc=$?")
            out.append(f"case $rc in 0|124|130) ;; *) __fail 'exit '$rc' from: {q}' ;; esac")
            out.append(f"[ -s /tmp/out.{n} ] || __fail 'no output from: {q}'")
            continue
        out.append(f"{{ {cmd} ; }} > /tmp/out.{n} 2>&1; rc=$?")
        out.append(f"[ $rc = {code} ] || __fail 'exit '$rc' (not {code}) from: {q}'")
        m = re.match(r"prints: (.*)", comment)
        if m:
            want = m.group(1).replace("'", "'\\''")
            out.append(f"grep -qF -- '{want}' /tmp/out.{n} || __fail 'no \"{want}\" from: {q}'")
    setup = ("mkdir -p /tmp/etc-gpulse && cp deploy/default-counters.csv /tmp/etc-gpulse/ && "
             "printf 'basic_auth_users: {}\\n' > /tmp/etc-gpulse/web.yml\n")
    return out[0] + setup + "\n".join(out[1:]) + "\n", n


_ns_ok = None


def namespaces_work():
    global _ns_ok
    if _ns_ok is None:
        p = subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
                            "--kill-child", "true"],
                           capture_output=True, timeout=30) if shutil.which("unshare") else None
        _ns_ok = bool(p and p.returncode == 0 and shutil.which("ip"))
    return _ns_ok


if __name__ == "__main__":
    unittest.main()
