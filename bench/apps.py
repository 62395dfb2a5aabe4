"""From ``mcpcli call TOOL --app`` to the view's ``ui/initialize``, cold and warm, against a bare floor.

    python bench/apps.py [--runs N] [--write]

Each run starts ``mcpcli call provision -a name=x --answer region=eu-west-1 --app --no-browser --json -s demo`` (the
demo server's tool with a view; its one question answered up front), opens a headless Chromium page (Playwright,
the system's browser, made before the clock starts) on the URL of the ``app-url`` line as soon as it is read, and
stops the clock when the ``app-initialize`` line (the view's ``ui/initialize`` reached mcpcli) arrives on stdout.
Three sides take turns, so drift in machine load hits them alike:

- cold: no worker (``MCPCLI_WORKER=0``): a fresh interpreter imports mcpcli, connects, reads the view, serves it;
- warm: through a running worker (``mcpcli worker start``; ``MCPCLI_WORKER_REQUIRED=1``, so a run the worker did not
  take fails instead of silently running cold);
- floor: ``python -c`` that binds a loopback socket, prints its URL and serves one static page whose script posts
  ``ui/initialize`` back: an interpreter start, a page load and one round trip, what any local browser host pays.
  mcpcli's page loads more (the host page, then the sandbox proxy on a second origin, then the view in it).

Per side: median, min and max of the whole (process start → ``ui/initialize``), and the medians of its two parts
(process start → URL printed; URL → ``ui/initialize``, the browser's share). ``--write`` appends the lines to
``bench/apps.txt``. Everything lives in a temporary ``MCPCLI_HOME`` and worker directory. Then one Ctrl-C check per
path: SIGINT to the ``mcpcli`` process while the page is open must reach the view as ``ui/resource-teardown``
(``app-teardown`` answered) and exit 130.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit import PY, ROOT, WARMUP, mcpcli_argv

CALL = ["call", "provision", "-a", "name=x", "--answer", "region=eu-west-1", "--app", "--no-browser", "--json"]

FLOOR = r"""
import http.server, json, sys

PAGE = b'''<!doctype html><title>floor</title><script>
fetch("/init", {method: "POST", body: JSON.stringify({jsonrpc: "2.0", id: 0, method: "ui/initialize"})});
</script>'''


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        print(json.dumps({"event": "app-initialize", "method": body["method"]}), flush=True)
        self.send_response(204)
        self.end_headers()
        self.server.done = True

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
server.done = False
print(json.dumps({"event": "app-url", "url": f"http://127.0.0.1:{server.server_address[1]}/"}), flush=True)
while not server.done:
    server.handle_request()
"""


class Run:
    """One process printing JSON Lines: each line with the moment it arrived (``perf_counter``)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self.changed = threading.Condition()
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            at = time.perf_counter()
            if line.strip():
                with self.changed:
                    self.lines.append((at, json.loads(line)))
                    self.changed.notify_all()
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def when(self, event: str, timeout: float = 60) -> tuple[float, dict[str, Any]]:
        """When the first ``event`` line arrived, and the line (waiting for it); exits the bench if it never does."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = next(((at, line) for at, line in self.lines if line.get("event") == event), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    break
                self.changed.wait(left)
        err = self.proc.stderr.read() if self.proc.stderr and self.closed else ""
        raise SystemExit(f"bench: no {event} line (exit {self.proc.poll()}): {self.lines} {err}")

    def end(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for _, line in self.lines if line.get("event") == name]


def once(browser: Any, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(process start → URL, process start → ``ui/initialize``) for one run; the page closed, the exit checked."""
    context = browser.new_context()
    page = context.new_page()
    run = Run(argv, env)
    try:
        url_at, line = run.when("app-url")
        page.goto(line["url"], wait_until="commit")
        init_at, _ = run.when("app-initialize")
    finally:
        context.close()  # the page's close ends mcpcli's run (exit 0); the floor has ended already
    code = run.end()
    if code != 0:
        err = run.proc.stderr.read() if run.proc.stderr else ""
        raise SystemExit(f"bench: {' '.join(argv[:3])}… exited {code}: {err.strip()}")
    return url_at - run.started, init_at - run.started


