"""The HTML report of `gpulse record` measured in a real headless browser: every line and marker
inside its plot's frame, one named row per device, one marker per XID, nice axis ticks.

The report file itself is never changed: each test copies report.html to a temp file with a checking
script appended before </body>. The script measures the laid-out SVG (getBBox) and writes what it
found into document.body's data attributes, which --dump-dom then shows."""
import html
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from gpulse_e2e import GpulseTestCase

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Runs after the report's own script. Every shape of every plot and events strip must lie inside the
# strip's or plot's frame rectangle (tolerance 0.05 px); the series, event lines and markers must
# also sit in a group clipped by a clipPath matching the frame.
CHECK_SCRIPT = r"""
<script>
(function () {
  const tol = 0.05, outside = [], unclipped = [];
  let checked = 0;
  const inside = (b, f) => b.x >= f.x - tol && b.y >= f.y - tol &&
      b.x + b.width <= f.x + f.width + tol && b.y + b.height <= f.y + f.height + tol;
  const same = (a, b) => Math.abs(a.x - b.x) < tol && Math.abs(a.y - b.y) < tol &&
      Math.abs(a.width - b.width) < tol && Math.abs(a.height - b.height) < tol;
  for (const svg of document.querySelectorAll('svg.plot, svg.events-strip')) {
    const frame = svg.querySelector(':scope > rect.frame');
    if (!frame) { outside.push((svg.dataset.title || '?') + ': no frame'); continue; }
    const f = frame.getBBox();
    for (const el of svg.querySelectorAll('polyline, line, rect, circle, ellipse, path, polygon')) {
      if (el === frame || el.closest('clipPath')) continue;
      checked++;
      const b = el.getBBox();
      if (!inside(b, f)) {
        outside.push(svg.dataset.title + ' ' + el.tagName + ' ' + [b.x, b.y, b.width, b.height].join(','));
      }
      if (el.classList.contains('grid')) continue;
      const g = el.closest('[clip-path]');
      const m = g && /url\(#([^)]+)\)/.exec(g.getAttribute('clip-path'));
      const clip = m && document.getElementById(m[1]);
      const rect = clip && clip.tagName.toLowerCase() === 'clippath' && clip.querySelector('rect');
      if (!rect || !svg.contains(clip) || !same(rect.getBBox(), f)) unclipped.push(svg.dataset.title + ' ' + el.tagName);
    }
  }
  const ids = [...document.querySelectorAll('clipPath')].map(c => c.id);
  const d = document.body.dataset;
  d.checked = String(checked);
  d.outside = String(outside.length);
  d.outsideList = outside.slice(0, 5).join(' | ');
  d.unclipped = String(unclipped.length);
  d.clipIdsUnique = String(new Set(ids).size === ids.length);
  d.rows = JSON.stringify([...document.querySelectorAll('section.plot-group.device')].map(s => {
    const h = s.querySelector('h2');
    const tops = [...s.querySelectorAll('svg.plot')].map(p => Math.round(p.getBoundingClientRect().top));
    const strip = s.querySelector('svg.events-strip');
    return {device: s.dataset.device, text: h ? h.textContent : '', name: h ? h.dataset.name : null,
            uuid: h ? h.dataset.uuid : null, plots: tops.length, plotTops: tops,
            strips: s.querySelectorAll('svg.events-strip').length,
            stripTop: strip ? Math.round(strip.getBoundingClientRect().top) : null};
  }));
  d.markers = JSON.stringify([...document.querySelectorAll('.event')].map(e => ({
    cls: e.getAttribute('class'), device: e.dataset.device, xid: e.dataset.xid || null,
    title: e.querySelector('title') ? e.querySelector('title').textContent : ''})));
  d.axes = JSON.stringify([...document.querySelectorAll('svg.plot')].map(p => ({
    title: p.dataset.title, group: (p.closest('section') || {dataset: {}}).dataset.device || 'process',
    y: [...p.querySelectorAll('text.tick.y')].map(t => t.textContent),
    x: [...p.querySelectorAll('text.tick.x')].map(t => t.textContent)})));
  d.checkDone = '1';
})();
</script>
"""


