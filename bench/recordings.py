"""Bench rows for recordings (``bench/bench.py`` prints them; run alone: ``python bench/recordings.py [--runs N]``).

- a mock serving a 40-round flow: the SDK's own ``Client`` (its automatic loop) through the 40 rounds of
  ``bench/rounds_server.py``'s ``survey`` served by ``mcpcli mock --http`` from a recording, against the same
  client through the live server (target ≤ 1.5×: the mock matches each retry's answers and seals its own state);
- a replay of 100 recorded flows: ``mcpcli replay`` (a whole process: read, check, connect, 100 two-round flows
  each compared round by round) against the SDK's own loop doing the same 100 flows one after another in one
  process (target ≤ 1.5×).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    from bench import PY, ROOT, alternate, free_port, mcpcli_argv, row, run_once, wait_for_port

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

    from bench import WARMUP

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


if __name__ == "__main__":
    import argparse
    import os
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    given = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as name:
        os.environ["MCPCLI_HOME"] = str(Path(name) / "home")
        os.environ["MCPCLI_WORKER"] = "0"
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        recording_figures(Path(name), dict(os.environ), given.runs)
