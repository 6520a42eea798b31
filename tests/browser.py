"""Drive headless Chromium over its DevTools pipe (no network, no extra package).

``render(path)`` opens a local file in a fresh browser profile and returns what a
person would see and what the browser complained about: the page's visible text,
console messages, script exceptions, log entries (failed loads, blocked requests,
security violations), failed network requests, a screenshot and the page printed to
PDF. The browser talks over ``--remote-debugging-pipe`` (file descriptors 3 and 4),
so no port is opened.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-pipe",
         # resolve no host name at all: a page that tries the network fails at once and
         # no lookup leaves the machine
         "--host-resolver-rules=MAP * ~NOTFOUND"]


@dataclass
class Rendered:
    """What the browser showed and said about a page."""

    text: str = ""
    console: list[dict] = field(default_factory=list)
    exceptions: list[dict] = field(default_factory=list)
    log: list[dict] = field(default_factory=list)
    failed_requests: list[dict] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    checks: dict = field(default_factory=dict)
    screenshot: bytes = b""
    pdf: bytes = b""

    @property
    def errors(self) -> list[str]:
        """Everything that counts as a console error (a page without script has none)."""
        out = [f"console.{m.get('type')}: {m.get('args')}" for m in self.console]
        out += [f"exception: {e.get('exceptionDetails', {}).get('text')}"
                for e in self.exceptions]
        out += [f"log {e.get('entry', {}).get('level')}: {e.get('entry', {}).get('text')}"
                for e in self.log if e.get("entry", {}).get("level") in ("error", "warning")]
        out += [f"request failed: {r.get('errorText')} {r.get('blockedReason', '')}"
                for r in self.failed_requests]
        return out


class _Pipe:
    def __init__(self, exe: str, profile: str) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # High copies so that dup2 onto 3 and 4 in the child cannot clobber one another.
        hi_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 20)
        hi_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 20)

        def child() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(  # noqa: S603 - a local browser, fixed arguments
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child, close_fds=False)
        for fd in (to_r, from_w, hi_r, hi_w):
            os.close(fd)
        self.out = os.fdopen(to_w, "wb", buffering=0)
        self.inp = os.fdopen(from_r, "rb", buffering=0)
        self.events: queue.Queue = queue.Queue()
        self.replies: dict[int, dict] = {}
        self.cv = threading.Condition()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self.inp.read(65536)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self.cv:
                        self.replies[msg["id"]] = msg
                        self.cv.notify_all()
                else:
                    self.events.put(msg)

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict:
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.out.write(json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        with self.cv:
            while mid not in self.replies:
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no reply to {method}")
                self.cv.wait(min(left, 0.5))
            reply = self.replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 - the browser may already be gone
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
        for f in (self.out, self.inp):
            try:
                f.close()
            except OSError:
                pass


CHECKS_JS = """(() => {
  const imgs = Array.from(document.images);
  return {
    scripts: document.querySelectorAll('script').length,
    images: imgs.length,
    images_loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    external: Array.from(document.querySelectorAll('[src],[href]'))
      .map(e => e.getAttribute('src') || e.getAttribute('href'))
      .filter(u => !u.startsWith('data:') && !u.startsWith('#')),
    tables: document.querySelectorAll('table').length,
    overflowing: Array.from(document.querySelectorAll('.wide'))
      .filter(e => !e.closest('details.appendix') && e.scrollWidth > e.clientWidth + 1)
      .map(e => (e.querySelector('caption') || e.querySelector('th') || e).textContent
                 .slice(0, 60)),
    title: document.title,
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
  };
})()"""


def render(path: Path, *, width: int = 1280, height: int = 1600, timeout: float = 90.0,
           pdf: bool = True, full_page: bool = False) -> Rendered:
    """Open ``path`` in headless Chromium; collect text, complaints, screenshot and PDF.

    The screenshot shows the first ``width`` x ``height`` pixels, or the whole page
    (``full_page``, at half scale).
    """
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed")
    out = Rendered()
    with tempfile.TemporaryDirectory(prefix="dcplan-chromium-") as profile:
        pipe = _Pipe(CHROMIUM, profile)
        try:
            target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = pipe.call("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                pipe.call(f"{domain}.enable", session=sid)
            pipe.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False}, session=sid)
            pipe.call("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=sid)
            end = time.monotonic() + timeout
            loaded = False
            while time.monotonic() < end:
                try:
                    ev = pipe.events.get(timeout=0.5)
                except queue.Empty:
                    if loaded:
                        break  # quiet for half a second after load: done
                    continue
                m, p = ev.get("method"), ev.get("params", {})
                if m == "Page.loadEventFired":
                    loaded = True
                elif m == "Runtime.consoleAPICalled":
                    out.console.append({"type": p.get("type"),
                                        "args": [a.get("value", a.get("description"))
                                                 for a in p.get("args", [])]})
                elif m == "Runtime.exceptionThrown":
                    out.exceptions.append(p)
                elif m == "Log.entryAdded":
                    out.log.append(p)
                elif m == "Network.loadingFailed":
                    out.failed_requests.append(p)
                elif m == "Network.requestWillBeSent":
                    out.requests.append(p.get("request", {}).get("url", ""))
            if not loaded:
                raise TimeoutError(f"{path} did not finish loading")
            val = pipe.call("Runtime.evaluate", {"expression": "document.body.innerText",
                                                 "returnByValue": True}, session=sid)
            out.text = val["result"].get("value", "")
            out.checks = pipe.call("Runtime.evaluate", {"expression": CHECKS_JS,
                                                        "returnByValue": True},
                                   session=sid)["result"].get("value", {})
            params: dict = {"format": "png"}
            if full_page:
                size = pipe.call("Page.getLayoutMetrics", session=sid)["cssContentSize"]
                params.update(captureBeyondViewport=True,
                              clip={"x": 0, "y": 0, "width": size["width"],
                                    "height": size["height"], "scale": 0.5})
            shot = pipe.call("Page.captureScreenshot", params, session=sid)
            out.screenshot = base64.b64decode(shot["data"])
            if pdf:
                printed = pipe.call("Page.printToPDF", {"preferCSSPageSize": True,
                                                        "printBackground": True},
                                    session=sid, timeout=timeout)
                out.pdf = base64.b64decode(printed["data"])
            # events that arrived while we evaluated
            while not pipe.events.empty():
                ev = pipe.events.get()
                if ev.get("method") == "Runtime.consoleAPICalled":
                    out.console.append({"type": ev["params"].get("type"), "args": []})
                elif ev.get("method") == "Log.entryAdded":
                    out.log.append(ev["params"])
        finally:
            pipe.close()
    return out


def pdf_pages(data: bytes) -> int:
    """Pages of a PDF (page objects counted)."""
    import re

    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))
