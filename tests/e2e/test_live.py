"""The live views' server side on the simulator: frames from /api/v1/frame and /api/v1/stream match
docs/schema/live-frame.schema.json, a lost GPU shows as lost, many stream viewers share one device read
per interval (the simulator counts NVML calls), and viewers past the limit are refused with a reason.
Every wait is bounded; nothing asserts on elapsed time."""
import hashlib
import http.client
import json
import os
import shutil
import struct
import tempfile
import threading
import time
import unittest

from agent_e2e import Agent
from exporter_e2e import Exporter
from gpulse_e2e import GpulseTestCase, validate

DEADLINE_S = 60


def read_counts(path):
    """The simulator's call counters (sim/README.md): session calls, device calls, utilization calls."""
    with open(path, "rb") as f:
        return struct.unpack("<3Q", f.read(24))


class StreamViewer:
    """One GET /api/v1/stream client reading server-sent events on its own thread."""

    def __init__(self, port, want):
        self.port, self.want = port, want
        self.frames = {}  # seq -> sha256 of the event's data
        self.status = None
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
            conn.request("GET", "/api/v1/stream")
            resp = conn.getresponse()
            self.status = resp.status
            if resp.status != 200:
                self.body = resp.read().decode()
                return
            data = None
            while len(self.frames) < self.want:
                line = resp.readline().decode()
                if not line:
                    raise AssertionError("the stream ended")
                if line.startswith("data: "):
                    data = line[6:].rstrip("\n")
                elif line == "\n" and data is not None:
                    frame = json.loads(data)
                    self.frames[frame["seq"]] = hashlib.sha256(data.encode()).hexdigest()
                    self.last = frame
                    data = None
            conn.close()
        except Exception as e:  # reported by the test
            self.error = e


class LiveTest(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-live-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def frame(self, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE_S)
        try:
            conn.request("GET", "/api/v1/frame")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            return json.loads(resp.read())
        finally:
            conn.close()

    def test_exporter_frames_match_the_schema_and_the_devices(self):
        with Exporter("--simulate", "4xA40-tp2") as e:
            f = self.frame(e.port)
            validate(f, "live-frame.schema.json")
            self.assertEqual(f["source"], "exporter")
            self.assertEqual(f["scenario"], "4xA40-tp2")
            self.assertEqual(len(f["entities"]), 4)
            g = f["entities"][0]
            for key in ("utilization_percent", "memory_used_bytes", "memory_total_bytes", "power_watts",
                        "power_limit_watts", "temperature_celsius", "sm_clock_mhz", "sm_clock_max_mhz"):
                self.assertIsNotNone(g[key], key)
            self.assertEqual(len(g["history"]["utilization_percent"]), 1)

    def test_agent_frames_show_a_lost_gpu_and_absent_readings(self):
        agent = Agent(self.tmp, scenario="faults", sim_clock="0")
        try:
            f = self.frame(agent.port)
            validate(f, "live-frame.schema.json")
            self.assertEqual(f["source"], "agent")
            agent.advance(3)  # GPU 3 is lost at 1.5 s (sim/scenarios/faults.yaml)
            deadline = time.monotonic() + DEADLINE_S
            while True:
                f = self.frame(agent.port)
                states = {e["gpu"]: e["state"] for e in f["entities"] if e["kind"] == "gpu"}
                if states.get(3) == "lost" or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            validate(f, "live-frame.schema.json")
            self.assertEqual(states[3], "lost", f)
            lost = [e for e in f["entities"] if e["gpu"] == 3][0]
            self.assertIsNone(lost["utilization_percent"])
            self.assertTrue(lost["reason"])
            # GPU 1 answers NO_PERMISSION: skipped, with its reason.
            skipped = [e for e in f["entities"] if e["gpu"] == 1][0]
            self.assertEqual(skipped["state"], "skipped")
        finally:
            agent.close()

    def test_a_hundred_viewers_share_one_read_per_interval(self):
        counts = os.path.join(self.tmp, "calls")
        agent = Agent(self.tmp, scenario="4xA40-tp2", sim_clock=None,
                      args=["--live-interval-ms", "200"], env={"GPULSE_SIM_CALL_COUNTS": counts})
        try:
            viewers = [StreamViewer(agent.port, want=4) for _ in range(100)]
            for v in viewers:
                v.thread.start()
            for v in viewers:
                v.thread.join(DEADLINE_S)
            for v in viewers:
                self.assertIsNone(v.error)
                self.assertEqual(v.status, 200)
                self.assertGreaterEqual(len(v.frames), 4)
            # The same seq is the same frame, byte for byte, for every viewer that saw it.
            by_seq = {}
            for v in viewers:
                for seq, digest in v.frames.items():
                    by_seq.setdefault(seq, set()).add(digest)
            self.assertTrue(all(len(d) == 1 for d in by_seq.values()))
            validate(viewers[0].last, "live-frame.schema.json")
            # Once the viewers are gone the reads stop: wait until the counters stand still.
            last, still = None, 0
            deadline = time.monotonic() + DEADLINE_S
            while still < 5 and time.monotonic() < deadline:
                now = read_counts(counts)[2]
                still = still + 1 if now == last else 0
                last = now
                time.sleep(0.2)
            util_calls = read_counts(counts)[2]
            frames = self.frame_count(agent)
            # One utilization call per GPU per read; every read made one frame (one more read for
            # the /metrics scrape that told us the frame count).
            self.assertEqual(util_calls + 4, 4 * (frames + 1), (util_calls, frames))
            self.assertLessEqual(frames, max(by_seq) + 3, "reads follow the interval, not the viewers")
        finally:
            agent.close()

    def frame_count(self, agent):
        conn = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=DEADLINE_S)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        for line in text.splitlines():
            if line.startswith("gpulse_live_frames_total "):
                return int(float(line.split()[1]))
        raise AssertionError("no gpulse_live_frames_total in /metrics")

    def test_viewers_past_the_limit_are_refused_with_the_reason(self):
        agent = Agent(self.tmp, scenario="4xA40-tp2", args=["--max-viewers", "2"])
        try:
            held = [StreamViewer(agent.port, want=10**9) for _ in range(2)]
            for v in held:
                v.thread.start()
            deadline = time.monotonic() + DEADLINE_S
            while not all(v.frames for v in held) and time.monotonic() < deadline:
                time.sleep(0.05)
            extra = StreamViewer(agent.port, want=1)
            extra.run()
            self.assertEqual(extra.status, 503)
            self.assertIn("viewer limit reached: 2", extra.body)
            conn = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=DEADLINE_S)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            self.assertIn("gpulse_live_viewers_refused_total 1", text)
            self.assertIn("gpulse_live_viewers 2", text)
        finally:
            agent.close()

    def test_head_of_the_stream_and_the_page_policy(self):
        with Exporter("--simulate", "1xH200") as e:
            conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=DEADLINE_S)
            conn.request("HEAD", "/api/v1/stream")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
            conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=DEADLINE_S)
            conn.request("GET", "/ui")
            resp = conn.getresponse()
            resp.read()
            self.assertIn("default-src 'none'", resp.getheader("Content-Security-Policy"))
            conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=DEADLINE_S)
            conn.request("POST", "/api/v1/stream", body="")
            self.assertEqual(conn.getresponse().status, 405)


if __name__ == "__main__":
    unittest.main()
