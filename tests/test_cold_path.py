"""What a cold ``call`` (no worker: the first of the day, CI, ``--no-worker``) does not pay for, checked in a fresh
interpreter: the cyclic collector walking the half a million objects the start imports, and the CA bundle read for a
server on plain ``http://``. The time itself is measured in bench/bench.py, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKER = "@@facts@@"


def _cold_call(home: Path, *argv: str) -> dict[str, Any]:
    """Run ``mcpcli ARGV`` through the executable's entry point in a fresh interpreter; what it saw."""
    script = textwrap.dedent(
        f"""
        import atexit, gc, json, sys

        facts = {{"before": 0, "after": 0, "started": False, "connected": False}}

        def count(phase, info):  # from the start of the executable's main to the connection, and after it
            if phase == "start" and facts["started"]:
                facts["after" if facts["connected"] else "before"] += 1

        gc.callbacks.append(count)

        def tap(module):  # the handshake's end is the connection's: noted without importing anything early
            enter = module.HandshakeClient.__aenter__

            async def entered(self):
                client = await enter(self)
                facts["connected"] = True
                return client

            module.HandshakeClient.__aenter__ = entered

        class Hook:
            def find_spec(self, name, path=None, target=None):
                if name != "mcpcli.net.handshakes":
                    return None
                sys.meta_path.remove(self)
                import importlib.util

                spec = importlib.util.find_spec(name)
                run = spec.loader.exec_module
                spec.loader.exec_module = lambda module: (run(module), tap(module))
                return spec

        sys.meta_path.insert(0, Hook())

        def report():
            from mcpcli.net import transports

            facts["threshold"] = gc.get_threshold()[0]
            facts["frozen"] = gc.get_freeze_count()
            facts["ca_bundle_reads"] = transports._tls_context.cache_info().misses
            print({MARKER!r} + json.dumps(facts))

        atexit.register(report)
        sys.argv = ["mcpcli", *{list(argv)!r}]
        from mcpcli.entry import main

        facts["started"] = True
        main()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_WORKER": "0", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == "hi", proc.stdout
    line = next(line for line in proc.stdout.splitlines() if line.startswith(MARKER))
    facts: dict[str, Any] = json.loads(line.removeprefix(MARKER))
    return facts


def test_a_cold_call_starts_without_collecting_and_collects_as_usual_once_connected(home: Path) -> None:
    facts = _cold_call(home, "call", "echo", "--arg", "text=hi")  # the built-in demo server
    assert facts["connected"]
    assert facts["before"] == 0, facts  # ~240 collections walked the imports before
    assert facts["threshold"] == 700, facts  # the default again, from the connection on
    assert facts["frozen"] > 100_000, facts  # what the start made is out of every later collection


def test_a_cold_call_to_a_plain_http_server_reads_no_ca_bundle(home: Path, http_demo: Any) -> None:
    server = http_demo()
    facts = _cold_call(home, "call", "echo", "--arg", "text=hi", "-s", server.url)
    assert facts["ca_bundle_reads"] == 0, facts
    assert facts["before"] == 0, facts


def test_a_call_over_http_writes_no_line_per_request_to_the_log_unless_debugging(home: Path, http_demo: Any) -> None:
    """httpx2 logs every request at INFO: a write and a flush per round, and a log that grows with each one."""
    server = http_demo()
    env = {**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_WORKER": "0"}
    argv = [sys.executable, "-m", "mcpcli", "call", "echo", "--arg", "text=hi", "-s", server.url]
    log = home / "logs" / "mcpcli.log"

    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert log.is_file()
    assert "HTTP Request" not in log.read_text(encoding="utf-8")

    loud = subprocess.run([*argv, "--debug"], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert loud.returncode == 0, loud.stderr
    assert "HTTP Request: POST" in log.read_text(encoding="utf-8")  # --debug still shows every request


def test_a_full_log_is_moved_aside_so_the_logs_stay_bounded(home: Path) -> None:
    """Past ``LOG_MAX`` the next command starts a new log and keeps the full one as ``mcpcli.log.1`` (replacing the
    older one there), 0600 as it was: however long mcpcli is used, its logs take at most about twice that."""
    from mcpcli.commands.runtime import LOG_MAX

    logs = home / "logs"
    for private in (home, logs):
        private.mkdir(mode=0o700, exist_ok=True)
    log, kept = logs / "mcpcli.log", logs / "mcpcli.log.1"
    kept.write_text("the oldest lines\n", encoding="utf-8")
    full = "x" * 99 + "\n"
    log.write_text(full * (LOG_MAX // len(full) + 1), encoding="utf-8")
    log.chmod(0o600)
    env = {**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_WORKER": "0"}
    argv = [sys.executable, "-m", "mcpcli", "call", "echo", "--arg", "text=hi", "-s", "demo"]

    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert kept.stat().st_size > LOG_MAX  # the full log, whole: the oldest lines made way for it
    assert (kept.stat().st_mode & 0o777) == 0o600
    assert log.is_file() and log.stat().st_size < 4096
    assert (log.stat().st_mode & 0o777) == 0o600

    again = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert again.returncode == 0, again.stderr
    assert kept.stat().st_size > LOG_MAX  # a log under the limit stays where it is
    assert log.is_file()


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1"],
        ["call", "provision", "-a", "name=orders", "--no-input"],
        ["tools"],
        ["sessions", "list"],
        ["--help"],
    ],
    ids=["call", "call-parks", "tools", "sessions-list", "help"],
)
def test_with_tracing_off_no_command_imports_the_opentelemetry_sdk_or_its_exporter(argv: list[str]) -> None:
    """Off (no ``OTEL_*`` asking for it, no ``[telemetry]``), tracing costs nothing: not even the import of the SDK's
    provider or the OTLP exporter (the ``mcp`` SDK imports the OpenTelemetry API, a no-op without a provider)."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.__stderr__.write('@@' + ','.join(sorted(m for m in sys.modules"
        " if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter', 'mcpcli.telemetry.export')))) + '@@'))\n"
        f"sys.argv = ['mcpcli', *{argv!r}]\n"
        "from mcpcli.entry import main\nmain()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"MCPCLI_WORKER": "0"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode in (0, 3), done.stderr
    assert "@@@@" in done.stderr, done.stderr
