"""Test fixture: power packages laid out the way the upstream (NVIDIA/srt-slurm dcgm-power V1,
refs/pull/291/head) writes them, so gpulse's validator can be tried on the upstream's own output.

Written from the writer behaviour documented in shared/research/seed-upstreams.md, section (a):
"manifest.json" (PowerManifest key order; written as JSON with indent=2 and a final newline,
atomically), "samples.csv rules" (the exact header, rows as Python's csv writer writes them, so
lines end in CRLF, floats as repr(), one row per (cycle, GPU), `timestamp_unix` the midpoint of
the request's start and settle), "Collector mechanics" (V1: fixed-cadence cycles that never
overlap, so a late cycle is followed by catch-up cycles; one final bracketing cycle after stop),
"Window file" (sa-bench `measurement_window.py`: `windows/<result stem>.json`, its key order,
indent=2, `running` first and then replaced by the terminal state) and the sa-bench result layout
(`<log root>/sa-bench_isl_<ISL>_osl_<OSL>/results_concurrency_<C>_gpus_<N>_ctx_<P>_gen_<D>.json`,
saved with a plain json.dump). The terminal manifest's evidence is computed from the files the
way the upstream collector does it: with the validator's own recomputation (upstream_v1.finalize).
Not the upstream's code. For tests only.

`write_package(log_root, variant="clean")` writes `<log_root>/power/` and the result files and
returns (power_dir, result_root). `VARIANTS` lists every variant and whether the V1 rules accept it.
"""
import csv
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field, replace

import upstream_v1

T0 = 1785168000.0            # started_at_unix of every package (2026-07-27)
ISL, OSL = 1024, 1024
RESULT_DIR = f"sa-bench_isl_{ISL}_osl_{OSL}"
REQUEST_S = 0.0134           # how long a normal scrape takes
SPAWN_S = 0.0009             # per-endpoint delay before its request starts (threads start in turn)


@dataclass(frozen=True)
class Node:
    hostname: str
    gpus: int
    role: str
    het_group: object


@dataclass(frozen=True)
class Window:
    concurrency: int
    start: float              # seconds after T0
    wall: float               # end - start on the head clock
    skew: float = -0.0007     # duration (monotonic) - wall
    status: str = "completed"
    reason: object = None
    result_timings: object = None   # (start, end, duration) written to the result instead of the window's
    result_path: object = None      # the window's result_path instead of the real one
    write_window: bool = True


@dataclass(frozen=True)
class Plan:
    nodes: tuple = (Node("gpu-node-01", 2, "prefill", 0), Node("gpu-node-02", 2, "decode", 1))
    interval: float = 1.0
    windows: tuple = (Window(4, 3.4, 10.5), Window(8, 16.2, 10.25))
    late: dict = field(default_factory=dict)        # cycle -> extra seconds the first node's answer takes
    silent: frozenset = frozenset()                 # (cycle, hostname) that timed out: no rows
    uuid_change: object = None                      # (hostname, gpu, first cycle or "final", new uuid)
    runtime: tuple = ()                             # runtime-only reasons the collector recorded
    stop_after: float = 0.35                        # the benchmark ends this long after its last window
    required: bool = False
    extra_keys: dict = field(default_factory=dict)  # more top-level manifest keys (after the V1 ones)


# --- the collector's timeline -------------------------------------------------------------------

