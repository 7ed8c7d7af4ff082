"""Test oracle: the upstream dcgm-power V1 validator's rules (`srtctl-validate-power`,
NVIDIA/srt-slurm refs/pull/291/head), restated independently in stdlib Python for tests only.

Written from the documented rules in shared/research/seed-upstreams.md, section (a): "Constants",
"Reason codes" (with "Groups" and "Validator classification"), "manifest.json", "Window file"
(status invariants), "samples.csv rules", "Validation rules" (gap and bracketing, digest, topology
and roles, wire contract, evidence reconciliation, lifecycle, malformed manifest) and "Validator CLI
and exit codes". It is not the upstream's code and has its own structure and names; it exists so
tests/collect/test_upstream_compat.py can ask "would the upstream accept this package?" without
the upstream installed.

`check(power_dir, result_root)` returns the failures (empty: the upstream would exit 0).
`audit(power_dir, result_root)` also returns the recomputed evidence (observed devices, window
rows, artifact errors, disk-derived reasons, the recomputed verdict); `finalize()` is the same
recomputation used the way the upstream's collector uses it when it writes a terminal manifest
(tests/collect/upstream_writer.py). V1 behaviours kept on purpose, and easy to get wrong:

- the V1 reason enum has no `sample_schedule_overrun`, `sample_loss_exceeded` or
  `clock_sync_unverified`: a manifest listing one fails "unknown v1 values"; unknown extra
  top-level keys are ignored;
- a window whose result path is unsafe, escapes the result root or has another stem is not a
  parsed window: it is an artifact error (`measurement_window_result_path_invalid`) and its
  expected window is then `measurement_window_missing`;
- a result whose timings differ from the window's is `measurement_window_result_mismatch` and
  the clock check does not run for that window;
- a device whose samples carry more than one UUID anywhere is `gpu_uuid_changed` in every
  window, with no gap figure for it;
- the only coverage rules are the brackets and the largest gap (> 3.0 s fails); no sample-loss rule;
- stored evidence must equal the recomputed one under strict JSON equality (a bool never equals a
  number, objects need equal key sets, arrays compare in order).
"""
import csv
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

# --- the wire constants -------------------------------------------------------------------------

SCHEMA_VERSION = 1
FIXED_STRINGS = {
    "producer": "srt-slurm.dcgm-power",
    "source_metric": "DCGM_FI_DEV_POWER_USAGE",
    "unit": "W",
    "power_scope": "gpu_device_board_as_reported_by_dcgm",
    "timestamp_source": "head_node_unix_clock",
}
CLOCK_SOURCE = FIXED_STRINGS["timestamp_source"]
SAMPLES_HEADER = ["schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index", "gpu_uuid", "power_w"]
MAX_GAP_S = 3.0
CLOCK_SLACK_S = 0.5
CLOCK_SLACK_FRACTION = 0.01
ROLES = ("prefill", "decode", "agg")
WINDOW_STATUSES = ("running", "completed", "failed", "interrupted")

# --- reason codes: the V1 enum, by class --------------------------------------------------------

SAMPLE_FILE_REASONS = ("samples_csv_missing", "samples_csv_header_mismatch", "samples_csv_malformed",
                       "duplicate_sample_row", "timestamp_non_monotonic")
DEVICE_REASONS = ("unexpected_device", "expected_device_missing", "gpu_uuid_changed",
                  "conflicting_worker_roles", "conflicting_het_groups")
WINDOW_REASONS = tuple("measurement_window_" + s for s in (
    "missing", "unexpected", "duplicate", "malformed", "artifact_path_invalid", "incomplete", "result_missing",
    "result_mismatch", "result_path_invalid", "clock_mismatch", "not_bracketed"))
DISK_DERIVED = frozenset(SAMPLE_FILE_REASONS + DEVICE_REASONS + WINDOW_REASONS + ("sample_gap_exceeded",))
RUNTIME_ONLY = frozenset((
    "exporter_startup_timeout", "exporter_launch_failed", "exporter_exited", "endpoint_timeout",
    "endpoint_http_error", "endpoint_parse_error", "endpoint_resolution_failed", "power_metric_missing",
    "duplicate_power_metric", "gpu_index_missing", "gpu_uuid_missing", "invalid_power_value",
    "mig_instance_unsupported", "samples_digest_unavailable", "collector_exception", "collector_interrupted",
    "collector_join_timeout", "benchmark_child_reap_timeout"))