def ctrl_c(browser: Any, argv: list[str], env: dict[str, str]) -> str:
    """SIGINT to the mcpcli process once its view initialized: the teardown it reports, its exit, how long."""
    context = browser.new_context()
    run = Run(argv, env)
    try:
        page = context.new_page()
        page.goto(run.when("app-url")[1]["url"])
        run.when("app-initialized")
        start = time.perf_counter()
        run.proc.send_signal(signal.SIGINT)
        code = run.end(15)
        took = time.perf_counter() - start
    finally:
        context.close()
    teardown = run.events("app-teardown")
    answered = bool(teardown) and teardown[0].get("answered") is True
    verdict = "ok" if answered and code == 130 else "MISS"
    return f"teardown answered {answered}, exit {code}, {took:.2f} s after SIGINT   {verdict}"


def summary(label: str, samples: list[tuple[float, float]]) -> str:
    whole = [init for _, init in samples]
    url = statistics.median(u for u, _ in samples)
    browser = statistics.median(init - u for u, init in samples)
    return (
        f"{label}: {len(samples)} runs: median {statistics.median(whole):.3f} s, min {min(whole):.3f} s, "
        f"max {max(whole):.3f} s (to the URL {url:.3f} s, URL to ui/initialize {browser:.3f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs per side (after 2 warm-up runs)")
    parser.add_argument("--write", action="store_true", help="append the results to bench/apps.txt")
    given = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("MCPCLI_TEST_CHROMIUM") or "/usr/bin/chromium"
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "mcpcli")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for name in ("MCPCLI_SERVER", "MCPCLI_STORE", "MCPCLI_WORKER_REQUIRED", "CI"):
            os.environ.pop(name, None)
        os.environ["MCPCLI_HOME"] = str(tmp / "home")
        os.environ["MCPCLI_WORKER_DIR"] = str(tmp / "w")
        (tmp / "w").mkdir(mode=0o700)
        cold = {**os.environ, "MCPCLI_WORKER": "0"}
        warm = {**os.environ, "MCPCLI_WORKER": "1", "MCPCLI_WORKER_REQUIRED": "1"}
        argv = [*mcpcli_argv(), *CALL, "-s", "demo"]
        subprocess.run([*mcpcli_argv(), "worker", "start"], env=warm, cwd=ROOT, capture_output=True, check=True)
        try:
            with sync_playwright() as playwright:
                args = ["--no-sandbox"] if os.geteuid() == 0 else []
                browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=args)
                sides: dict[str, Callable[[], tuple[float, float]]] = {
                    "cold call --app -> ui/initialize": lambda: once(browser, argv, cold),
                    "warm call --app -> ui/initialize": lambda: once(browser, argv, warm),
                    "floor: python -c page -> initialize": lambda: once(browser, [PY, "-c", FLOOR], cold),
                }
                samples: dict[str, list[tuple[float, float]]] = {label: [] for label in sides}
                for i in range(WARMUP + given.runs):
                    for label, side in sides.items():
                        sample = side()
                        if i >= WARMUP:
                            samples[label].append(sample)
                checks = [
                    f"Ctrl-C, cold: {ctrl_c(browser, argv, cold)}",
                    f"Ctrl-C, warm (through the worker): {ctrl_c(browser, argv, warm)}",
                ]
                version = browser.version
                browser.close()
        finally:
            subprocess.run([*mcpcli_argv(), "worker", "stop"], env=warm, cwd=ROOT, capture_output=True)
    floor = statistics.median(init for _, init in samples["floor: python -c page -> initialize"])
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"{stamp} {summary(label, got)}" for label, got in samples.items()]
    for label in list(sides)[:2]:
        ours = statistics.median(init for _, init in samples[label])
        lines.append(f"{stamp} {label.split(' ')[0]} against the floor: {ours / floor:.2f}x")
    lines += [f"{stamp} {check}" for check in checks]
    machine = (
        f"{stamp} machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, Chromium {version} headless; -s demo (in-process), {given.runs} runs per side"
    )
    lines.insert(0, machine)
    print("\n".join(lines))
    if given.write:
        with (ROOT / "bench" / "apps.txt").open("a") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
