"""A process's CPU time to the nanosecond: the sum of its threads' run time from
/proc/PID/task/TID/schedstat (the first field). /proc/PID/stat's utime + stime (results.cpu_seconds)
counts in clock ticks (10 ms), too coarse for a process that uses a fraction of a percent of a core
over a window of seconds. A thread that ends between two readings takes its time with it: measure
processes whose threads live through the window (or whose short-lived threads cost little).

    a = cpu_ns(pid); time.sleep(s); b = cpu_ns(pid); seconds = cpu_between(a, b)
"""
import os


def cpu_ns(pid):
    """{tid: run time in ns} of every thread of a process."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                out[tid] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def cpu_between(a, b):
    """CPU seconds the threads spent between two cpu_ns readings (a thread new in b counts from 0)."""
    return sum(v - a.get(t, 0) for t, v in b.items()) / 1e9
