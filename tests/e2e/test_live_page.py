"""The live page (/ui, src/exporter/ui) in headless Chromium, driven over the DevTools protocol
(cdp.py), against a real `gpulse exporter` and a real `gpulse agent` on simulated GPUs: one card per
GPU with the identity /api/v1/devices names, values that move between two screenshots, N/A and an
empty bar for absent readings, lost GPUs marked lost, no console errors or CSP violations, no
sideways scrolling on a phone, no external references in the page's files, the refusal banner at
the viewer limit, and the same basic auth as the rest of the server.

The page marks up what it shows for tests: every card is <section class="card" data-entity
data-uuid data-state data-gpu>, every reading an element with data-field (the frame's name) whose
text is what the user reads and whose data-value is the raw number (absent for null), every bar
.bar[data-bar=FIELD] with a .fill whose width is set only for a present reading;
body.dataset.seq is the last frame's seq and body.dataset.frames the frames drawn. Waits poll
until a condition holds and fail only after a generous deadline (cdp.DEADLINE_S)."""
import base64
import json
import os
import re
import shutil
import tempfile
import unittest
import urllib.error
import urllib.request

import cdp
from agent_e2e import Agent
from exporter_e2e import Exporter
from gpulse_e2e import SOURCE_DIR, GpulseTestCase, validate

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
UI_DIR = os.path.join(SOURCE_DIR, "src", "exporter", "ui")
# bcrypt of "s3cret" (cost 4), as in test_exporter_security.py.
HASH = "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6"
FIELDS = ["utilization_percent", "memory_used_bytes", "power_watts", "temperature_celsius", "sm_clock_mhz",
          "memory_clock_mhz"]
LIVE_MS = "500"  # --live-interval-ms: frames twice a second keep the tests short

# Everything a test reads from the page in one evaluation.
CARDS_JS = r"""
[...document.querySelectorAll('section.card')].map(c => ({
  entity: Number(c.dataset.entity), gpu: Number(c.dataset.gpu), kind: c.dataset.kind,
  uuid: c.dataset.uuid ?? null, state: c.dataset.state,
  text: c.textContent.replace(/\s+/g, ' ').trim(),
  bars: c.querySelectorAll('.bar').length,
  filled: [...c.querySelectorAll('.bar .fill')].filter(f => f.style.width !== '').length,
  sparks: [...c.querySelectorAll('svg.spark')].map(s => ({field: s.dataset.spark,
                                                          lines: s.querySelectorAll('polyline').length})),
  fields: Object.fromEntries([...c.querySelectorAll('[data-field]')].map(e => {
    const bar = c.querySelector('.bar[data-bar="' + e.dataset.field + '"]');
    const fill = bar ? bar.querySelector('.fill') : null;
    return [e.dataset.field, {text: e.textContent, value: e.dataset.value ?? null, max: e.dataset.max ?? null,
                              bar: !!bar, width: fill ? fill.style.width : null}];
  }))}))
"""

PROCESSES_JS = r"""
[...document.querySelectorAll('#procs tbody tr')].map(tr => [...tr.cells].map(td => td.textContent))
"""


def expected_text(field, value, maximum):
    """The page's text for a present reading (the formats the page promises)."""
    v = float(value)
    m = None if maximum is None else float(maximum)
    if field == "utilization_percent":
        return f"{round(v)} %"
    if field == "temperature_celsius":
        return f"{round(v)} °C"
    if field == "memory_used_bytes":
        gib = 1024 ** 3
        return f"{v / gib:.1f} / {m / gib:.1f} GiB" if m is not None else f"{v / gib:.1f} GiB"
    if field == "power_watts":
        limit = "" if m is None else " / " + ("%g" % round(m, 1))
        return f"{v:.1f}{limit} W"
    return f"{round(v)} / {round(m)} MHz" if m is not None else f"{round(v)} MHz"


