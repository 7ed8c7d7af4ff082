#!/usr/bin/python3
"""Generate a large, valid power package for the validate-power benchmark.

Usage: gen_package.py OUT_DIR --size-mb 2048 [--nodes 16 --gpus 8 --windows 4]

Writes OUT_DIR/logs/power/{manifest.json,samples.csv,windows/*.json} and the result files under
OUT_DIR/logs, with 1 s samples on every GPU until samples.csv reaches the requested size. The stored
evidence (digest, counts, observed devices, window validations) is computed here, so the package
validates (exit 0) and the benchmark measures a full pass of every rule. Never commit the output.
"""
import argparse
import hashlib
import json
import os

HEADER = "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
T0 = 1700000000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=2048)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--windows", type=int, default=4)
    a = ap.parse_args()
    logs = os.path.join(a.out, "logs")
    power = os.path.join(logs, "power")
    os.makedirs(os.path.join(power, "windows"), exist_ok=True)
    os.makedirs(os.path.join(logs, "sa-bench"), exist_ok=True)
    devs = [(f"node-{n:03d}", g) for n in range(a.nodes) for g in range(a.gpus)]
    uuid = {d: f"GPU-{hashlib.sha256(repr(d).encode()).hexdigest()[:16]}-{d[1]:04d}-4c7e-9a1b-{d[0][-3:]}000000{d[1]}" for d in devs}
    target = int(a.size_mb * 1024 * 1024)
    sha = hashlib.sha256()
    rows = 0
    seq = 0
    size = len(HEADER)
    with open(os.path.join(power, "samples.csv"), "w", newline="") as f:
        f.write(HEADER)
        sha.update(HEADER.encode())
        suffix = {d: f",{d[0]},{d[1]},{uuid[d]}," for d in devs}
        while size < target:
            parts = []
            for _ in range(256):  # 256 scrape cycles per write
                ts = repr(T0 + seq + 0.000123)
                prefix = f"1,{ts},{seq}"
                for d in devs:
                    parts.append(f"{prefix}{suffix[d]}{100.0 + (seq * 7 + d[1] * 13) % 600 + 0.25}\n")
                seq += 1
            chunk = "".join(parts)
            f.write(chunk)
            b = chunk.encode()
            sha.update(b)
            size += len(b)
            rows += 256 * len(devs)
    last = seq - 1
    span = last - 4
    wins = []
    for w in range(a.windows):
        start = T0 + 2.5 + w * span / a.windows
        end = start + span / a.windows - 2.0
        dur = end - start
        stem = f"result_c{w + 1}"
        win = {"schema_version": 1, "benchmark_type": "sa-bench", "result_path": f"sa-bench/{stem}.json",
               "concurrency": w + 1, "benchmark_start_time_unix": start, "benchmark_end_time_unix": end,
               "duration": dur, "clock_source": "head_node_unix_clock", "status": "completed", "reason": None}
        json.dump(win, open(os.path.join(power, "windows", stem + ".json"), "w"))
        json.dump({"benchmark_start_time_unix": start, "benchmark_end_time_unix": end, "duration": dur},
                  open(os.path.join(logs, "sa-bench", stem + ".json"), "w"))
        gaps = {f"{d[0]}/{uuid[d]}": 1.0 for d in devs}
        wins.append({"benchmark_type": "sa-bench", "concurrency": w + 1, "window_file": f"windows/{stem}.json",
                     "power_coverage_valid": True, "reason_codes": [], "per_device_max_sample_gap_seconds": gaps})
    half = a.nodes // 2 or 1
    manifest = {
        "schema_version": 1, "producer": "srt-slurm.dcgm-power", "producer_version": "bench",
        "producer_git_commit": None, "source_metric": "DCGM_FI_DEV_POWER_USAGE", "unit": "W",
        "power_scope": "gpu_device_board_as_reported_by_dcgm", "timestamp_source": "head_node_unix_clock",
        "job_id": "bench", "run_name": "bench", "sample_interval_seconds": 1.0, "request_timeout_seconds": 2.0,
        "max_scrape_duration_seconds": None, "required": True, "started_at_unix": T0 - 1,
        "stopped_at_unix": T0 + last + 1, "status": "complete", "publication_valid": True,
        "dcgm_exporter": {"container_image_resolved": "dcgm-exporter", "container_image_sha256": None,
                          "port": 9401, "command": "dcgm-exporter"},
        "expected_devices": [{"hostname": h, "gpu_index": g, "assignments": [
            {"worker_role": "prefill" if int(h[-3:]) < half else "decode", "worker_index": 0,
             "worker_process": g, "het_group": 0 if int(h[-3:]) < half else 1}]} for h, g in devs],
        "observed_devices": [{"hostname": h, "gpu_index": g, "gpu_uuids": [uuid[(h, g)]],
                              "first_sample_time_unix": T0 + 0.000123, "last_sample_time_unix": T0 + last + 0.000123}
                             for h, g in sorted(devs)],
        "expected_windows": [{"benchmark_type": "sa-bench", "concurrency": w + 1} for w in range(a.windows)],
        "scrape_count": seq, "sample_row_count": rows, "samples_sha256": sha.hexdigest(),
        "window_validations": wins, "artifact_errors": [], "reason_codes": [],
    }
    json.dump(manifest, open(os.path.join(power, "manifest.json"), "w"), indent=2)
    print(f"{power} {logs} rows={rows} bytes={size}")


if __name__ == "__main__":
    main()
