"""What a server that dies on the 2026-07-28 probe costs: ``mcpcli -s BINARY info`` the first time (probe, the
process ends, started again with the handshake) against the second (the handshake remembered: one process) and
against ``--protocol legacy`` (the floor).

    python bench/strict_probe.py [BINARY] [--runs N]

BINARY: a stdio server that ends on a first message other than ``initialize`` (default: the rmcp server
tests/test_realservers.py installs, ``<test cache>/cortex/package/bin/cortex-mcp``). Medians of N runs, each first
run in a fresh ``MCPCLI_HOME``; the three sides alternate, so drift in machine load hits all of them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _default_binary() -> Path:
    cache = os.environ.get("MCPCLI_TEST_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpcli-tests"
    )
    return Path(cache) / "cortex" / "package" / "bin" / "cortex-mcp"


def timed(home: Path, binary: Path, *extra: str) -> float:
    env = {**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_WORKER": "0", "HOME": str(home.parent)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mcpcli", "-s", str(binary), "info", *extra], env=env, capture_output=True
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"info failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", type=Path, default=_default_binary())
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not args.binary.is_file():
        raise SystemExit(f"{args.binary}: not found (run tests/test_realservers.py -k rust once to install it)")
    first, second, legacy = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.runs + 1):
            home = Path(tmp) / f"run{n}" / "mcpcli"
            home.parent.mkdir(parents=True)
            a, b, c = (
                timed(home, args.binary),
                timed(home, args.binary),
                timed(home, args.binary, "--protocol", "legacy"),
            )
            if n:  # the first round warms the disk cache
                first.append(a)
                second.append(b)
                legacy.append(c)
    print(f"{args.binary.name} info, medians of {args.runs}:")
    print(f"  first run (probe, restart):   {statistics.median(first):.3f} s")
    print(f"  second run (remembered):      {statistics.median(second):.3f} s")
    print(f"  --protocol legacy (floor):    {statistics.median(legacy):.3f} s")


if __name__ == "__main__":
    main()
