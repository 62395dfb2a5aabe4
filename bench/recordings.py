"""Bench rows for recordings (``bench/bench.py`` prints them; run alone: ``python bench/recordings.py [--runs N]``).

``--scale``: how replay time grows with the recording — ``survey`` flows of 4 rounds recorded by ``mcpcli batch``
against ``bench/rounds_server.py``, ~800 bytes a message, replayed whole: ~15 MB and ~80 MB (100,000 messages;
``--messages N``), the seconds (wall and CPU) and messages per second of each. Linear: the same rate at both sizes.

- a mock serving a 40-round flow: the SDK's own ``Client`` (its automatic loop) through the 40 rounds of
  ``bench/rounds_server.py``'s ``survey`` served by ``mcpcli mock --http`` from a recording, against the same
  client through the live server (target ≤ 1.5×: the mock matches each retry's answers and seals its own state);
- a replay of 100 recorded flows: ``mcpcli replay`` (a whole process: read, check, connect, 100 two-round flows
  each compared round by round) against the SDK's own loop doing the same 100 flows one after another in one
  process (target ≤ 1.5×).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from kit import PY, ROOT, WARMUP, alternate, free_port, mcpcli_argv, row, run_once, wait_for_port

ROUNDS = 40
FLOWS = 100

SDK_SEQUENTIAL = """\
import sys

import anyio
import mcp_types as t
from mcp import Client


async def elicit(ctx, params):
    return t.ElicitResult(action="accept", content={"region": "r"})


async def main(url: str, n: int) -> None:
    async with Client(url, elicitation_callback=elicit) as client:
        for i in range(n):
            result = await client.call_tool("provision", {"name": f"b{i}"})
            assert result.content[0].text == f"Provisioned 'b{i}' in r.", result
    print(n)


anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


def recording_figures(tmp: Path, env: dict[str, str], runs: int) -> None:
    mcpcli = mcpcli_argv()
    started: list[subprocess.Popen[bytes]] = []

    def serve(argv: list[str], name: str) -> str:
        port = free_port()
        log = tmp / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([*argv, "--http", f"127.0.0.1:{port}"], stdout=out, stderr=out, cwd=ROOT, env=env)
        started.append(proc)
        wait_for_port(port, proc, log)
        return f"http://127.0.0.1:{port}/mcp"

    try:
        live = serve([PY, str(ROOT / "bench" / "rounds_server.py")], "rounds-live")
        flow = tmp / "survey.ndjson"
        survey = ["call", "survey", "-a", f"count={ROUNDS}", "--answer", "value=x", "--max-rounds", "1000"]
        run_once([*mcpcli, "--record", str(flow), *survey, "-s", live], env, f"answered {ROUNDS}")
        mock = serve([*mcpcli, "mock", str(flow)], "rounds-mock")
        import anyio

        ours, base = anyio.run(_sdk_survey, mock, live, runs)
        print(row(f"mock, {ROUNDS}-round flow vs live (SDK client)", ours, base, "≤ 1.5x", ours / base <= 1.5, "ms"))

        demo = serve([PY, "-m", "mcpcli.demo", "--key-file", str(tmp / "demo.key")], "demo-replay")
        lines = [json.dumps({"tool": "provision", "arguments": {"name": f"b{i}"}}) for i in range(FLOWS)]
        flows = tmp / "flows.jsonl"
        flows.write_text("\n".join(lines) + "\n")
        recorded = tmp / "flows.ndjson"
        batch = [*mcpcli, "--record", str(recorded), "batch", str(flows), "--answer", "region=r", "-s", demo]
        subprocess.run(batch, env=env, cwd=ROOT, capture_output=True, check=True, timeout=300)
        script = tmp / "sdk_sequential.py"
        script.write_text(SDK_SEQUENTIAL, encoding="utf-8")
        expect = f"Equal: {FLOWS + 1} exchanges, {2 * FLOWS + 1} rounds of {recorded} replayed against {demo}."
        ours, base = alternate(
            max(3, runs // 3),
            lambda: run_once([*mcpcli, "replay", str(recorded), "-s", demo], env, expect),
            lambda: run_once([PY, str(script), demo, str(FLOWS)], env, str(FLOWS)),
        )
        print(row(f"replay {FLOWS} recorded flows vs SDK loop", ours, base, "≤ 1.5x", ours / base <= 1.5))
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(timeout=10)


async def _sdk_survey(mock: str, live: str, runs: int) -> tuple[float, float]:
    """Median seconds of the SDK's own loop through the whole survey: against the mock, against the live server."""
    import mcp_types as t
    from mcp import Client

    async def elicit(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"value": "x"})

    times: dict[str, list[float]] = {mock: [], live: []}
    async with (
        Client(mock, elicitation_callback=elicit, input_required_max_rounds=1000) as against_mock,
        Client(live, elicitation_callback=elicit, input_required_max_rounds=1000) as against_live,
    ):
        for i in range(WARMUP + runs):
            for url, client in ((mock, against_mock), (live, against_live)):
                start = time.perf_counter()
                result = await client.call_tool("survey", {"count": ROUNDS})
                took = time.perf_counter() - start
                text = result.content[0]
                assert isinstance(text, t.TextContent) and text.text == f"answered {ROUNDS}", result
                if i >= WARMUP:
                    times[url].append(took)
    return statistics.median(times[mock]), statistics.median(times[live])