def nice_step(step):
    """Whether step is 1, 2, 2.5 or 5 × 10^n."""
    if not step > 0:
        return False
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(abs(mantissa - m) < 1e-6 for m in (1, 2, 2.5, 5, 10))


def tick_problem(labels, unit=""):
    """Why a list of tick labels is not a nice axis (None when it is): numbers without noise (at
    most 3 decimals, no exponent), from 0, evenly spaced by a nice step, so each is k × step."""
    if len(labels) < 2:
        return f"fewer than 2 ticks: {labels}"
    values = []
    for label in labels:
        text = label[: -len(unit)] if unit and label.endswith(unit) else label
        if not re.fullmatch(r"-?\d+(\.\d{1,3})?", text) or re.fullmatch(r"-?\d+\.\d*0", text):
            return f"label {label!r} is not a plain number"
        values.append(float(text))
    step = values[1] - values[0]
    if values[0] != 0 or not nice_step(step):
        return f"ticks {labels} do not start at 0 with a nice step"
    for k, v in enumerate(values):
        if abs(v - k * step) > 1e-9 * max(1, abs(v)):
            return f"tick {labels[k]!r} is not {k} × {step:g}"
    return None


def scenario_report(test, out, *args):
    test.run_ok("record", "-o", out, *args)
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        return json.load(f), os.path.join(out, "report.html")