def fetch(url, headers=None):
    """(status, headers with lower-case names, body bytes) of one GET."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def fetch_json(url):
    status, _, body = fetch(url)
    if status != 200:
        raise AssertionError(f"GET {url}: HTTP {status}: {body[:300]!r}")
    return json.loads(body)


def first_event(url, headers=None):
    """The first server-sent event of a stream, as its raw text (up to the blank line)."""
    req = urllib.request.Request(url, headers=dict(headers or {}, Accept="text/event-stream"))
    with urllib.request.urlopen(req, timeout=30) as r:
        lines = []
        while True:
            line = r.readline().decode("utf-8")
            if line in ("", "\n"):
                return r.headers.get("Content-Type", ""), "".join(lines)
            lines.append(line)


def live_entities(devices):
    """The entities of /api/v1/devices that get a card (GPUs and GPU instances), by entity index."""
    return {i: e for i, e in enumerate(devices["entities"]) if e["kind"] in ("gpu", "gpu_instance")}


@unittest.skipUnless(cdp.CHROMIUM, "needs chromium")
class LivePageTest(GpulseTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpulse-page-")
        cls.browser = cdp.Browser(width=1280, height=900)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- helpers ----

    def open_page(self, url, phone=False, allow_problems=False):
        """A new tab showing `url` with at least one frame drawn. Unless allow_problems, the test
        also fails when the page reported any error or warning by its end."""
        page = self.browser.new_page()
        self.addCleanup(page.close)
        if not allow_problems:
            self.addCleanup(lambda: self.assertEqual(page.problems(), [], "console errors, exceptions or CSP violations"))
        if phone:
            page.set_viewport(360, 740, scale=2, mobile=True)
        page.navigate(url)
        page.wait_for("Number(document.body.dataset.frames) >= 1", what="the first frame")
        return page

    def agent(self, scenario, *args):
        a = Agent(tempfile.mkdtemp(prefix="a-", dir=self.tmp), scenario=scenario, args=["--live-interval-ms", LIVE_MS, *args])
        self.addCleanup(a.close)
        return a

    def exporter(self, *args, env=None):
        e = Exporter("--live-interval-ms", LIVE_MS, *args, env=env)
        self.addCleanup(e.stop)
        return e

    def cards(self, page):
        return page.evaluate(CARDS_JS)

    def assert_cards_match_devices(self, cards, devices):
        entities = live_entities(devices)
        self.assertEqual([c["entity"] for c in cards], sorted(entities), "one card per GPU and GPU instance, in order")
        for c in cards:
            e = entities[c["entity"]]
            self.assertEqual((c["uuid"], c["gpu"], c["kind"]), (e["uuid"], e["gpu"], e["kind"]), c["text"])
            self.assertIn(e["name"], c["text"])
            self.assertIn(e["uuid"], c["text"])

    def assert_readings_consistent(self, card):
        """Every reading: N/A with no data-value and no bar width, or the promised format of its
        data-value with a width set when it has a scale."""
        for field in FIELDS:
            r = card["fields"][field]
            self.assertTrue(r["bar"], f"{field}: a bar")
            if r["value"] is None:
                self.assertEqual((r["text"], r["width"]), ("N/A", ""), f"entity {card['entity']} {field}")
            else:
                self.assertEqual(r["text"], expected_text(field, r["value"], r["max"]), f"entity {card['entity']} {field}")
                if r["max"] is not None:
                    self.assertRegex(r["width"], r"^\d+(\.\d+)?%$", f"entity {card['entity']} {field}")

    def screenshot_after_change(self, page, after, advance=None):
        """Waits (calling advance() first when given) for a frame with a larger seq than `after`
        whose power readings differ from after's, and for the browser to paint it; returns
        (png, state) where state is {"seq": .., "power": [..]} for the next call."""
        if advance:
            advance()
        state = page.wait_for(
            "(s => s.seq > %d && JSON.stringify(s.power) !== %s && s)"
            "({seq: Number(document.body.dataset.seq), power: [...document.querySelectorAll("
            "'[data-field=\"power_watts\"]')].map(e => e.dataset.value ?? null)})"
            % (after["seq"], json.dumps(json.dumps(after["power"], separators=(",", ":")))),
            what=f"a frame after seq {after['seq']} with other power readings than {after['power']}")
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        return page.screenshot(), state

    def page_state(self, page):
        return page.evaluate("({seq: Number(document.body.dataset.seq), power: [...document.querySelectorAll("
                             "'[data-field=\"power_watts\"]')].map(e => e.dataset.value ?? null)})")

    # ---- exporter ----

    def test_exporter_cards_match_devices_and_values_move(self):
        # No GPULSE_SIM_CLOCK: the simulator runs on the real clock and power wobbles (a 7 s sinusoid).
        e = self.exporter("--simulate", "4xA40-tp2")
        devices = fetch_json(e.url + "/api/v1/devices")
        page = self.open_page(e.url + "/ui")
        cards = self.cards(page)
        self.assertEqual(len(cards), 4)
        self.assert_cards_match_devices(cards, devices)
        for c in cards:
            self.assertEqual(c["state"], "ok")
            self.assertEqual(c["bars"], 6)
            self.assert_readings_consistent(c)
            gpu = devices["devices"][c["gpu"]]
            self.assertEqual(float(c["fields"]["memory_used_bytes"]["max"]), gpu["memory_total_bytes"])
            self.assertEqual(float(c["fields"]["power_watts"]["max"]), gpu["power_limit_watts"])
            self.assertEqual(c["filled"], 6, "every reading is present on 4xA40-tp2: every bar has a width")
        self.assertGreater(float(cards[0]["fields"]["utilization_percent"]["value"]), 90, "GPU 0 is busy")
        self.assertLess(float(cards[2]["fields"]["utilization_percent"]["value"]), 5, "GPU 2 is idle")
        header = page.evaluate("document.getElementById('meta').textContent.replace(/\\s+/g, ' ')")
        self.assertIn("via exporter", header)
        self.assertIn("simulated: 4xA40-tp2", header)
        self.assertIn("live", header)

        png1, s1 = self.screenshot_after_change(page, self.page_state(page))
        png2, s2 = self.screenshot_after_change(page, s1)
        self.assertTrue(png1.startswith(b"\x89PNG") and png2.startswith(b"\x89PNG"))
        self.assertGreater(s2["seq"], s1["seq"])
        self.assertNotEqual(png1, png2, "the page changed between two frames")
        self.assertGreaterEqual(int(page.evaluate("document.body.dataset.frames")), 3)
        # The sparklines draw the history: the busy GPUs have a line for both.
        for c in self.cards(page)[:2]:
            self.assertEqual([(s["field"], s["lines"] >= 1) for s in c["sparks"]],
                             [("utilization_percent", True), ("power_watts", True)])

    def test_exporter_process_table(self):
        e = self.exporter("--simulate", "4xA40-tp2")
        page = self.open_page(e.url + "/ui")
        frame = fetch_json(e.url + "/api/v1/frame")
        validate(frame, "live-frame.schema.json")
        self.assertTrue(frame["processes"], "4xA40-tp2 has processes")
        rows = page.wait_for(f"(r => r.length === {len(frame['processes'])} && r)({PROCESSES_JS})",
                             what="one row per process")
        for row, p in zip(rows, frame["processes"]):
            self.assertEqual(len(row), 7, row)
            self.assertEqual(row[0], str(p["pid"]))
            self.assertEqual(row[2], str(p["gpu"]))
            for cell, value in ((row[1], p["user"]), (row[6], p["command"])):
                if value is None:
                    self.assertEqual(cell, "—")
                else:
                    self.assertEqual(cell, value)
            if p["container"] is None and p["pod"] is None:
                self.assertEqual(row[5], "—")

    def test_sensorless_shows_na_and_no_bar(self):
        e = self.exporter("--simulate", "sensorless", env={"GPULSE_SIM_CLOCK": "5"})
        page = self.open_page(e.url + "/ui")
        cards = {c["gpu"]: c for c in self.cards(page)}
        self.assertEqual(sorted(cards), [0, 1, 2, 3])
        absent = {0: set(), 1: {"temperature_celsius"}, 2: {"utilization_percent"},
                  3: {"temperature_celsius", "utilization_percent", "power_watts"}}
        for gpu, card in cards.items():
            self.assertEqual(card["state"], "ok")
            self.assert_readings_consistent(card)
            for field in FIELDS:
                r = card["fields"][field]
                if field in absent[gpu]:
                    self.assertEqual((r["text"], r["value"], r["width"]), ("N/A", None, ""), f"GPU {gpu} {field}")
                else:
                    self.assertIsNotNone(r["value"], f"GPU {gpu} {field} is read")
                    self.assertNotEqual(r["width"], "", f"GPU {gpu} {field} has its bar")
        # An absent reading is not drawn as an empty-but-valid zero: the bar is marked absent and
        # its meter has no value.
        marked = page.evaluate("""[...document.querySelectorAll('section.card[data-gpu="3"] .bar')]
            .map(b => [b.dataset.bar, b.classList.contains('absent'), b.hasAttribute('aria-valuenow')])""")
        for field, is_absent, has_now in marked:
            self.assertEqual((is_absent, has_now), (field in absent[3], field not in absent[3]), field)
        # GPU 3 has no power reading at all: its power sparkline has no line.
        self.assertEqual([s["lines"] for s in cards[3]["sparks"] if s["field"] == "power_watts"], [0])

    def test_phone_viewport_has_no_horizontal_overflow(self):
        e = self.exporter("--simulate", "4xA40-tp2")
        page = self.open_page(e.url + "/ui", phone=True)
        page.wait_for("document.querySelectorAll('#procs tbody tr').length >= 2", what="the process rows")
        m = page.evaluate("""({inner: innerWidth, scroll: document.documentElement.scrollWidth,
            bodyScroll: document.body.scrollWidth,
            lefts: [...document.querySelectorAll('section.card')].map(c => Math.round(c.getBoundingClientRect().left)),
            wide: [...document.querySelectorAll('body *')].filter(el => el.getClientRects().length &&
                   el.getBoundingClientRect().right > innerWidth + 0.5).map(el => el.tagName + '.' + el.className)})""")
        self.assertEqual(m["inner"], 360, "the viewport meta makes the layout viewport the phone's width")
        self.assertLessEqual(m["scroll"], m["inner"], m)
        self.assertLessEqual(m["bodyScroll"], m["inner"], m)
        self.assertEqual(m["wide"], [], "nothing reaches past the right edge")
        self.assertEqual(len(set(m["lefts"])), 1, f"one column of cards on a phone: {m['lefts']}")
        self.assertTrue(page.screenshot().startswith(b"\x89PNG"))

    def test_files_have_no_external_references_and_are_served_with_the_csp(self):
        e = self.exporter("--simulate", "1xH200")
        served = {}
        for path, name, ctype in (("/ui", "index.html", "text/html"), ("/ui/app.js", "app.js", "text/javascript"),
                                  ("/ui/app.css", "app.css", "text/css")):
            status, headers, body = fetch(e.url + path)
            self.assertEqual(status, 200, path)
            self.assertTrue(headers.get("content-type", "").startswith(ctype), (path, headers.get("content-type")))
            self.assertEqual(headers.get("content-security-policy"), CSP, path)
            with open(os.path.join(UI_DIR, name), "rb") as f:
                self.assertEqual(body, f.read(), f"{path} is {name} verbatim (embedded at build time)")
            served[name] = body.decode("utf-8")
        html, js, css = served["index.html"], served["app.js"], served["app.css"]
        for name, text in served.items():
            self.assertNotRegex(text.lower(), r"https?:", f"{name}: no http(s) URL anywhere")
            self.assertNotIn("@import", text, name)
            for url in re.findall(r"url\(\s*['\"]?([^'\")\s]*)", text):
                self.assertRegex(url, r"^(data:|[^/:]+$)", f"{name}: url({url}) is neither data: nor relative")
        # HTML: only relative or data: references; scripts only from files; no inline style or handlers.
        refs = re.findall(r"\b(?:src|href|action|srcset|poster|data)\s*=\s*[\"']?([^\"'\s>]*)", html)
        self.assertIn("ui/app.js", refs)
        self.assertIn("ui/app.css", refs)
        for ref in refs:
            self.assertFalse(ref.startswith("//"), f"index.html: protocol-relative {ref}")
            self.assertRegex(ref, r"^(data:|[A-Za-z0-9._/-]+(\?[^#]*)?$)", f"index.html: {ref}")
        for attrs, inner in re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S | re.I):
            self.assertIn("src=", attrs, "no inline script")
            self.assertEqual(inner.strip(), "", "no inline script")
        self.assertNotRegex(html, r"(?i)<style\b", "no inline <style>")
        self.assertNotRegex(html, r"(?i)\sstyle\s*=", "no style attributes")
        self.assertNotRegex(html, r"(?i)\son[a-z]+\s*=", "no inline event handlers")
        self.assertNotRegex(html, r"(?i)<(iframe|object|embed|base)\b")
        # JS: strict, no code from strings, nothing fetched but the page's own relative endpoints.
        self.assertIn("'use strict'", js)
        for banned in ("eval(", "new Function", "import(", "importScripts", "document.write", "innerHTML",
                       "setAttribute('style'", "WebSocket"):
            self.assertNotIn(banned, js, f"app.js: {banned}")
        for target in re.findall(r"new URL\(\s*'([^']*)'", js) + re.findall(r"fetch\(\s*'([^']*)'", js):
            self.assertRegex(target, r"^[a-z0-9_/.-]+$", f"app.js: {target} is relative")
        # The references resolve to files the server serves.
        for ref in ("ui/app.js", "ui/app.css"):
            self.assertEqual(fetch(e.url + "/" + ref)[0], 200, ref)

    def test_the_csp_is_enforced_and_a_violation_is_seen(self):
        # The harness's own check: an inline script the page did not have is refused by the CSP
        # the server sends, and the refusal shows among the page's problems.
        e = self.exporter("--simulate", "1xH200")
        page = self.open_page(e.url + "/ui", allow_problems=True)
        self.assertEqual(page.problems(), [])
        page.evaluate("(() => { const s = document.createElement('script'); s.textContent = 'document.body.dataset.pwned = 1';"
                      " document.head.appendChild(s); })()")
        problems = page.wait_until(lambda: [p for p in page.problems() if "Content Security Policy" in p],
                                   what="the CSP violation to be reported")
        self.assertIn("inline script", " ".join(problems))
        self.assertIsNone(page.evaluate("document.body.dataset.pwned ?? null"), "the inline script did not run")

    def test_viewer_limit_shows_the_refusal_and_retries(self):
        e = self.exporter("--simulate", "1xH200", "--max-viewers", "1")
        first = self.open_page(e.url + "/ui")
        second = self.browser.new_page()
        self.addCleanup(second.close)
        second.navigate(e.url + "/ui")
        text = second.wait_for("document.body.dataset.connection === 'refused' && "
                               "document.getElementById('banner').textContent", what="the refusal banner")
        self.assertFalse(second.evaluate("document.getElementById('banner').hidden"))
        self.assertIn("Stream refused by the server (HTTP 503", text)
        self.assertIn("retrying", text)
        status, _, body = fetch(e.url + "/api/v1/stream")
        self.assertEqual(status, 503)
        self.assertIn(body.decode("utf-8").strip()[:100], text, "the banner shows the server's own words")
        self.assertEqual(second.evaluate("document.body.dataset.frames"), "0")
        # Once the first viewer leaves, the second one gets in on a retry.
        first.close()
        # Its backoff may have grown to 30 s meanwhile: wait two of those.
        second.wait_for("Number(document.body.dataset.frames) >= 1 && document.body.dataset.connection === 'live'",
                        timeout=75, what="the second viewer connected after the first left")
        self.assertTrue(second.evaluate("document.getElementById('banner').hidden"))
        for p in second.problems():   # only the refused loads themselves
            self.assertIn("503", p)

    def test_basic_auth_covers_the_page_and_the_stream(self):
        web = os.path.join(self.tmp, "web.yml")
        with open(web, "w", encoding="utf-8") as f:
            f.write(f"basic_auth_users:\n  alice: {HASH}\n")
        e = self.exporter("--simulate", "1xH200", "--web-config-file", web)
        for path in ("/ui", "/ui/app.js", "/ui/app.css", "/api/v1/stream", "/api/v1/frame"):
            status, headers, _ = fetch(e.url + path)
            self.assertEqual(status, 401, path)
            self.assertIn("Basic", headers.get("www-authenticate", ""), path)
        creds = {"Authorization": "Basic " + base64.b64encode(b"alice:s3cret").decode()}
        self.assertEqual(fetch(e.url + "/ui", creds)[0], 200)
        self.assertEqual(fetch(e.url + "/api/v1/stream", {"Authorization": "Basic " +
                                                          base64.b64encode(b"alice:wrong").decode()})[0], 401)
        # The stream's event, as the page parses it: id, event: frame, one line of JSON.
        ctype, event = first_event(e.url + "/api/v1/stream", creds)
        self.assertTrue(ctype.startswith("text/event-stream"), ctype)
        m = re.fullmatch(r"id: (\d+)\nevent: frame\ndata: (.*)\n", event)
        self.assertIsNotNone(m, event[:300])
        frame = json.loads(m.group(2))
        validate(frame, "live-frame.schema.json")
        self.assertEqual(int(m.group(1)), frame["seq"])
        # In the browser: the credentials the page was opened with carry over to its script, its
        # styles and its stream (same origin).
        page = self.open_page(e.url.replace("http://", "http://alice:s3cret@") + "/ui", allow_problems=True)
        self.assertEqual(len(self.cards(page)), 1)
        self.assertTrue(page.evaluate("getComputedStyle(document.body).paddingTop !== '0px'"), "app.css applied")
        self.assertEqual([p for p in page.problems() if "401" not in p], [])

    # ---- agent ----

    def test_agent_cards_follow_its_clock(self):
        a = self.agent("4xA40-tp2")
        devices = a.tcp_request("GET", "/api/v1/devices").json
        page = self.open_page(a.url + "/ui")
        cards = self.cards(page)
        self.assertEqual(len(cards), 4)
        self.assert_cards_match_devices(cards, devices)
        for c in cards:
            self.assertEqual(c["state"], "ok")
            self.assert_readings_consistent(c)
        self.assertIn("via agent", page.evaluate("document.getElementById('meta').textContent"))
        # The simulated clock stands still until moved: each move of 2 s changes the busy GPUs' power.
        png1, s1 = self.screenshot_after_change(page, self.page_state(page), advance=lambda: a.advance(2))
        png2, s2 = self.screenshot_after_change(page, s1, advance=lambda: a.advance(2))
        self.assertGreater(s2["seq"], s1["seq"])
        self.assertNotEqual(png1, png2, "the page changed between two frames")

    def test_agent_marks_a_lost_gpu_lost(self):
        # faults: GPU 3 falls off the bus at 1.5 s; GPU 1 is NO_PERMISSION from the start.
        a = self.agent("faults")
        page = self.open_page(a.url + "/ui")
        a.advance(3)
        card = page.wait_for(f"(cs => cs.find(c => c.gpu === 3 && c.state === 'lost'))({CARDS_JS})",
                             what="GPU 3 marked lost")
        self.assertEqual((card["bars"], card["fields"]), (0, {}), "a lost GPU has no bars")
        self.assertRegex(card["text"], r"Lost: \S")
        devices = a.tcp_request("GET", "/api/v1/devices").json
        entities = live_entities(devices)
        lost = [e for e in entities.values() if e["gpu"] == 3]
        self.assertEqual(len(lost), 1)
        self.assertEqual(lost[0]["state"], "lost")
        if lost[0]["reason"]:
            self.assertIn(lost[0]["reason"], card["text"])
        states = {c["gpu"]: c["state"] for c in self.cards(page)}
        self.assertEqual(states[0], "ok")
        self.assertEqual(states[2], "ok")
        if 1 in states:   # a GPU NVML will not open: skipped, with its reason, no bars
            gpu1 = [c for c in self.cards(page) if c["gpu"] == 1][0]
            self.assertEqual((gpu1["state"], gpu1["bars"]), ("skipped", 0))
            self.assertIn("Skipped: ", gpu1["text"])
        for c in self.cards(page):
            if c["state"] == "ok":
                self.assert_readings_consistent(c)


if __name__ == "__main__":
    unittest.main()
