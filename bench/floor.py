"""A warm call against the physical floor (issue 36): a bare interpreter plus the SDK client's own round trip.

    python bench/floor.py [--runs N] [--against OTHER_PYTHON] [--concurrent 100]

The floor of a command that must reach the server at all is ``python -c pass`` plus what the server takes to
answer; the SDK client's round trip is measured in the same run, on a connection it keeps open (a persistent
process timing its own ``call_tool``), so the floor holds no connection set-up. Rows, each median of N runs after
2 warm-up runs, every side taking turns (``kit.alternate``):

- warm ``call echo`` over HTTP through the worker, against bare + the SDK's ``tools/call`` (target ≤ 0.035 s or
  ≤ 1.5×);
- warm ``call echo`` to a kept-alive stdio demo, against bare + the SDK's stdio ``tools/call`` (the same);
- warm ``call provision --answer region=r`` (a flow of two rounds), against bare + the SDK's own loop making the
  same call with its elicitation callback (≤ 1.5×);
- 100 concurrent warm ``call echo`` through one worker: wall time / 100 (target: no slower than 4.5 s / 100).

``--against PYTHON``: the interpreter of another install of mcpcli (a checkout of main with its own virtualenv):
its ``mcpcli`` runs as one more side of every row, in the same run — before and after, paired. Each install has
its own worker (the worker's socket is per install) and its own ``MCPCLI_HOME``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kit import PY, ROOT, alternate, free_port, run_once, wait_for_port

SDK_TIMER = """\
import sys, time

import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters


async def elicit(ctx, params):
    return t.ElicitResult(action="accept", content={"region": "r"})


async def main() -> None:
    target, *rest = sys.argv[1:]
    server = target if target.startswith("http") else StdioServerParameters(command=target, args=rest)
    async with Client(server, elicitation_callback=elicit) as client:
        await client.call_tool("echo", {"text": "hi"})
        print("ready", flush=True)
        for line in sys.stdin:  # a tool a line; answered with the seconds its call took
            start = time.perf_counter()
            if line.strip() == "echo":
                await client.call_tool("echo", {"text": "hi"})
            else:
                await client.call_tool("provision", {"name": "b"})
            print(time.perf_counter() - start, flush=True)


anyio.run(main)
"""


class Timer:
    """The SDK client on a kept connection, timing one call a line."""

    def __init__(self, script: Path, target: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [PY, str(script), *target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("bench: the SDK timer did not start")

    def __call__(self, tool: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(tool + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _mcpcli(python: str) -> list[str]:
    script = Path(python).with_name("mcpcli")
    return [str(script)] if script.exists() else [python, "-m", "mcpcli"]


def _concurrent(argv: list[str], env: dict[str, str], n: int) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL) for _ in range(n)]
    codes = {p.wait(timeout=300) for p in procs}
    if codes != {0}:
        raise SystemExit(f"bench: concurrent calls exited {codes}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", help="the python of another mcpcli install, run as one more side")
    parser.add_argument("--concurrent", type=int, default=100)
    parser.add_argument("--bursts", type=int, default=3, help="concurrent bursts per install (median)")
    parser.add_argument("--only-concurrent", action="store_true", help="the concurrent row alone")
    parser.add_argument(
        "--gap", type=float, default=0.05, help="seconds of quiet before each timed command (0: back to back)"
    )
    given = parser.parse_args()
    installs = {"mcpcli": PY, **({"against": given.against} if given.against else {})}
    for python in installs.values():
        subprocess.run([python, "-m", "compileall", "-q", str(Path(python).parent.parent)], capture_output=True)
        subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "mcpcli")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="mcpcli-floor-") as tmp_name:
        tmp = Path(tmp_name)
        base = {k: v for k, v in os.environ.items() if k not in ("CI", "MCPCLI_SERVER", "MCPCLI_STORE")}
        base["MCPCLI_WORKER_DIR"] = str(tmp / "workers")
        envs = {
            name: {**base, "MCPCLI_HOME": str(tmp / name), "MCPCLI_WORKER": "1", "MCPCLI_WORKER_REQUIRED": "1"}
            for name in installs
        }
        demo = [PY, "-m", "mcpcli.demo", "--key-file", str(tmp / "demo.key")]
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        with (tmp / "demo.log").open("wb") as log:
            server = subprocess.Popen([*demo, "--http", f"127.0.0.1:{port}"], stdout=log, stderr=log, env=base)
        script = tmp / "sdk_timer.py"
        script.write_text(SDK_TIMER, encoding="utf-8")
        timers: list[Timer] = []
        try:
            wait_for_port(port, server, tmp / "demo.log")
            for name, python in installs.items():
                subprocess.run([*_mcpcli(python), "worker", "start"], env=envs[name], check=True, capture_output=True)
            http, stdio = Timer(script, [url], base), Timer(script, demo, base)
            timers += [http, stdio]
            print(
                f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; median of {given.runs} runs, sides take turns"
                f" in a rotating order, {given.gap:g} s apart"
            )
            print(f"{'measure':<44} {'s':>8} {'floor s':>8} {'ratio':>7}   target")
            bare = [PY, "-c", "pass"]
            rows = [
                ("warm call echo, HTTP", ["call", "echo", "--arg", "text=hi", "-s", url], http, "echo", "hi"),
                (
                    "warm call echo, kept stdio",
                    ["call", "echo", "--arg", "text=hi", "-s", shlex.join(demo), "--keep-alive"],
                    stdio,
                    "echo",
                    "hi",
                ),
                (
                    "warm call provision --answer, HTTP",
                    ["call", "provision", "-a", "name=b", "--answer", "region=r", "-s", url],
                    http,
                    "provision",
                    None,
                ),
            ]
            for label, words, timer, tool, expect in [] if given.only_concurrent else rows:
                sides = [lambda: run_once(bare, base), lambda t=timer, k=tool: t(k)]  # type: ignore[misc]
                for name, python in installs.items():
                    argv, env = [*_mcpcli(python), *words], envs[name]
                    sides.append(lambda a=argv, e=env, x=expect: run_once(a, e, x))  # type: ignore[misc]
                medians = alternate(given.runs, *sides, gap=given.gap)
                floor = medians[0] + medians[1]
                print(f"  floor: python -c pass {medians[0]:.4f} s + the SDK's own {tool} {medians[1]:.4f} s")
                for name, ours in zip(installs, medians[2:], strict=True):
                    ok = ours <= 0.035 or ours / floor <= 1.5
                    target = "≤ 0.035 s or ≤ 1.5x"
                    print(
                        f"{label + ' (' + name + ')':<44} {ours:>8.4f} {floor:>8.4f} {ours / floor:>6.2f}x   {target}"
                        f" {'ok' if ok else 'MISS'}"
                    )
            n = given.concurrent
            took_by: dict[str, list[float]] = {name: [] for name in installs}
            for _ in range(given.bursts):  # the installs take turns, as the rows above
                for name, python in installs.items():
                    argv = [*_mcpcli(python), "call", "echo", "--arg", "text=hi", "-s", url]
                    took_by[name].append(_concurrent(argv, envs[name], n))
            for name in installs:
                took = statistics.median(took_by[name])
                ok = took / n <= 4.5 / 100
                print(
                    f"{f'{n} concurrent warm calls, per call ({name})':<44} {took / n:>8.4f} {'':>8} {'':>7}   "
                    f"≤ 0.045 s {'ok' if ok else 'MISS'}"
                )
        finally:
            for timer in timers:
                timer.close()
            for name, python in installs.items():
                subprocess.run([*_mcpcli(python), "worker", "stop"], env=envs[name], capture_output=True)
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
