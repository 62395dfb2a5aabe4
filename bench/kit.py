"""What the bench scripts share (``bench/bench.py``, ``bench/recordings.py``): where things are, running a command
once and timing it, alternating two sides, a free port, a server's start, a table row. Imports none of them."""

from __future__ import annotations

import shlex
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
WARMUP = 2


def mcpcli_argv() -> list[str]:
    script = Path(PY).with_name("mcpcli")  # the console script users run, next to this interpreter
    return [str(script)] if script.exists() else [PY, "-m", "mcpcli"]


def run_once(argv: list[str], env: dict[str, str], expect: str | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or (expect is not None and proc.stdout.strip() != expect):
        raise SystemExit(f"bench: {shlex.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed


def alternate(runs: int, *sides: Callable[[], float], gap: float = 0.0) -> list[float]:
    """Median of each side; the sides take turns so that load changes hit all of them alike, in an order that
    rotates each run, so that no side always follows the same one (what a command leaves running after it exits —
    a worker forking its next child — would otherwise always slow the side after it). ``gap``: seconds of quiet
    before each side."""
    samples: list[list[float]] = [[] for _ in sides]
    for i in range(WARMUP + runs):
        turn = i % len(sides)
        for index in [*range(turn, len(sides)), *range(turn)]:
            if gap:
                time.sleep(gap)
            elapsed = sides[index]()
            if i >= WARMUP:
                samples[index].append(elapsed)
    return [statistics.median(bucket) for bucket in samples]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"bench: the HTTP demo server exited:\n{log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("bench: the HTTP demo server did not start within 30 s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def row(label: str, ours: float, base: float, target: str, ok: bool, unit: str = "s") -> str:
    scale = 1000.0 if unit == "ms" else 1.0
    return (
        f"{label:<40} {ours * scale:>9.3f} {unit:<2} {base * scale:>9.3f} {unit:<2} {ours / base:>7.2f}x"
        f"   {target:<10} {'ok' if ok else 'MISS'}"
    )
