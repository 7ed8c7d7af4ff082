"""Scheduling-latency anchor for the collector benchmark: a process that does nothing but wake on a
fixed grid (every INTERVAL seconds for SECONDS seconds, on CLOCK_MONOTONIC) and records how late
each wake-up is. Run beside `gpulse collect` it shows the lag the machine alone imposes on any
timer. Prints one JSON object: count, p50_ms, p99_ms, max_ms. Run with Debian's /usr/bin/python3.
"""
import json
import sys
import time


def main():
    interval, seconds = float(sys.argv[1]), float(sys.argv[2])
    lags = []
    t0 = time.monotonic()
    k = 1
    while k * interval <= seconds:
        slot = t0 + k * interval
        time.sleep(max(0.0, slot - time.monotonic()))
        lags.append(time.monotonic() - slot)
        k += 1
    lags.sort()
    pick = lambda p: lags[min(len(lags) - 1, int(p * len(lags)))] * 1e3
    print(json.dumps({"count": len(lags), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": lags[-1] * 1e3}))


if __name__ == "__main__":
    main()