@unittest.skipUnless(CHROMIUM, "needs chromium")
class HtmlGeometryTest(GpulseTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpulse-html-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def chromium(self, path):
        p = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                            "--v=0", "--window-size=1600,1200",
                            "--user-data-dir=" + os.path.join(os.path.dirname(path), "chrome-profile"),
                            "--dump-dom", "file://" + path], capture_output=True, text=True, timeout=120)
        console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
        return p.stdout, console

    def measure(self, report_path, mutate=None):
        """The checking script's findings on a copy of report_path (optionally changed by mutate)."""
        with open(report_path, encoding="utf-8") as f:
            page = f.read()
        if mutate:
            page = mutate(page)
        cut = page.rindex("</body>")
        checked = os.path.join(self.tmp, "checked.html")
        with open(checked, "w", encoding="utf-8") as f:
            f.write(page[:cut] + CHECK_SCRIPT + page[cut:])
        dom, console = self.chromium(checked)
        self.assertEqual(console, [])
        body = re.search(r"<body([^>]*)>", dom)
        self.assertIsNotNone(body, dom[:500])
        attrs = {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))}
        self.assertEqual(attrs.get("check-done"), "1", "the checking script ran to its end")
        self.assertEqual(attrs.get("ready"), "1", "the report's own script ran")
        return attrs

    def assert_inside(self, m):
        self.assertGreater(int(m["checked"]), 0)
        self.assertEqual(m["outside"], "0", m["outside-list"])
        self.assertEqual(m["unclipped"], "0")
        self.assertEqual(m["clip-ids-unique"], "true")

    def test_nothing_outside_its_frame_on_4xa40_tp2(self):
        _, report = scenario_report(self, os.path.join(self.tmp, "out"), "--simulate", "4xA40-tp2", "--", "sleep", "1")
        self.assert_inside(self.measure(report))

    def test_nothing_outside_its_frame_with_a_cpu_spiky_process_tree(self):
        doc, report = scenario_report(
            self, os.path.join(self.tmp, "out"), "--simulate", "1xH200", "--include-descendants", "-i", "50", "--",
            "sh", "-c", 'timeout 1 sh -c "while :; do :; done"; sleep 0.5')
        self.assertGreater(len(doc["resource_timeline"]["samples"]), 10)
        m = self.measure(report)
        self.assert_inside(m)
        cpu = [a for a in json.loads(m["axes"]) if a["title"] == "CPU"]
        self.assertEqual(len(cpu), 1)
        self.assertGreaterEqual(float(cpu[0]["y"][-1]), 50, "the busy loop shows in the CPU plot")

    def test_the_check_fails_on_a_line_outside_its_frame(self):
        _, report = scenario_report(self, os.path.join(self.tmp, "out"), "--simulate", "4xA40-tp2", "--", "sleep", "1")
        stray = '<polyline class="series" fill="none" stroke="#000" points="60,40 200,400"/>'
        m = self.measure(report, lambda page: page.replace('class="frame"/>', 'class="frame"/>' + stray, 1))
        self.assertEqual(m["outside"], "1", "a polyline reaching y=400 lies outside every frame")
        self.assertEqual(m["unclipped"], "1", "and it is in no clipped group")

    def test_8xh100_has_one_named_row_per_device(self):
        doc, report = scenario_report(self, os.path.join(self.tmp, "out"), "--simulate", "8xH100", "--", "sleep", "0.5")
        m = self.measure(report)
        self.assert_inside(m)
        rows = json.loads(m["rows"])
        self.assertEqual(len(rows), 8)
        devices = {d["index"]: d for d in doc["devices"]}
        for row in rows:
            dev = devices[int(row["device"])]
            self.assertTrue(dev["name"] and dev["uuid"])
            self.assertEqual(row["text"], f"GPU {row['device']} — {dev['name']} — {dev['uuid']}")
            self.assertEqual((row["name"], row["uuid"]), (dev["name"], dev["uuid"]))
            self.assertEqual((row["plots"], row["strips"]), (4, 1))
            self.assertEqual(len(set(row["plotTops"])), 1, f"the four plots side by side: {row}")
            self.assertGreater(row["stripTop"], row["plotTops"][0], "the events strip under the plots")

    def test_one_marker_per_xid_and_one_for_the_lost_gpu_on_faults(self):
        doc, report = scenario_report(self, os.path.join(self.tmp, "out"), "--simulate", "faults", "--", "sleep", "2.5")
        m = self.measure(report)
        self.assert_inside(m)
        markers = json.loads(m["markers"])
        xids = [x for x in markers if x["cls"] == "event xid"]
        self.assertGreaterEqual(len(doc["xid_events"]), 1)
        self.assertEqual(sorted((int(x["device"]), int(x["xid"])) for x in xids),
                         sorted((x["device_index"], x["xid"]) for x in doc["xid_events"]))
        for x in xids:
            self.assertRegex(x["title"], rf"^XID {x['xid']} at [0-9.]+ s$")
        lost = [e for e in doc["entities"] if e["kind"] == "gpu" and e["state"] == "lost" and e.get("lost_unix_ns")]
        self.assertGreaterEqual(len(lost), 1)
        self.assertEqual(sorted(int(x["device"]) for x in markers if x["cls"] == "event lost"),
                         sorted(e["gpu"] for e in lost))
        throttle = [x for x in markers if x["cls"] == "event throttle"]
        self.assertEqual([int(x["device"]) for x in throttle], [0], "GPU 0's slowdown from 1 s to 2 s is one band")
        self.assertIn("hw_slowdown", throttle[0]["title"])

    def test_every_tick_label_is_a_multiple_of_a_nice_step(self):
        for scenario, cmd in (("4xA40-tp2", "1"), ("faults", "2.5"), ("1xH200", "0.3")):
            with self.subTest(scenario=scenario):
                _, report = scenario_report(self, os.path.join(self.tmp, scenario), "--simulate", scenario,
                                            "--", "sleep", cmd)
                axes = json.loads(self.measure(report)["axes"])
                self.assertGreaterEqual(len(axes), 2)
                for a in axes:
                    self.assertIsNone(tick_problem(a["y"]), a)
                    self.assertIsNone(tick_problem(a["x"], " s"), a)

    def test_the_tick_check_rejects_noisy_or_uneven_ticks(self):
        self.assertIsNone(tick_problem(["0", "25", "50", "75", "100"]))
        self.assertIsNone(tick_problem(["0 s", "0.25 s", "0.5 s"], " s"))
        self.assertIsNotNone(tick_problem(["0", "33.3", "66.7", "100"]))
        self.assertIsNotNone(tick_problem(["0", "0.30000000000000004"]))
        self.assertIsNotNone(tick_problem(["0", "1.5e+03"]))
        self.assertIsNotNone(tick_problem(["0", "0.50"]))
        self.assertIsNotNone(tick_problem(["0", "30", "60"]))
        self.assertIsNotNone(tick_problem(["0", "25", "55"]))


if __name__ == "__main__":
    unittest.main()
