"""A small Chrome DevTools Protocol client for the end-to-end tests of the live page: it starts
headless Chromium with --remote-debugging-pipe (Chromium reads commands on its fd 3 and writes
answers and events on its fd 4, each message one JSON text ended by a NUL byte), opens a page,
collects what the page reports as going wrong (console errors and warnings, uncaught exceptions,
error log entries such as CSP violations and failed loads), evaluates expressions, waits for
conditions, emulates a phone's viewport and takes screenshots.

Debian's /usr/bin/python3 standard library only. Waits never assert on time: they poll until a
condition holds and fail only after a generous deadline."""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DEADLINE_S = 30


class CDPError(Exception):
    """An error answer to a command, or the browser gone."""


class Browser:
    """One headless Chromium process and the pipe to it. Use as a context manager."""

    def __init__(self, width=1280, height=900, chromium=None):
        self.dir = tempfile.mkdtemp(prefix="gpulse-cdp-")
        self.log_path = os.path.join(self.dir, "chromium.log")
        self._cond = threading.Condition()
        self._answers = {}
        self._events = []          # (sessionId or None, method, params), in arrival order
        self._next_id = 0
        self._eof = False
        # Our ends: we write commands to `cmd_w` and read messages from `msg_r`. Chromium's ends are
        # duplicated to numbers >= 10 first so that moving them to 3 and 4 cannot clobber one another.
        cmd_r, self._cmd_w = os.pipe()
        self._msg_r, msg_w = os.pipe()
        child_in = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
        child_out = fcntl.fcntl(msg_w, fcntl.F_DUPFD, 10)
        os.close(cmd_r)
        os.close(msg_w)
        args = [chromium or CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + os.path.join(self.dir, "profile"), f"--window-size={width},{height}",
                "about:blank"]
        shell = f'exec 3<&{child_in} 4>&{child_out} {child_in}<&- {child_out}>&-; exec "$@"'
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(["/bin/bash", "-c", shell, "bash", *args], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, pass_fds=(child_in, child_out))
        finally:
            log.close()
            os.close(child_in)
            os.close(child_out)
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()
        try:
            self.send("Browser.getVersion")
        except Exception:
            self.close()
            raise

    # ---- the pipe ----

    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._msg_r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._eof = True
                    self._cond.notify_all()
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._cond:
                for raw in messages:
                    if not raw:
                        continue
                    msg = json.loads(raw.decode("utf-8"))
                    if "id" in msg:
                        self._answers[msg["id"]] = msg
                    else:
                        self._events.append((msg.get("sessionId"), msg.get("method"), msg.get("params", {})))
                self._cond.notify_all()

    def log(self):
        """Chromium's own stderr and stdout so far (for failure messages)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def send(self, method, params=None, session=None, timeout=DEADLINE_S):
        """Sends one command (to `session`, a sessionId, or the browser) and returns its result."""
        with self._cond:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        data = json.dumps(msg).encode("utf-8") + b"\0"
        try:
            while data:
                data = data[os.write(self._cmd_w, data):]
        except OSError as e:
            raise CDPError(f"{method}: the browser is gone ({e}):\n{self.log()}") from e
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._answers:
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    why = "the browser closed the pipe" if self._eof else f"no answer within {timeout} s"
                    raise CDPError(f"{method}: {why}:\n{self.log()}")
                self._cond.wait(left)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error'].get('message')} {answer['error'].get('data', '')}".strip())
        return answer.get("result", {})

    def events(self, session=None):
        """The events received so far for `session` (None: all): (method, params) pairs."""
        with self._cond:
            return [(m, p) for s, m, p in self._events if session is None or s == session]

    # ---- pages ----

    def new_page(self):
        """A new tab, attached in flat mode, with the Runtime, Log and Page domains enabled."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            page.send(domain)
        return page

    def close(self):
        """Browser.close, then (when it does not exit soon) kill; removes the profile directory."""
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", timeout=10)
            except CDPError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._cmd_w, self._msg_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._reader.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _remote_text(obj):
    """A console argument (a Runtime.RemoteObject) as text."""
    if "value" in obj:
        return str(obj["value"])
    return obj.get("description") or obj.get("unserializableValue") or obj.get("type", "?")


class Page:
    """One attached tab."""

    def __init__(self, browser, target_id, session_id):
        self.browser = browser
        self.target_id = target_id
        self.session = session_id

    def send(self, method, params=None, timeout=DEADLINE_S):
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def close(self):
        """Closes the tab (nothing when it is closed already)."""
        try:
            self.browser.send("Target.closeTarget", {"targetId": self.target_id})
        except CDPError as e:
            if "No target" not in str(e):
                raise

    def problems(self):
        """What the page reported as going wrong, as text: console.error/warn/assert calls, uncaught
        exceptions and error-level log entries (CSP violations, failed loads, interventions)."""
        out = []
        for method, p in self.browser.events(self.session):
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: " + " ".join(_remote_text(a) for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                desc = d.get("exception", {}).get("description") or d.get("text", "")
                out.append(f"exception: {desc} ({d.get('url', '')}:{d.get('lineNumber', '?')})")
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log {e.get('source')}: {e.get('text')} {e.get('url', '')}".rstrip())
        return out

    def navigate(self, url, timeout=DEADLINE_S):
        """Loads `url` and waits until the new document has loaded (the old one is marked first, so
        that its own readyState cannot answer for the new one)."""
        self.evaluate("document.__cdpOld = true")
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CDPError(f"Page.navigate {url}: {result['errorText']}")
        self.wait_for("!document.__cdpOld && document.readyState === 'complete'", timeout=timeout,
                      what=f"{url} to load")

    def evaluate(self, expression, timeout=DEADLINE_S):
        """The value of a JavaScript expression in the page (promises awaited, result by value)."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError(f"evaluate {expression!r}: " + (d.get("exception", {}).get("description") or d.get("text", "")))
        return r.get("result", {}).get("value")

    def wait_for(self, expression, timeout=DEADLINE_S, what=None, interval=0.1):
        """Polls `expression` until it is truthy and returns its value; fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        value = None
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what or expression}; last value "
                                     f"{value!r}; page problems: {self.problems()}")
            if self.browser.proc.poll() is not None:
                raise CDPError(f"the browser exited while waiting for {what or expression}:\n{self.browser.log()}")
            time.sleep(interval)

    def wait_until(self, predicate, timeout=DEADLINE_S, what="a condition", interval=0.1):
        """Polls a Python predicate (e.g. over problems()) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}; page problems: {self.problems()}")
            time.sleep(interval)

    def set_viewport(self, width, height, scale=1, mobile=False):
        """Emulates a screen of width × height CSS pixels (mobile: a phone, honouring the viewport meta)."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})

    def screenshot(self):
        """The visible viewport as PNG bytes."""
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
