"""What OpenTelemetry tracing costs a round: on (exporting in batches to a collector) against off, in one run.

    python bench/tracing.py [--runs N] [--write]

- per round, whole processes through a warm worker: a 41-round ``survey`` flow beyond a 1-round one, divided by 40
  (``bench/rounds_server.py``; its answer preset), with tracing off and with it on — ``OTEL_EXPORTER_OTLP_ENDPOINT``
  pointing at a collector stand-in on 127.0.0.1 that answers every export with 200. The sides alternate, so drift in
  load hits both. Target: on ≤ off + 0.2 ms a round.
- off, in one process: what the flow's tracing hooks cost a round when tracing is off (``telemetry.round_span``,
  ``answered``, ``flow_event`` — each returns at its first line), timed over a million calls. Target: 0 ms (well
  under a microsecond).

``--write`` appends the lines to ``bench/tracing.txt``. Everything lives in a temporary ``MCPCLI_HOME`` and worker
directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kit import PY, ROOT, alternate, free_port, mcpcli_argv, run_once, wait_for_port

ROUNDS = 40


def collector() -> tuple[ThreadingHTTPServer, list[int]]:
    """A stand-in for a collector: every ``POST /v1/traces`` read whole and answered 200; the bodies' sizes kept."""
    sizes: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            sizes.append(len(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, sizes


def hooks_off_ns(calls: int = 1_000_000) -> float:
    """Nanoseconds a round's tracing hooks cost with tracing off (one round span, one answer, one flow event)."""
    sys.path.insert(0, str(ROOT))
    from mcpcli import telemetry

    assert not telemetry.ON
    requests = {"value": {"method": "elicitation/create"}}
    start = time.perf_counter_ns()
    for _ in range(calls):
        with telemetry.round_span(1, requests):
            telemetry.answered("value", "flag", None)
        telemetry.flow_event("round", {})
    return (time.perf_counter_ns() - start) / calls


def per_round(tmp: Path, env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median ms a round costs beyond the first, tracing off and on, through a warm worker."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp / "rounds-server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [PY, str(ROOT / "bench" / "rounds_server.py"), "--http", f"127.0.0.1:{port}"], stdout=out, stderr=out
        )
    sink, sizes = collector()
    warm = {**env, "MCPCLI_WORKER": "1", "MCPCLI_WORKER_REQUIRED": "1"}
    warm.pop("CI", None)
    on = {**warm, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}"}
    mcpcli = mcpcli_argv()
    subprocess.run([*mcpcli, "worker", "start"], env=warm, cwd=ROOT, capture_output=True, check=True)
    try:
        wait_for_port(port, server, log)

        def survey(count: int, with_env: dict[str, str]) -> Callable[[], float]:
            argv = [*mcpcli, "call", "survey", "-a", f"count={count}", "--answer", "value=x", "--max-rounds", "1000"]
            return lambda: run_once([*argv, "-s", url], with_env, f"answered {count}")

        off_one, off_many, on_one, on_many = alternate(
            runs, survey(1, warm), survey(ROUNDS + 1, warm), survey(1, on), survey(ROUNDS + 1, on)
        )
        assert sizes, "tracing on sent nothing to the collector"
        return (off_many - off_one) / ROUNDS * 1000, (on_many - on_one) / ROUNDS * 1000
    finally:
        subprocess.run([*mcpcli, "worker", "stop"], env=warm, cwd=ROOT, capture_output=True)
        server.terminate()
        server.wait(timeout=10)
        sink.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--write", action="store_true", help="append the lines to bench/tracing.txt")
    given = parser.parse_args()
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "mcpcli")], check=True)
    lines = [
        f"# {time.strftime('%Y-%m-%d %H:%M')} · {platform.python_implementation()} {platform.python_version()} · "
        f"{os.cpu_count()} cpus · --runs {given.runs}"
    ]
    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as where:
        tmp = Path(where)
        env = {**os.environ, "MCPCLI_HOME": str(tmp / "home"), "MCPCLI_WORKER_DIR": str(tmp / "worker")}
        for name in [k for k in env if k.startswith("OTEL_")]:
            env.pop(name)
        off, on = per_round(tmp, env, given.runs)
        extra = on - off
        lines.append(f"{'per round, tracing off (warm)':<44} {off:>8.3f} ms")
        lines.append(f"{'per round, tracing on (warm, OTLP batches)':<44} {on:>8.3f} ms")
        verdict = "ok" if extra <= 0.2 else "MISS"
        lines.append(f"{'  tracing on beyond off, per round':<44} {extra:>8.3f} ms   target ≤ 0.2 ms   {verdict}")
        hooks = statistics.median(hooks_off_ns(200_000) for _ in range(5))
        verdict = "ok" if hooks < 1000 else "MISS"
        lines.append(f"{'hooks per round with tracing off':<44} {hooks / 1e6:>8.6f} ms   target 0 ms       {verdict}")
    print("\n".join(lines))
    if given.write:
        with (ROOT / "bench" / "tracing.txt").open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