V1_REASONS = DISK_DERIVED | RUNTIME_ONLY
FATAL = frozenset(("exporter_exited", "collector_exception", "collector_interrupted", "collector_join_timeout",
                   "benchmark_child_reap_timeout"))
STARTUP = frozenset(("exporter_startup_timeout", "exporter_launch_failed", "endpoint_resolution_failed"))
UNRECOVERABLE_STARTUP = frozenset(("exporter_launch_failed", "endpoint_resolution_failed"))

_DIGEST = re.compile(r"[0-9a-f]{64}")
_GIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# --- small predicates ---------------------------------------------------------------------------

def finite(value):
    """A finite JSON number; a bool is not one."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def integer(value):
    """A JSON integer; a bool is not one."""
    return isinstance(value, int) and not isinstance(value, bool)


def whole(value, least=0):
    """A JSON integer >= least."""
    return integer(value) and value >= least


def nonempty_text(value):
    return isinstance(value, str) and value != ""


def is_digest(value):
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def first_seen(values):
    return list(dict.fromkeys(values))


def safe_relative(text):
    """Non-empty, not starting with / or ~, no `..` and no empty component, the components being
    those of a POSIX path object (which folds `a//b` and `a/./b` into `a/b`, and `.` into none)."""
    if not text or text.startswith(("/", "~")):
        return False
    parts = PurePosixPath(text).parts
    return bool(parts) and all(part not in ("", "..") for part in parts)


def stays_under(root, relative):
    """ROOT/RELATIVE, symbolic links resolved, is still below ROOT resolved."""
    try:
        return Path(root, relative).resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def same_evidence(stored, fresh):
    """Strict JSON equality: numbers by value but never a bool for a number, same types otherwise,
    arrays in order, objects with equal key sets."""
    if _is_number(stored) or _is_number(fresh):
        return finite(stored) and finite(fresh) and stored == fresh
    if type(stored) is not type(fresh):
        return False
    if isinstance(stored, list):
        return len(stored) == len(fresh) and all(same_evidence(a, b) for a, b in zip(stored, fresh))
    if isinstance(stored, dict):
        return stored.keys() == fresh.keys() and all(same_evidence(stored[k], fresh[k]) for k in stored)
    return stored == fresh


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- samples.csv --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    timestamp: float
    seq: int
    host: str
    gpu: int
    uuid: str
    power: float


def _row(fields):
    """One data line, or None when it is malformed."""
    if len(fields) != len(SAMPLES_HEADER):
        return None
    try:
        version, stamp, seq, gpu, power = int(fields[0]), float(fields[1]), int(fields[2]), int(fields[4]), \
            float(fields[6])
    except ValueError:
        return None
    host, uuid = fields[3], fields[5]
    if version != SCHEMA_VERSION or not host or not uuid or seq < 0 or gpu < 0:
        return None
    if not math.isfinite(stamp) or not math.isfinite(power) or power < 0:
        return None
    return Row(stamp, seq, host, gpu, uuid, power)


def _parsed_lines(path, reasons):
    """Every well-formed data row in file order; appends the file-level reasons."""
    rows = []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            lines = csv.reader(f)
            if next(lines, None) != SAMPLES_HEADER:
                reasons.append("samples_csv_header_mismatch")
                return []
            for fields in lines:
                row = _row(fields)
                if row is None:
                    reasons.append("samples_csv_malformed")
                else:
                    rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error):
        reasons.append("samples_csv_malformed")
    return rows


def _drop_repeats(rows, reasons):
    keys, kept = set(), []
    for row in rows:
        key = (row.seq, row.host, row.gpu)
        if key in keys:
            reasons.append("duplicate_sample_row")
        else:
            keys.add(key)
            kept.append(row)
    return kept


def _per_device(rows):
    """{(host, gpu): its rows ordered by scrape_seq}, keys sorted."""
    groups = {}
    for row in rows:
        groups.setdefault((row.host, row.gpu), []).append(row)
    return {key: sorted(groups[key], key=lambda r: r.seq) for key in sorted(groups)}


def _goes_backwards(rows):
    for device_rows in _per_device(rows).values():
        if any(b.timestamp < a.timestamp for a, b in zip(device_rows, device_rows[1:])):
            return True
    return False


def read_samples(path):
    """(rows, reasons) as the strict V1 reader sees samples.csv."""
    if not os.path.isfile(path):
        return [], ["samples_csv_missing"]
    reasons = []
    rows = _drop_repeats(_parsed_lines(path, reasons), reasons)
    if _goes_backwards(rows):
        reasons.append("timestamp_non_monotonic")
    return rows, first_seen(reasons)


@dataclass(frozen=True)
class Device:
    host: str
    gpu: int
    uuids: tuple
    times: tuple  # sorted

    @property
    def key(self):
        return (self.host, self.gpu)

    def evidence(self):
        return {"hostname": self.host, "gpu_index": self.gpu, "gpu_uuids": list(self.uuids),
                "first_sample_time_unix": self.times[0], "last_sample_time_unix": self.times[-1]}


def observe(rows):
    devices = []
    for (host, gpu), device_rows in _per_device(rows).items():
        devices.append(Device(host, gpu, tuple(first_seen(r.uuid for r in device_rows)),
                              tuple(sorted(r.timestamp for r in device_rows))))
    return devices


# --- expected topology --------------------------------------------------------------------------

class Malformed(ValueError):
    pass


@dataclass(frozen=True)
class Expected:
    host: str
    gpu: int
    assignments: tuple  # ((role, worker_index, worker_process, het_group), ...)

    @property
    def key(self):
        return (self.host, self.gpu)


def _need(condition, what):
    if not condition:
        raise Malformed(what)


def _assignment(entry):
    _need(isinstance(entry, dict), f"assignment is not an object: {entry!r}")
    role, index, process = entry.get("worker_role"), entry.get("worker_index"), entry.get("worker_process")
    _need(role in ROLES, f"worker_role is not one of {', '.join(ROLES)}: {role!r}")
    _need(whole(index), f"worker_index is not an integer >= 0: {index!r}")
    _need(whole(process), f"worker_process is not an integer >= 0: {process!r}")
    group = entry.get("het_group")
    _need(group is None or whole(group), f"het_group is neither null nor an integer >= 0: {group!r}")
    return (role, index, process, group)


def _expected_device(entry):
    _need(isinstance(entry, dict), f"expected device is not an object: {entry!r}")
    assignments = entry.get("assignments") or []
    _need(isinstance(assignments, list) and assignments, f"assignments is not a non-empty list: {assignments!r}")
    host, gpu = entry.get("hostname"), entry.get("gpu_index")
    _need(nonempty_text(host), f"hostname is not a non-empty string: {host!r}")
    _need(whole(gpu), f"gpu_index is not an integer >= 0: {gpu!r}")
    return Expected(host, gpu, tuple(_assignment(a) for a in assignments))


def _expected_window(entry):
    _need(isinstance(entry, dict), f"expected window is not an object: {entry!r}")
    kind, concurrency = entry.get("benchmark_type"), entry.get("concurrency")
    _need(nonempty_text(kind), f"benchmark_type is not a non-empty string: {kind!r}")
    _need(whole(concurrency, 1), f"concurrency is not an integer >= 1: {concurrency!r}")
    return (kind, concurrency)


def _listed(manifest, key):
    entries = manifest.get(key) or []
    _need(isinstance(entries, list), f"{key} is not a list")
    return entries


def parse_topology(manifest):
    """(expected devices, expected window keys); raises Malformed."""
    devices = [_expected_device(e) for e in _listed(manifest, "expected_devices")]
    windows = [_expected_window(e) for e in _listed(manifest, "expected_windows")]
    return devices, windows


def role_conflicts(expected):
    return [] if all(len({a[0] for a in d.assignments}) == 1 for d in expected) else ["conflicting_worker_roles"]


def group_conflicts(expected):
    per_node = {}
    for device in expected:
        groups = {a[3] for a in device.assignments}
        if len(groups) != 1:
            return ["conflicting_het_groups"]
        group = groups.pop()
        if per_node.setdefault(device.host, group) != group:
            return ["conflicting_het_groups"]
    return []


def device_reasons(expected, observed):
    want, have = {d.key for d in expected}, {d.key for d in observed}
    reasons = []
    if not want or want - have:
        reasons.append("expected_device_missing")
    if have - want:
        reasons.append("unexpected_device")
    single = [d.uuids[0] for d in observed if len(d.uuids) == 1]
    if len(single) != len(observed) or len(set(single)) != len(single):
        reasons.append("gpu_uuid_changed")
    return first_seen(reasons + role_conflicts(expected) + group_conflicts(expected))


# --- windows/ -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    file: str  # "windows/<name>"
    kind: str
    concurrency: int
    result_path: str
    status: str
    start: float
    end: object  # float or None
    duration: object


def _invariants_hold(status, end, duration, reason):
    if status in ("running", "interrupted"):
        reason_ok = reason is None if status == "running" else nonempty_text(reason)
        return end is None and duration is None and reason_ok
    if not (finite(end) and finite(duration) and duration > 0):
        return False
    return reason is None if status == "completed" else nonempty_text(reason)


def _shape_ok(doc):
    return (integer(doc.get("schema_version")) and doc.get("schema_version") == SCHEMA_VERSION
            and doc.get("clock_source") == CLOCK_SOURCE and doc.get("status") in WINDOW_STATUSES
            and isinstance(doc.get("benchmark_type"), str) and integer(doc.get("concurrency"))
            and finite(doc.get("benchmark_start_time_unix")))


def _result_path_ok(doc, file_name, result_root):
    path = doc.get("result_path")
    return (isinstance(path, str) and safe_relative(path) and stays_under(result_root, path)
            and PurePosixPath(path).stem == PurePosixPath(file_name).stem)


def read_window(path, result_root):
    """(Window, None) or (None, reason) for one regular windows/*.json file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "measurement_window_malformed"
    if not isinstance(doc, dict) or not _shape_ok(doc):
        return None, "measurement_window_malformed"
    if not _result_path_ok(doc, os.path.basename(path), result_root):
        return None, "measurement_window_result_path_invalid"
    end, duration = doc.get("benchmark_end_time_unix"), doc.get("duration")
    if not _invariants_hold(doc["status"], end, duration, doc.get("reason")):
        return None, "measurement_window_malformed"
    return Window("windows/" + os.path.basename(path), doc["benchmark_type"], doc["concurrency"],
                  doc["result_path"], doc["status"], float(doc["benchmark_start_time_unix"]),
                  None if end is None else float(end), None if duration is None else float(duration)), None


def _window_entries(power_dir, errors):
    """Sorted entry names of windows/, or [] (recording an error when the directory is unusable)."""
    directory = os.path.join(power_dir, "windows")
    if not os.path.isdir(directory):
        return []
    if not stays_under(power_dir, "windows"):
        errors.append({"path": "windows", "reason_codes": ["measurement_window_artifact_path_invalid"]})
        return []
    try:
        return sorted(os.listdir(directory))
    except OSError:
        errors.append({"path": "windows", "reason_codes": ["measurement_window_artifact_path_invalid"]})
        return []


def _usable_entry(path, name):
    return not os.path.islink(path) and os.path.isfile(path) and PurePosixPath(name).suffix == ".json"


def scan_windows(power_dir, result_root, errors):
    """({key: Window} for uniquely keyed valid files, set of duplicated keys); appends artifact errors."""
    found, duplicated = {}, set()
    for name in _window_entries(power_dir, errors):
        path, relative = os.path.join(power_dir, "windows", name), "windows/" + name
        if not _usable_entry(path, name):
            errors.append({"path": relative, "reason_codes": ["measurement_window_artifact_path_invalid"]})
            continue
        window, reason = read_window(path, result_root)
        if window is None:
            errors.append({"path": relative, "reason_codes": [reason]})
            continue
        _file_window(window, found, duplicated, errors)
    return found, duplicated


def _file_window(window, found, duplicated, errors):
    key = (window.kind, window.concurrency)
    duplicate = {"reason_codes": ["measurement_window_duplicate"]}
    if key in duplicated:
        errors.append({"path": window.file, **duplicate})
    elif key in found:
        duplicated.add(key)
        errors.append({"path": found.pop(key).file, **duplicate})
        errors.append({"path": window.file, **duplicate})
    else:
        found[key] = window


def _result_reasons(window, result_root):
    """The completed window against its result file: [] or one reason."""
    path = Path(result_root, window.result_path)  # a path object: `a//b` and a trailing `/` fold away
    if not path.is_file():
        return ["measurement_window_result_missing"]
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ["measurement_window_result_missing"]
    if not isinstance(result, dict):
        return ["measurement_window_result_mismatch"]
    timings = [result.get(k) for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration")]
    if not all(finite(t) for t in timings) or timings != [window.start, window.end, window.duration]:
        return ["measurement_window_result_mismatch"]
    return _clock_reasons(window)


def _clock_reasons(window):
    wall = window.end - window.start
    if wall <= 0 or abs(wall - window.duration) > max(CLOCK_SLACK_S, CLOCK_SLACK_FRACTION * window.duration):
        return ["measurement_window_clock_mismatch"]
    return []


def _bracketing(times, start, end):
    before = [t for t in times if t <= start]
    after = [t for t in times if t >= end]
    if not before or not after:
        return None
    return [before[-1], *[t for t in times if start < t < end], after[0]]


def coverage(window, expected_keys, observed):
    """(gaps {"host/uuid": largest gap}, reasons) over every expected device."""
    by_key = {d.key: d for d in observed}
    gaps, reasons = {}, []
    for key in sorted(expected_keys):
        device = by_key.get(key)
        if device is None:
            reasons.append("measurement_window_not_bracketed")
        elif len(device.uuids) != 1:
            reasons.append("gpu_uuid_changed")
        else:
            sequence = _bracketing(device.times, window.start, window.end)
            if sequence is None:
                reasons.append("measurement_window_not_bracketed")
                continue
            largest = max((b - a for a, b in zip(sequence, sequence[1:])), default=0.0)
            gaps[f"{device.host}/{device.uuids[0]}"] = largest
            if largest > MAX_GAP_S:
                reasons.append("sample_gap_exceeded")
    return gaps, reasons


def window_row(key, window, duplicated, result_root, expected_keys, observed):
    """The window_validations entry for one expected window key."""
    row = {"benchmark_type": key[0], "concurrency": key[1], "window_file": None, "power_coverage_valid": False,
           "reason_codes": [], "per_device_max_sample_gap_seconds": {}}
    if window is None:
        row["reason_codes"] = ["measurement_window_duplicate" if key in duplicated else "measurement_window_missing"]
        return row
    reasons = ["measurement_window_incomplete"] if window.status != "completed" else _result_reasons(window,
                                                                                                     result_root)
    gaps = {}
    if not reasons:
        gaps, reasons = coverage(window, expected_keys, observed)
    row.update(window_file=window.file, power_coverage_valid=not reasons, reason_codes=first_seen(reasons),
               per_device_max_sample_gap_seconds=gaps)
    return row


def audit_windows(power_dir, result_root, expected_windows, expected_keys, observed):
    """(window_validations, artifact_errors) as the V1 window audit computes them."""
    errors = []
    found, duplicated = scan_windows(power_dir, result_root, errors)
    wanted = set(expected_windows)
    for key in sorted(found):
        if key not in wanted:
            errors.append({"path": found[key].file, "reason_codes": ["measurement_window_unexpected"]})
    rows = [window_row(key, found.get(key), duplicated, result_root, expected_keys, observed)
            for key in expected_windows]
    return rows, errors


# --- the manifest's own wire contract -----------------------------------------------------------

def _identity_failures(m):
    out = []
    if not integer(m.get("schema_version")) or m.get("schema_version") != SCHEMA_VERSION:
        out.append(f"schema_version is {m.get('schema_version')!r}, expected {SCHEMA_VERSION!r}")
    out += [f"{k} is {m.get(k)!r}, expected {v!r}" for k, v in FIXED_STRINGS.items() if m.get(k) != v]
    out += [f"{k} is not a non-empty string" for k in ("producer_version", "job_id", "run_name")
            if not nonempty_text(m.get(k))]
    commit = m.get("producer_git_commit")
    if commit is not None and not (isinstance(commit, str) and _GIT_ID.fullmatch(commit)):
        out.append("producer_git_commit is neither null nor a full lowercase Git object ID")
    return out


def _lifecycle_failures(m):
    out = [] if m.get("status") == "complete" else [f"status is {m.get('status')!r}, expected 'complete'"]
    started, stopped = m.get("started_at_unix"), m.get("stopped_at_unix")
    if not finite(started):
        out.append("started_at_unix is not a finite number")
    if not finite(stopped):
        out.append("stopped_at_unix is not finite in a terminal manifest")
    elif finite(started) and stopped < started:
        out.append("stopped_at_unix precedes started_at_unix")
    return out


def _settings_failures(m):
    out = [f"{k} is not finite and positive" for k in ("sample_interval_seconds", "request_timeout_seconds")
           if not (finite(m.get(k)) and m.get(k) > 0)]
    if finite(m.get("sample_interval_seconds")) and m["sample_interval_seconds"] > MAX_GAP_S:
        out.append(f"sample_interval_seconds exceeds the {MAX_GAP_S}s coverage limit")
    longest = m.get("max_scrape_duration_seconds")
    if longest is not None and not (finite(longest) and longest >= 0):
        out.append("max_scrape_duration_seconds is neither null nor a finite non-negative number")
    out += [f"{k} is not a non-negative integer" for k in ("scrape_count", "sample_row_count") if not whole(m.get(k))]
    if m.get("samples_sha256") is None:
        out.append("samples_sha256 is missing")
    elif not is_digest(m.get("samples_sha256")):
        out.append("samples_sha256 is not a lowercase SHA-256 digest")
    out += [f"{k} is {m.get(k)!r}, expected a boolean" for k in ("required", "publication_valid")
            if not isinstance(m.get(k), bool)]
    return out


def stored_reasons(m):
    """The manifest's reason_codes as a list of strings, or None when it is not one."""
    codes = m.get("reason_codes")
    return codes if isinstance(codes, list) and all(isinstance(c, str) for c in codes) else None


def _reason_failures(m):
    codes = stored_reasons(m)
    if codes is None:
        return ["reason_codes is not a list of strings"]
    out = []
    unknown = sorted(set(codes) - V1_REASONS)
    if unknown:
        out.append("reason_codes contains unknown v1 values: " + ", ".join(unknown))
    if len(codes) != len(set(codes)):
        out.append("reason_codes contains duplicates")
    blocking = FATAL | (STARTUP if m.get("required") is True else frozenset())
    if set(codes) & blocking:
        out.append("complete manifest carries lifecycle-failure reasons: " + ", ".join(sorted(set(codes) & blocking)))
    return out


def _exporter_failures(m):
    exporter = m.get("dcgm_exporter")
    if not isinstance(exporter, dict):
        return ["dcgm_exporter is not an object"]
    out = [] if nonempty_text(exporter.get("container_image_resolved")) else \
        ["dcgm_exporter.container_image_resolved is empty"]
    image_digest = exporter.get("container_image_sha256")
    if image_digest is not None and not is_digest(image_digest):
        out.append("dcgm_exporter.container_image_sha256 is neither null nor a lowercase SHA-256 digest")
    if not (whole(exporter.get("port"), 1) and exporter["port"] < 65536):
        out.append("dcgm_exporter.port is not a valid port number")
    if not nonempty_text(exporter.get("command")):
        out.append("dcgm_exporter.command is empty")
    return out


def wire_failures(m):
    return (_identity_failures(m) + _lifecycle_failures(m) + _settings_failures(m) + _reason_failures(m)
            + _exporter_failures(m))


def digest_failures(m, samples_path):
    stored = m.get("samples_sha256")
    if not is_digest(stored):
        return []
    try:
        actual = sha256_of(samples_path)
    except OSError as e:
        return [f"samples_sha256 could not be verified: {e}"]
    return [] if actual == stored else [f"samples_sha256 mismatch: manifest records {stored}, recomputed {actual}"]


def lifecycle_sample_failures(m, rows):
    started, stopped = m.get("started_at_unix"), m.get("stopped_at_unix")
    if not rows or not (finite(started) and finite(stopped)):
        return []
    first, last = min(r.timestamp for r in rows), max(r.timestamp for r in rows)
    out = [f"samples.csv starts at {first}, before started_at_unix {started}"] if first < started else []
    if last > stopped:
        out.append(f"samples.csv ends at {last}, after stopped_at_unix {stopped}")
    return out


# --- recomputation ------------------------------------------------------------------------------

@dataclass
class Recomputed:
    """What the files say, independent of the manifest's stored claims."""
    rows: list
    sample_reasons: list
    observed: list
    device_reasons: list
    window_validations: list
    artifact_errors: list

    @property
    def disk_reasons(self):
        return set(self.sample_reasons) | set(self.device_reasons) | {
            r for w in self.window_validations for r in w["reason_codes"]} | {
            r for e in self.artifact_errors for r in e["reason_codes"]}

    def publishable(self, recorded, required, digest_ok, windows_expected):
        lifecycle_ok = not (recorded & FATAL) and not (required is True and recorded & STARTUP)
        windows_ok = windows_expected and all(w["power_coverage_valid"] for w in self.window_validations)
        return (lifecycle_ok and not (recorded & UNRECOVERABLE_STARTUP) and not self.device_reasons and windows_ok
                and not self.sample_reasons and digest_ok and not self.artifact_errors)


def recompute(power_dir, result_root, expected, expected_windows):
    rows, sample_reasons = read_samples(os.path.join(power_dir, "samples.csv"))
    observed = observe(rows)
    validations, errors = audit_windows(power_dir, result_root, expected_windows, {d.key for d in expected},
                                        observed)
    return Recomputed(rows, sample_reasons, observed, device_reasons(expected, observed), validations, errors)


def _count_failures(m, fresh):
    out = []
    if m.get("sample_row_count") != len(fresh.rows):
        out.append(f"sample_row_count is {m.get('sample_row_count')!r}, disk has {len(fresh.rows)} rows")
    if fresh.rows:
        least = max(r.seq for r in fresh.rows) + 1
        if not whole(m.get("scrape_count"), least):
            out.append(f"scrape_count is {m.get('scrape_count')!r}, disk needs at least {least}")
    return out


def _stored_evidence_failures(m, fresh):
    out = [] if fresh.observed else ["observed_devices is empty"]
    recomputed = (("observed_devices", [d.evidence() for d in fresh.observed], "devices derived from samples.csv"),
                  ("window_validations", fresh.window_validations, "recomputed window audit"),
                  ("artifact_errors", fresh.artifact_errors, "recomputed artifact scan"))
    return out + [f"{key} does not match the {what}" for key, value, what in recomputed
                  if not same_evidence(m.get(key), value)]


def evidence_failures(m, fresh, expected, expected_windows):
    """The stored claims against the recomputation."""
    return (_count_failures(m, fresh) + _stored_evidence_failures(m, fresh) + _reason_set_failures(m, fresh)
            + _verdict_failures(m, fresh, expected_windows) + _duplicate_key_failures(expected, expected_windows))


def _reason_set_failures(m, fresh):
    codes = stored_reasons(m)
    if codes is None:
        return []
    stored = set(codes) & DISK_DERIVED
    if stored == fresh.disk_reasons:
        return []
    return [f"disk-derived reason_codes mismatch: stored-only={sorted(stored - fresh.disk_reasons)}, "
            f"recomputed-only={sorted(fresh.disk_reasons - stored)}"]


def recomputed_verdict(m, fresh, expected_windows):
    recorded = set(stored_reasons(m) or ())
    return fresh.publishable(recorded, m.get("required"), is_digest(m.get("samples_sha256")), bool(expected_windows))


def _verdict_failures(m, fresh, expected_windows):
    stored = m.get("publication_valid")
    if not isinstance(stored, bool):
        return []
    verdict = recomputed_verdict(m, fresh, expected_windows)
    if stored != verdict:
        return [f"publication_valid is {stored}, recomputed {verdict}"]
    return [] if stored else ["stored publication_valid is false"]


def _duplicate_key_failures(expected, expected_windows):
    out = []
    for label, keys in (("expected_devices", [d.key for d in expected]), ("expected_windows", expected_windows)):
        if len(set(keys)) != len(keys):
            out.append(f"{label} contains duplicate keys")
    return out


# --- the validator ------------------------------------------------------------------------------

@dataclass
class Audit:
    failures: list
    fresh: object = None  # Recomputed, or None when the manifest could not be used
    recomputed_publication_valid: object = None
    manifest: dict = field(default_factory=dict)

    @property
    def ok(self):
        return not self.failures

    @property
    def disk_reasons(self):
        return set() if self.fresh is None else self.fresh.disk_reasons


def load_manifest(power_dir):
    """(manifest dict, None) or (None, the failure)."""
    path = os.path.join(power_dir, "manifest.json")
    if not os.path.isfile(path):
        return None, f"manifest missing: {path}"
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return None, f"manifest unreadable: {e}"
    if not isinstance(doc, dict):
        return None, f"manifest malformed: not an object ({type(doc).__name__})"
    return doc, None


def _window_scoped(fresh, expected_windows):
    out = [] if expected_windows else ["no expected measurement window"]
    out += [f"{r} (window {w['benchmark_type']}/{w['concurrency']})" for w in fresh.window_validations
            for r in w["reason_codes"]]
    return out + [f"{r} ({e['path']})" for e in fresh.artifact_errors for r in e["reason_codes"]]


def _file_failures(m, fresh, expected, expected_windows):
    """The failures the recomputation finds, scoped as the upstream prints them."""
    out = [f"{r} in samples.csv" for r in fresh.sample_reasons]
    out += lifecycle_sample_failures(m, fresh.rows)
    out += [f"{r} (device identity/topology)" for r in fresh.device_reasons]
    out += _window_scoped(fresh, expected_windows)
    return out + [f"{r} (topology)" for r in role_conflicts(expected)]


def audit(power_dir, result_root):
    """Everything the V1 validator would report for this package."""
    power_dir, result_root = str(power_dir), str(result_root)
    m, problem = load_manifest(power_dir)
    if m is None:
        return Audit([problem])
    failures = wire_failures(m) + digest_failures(m, os.path.join(power_dir, "samples.csv"))
    try:
        expected, expected_windows = parse_topology(m)
    except Malformed as e:
        return Audit(failures + [f"manifest malformed: {e}"], manifest=m)
    fresh = recompute(power_dir, result_root, expected, expected_windows)
    failures += _file_failures(m, fresh, expected, expected_windows)
    failures += evidence_failures(m, fresh, expected, expected_windows)
    return Audit(failures, fresh, recomputed_verdict(m, fresh, expected_windows), m)


def check(power_dir, result_root):
    """The failures srtctl-validate-power V1 would print; [] when it would exit 0."""
    return audit(power_dir, result_root).failures


# --- the collector's finalization (used by upstream_writer.py) ----------------------------------

def finalize(power_dir, result_root, expected_devices, expected_windows, runtime_reasons=(), required=False):
    """(observed_devices, window_validations, artifact_errors, reason_codes, publication_valid) for a
    complete package, computed from the files the way the upstream collector finalizes its manifest:
    the same recomputation as the validator, runtime reasons first, then sample, device, window and
    artifact reasons, deduplicated. EXPECTED_DEVICES are manifest entries; EXPECTED_WINDOWS keys."""
    expected = [_expected_device(e) for e in expected_devices]
    fresh = recompute(str(power_dir), str(result_root), expected, list(expected_windows))
    samples = os.path.join(str(power_dir), "samples.csv")
    reasons = first_seen([*runtime_reasons, *fresh.sample_reasons, *fresh.device_reasons,
                          *(r for w in fresh.window_validations for r in w["reason_codes"]),
                          *(r for e in fresh.artifact_errors for r in e["reason_codes"])])
    status_ok = not (set(reasons) & FATAL) and not (required and set(reasons) & STARTUP)
    valid = (status_ok and not fresh.device_reasons and bool(expected_windows) and os.path.isfile(samples)
             and all(w["power_coverage_valid"] for w in fresh.window_validations)
             and not fresh.sample_reasons and not fresh.artifact_errors)
    return [d.evidence() for d in fresh.observed], fresh.window_validations, fresh.artifact_errors, reasons, valid


def main(argv):
    """`upstream_v1.py POWER_DIR RESULT_ROOT`: print the failures; exit 0 when there are none."""
    failures = check(argv[1], argv[2])
    for line in failures:
        print("FAIL", line)
    return 1 if failures else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