def uuid_of(hostname, gpu):
    h = hashlib.sha256(f"{hostname}/{gpu}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def power_of(node_index, gpu, cycle):
    return 312.5 + 41.25 * node_index + 17.75 * gpu + 3.125 * (cycle % 7) + 0.001 * cycle


def _request(plan, cycle, node_index, cycle_start):
    """(started, settled) of one endpoint's request in a cycle."""
    started = cycle_start + SPAWN_S * (node_index + 1)
    late = plan.late.get(cycle, 0.0) if node_index == 0 else 0.0
    return started, started + REQUEST_S + late


def _cycle_rows(plan, cycle, cycle_start, final):
    """(rows, reasons, end of the cycle, longest request) for one cycle; nodes in hostname order."""
    rows, reasons, end, longest = [], [], cycle_start, 0.0
    for index, node in sorted(enumerate(plan.nodes), key=lambda item: item[1].hostname):
        started, settled = _request(plan, cycle, index, cycle_start)
        end, longest = max(end, settled), max(longest, settled - started)
        if (cycle, node.hostname) in plan.silent:
            reasons.append("endpoint_timeout")
            continue
        stamp = (started + settled) / 2
        rows += [[1, repr(stamp), cycle, node.hostname, gpu, _uuid(plan, node.hostname, gpu, cycle, final),
                  repr(power_of(index, gpu, cycle))] for gpu in range(node.gpus)]
    return rows, reasons, end, longest


def _uuid(plan, hostname, gpu, cycle, final):
    change = plan.uuid_change
    if change and change[:2] == (hostname, gpu) and (final if change[2] == "final" else cycle >= change[2]):
        return change[3]
    return uuid_of(hostname, gpu)


def stop_time(plan):
    return T0 + max(w.start + w.wall for w in plan.windows) + plan.stop_after


def collect(plan):
    """(rows, runtime reasons, scrape_count, longest request, end of the final cycle): the V1 loop
    from T0 + 0.5 s until stop, then one final bracketing cycle."""
    rows, reasons, longest = [], list(plan.runtime), 0.0
    first, stop, cycle, free_at = T0 + 0.5, stop_time(plan), 0, T0 + 0.5
    while True:
        start = max(free_at, first + cycle * plan.interval)
        final = start >= stop
        start = max(free_at, stop) if final else start
        new, why, free_at, took = _cycle_rows(plan, cycle, start, final)
        rows, reasons, longest = rows + new, reasons + why, max(longest, took)
        cycle += 1
        if final:
            return rows, reasons, cycle, longest, free_at


# --- files --------------------------------------------------------------------------------------

def atomic_json(path, payload, **dump):
    """Temp file in the same directory, fsync, rename; the upstream's JSON writers all do this."""
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path) + ".", text=True)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(payload, f, **dump)
        if dump.get("indent"):
            f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)


