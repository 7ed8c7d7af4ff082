"""Measurement-window stamping for Python benchmarks (the `gpulse window begin/end` contract).

Standalone (standard library only). Under `gpulse collect`, the environment carries the windows
directory (GPULSE_MEASUREMENT_WINDOW_DIR, or SRT_MEASUREMENT_WINDOW_DIR) and the result root
(GPULSE_RESULT_ROOT). Wrap only the formal measurement, not the warm-up:

    import gpulse_window
    with gpulse_window.MeasurementWindow("sa-bench", concurrency, result_path) as window:
        run_measured_phase()          # writes result_path before the block ends

On a normal exit the window becomes `completed` and the same start, end and duration are written
into the result JSON (result and window are boundary-identical); on an exception it becomes
`failed` with the exception as reason. A process killed inside the block leaves the window
`running`; `gpulse collect` converts it to `interrupted` once the child is reaped.
`MeasurementWindow.create(...)` returns None (stamp nothing) without a result path, without the
windows directory, or for a result outside the result root. File format: docs/power-contract.md.
"""
import json
import os
import secrets
import time

SCHEMA_VERSION = 1
CLOCK_SOURCE = "head_node_unix_clock"
WINDOW_DIR_ENVS = ("GPULSE_MEASUREMENT_WINDOW_DIR", "SRT_MEASUREMENT_WINDOW_DIR")
RESULT_ROOT_ENV = "GPULSE_RESULT_ROOT"


def _atomic_write_json(path, doc):
    """Temp file, fsync, rename, in the window file's directory, as gpulse writes window files: the
    directory is opened without following a link (one planted there is refused with OSError naming
    it), the file is created exclusively, and its mode is 0644 whatever the umask."""
    directory = os.path.dirname(path) or "."
    name = os.path.basename(path)
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(directory):
            raise OSError(e.errno, f"{directory} is a symbolic link: refused") from e
        raise
    try:
        tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            os.fsync(dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(dfd)


class MeasurementWindow:
    def __init__(self, benchmark_type, concurrency, result_path, windows_dir=None, result_root=None):
        window = self.create(benchmark_type, concurrency, result_path, windows_dir, result_root)
        self._inner = window
        self.start = self.end = self.duration = None

    @staticmethod
    def create(benchmark_type, concurrency, result_path, windows_dir=None, result_root=None):
        """A stamping window, or None when nothing should be stamped (warm-up, no telemetry)."""
        if not result_path:
            return None
        windows_dir = windows_dir or next((os.environ[e] for e in WINDOW_DIR_ENVS if os.environ.get(e)), None)
        result_root = result_root or os.environ.get(RESULT_ROOT_ENV)
        if not windows_dir or not os.path.isdir(windows_dir) or not result_root:
            return None
        root = os.path.realpath(result_root)
        target = os.path.realpath(result_path)
        rel = os.path.relpath(target, root)
        if rel.startswith("..") or os.path.isabs(rel):
            return None
        return _Window(benchmark_type, int(concurrency), target, rel.replace(os.sep, "/"), windows_dir)

    def __enter__(self):
        if self._inner:
            self._inner.mark_running()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._inner:
            if exc_type is None:
                self._inner.mark_completed()
            elif not issubclass(exc_type, KeyboardInterrupt):
                self._inner.mark_failed(f"{exc_type.__name__}: {exc}")
        return False


class _Window:
    def __init__(self, benchmark_type, concurrency, result_file, result_rel, windows_dir):
        self.doc = {"schema_version": SCHEMA_VERSION, "benchmark_type": benchmark_type, "result_path": result_rel,
                    "concurrency": concurrency, "benchmark_start_time_unix": None, "benchmark_end_time_unix": None,
                    "duration": None, "clock_source": CLOCK_SOURCE, "status": "running", "reason": None}
        self.result_file = result_file
        stem = os.path.splitext(os.path.basename(result_rel))[0]
        self.path = os.path.join(windows_dir, stem + ".json")
        self._mono = None

    def _refuse_stem_collision(self):
        """A window file is named after its result's stem: a result with the same file name as
        another, in another directory, would replace that result's window. Refused (ValueError)
        before the measured phase starts."""
        try:
            with open(self.path) as f:
                other = json.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            other = None
        if isinstance(other, dict) and other.get("result_path") == self.doc["result_path"]:
            return
        what = other.get("result_path") if isinstance(other, dict) else None
        raise ValueError(f"{self.path} already holds the window of result {what or 'another result'}; result "
                         f"{self.doc['result_path']} has the same file name: give every result a distinct file name")

    def mark_running(self):
        self._refuse_stem_collision()
        self.doc["benchmark_start_time_unix"] = time.time()
        self._mono = time.monotonic()
        _atomic_write_json(self.path, self.doc)

    def _boundary(self):
        self.doc["benchmark_end_time_unix"] = time.time()
        self.doc["duration"] = time.monotonic() - self._mono

    def mark_completed(self):
        self._boundary()
        try:
            with open(self.result_file) as f:
                result = json.load(f)
            if not isinstance(result, dict):
                raise ValueError("result is not a JSON object")
            for key in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"):
                result[key] = self.doc[key]
            _atomic_write_json(self.result_file, result)
            self.doc["status"] = "completed"
        except (OSError, ValueError) as e:
            self.doc["status"] = "failed"
            self.doc["reason"] = f"result file not stamped: {e}"
        _atomic_write_json(self.path, self.doc)

    def mark_failed(self, reason):
        self._boundary()
        self.doc["status"] = "failed"
        self.doc["reason"] = reason or "benchmark failed"
        _atomic_write_json(self.path, self.doc)
