"""Headless Chromium, driven through the DevTools protocol over a pipe: browser_test.py's browser.

Chromium's --remote-debugging-pipe reads JSON commands on fd 3 and writes replies and events on
fd 4, each message ending in a NUL byte: no port, no network, nothing but the standard library.
Browser starts it (through a small Python trampoline that puts the pipes on fds 3 and 4) and
sends commands; Tab is one page of it: open a URL and wait until it has loaded, evaluate
JavaScript in it, take a screenshot. serve() is the local web server that Chromium loads the
pages from (on 127.0.0.1: file:// URLs would not show a page as a reader's browser does).
"""
import base64
import functools
import http.server
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

# Seconds a page may take to load, and Chromium to answer a command.
PAGE_TIMEOUT = 30.0
# The window, in CSS pixels at a device scale factor of 1: a screenshot's size in pixels.
WINDOW = (1280, 900)

# Debian's flags for a headless Chromium as root on a machine with no network.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps",
    "--no-default-browser-check", "--mute-audio", "--hide-scrollbars",
    "--window-size=%d,%d" % WINDOW, "--remote-debugging-pipe",
]


def find_chromium():
    """The Chromium to run: $CHROMIUM, else the first of its usual names on PATH; None if none."""
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome",
                 "google-chrome-stable"):
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


# ----------------------------------------------------------------------------------------------
# The DevTools protocol over a pipe

class Browser:
    """Chromium with --remote-debugging-pipe: it reads commands on fd 3, writes on fd 4."""

    def __init__(self, chromium, profile):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # A small Python trampoline puts the pipe's ends on fds 3 and 4, then becomes Chromium.
        trampoline = ("import fcntl, os, sys\n"
                      "r, w = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 5) for fd in sys.argv[1:3])\n"
                      "os.dup2(r, 3)\n"
                      "os.dup2(w, 4)\n"
                      "os.set_inheritable(3, True)\n"
                      "os.set_inheritable(4, True)\n"
                      "os.execv(sys.argv[3], sys.argv[3:])\n")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", trampoline, str(to_browser_r), str(from_browser_w), chromium,
             *CHROMIUM_FLAGS, "--user-data-dir=" + profile, "about:blank"],
            pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._replies = {}
        self._events = queue.Queue()
        self._lock = threading.Condition()
        self._closed = False
        self._stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace"))
            del self._stderr[:-30]

    def _read(self):
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw.decode("utf-8"))
                if "id" in message:
                    with self._lock:
                        self._replies[message["id"]] = message
                        self._lock.notify_all()
                else:
                    self._events.put(message)

    def send(self, method, params=None, session=None, timeout=PAGE_TIMEOUT):
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout
        with self._lock:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if self._closed:
                    raise RuntimeError("Chromium exited:\n" + "".join(self._stderr))
                if left <= 0:
                    raise TimeoutError("Chromium did not answer %s in %.0f s" % (method, timeout))
                self._lock.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError("%s failed: %s" % (method, reply["error"].get("message")))
        return reply.get("result", {})

    def events(self, timeout):
        """The next event, or None after timeout seconds."""
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)


class Tab:
    """One page of the browser, attached in flat mode."""

    def __init__(self, browser):
        self.browser = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1,
                   "mobile": False})

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def open(self, url):
        """Navigates and waits for the load event; returns what happened on the way."""
        while self.browser.events(0) is not None:    # forget the previous page's stragglers
            pass
        result = {"status": None, "failed": [], "exceptions": []}
        requests, pending = {}, set()
        reply = self.send("Page.navigate", {"url": url})
        if reply.get("errorText"):
            result["failed"].append("%s (%s)" % (url, reply["errorText"]))
            return result
        loader = reply.get("loaderId")
        deadline = time.monotonic() + PAGE_TIMEOUT
        loaded = False
        quiet_until = None
        while True:
            now = time.monotonic()
            if now > deadline:
                result["failed"].append("%s: %s in %.0f s" % (
                    url, "still loading %s" % ", ".join(sorted(requests[r] for r in pending))
                    if loaded else "no load event", PAGE_TIMEOUT))
                break
            if loaded and not pending and now >= quiet_until:
                break
            event = self.browser.events(0.05 if loaded else 1.0)
            if event is None or event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent":
                requests[params["requestId"]] = params["request"]["url"]
                if params.get("loaderId") == loader or loader is None:
                    pending.add(params["requestId"])
            elif method in ("Network.loadingFinished", "Network.loadingFailed"):
                pending.discard(params["requestId"])
                quiet_until = max(quiet_until or 0, time.monotonic() + 0.03)
            elif method == "Network.responseReceived":
                response = params["response"]
                if params.get("type") == "Document" and response["url"].split("#")[0] == url.split("#")[0]:
                    result["status"] = response["status"]
                if response["status"] >= 400 and not response["url"].endswith("/favicon.ico"):
                    result["failed"].append("%s (HTTP %d)" % (response["url"], response["status"]))
            if method == "Network.loadingFailed":
                if not params.get("canceled"):
                    result["failed"].append("%s (%s)" % (requests.get(params["requestId"], "?"),
                                                         params.get("errorText")))
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                result["exceptions"].append(text.splitlines()[0] if text else "an exception")
            elif method == "Page.loadEventFired":
                loaded = True       # then wait for what scripts load after `load` to finish
                quiet_until = max(quiet_until or 0, time.monotonic() + 0.03)
        return result

    def evaluate(self, expression):
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise RuntimeError("evaluating in the page failed: %s" % reply["exceptionDetails"])
        return reply["result"].get("value")

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


# ----------------------------------------------------------------------------------------------
# A local web server for the pages Chromium opens

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass  # a line per request would bury the test's own output


def serve(directory):
    """Serves `directory` on a free port of 127.0.0.1 from a thread: (server, its base URL)."""
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]
