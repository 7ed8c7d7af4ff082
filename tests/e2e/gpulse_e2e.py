"""Helpers for end-to-end tests: run the real gpulse binary (path in $GPULSE_BIN) and check its
outputs against the JSON Schemas in docs/schema. Run with Debian's /usr/bin/python3."""
import json
import os
import signal
import subprocess
import unittest

import jsonschema

GPULSE = os.environ.get("GPULSE_BIN", "build/bin/gpulse")
# An NVML library that loads and whose nvmlInit answers DRIVER_NOT_LOADED (tests/unit): "no NVIDIA
# driver" on any machine. A library path that does not exist is a usage error (exit 2), not that.
NO_DRIVER_NVML = os.path.join(os.path.dirname(os.path.abspath(GPULSE)), "libfake-nvml-nodriver.so")
SOURCE_DIR = os.environ.get("GPULSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILTIN_SCENARIOS = ["1xH200", "8xH100", "4xA40-tp2", "mig-a100", "faults", "k8s-8xH100", "sensorless",
                     "lost-at-start", "mig-8xA100", "mig-h100", "profiling-faults", "health-trips"]


# Variables that change which GPUs a command sees: tests set them explicitly when they mean to.
DEVICE_SELECTION_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
                         "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK",
                         "ONEAPI_DEVICE_SELECTOR", "ZE_ENABLE_PCI_ID_DEVICE_ORDER", "GPULSE_SYSFS_ROOT")


def default_job_control_signals():
    """For preexec_fn: SIGTTOU and SIGTTIN back to their defaults, as a login shell's jobs have them.
    Some harnesses start the tests with both ignored, which would hide that a background job touching
    its terminal gets stopped."""
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    signal.signal(signal.SIGTTIN, signal.SIG_DFL)


def run(*args, timeout=60, env=None):
    full_env = {k: v for k, v in os.environ.items() if k not in DEVICE_SELECTION_VARS}
    if env:
        full_env.update(env)
    return subprocess.run([GPULSE, *args], capture_output=True, text=True, timeout=timeout, env=full_env)


def schema(name):
    with open(os.path.join(SOURCE_DIR, "docs", "schema", name), encoding="utf-8") as f:
        return json.load(f)


def validate(instance, schema_name):
    jsonschema.validate(instance, schema(schema_name), cls=jsonschema.Draft202012Validator)


class GpulseTestCase(unittest.TestCase):
    def run_ok(self, *args, **kw):
        p = run(*args, **kw)
        self.assertEqual(p.returncode, 0, f"gpulse {' '.join(args)} failed:\n{p.stderr}")
        return p


def scenario_variant(directory, scenario, old, new, name):
    """sim/scenarios/SCENARIO.yaml with the text OLD (which must be there) replaced by NEW and the
    scenario renamed NAME, written to DIRECTORY/NAME.yaml; returns its path."""
    with open(os.path.join(SOURCE_DIR, "sim", "scenarios", scenario + ".yaml"), encoding="utf-8") as f:
        text = f.read()
    if old not in text:
        raise AssertionError(f"{scenario}.yaml changed: it no longer has " + old)
    text = text.replace(old, new).replace("name: " + scenario, "name: " + name)
    path = os.path.join(directory, name + ".yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def k8s_with_workload(directory, name="k8s-8xH100-workload"):
    """The k8s-8xH100 scenario with one more process on GPU 0, `pid: workload` (512 MiB, 40 % SM),
    which the simulator lists as every process of the workload gpulse started (sim/README.md).
    Written to DIRECTORY; returns its path."""
    marker = "processes: [{pid: 41001, used_memory_mib: 70000, sm_util: 93, mem_util: 61}]"
    return scenario_variant(directory, "k8s-8xH100", marker,
                            "processes: [{pid: 41001, used_memory_mib: 70000, sm_util: 93, mem_util: 61},"
                            " {pid: workload, used_memory_mib: 512, sm_util: 40}]", name)