SURVEY_ROUNDS = 4
"""Questions per scaled flow: a flow is 5 requests and 5 responses, 10 messages."""


def scale_figures(tmp: Path, env: dict[str, str], messages: int) -> None:
    """Replay time against the recording's size: ~15 MB and ~80 MB (``messages``) of the same flows."""
    mcpcli = mcpcli_argv()
    port = free_port()
    log = tmp / "rounds-scale.log"
    with log.open("wb") as out:
        argv = [PY, str(ROOT / "bench" / "rounds_server.py"), "--http", f"127.0.0.1:{port}"]
        server = subprocess.Popen(argv, stdout=out, stderr=out, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_port(port, server, log)
        head = f"{'MB':>7} {'messages':>9} {'wall s':>8} {'cpu s':>7} {'msg/s wall':>11} {'msg/s cpu':>10}"
        print(f"{'replay of':<34} {head}")
        rates = []
        for count in (messages * 15 // 80, messages):
            flows = max(1, count // (2 * (SURVEY_ROUNDS + 1)))
            batch = tmp / f"survey-{flows}.jsonl"
            line = json.dumps({"tool": "survey", "arguments": {"count": SURVEY_ROUNDS}})
            batch.write_text((line + "\n") * flows)
            recorded = tmp / f"survey-{flows}.ndjson"
            record = [*mcpcli, "--record", str(recorded), "batch", str(batch), "--answer", "value=x", "-s", url]
            subprocess.run(record, env=env, cwd=ROOT, capture_output=True, check=True, timeout=3600)
            with recorded.open("rb") as file:
                sent = sum(1 for raw in file if raw.startswith(b'{"t"') and b'"dir":' in raw[:120])
            size = recorded.stat().st_size / 2**20
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            replay = [*mcpcli, "replay", str(recorded), "--max-mb", "1000", "-s", url]
            proc = subprocess.run(replay, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0 or not proc.stdout.startswith("Equal:"):
                raise SystemExit(f"bench: replay failed ({proc.returncode}):\n{proc.stdout}{proc.stderr[-2000:]}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rates.append(sent / cpu)
            label = f"{flows} flows of {SURVEY_ROUNDS + 1} rounds"
            print(
                f"{label:<34} {size:>7.1f} {sent:>9} {wall:>8.1f} {cpu:>7.1f} {sent / wall:>11.0f} {sent / cpu:>10.0f}"
            )
        print(f"messages/s (cpu), large against small: {rates[1] / rates[0]:.2f} (1.00: linear)")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    import argparse
    import os
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--scale", action="store_true", help="replay time against the recording's size, alone")
    parser.add_argument("--messages", type=int, default=100_000, help="messages of the larger recording (--scale)")
    given = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as name:
        os.environ["MCPCLI_HOME"] = str(Path(name) / "home")
        os.environ["MCPCLI_WORKER"] = "0"
        if given.scale:
            scale_figures(Path(name), dict(os.environ), given.messages)
        else:
            recording_figures(Path(name), dict(os.environ), given.runs)