def write_samples(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(upstream_v1.SAMPLES_HEADER)
        out.writerows(rows)


def result_name(plan, concurrency):
    gpus = sum(n.gpus for n in plan.nodes)
    prefill = sum(n.gpus for n in plan.nodes if n.role == "prefill")
    decode = sum(n.gpus for n in plan.nodes if n.role == "decode")
    return f"results_concurrency_{concurrency}_gpus_{gpus}_ctx_{prefill}_gen_{decode}.json"


def window_payload(window, result_path, status, end, duration, reason):
    """The sa-bench measurement-window record, in its writer's key order."""
    return {"schema_version": 1, "benchmark_type": "sa-bench", "result_path": result_path,
            "concurrency": window.concurrency, "benchmark_start_time_unix": T0 + window.start,
            "benchmark_end_time_unix": end, "duration": duration, "clock_source": "head_node_unix_clock",
            "status": status, "reason": reason}


def window_bounds(window):
    start = T0 + window.start
    return start, start + window.wall, window.wall + window.skew


def result_payload(plan, window):
    """What sa-bench saves with --save-result (a subset of its keys), with the window's boundary."""
    start, end, duration = window.result_timings or window_bounds(window)
    return {"date": "20260727-120000", "backend": "dynamo", "model_id": "deepseek-ai/DeepSeek-R1",
            "tokenizer_id": "deepseek-ai/DeepSeek-R1", "num_prompts": window.concurrency * 10,
            "request_rate": "inf", "max_concurrency": window.concurrency, "duration": duration,
            "completed": window.concurrency * 10, "total_input_tokens": window.concurrency * 10 * ISL,
            "total_output_tokens": window.concurrency * 10 * OSL, "benchmark_start_time_unix": start,
            "benchmark_end_time_unix": end}


def write_window(plan, window, power_dir, result_root):
    name = result_name(plan, window.concurrency)
    os.makedirs(os.path.join(result_root, RESULT_DIR), exist_ok=True)
    with open(os.path.join(result_root, RESULT_DIR, name), "w", encoding="utf-8") as f:
        json.dump(result_payload(plan, window), f)
    if not window.write_window:
        return
    path = os.path.join(power_dir, "windows", name)
    result_path = window.result_path or f"{RESULT_DIR}/{name}"
    start, end, duration = window_bounds(window)
    atomic_json(path, window_payload(window, result_path, "running", None, None, None), indent=2)
    if window.status in ("running", "interrupted"):
        end = duration = None
    atomic_json(path, window_payload(window, result_path, window.status, end, duration, window.reason), indent=2)


# --- the manifest -------------------------------------------------------------------------------

def expected_devices(plan):
    entries = [{"hostname": n.hostname, "gpu_index": gpu,
                "assignments": [{"worker_role": n.role, "worker_index": 0, "worker_process": 0,
                                 "het_group": n.het_group}]}
               for n in plan.nodes for gpu in range(n.gpus)]
    return sorted(entries, key=lambda e: (e["hostname"], e["gpu_index"]))


def expected_windows(plan):
    return [{"benchmark_type": "sa-bench", "concurrency": w.concurrency} for w in plan.windows]


def manifest(plan, power_dir, result_root, collected):
    rows, runtime, scrapes, longest, last_cycle_end = collected
    devices, windows = expected_devices(plan), expected_windows(plan)
    observed, validations, errors, reasons, valid = upstream_v1.finalize(
        power_dir, result_root, devices, [(w["benchmark_type"], w["concurrency"]) for w in windows],
        runtime, plan.required)
    doc = {"schema_version": 1, "producer": "srt-slurm.dcgm-power", "producer_version": "0.4.0",
           "producer_git_commit": hashlib.sha1(b"upstream-writer").hexdigest(),
           "source_metric": "DCGM_FI_DEV_POWER_USAGE", "unit": "W",
           "power_scope": "gpu_device_board_as_reported_by_dcgm", "timestamp_source": "head_node_unix_clock",
           "job_id": "4242", "run_name": "upstream-writer", "sample_interval_seconds": plan.interval,
           "request_timeout_seconds": 2.0, "max_scrape_duration_seconds": longest, "required": plan.required,
           "started_at_unix": T0, "stopped_at_unix": last_cycle_end + 0.05, "status": "complete",
           "publication_valid": valid,
           "dcgm_exporter": {"container_image_resolved": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
                             "container_image_sha256": None, "port": 9400,
                             "command": "dcgm-exporter --collect-interval=100 --address :9400"},
           "expected_devices": devices, "observed_devices": observed, "expected_windows": windows,
           "scrape_count": scrapes, "sample_row_count": len(rows),
           "samples_sha256": upstream_v1.sha256_of(os.path.join(power_dir, "samples.csv")),
           "window_validations": validations, "artifact_errors": errors, "reason_codes": reasons}
    return {**doc, **plan.extra_keys}


def write_plan(log_root, plan):
    power_dir, result_root = os.path.join(log_root, "power"), log_root
    os.makedirs(os.path.join(power_dir, "windows"), exist_ok=True)
    collected = collect(plan)
    write_samples(os.path.join(power_dir, "samples.csv"), collected[0])
    for window in plan.windows:
        write_window(plan, window, power_dir, result_root)
    atomic_json(os.path.join(power_dir, "manifest.json"), manifest(plan, power_dir, result_root, collected),
                indent=2, sort_keys=False)
    return power_dir, result_root


# --- variants -----------------------------------------------------------------------------------

BASE = Plan()
W4, W8 = BASE.windows


def _windows(*windows):
    return replace(BASE, windows=tuple(windows))


def _edit_manifest(power_dir, change):
    path = os.path.join(power_dir, "manifest.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    change(doc)
    atomic_json(path, doc, indent=2)


def _tamper_power(power_dir, _):
    path = os.path.join(power_dir, "samples.csv")
    with open(path, newline="", encoding="utf-8") as f:
        lines = f.read().split("\r\n")
    fields = lines[5].split(",")
    fields[6] = repr(float(fields[6]) + 1.0)
    lines[5] = ",".join(fields)
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write("\r\n".join(lines))


def _forge_validity(power_dir, _):
    def forge(doc):
        doc["publication_valid"] = True
        doc["reason_codes"] = []
        for row in doc["window_validations"]:
            row.update(power_coverage_valid=True, reason_codes=[])
    _edit_manifest(power_dir, forge)


def _store_false(power_dir, _):
    _edit_manifest(power_dir, lambda doc: doc.update(publication_valid=False))


def _add_v2_reason(power_dir, _):
    _edit_manifest(power_dir, lambda doc: doc["reason_codes"].append("sample_loss_exceeded"))


def _null_worker_process(power_dir, _):
    _edit_manifest(power_dir, lambda doc: doc["expected_devices"][0]["assignments"][0].update(worker_process=None))


def _malformed_row(power_dir, _):
    with open(os.path.join(power_dir, "samples.csv"), "a", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow([1, "not-a-number", 999, "gpu-node-01", 0, uuid_of("gpu-node-01", 0), "1.0"])


def _gap_plan():
    """The first node silent for cycles 6..9 (inside window sa-bench/4): a gap of about 5 s."""
    return replace(BASE, silent=frozenset((c, "gpu-node-01") for c in range(6, 10)))


MISMATCHED_RESULT = (T0 + W8.start, T0 + W8.start + W8.wall, W8.wall + W8.skew + 0.25)

# name -> (plan, damage after the package is finalized or None, accepted by the V1 rules)
VARIANTS = {
    "clean": (BASE, None, True),
    "late_answer": (replace(BASE, late={8: 1.7}), None, True),
    "best_effort_startup_timeout_recovered": (replace(BASE, runtime=("exporter_startup_timeout",)), None, True),
    "required_mode": (replace(BASE, required=True), None, True),
    "extra_manifest_keys": (replace(BASE, extra_keys={"power_profile": "dcgm", "site_note": "rack 7"}), None, True),
    "result_timing_mismatch": (_windows(W4, replace(W8, skew=-2.0, result_timings=MISMATCHED_RESULT)), None, False),
    "uuid_change_outside_windows": (replace(BASE, uuid_change=("gpu-node-02", 1, "final", "GPU-replaced")), None,
                                    False),
    "result_path_escapes": (_windows(W4, replace(W8, result_path="../outside/" + result_name(BASE, 8))), None,
                            False),
    "result_path_other_stem": (_windows(W4, replace(W8, result_path=f"{RESULT_DIR}/other.json")), None, False),
    "sample_gap_exceeded": (_gap_plan(), None, False),
    "window_missing": (_windows(W4, replace(W8, write_window=False)), None, False),
    "window_failed": (_windows(W4, replace(W8, status="failed", reason="benchmark exited with status 1")), None,
                      False),
    "window_interrupted": (_windows(W4, replace(W8, status="interrupted",
                                                reason="benchmark did not reach a formal end boundary")), None,
                           False),
    "window_not_bracketed": (replace(BASE, stop_after=-3.0), None, False),
    "clock_mismatch": (_windows(W4, replace(W8, skew=-2.0)), None, False),
    "tampered_power_value": (BASE, _tamper_power, False),
    "malformed_row_appended": (BASE, _malformed_row, False),
    "forged_validity": (_gap_plan(), _forge_validity, False),
    "stored_false_verdict": (BASE, _store_false, False),
    "v2_reason_code": (BASE, _add_v2_reason, False),
    "worker_process_null": (BASE, _null_worker_process, False),
}


def write_package(log_root, variant="clean"):
    """Writes VARIANT under LOG_ROOT; returns (power_dir, result_root)."""
    plan, damage, _ = VARIANTS[variant]
    power_dir, result_root = write_plan(log_root, plan)
    if damage:
        damage(power_dir, result_root)
    return power_dir, result_root


def main(argv):
    """`upstream_writer.py LOG_ROOT [VARIANT]`: write one package (for checking by hand)."""
    print(*write_package(argv[1], argv[2] if len(argv) > 2 else "clean"))


if __name__ == "__main__":
    import sys
    main(sys.argv)
