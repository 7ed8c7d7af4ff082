"""The rows of bench/RESULTS.md as every area's benchmark prints them (bench/run.sh AREA).

One table per capability, with the columns RESULTS.md uses: figure, value, anchor (measured in the
same run unless it says *published*), anchor value, ratio, target, command, date, machine. A ratio
measured over several runs is printed as its median with the spread of the runs beside it, and a
target is judged on the median, "within the spread" when the runs fall on both sides of it.

    from results import Table, spread, ratio, judge
    t = Table("Exporter", "bash bench/run.sh exporter")
    t.row("CPU per 1,000 scrapes", spread(cpu, "{:.3f} s"), "node_exporter", spread(ncpu, "{:.3f} s"),
          ratio([a / b for a, b in zip(cpu, ncpu)]), judge([...], "<=", 0.5, "x"))
    t.print()
"""
import datetime
import os
import re
import statistics


def _load():
    try:
        with open("/proc/loadavg", encoding="utf-8") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def machine():
    """The machine column: cores and the load average when the table was started."""
    return f"ref. ({os.cpu_count()} vCPUs), load average {_load()} at start"


def median(values):
    return statistics.median(values)


def spread(values, fmt="{:.2f}", unit=""):
    """'1.23 (1.10–1.31, 3 runs)': the median, then the lowest and highest of the runs."""
    values = list(values)
    if not values:
        return "n/a"
    m = fmt.format(median(values)) + unit
    if len(values) == 1:
        return m + " (1 run)"
    return f"{m} ({fmt.format(min(values))}–{fmt.format(max(values))}{unit}, {len(values)} runs)"


def ratio(values, fmt="{:.2f}"):
    """A ratio over runs: '**1.23×** (1.10–1.31, 3 runs)'."""
    values = list(values)
    if not values:
        return "n/a"
    m = f"**{fmt.format(median(values))}×**"
    if len(values) == 1:
        return m + " (1 run)"
    return f"{m} ({fmt.format(min(values))}–{fmt.format(max(values))}, {len(values)} runs)"


def judge(values, op, target, label=None):
    """'≤ 2×: met', '< 20 ms: **not met**', or 'within the spread' when the median misses the target but
    some runs meet it, or meets it while some runs miss. `op` is one of <, <=, >, >=, ==."""
    values = list(values)
    checks = {"<": lambda v: v < target, "<=": lambda v: v <= target, ">": lambda v: v > target,
              ">=": lambda v: v >= target, "==": lambda v: v == target}
    ok = checks[op]
    text = label or f"{ {'<=': '≤', '>=': '≥'}.get(op, op)} {target:g}"
    if not values:
        return f"{text}: not measured"
    met = ok(median(values))
    mixed = any(ok(v) for v in values) and not all(ok(v) for v in values)
    if mixed:
        return f"{text}: {'met' if met else '**not met**'}, within the spread"
    return f"{text}: {'met' if met else '**not met**'}"


class Table:
    HEADER = ("| figure | value | anchor | anchor value | ratio | target | command | date | machine |\n"
              "|---|---:|---|---:|---:|---|---|---|---|")

    def __init__(self, title, command, note=None):
        self.title, self.command, self.note = title, command, note
        self.rows = []
        self.date = datetime.date.today().isoformat()
        self.machine = machine()

    def row(self, figure, value, anchor="", anchor_value="", ratio="", target="", command=None):
        self.rows.append((figure, value, anchor, anchor_value, ratio, target, command))

    def print(self, head=True, end=True):
        """The table. Several scripts can write one table in turn: without `head` only the rows are
        printed (they continue the table printed before), without `end` no closing blank line (the
        next script's rows continue this one). Each script's first row gives its own command and
        machine."""
        if head:
            print(f"## {self.title}\n")
            if self.note:
                print(self.note + "\n")
            print(self.HEADER)
        for i, (figure, value, anchor, anchor_value, ratio_, target, command) in enumerate(self.rows):
            cmd = command or (f"`{self.command}`" if i == 0 else "as above")
            cells = [figure, value, anchor, anchor_value, ratio_, target, cmd, self.date,
                     self.machine if i == 0 else "as above"]
            print("| " + " | ".join(re.sub(r"(?<!\\)\|", r"\\|", str(c)) for c in cells) + " |")
        print(end="\n" if end else "", flush=True)


def cpu_seconds(pid):
    """User plus system CPU seconds of a process so far (its own threads, not its children)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
