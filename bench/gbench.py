"""Google Benchmark JSON, one value per repetition (bench/run.sh's gbench() passes
--benchmark_repetitions=5 and keeps the individual runs): the reports take the median and the spread
of the repetitions (bench/results.py) and pair repetition k of one benchmark with repetition k of
another for a ratio.

    from gbench import load
    b = load("tick.json")
    b.values("BM_Tick/null", "ns_per_device_tick", scale=1e9)   # [ns, ns, ...], one per repetition
    b.time("BM_ProcessSpawnAnchor", "real_time")                 # ns, one per repetition
"""
import json

_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Runs:
    def __init__(self, doc):
        self.context = doc.get("context", {})
        self.iterations, self.medians = {}, {}
        for b in doc.get("benchmarks", []):
            if b.get("error_occurred"):
                continue
            name = b.get("run_name", b["name"])
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    self.medians[name] = b
            else:
                self.iterations.setdefault(name, []).append(b)
        for runs in self.iterations.values():
            runs.sort(key=lambda b: b.get("repetition_index", 0))

    def has(self, name):
        return name in self.iterations or name in self.medians

    def _runs(self, name):
        # An aggregates-only file still reads: its median stands as one run.
        runs = self.iterations.get(name) or ([self.medians[name]] if name in self.medians else [])
        if not runs:
            raise SystemExit(f"bench: no run of {name} in the benchmark's JSON (skipped with an error?)")
        return runs

    def values(self, name, key, scale=1.0):
        """A counter (or any numeric key) of each repetition, times scale. Rate counters with
        kInvert (ns_per_device_tick and the like) are seconds of CPU time per item."""
        return [b[key] * scale for b in self._runs(name)]

    def time(self, name, which="cpu_time"):
        """real_time or cpu_time of each repetition, per iteration, in ns."""
        return [b[which] * _UNIT_NS[b.get("time_unit", "ns")] for b in self._runs(name)]

    def first(self, name, key, default=KeyError):
        """A key of the first repetition (a count that every repetition shares)."""
        b = self._runs(name)[0]
        if default is KeyError:
            return b[key]
        return b.get(key, default)


def load(path):
    with open(path, encoding="utf-8") as f:
        return Runs(json.load(f))


def pairs(xs, ys, f):
    """f(x_k, y_k) for each repetition k both have (repetition k of one beside repetition k of the
    other: the runs of a ratio)."""
    return [f(x, y) for x, y in zip(xs, ys)]
