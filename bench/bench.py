"""What mcpcli costs on top of the floor it cannot beat, measured in one run on this machine.

    python bench/bench.py [--runs N]

- startup: ``mcpcli --version`` / ``--help`` against ``python -c pass`` (target ≤ 0.15 s), and one shell
  completion (TAB after ``mcpcli call ec``) with the tool list cached (target ≤ 0.25 s);
- the inbox: ``mcpcli sessions list`` (and ``--json``) over a store of 2,000 sessions against ``mcpcli --version``
  (target ≤ 1.5×);
- one call, whole process: ``mcpcli call echo`` against a minimal SDK client script doing
  the same call, over stdio and over HTTP (target ratio ≤ 1.10);
- per flow, in one process over HTTP: mcpcli's hand-run loop (``Flow`` with its durable
  SQLite writes, preset answers) against the SDK's own automatic loop (target ratio ≤ 1.25);
- a multi-round flow through the warm worker: per-round cost (a 41-round flow beyond a 1-round one, whole
  processes) against the SDK's own loop doing the same rounds (target ≤ 1.25×), against a server on this machine
  and against one 10 ms away;
- the warm worker: whole-process ``call echo`` through it over HTTP (target ≤ 0.25× the SDK client's cold call)
  and to a kept-alive stdio server (≤ 0.15× the SDK client's cold stdio call), 100 concurrent one-round flows
  through one worker against one (≤ 3×), the same 100 flows as one warm ``mcpcli batch`` process against one
  call (≤ 3×; its floor: the SDK's own loop doing 100 concurrent calls in one process), and the worker's RSS;
- racing resumes (``--race N`` pairs, default 20): two ``resume`` processes at once per flow, against a
  server that logs every request it receives; counts double sends and lost rounds (target: 0);
- bounds: peak RSS and time of ``mcpcli call`` receiving a 50 MB result from a raw stdio server (against the
  SDK client doing the same call), and answering a 10,000-property form from an answers file;
- the store: one round's durable write (round + answers, lease checked) on SQLite and on a
  local PostgreSQL with its default fsync settings, and ``mcpcli sessions list`` over a store of
  10,000 sessions (target < 0.3 s on SQLite);
- tasks: one ``tasks/get`` round trip against an ordinary tool call's, the durable write of a poll that saw a
  change (an unchanged poll writes nothing), and a task of 100 polls driven to its result (the cost a poll adds to
  the 100 ms floor between polls);
- recordings (``bench/recordings.py``): ``mcpcli mock`` serving a 40-round flow to the SDK's client against the
  live server, and ``mcpcli replay`` of 100 recorded flows against the SDK's loop running them.

Medians of N runs after 2 warm-up runs; the two sides of each comparison alternate, so
drift in machine load hits both. Everything lives in a temporary ``MCPCLI_HOME``. mcpcli's bytecode is compiled
first, as installing it does (the SDK's is, in site-packages): under ``PYTHONDONTWRITEBYTECODE`` every run would
otherwise compile mcpcli's modules again, a cost no installed mcpcli pays. ``--only SECTION,…`` runs some sections.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from kit import PY, ROOT, WARMUP, alternate, free_port, mcpcli_argv, row, run_once, wait_for_port

FLOWS = 30
REGION = "eu-west-1"

SDK_CLIENT = """\
import sys

import anyio
from mcp import Client, StdioServerParameters


async def main() -> None:
    target, *rest = sys.argv[1:]
    server = target if target.startswith("http") else StdioServerParameters(command=target, args=rest)
    async with Client(server) as c:
        result = await c.call_tool("echo", {"text": "hi"})
    print(result.content[0].text)


anyio.run(main)
"""


SDK_BATCH = """\
import sys

import anyio
import mcp_types as t
from mcp import Client


async def elicit(ctx, params):
    return t.ElicitResult(action="accept", content={"region": "r"})


async def main(url: str, n: int) -> None:
    async with Client(url, elicitation_callback=elicit) as client:

        async def one(i: int) -> None:
            result = await client.call_tool("provision", {"name": f"b{i}"})
            assert result.content[0].text == f"Provisioned 'b{i}' in r.", result

        async with anyio.create_task_group() as tasks:
            for i in range(n):
                tasks.start_soon(one, i)
    print(n)


anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""
"""The floor under ``mcpcli batch``: the SDK's own loop, 100 concurrent one-round calls on one connection."""


RAW_SERVER = """\
import json, sys

SIZE, FIELDS = int(sys.argv[1]), int(sys.argv[2])
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "form")]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, params = m.get("method"), m.get("params") or {}
    hints = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public"}
    if method == "server/discover":
        r = {**hints, "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
    elif method == "tools/list":
        r = {**hints, "tools": TOOLS}
    elif params.get("name") == "echo":
        r = {"resultType": "complete", "content": [{"type": "text", "text": "x" * SIZE}]}
    elif params.get("inputResponses"):
        got = params["inputResponses"]["details"]["content"]
        r = {"resultType": "complete", "content": [{"type": "text", "text": f"got {len(got)}"}]}
    else:
        props = {f"field{i:05d}": {"type": "string", "title": f"Field {i}"} for i in range(FIELDS)}
        schema = {"type": "object", "properties": props, "required": list(props)}
        form = {"mode": "form", "message": "All of it", "requestedSchema": schema}
        ask = {"method": "elicitation/create", "params": form}
        r = {"resultType": "input_required", "inputRequests": {"details": ask}, "requestState": "s1"}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n")
    sys.stdout.flush()
"""
BIG_RESULT = 50 * 1000 * 1000
FORM_FIELDS = 10_000


def peak(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one run of ``argv``, its output thrown away."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"bench: {shlex.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    if proc.stderr:
        proc.stderr.close()
    return elapsed, usage.ru_maxrss / 1024  # KiB on Linux


def bounds_figures(tmp: Path, env: dict[str, str], runs: int) -> None:
    """A 50 MB result and a 10,000-property form: what they cost in time and memory."""
    script = tmp / "raw_server.py"
    script.write_text(RAW_SERVER, encoding="utf-8")
    server = shlex.join([PY, str(script), str(BIG_RESULT), str(FORM_FIELDS)])
    answers = tmp / "form.json"
    answers.write_text(json.dumps({f"field{i:05d}": f"value {i}" for i in range(FORM_FIELDS)}), encoding="utf-8")
    mcpcli = mcpcli_argv()
    client = tmp / "sdk_client.py"
    sides: dict[str, list[str]] = {
        "50 MB result, mcpcli call --json": [*mcpcli, "call", "echo", "--json", "-s", server],
        "50 MB result, SDK client": [PY, str(client), PY, str(script), str(BIG_RESULT), "0"],
        f"{FORM_FIELDS:,}-property form, --answers FILE": [
            *mcpcli,
            "call",
            "form",
            "--answers",
            str(answers),
            "--no-input",
            "-s",
            server,
        ],
    }
    n = max(1, min(runs, 3))  # each run moves 50 MB through two processes: a few are enough for a median
    print(f"{'bounds (median of ' + str(n) + ')':<40} {'time':>12} {'peak RSS':>12}")
    for label, argv in sides.items():
        figures = [peak(argv, env) for _ in range(n)]
        seconds = statistics.median(f[0] for f in figures)
        rss = statistics.median(f[1] for f in figures)
        print(f"{label:<40} {seconds:>10.3f} s {rss:>8.1f} MiB")


async def per_flow(url: str, runs: int) -> tuple[float, float]:
    """Median seconds per provision flow (one input-required round + final): mcpcli's loop, the SDK's loop."""
    import mcp_types as t
    from mcp import Client
    from rich.console import Console

    from mcpcli.engine.answers import Presets
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Call
    from mcpcli.net.connection import ConnectOptions, connect
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target
    from mcpcli.state.keeper import Keeper
    from mcpcli.state.store import open_store
    from mcpcli.state.trace import Tracer
    from mcpcli.terminal.output import Output

    paths = Paths.from_env()
    store = open_store(None, paths.store_file)  # the default store: SQLite, WAL, synchronous=FULL
    presets = Presets.parse([f"region={REGION}"])
    target = Target(label=url, kind="http", url=url)
    reporter = Output(
        out_console=Console(file=io.StringIO()), err_console=Console(file=io.StringIO())
    )  # the CLI's own, unseen
    current: list[Flow] = []  # as the CLI does, the back-channel callbacks belong to the running flow
    tracer = Tracer(record=True)  # as the CLI does: every flow's session records its (redacted) trace

    async def back_channel(kind: str, request: Any) -> Any:
        return await current[-1].back_channel(kind)(request)

    async def sdk_elicit(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"region": REGION})

    ours: list[float] = []
    theirs: list[float] = []
    try:
        async with (
            connect(
                ConnectOptions(
                    target,
                    paths,
                    elicitation=lambda r: back_channel("elicitation", r),
                    roots=lambda r: back_channel("roots", r),
                    sampling=lambda r: back_channel("sampling", r),
                    tracer=tracer,
                )
            ) as client,
            Client(url, elicitation_callback=sdk_elicit) as sdk,
        ):
            for i in range(WARMUP + runs):
                name = f"svc{i}"
                expected = f"Provisioned {name!r} in {REGION}."
                flow = Flow(
                    keeper=Keeper(open_store=lambda: store, tracer=tracer),
                    server=target.label,
                    sources=[presets],
                    reporter=reporter,
                    tracer=tracer,
                )
                flow.client = client
                current.append(flow)
                start = time.perf_counter()
                async with flow.keeper.running():  # as the CLI does: the lease's heartbeat runs here
                    outcome = await flow.start(Call("tools/call", "provision", {"name": name}))
                mid = time.perf_counter()
                result = await sdk.call_tool("provision", {"name": name})
                end = time.perf_counter()
                assert outcome.result["content"][0]["text"] == expected, outcome.result
                assert outcome.session is not None and len(store.rounds(outcome.session.id)) == 1
                assert isinstance(result.content[0], t.TextContent) and result.content[0].text == expected, result
                if i >= WARMUP:
                    ours.append(mid - start)
                    theirs.append(end - mid)
    finally:
        store.close()
    return statistics.median(ours), statistics.median(theirs)


WRITES = 200
SESSIONS = 10_000


def durable_write_ms(store: Any) -> float:
    """Median ms of one round's durable write: the round, its answers and the lease check, one transaction."""
    from datetime import timedelta

    from mcpcli.state.store import Lease, SessionRecord, new_lease_owner, utcnow

    session = SessionRecord(
        server="bench", method="tools/call", name="provision", arguments={}, status="running", protocol_version=None
    )
    now = utcnow()
    lease = Lease(
        session_id=session.id,
        version=1,
        host="bench",
        pid=os.getpid(),
        owner=new_lease_owner("bench", os.getpid()),
        acquired=now,
        expires=now + timedelta(hours=1),
    )
    requests = {"region": {"method": "elicitation/create", "params": {"message": "Which region?"}}}
    answers = {"region": {"action": "accept", "content": {"region": REGION}}}
    store.add_round(session.id, attempt=1, requests=requests, request_state="s0", new_session=session, lease=lease)
    times = []
    for i in range(WRITES):
        start = time.perf_counter()
        store.add_round(session.id, attempt=1, requests=requests, request_state=f"s{i}", answers=answers, lease=lease)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def store_figures(tmp: Path, env: dict[str, str], runs: int) -> None:
    from mcpcli.state.store import SessionRecord, open_store

    sqlite = open_store(None, tmp / "home" / "sessions.db")
    try:
        print(f"{'round durable write, SQLite (WAL, FULL)':<40} {durable_write_ms(sqlite):>9.3f} ms")
        base = SessionRecord(
            server="bench", method="tools/call", name="t", arguments={}, status="done", protocol_version=None
        )
        for i in range(SESSIONS):
            sqlite.create(base.model_copy(update={"id": f"{i:012x}", "status": "waiting" if i % 10 == 0 else "done"}))
    finally:
        sqlite.close()
    for argv, label in (
        (["sessions", "list"], "sessions list, 10,000 sessions"),
        (["sessions", "list", "--waiting"], "sessions list --waiting, 10,000"),
    ):
        took = statistics.median(run_once([*mcpcli_argv(), *argv], env) for _ in range(runs))
        print(f"{label:<40} {took:>9.3f} s  {'':>12} {'':>8}   < 0.3 s     {'ok' if took < 0.3 else 'MISS'}")
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from pg import PgCluster, PgUnavailable  # the tests' throwaway server, here with fsync on
    except ImportError:
        print("round durable write, PostgreSQL: skipped (tests/pg.py not importable)")
        return
    cluster = PgCluster()
    try:
        cluster.start(durable=True)
        pg = open_store(cluster.database(), tmp / "unused.db")
        try:
            print(f"{'round durable write, PostgreSQL (local)':<40} {durable_write_ms(pg):>9.3f} ms")
        finally:
            pg.close()
    except PgUnavailable as exc:
        print(f"round durable write, PostgreSQL: skipped ({str(exc).splitlines()[0]})")
    finally:
        cluster.stop()


LISTED = 2_000


def list_figures(tmp: Path, env: dict[str, str], runs: int) -> None:
    """``sessions list`` (and ``--json``) over a store of ``LISTED`` sessions, against ``mcpcli --version`` in the
    same run: the command people run most between flows should cost no more than starting mcpcli at all."""
    from mcpcli.state.store import SessionRecord, open_store

    home = tmp / "inbox-home"
    home.mkdir(mode=0o700)
    store = open_store(None, home / "sessions.db")
    try:
        base = SessionRecord(
            server="http://127.0.0.1:18801/mcp",
            method="tools/call",
            name="provision",
            arguments={"name": "orders"},
            status="done",
            protocol_version="2026-07-28",
        )
        for i in range(LISTED):
            store.create(base.model_copy(update={"id": f"{i:012x}", "status": "waiting" if i % 10 == 0 else "done"}))
    finally:
        store.close()
    listing = {**env, "MCPCLI_HOME": str(home), "COLUMNS": "80"}
    mcpcli = mcpcli_argv()
    for extra in ([], ["--json"]):
        ours, base_s = alternate(
            runs,
            lambda e=extra: run_once([*mcpcli, "sessions", "list", *e], listing),
            lambda: run_once([*mcpcli, "--version"], listing),
        )
        label = f"sessions list{' --json' if extra else ''}, {LISTED:,} vs --version"
        print(row(label, ours, base_s, "≤ 1.5x", ours / base_s <= 1.5))


def worker_figures(tmp: Path, env: dict[str, str], runs: int, demo: list[str], url: str, client: Path) -> None:
    """The warm path: whole-process ``call echo`` through the worker over HTTP and to a kept-alive stdio server,
    against the minimal SDK client's cold call; 100 concurrent one-round flows against one; the idle worker's RSS."""
    import json

    warm = {**env, "MCPCLI_WORKER": "1"}
    warm.pop("CI", None)
    mcpcli = mcpcli_argv()
    subprocess.run([*mcpcli, "worker", "start"], env=warm, cwd=ROOT, capture_output=True, check=True)
    try:
        run_once([*mcpcli, "call", "echo", "--arg", "text=hi", "-s", url], warm, "hi")  # the worker's first
        ours, base = alternate(
            runs,
            lambda: run_once([*mcpcli, "call", "echo", "--arg", "text=hi", "-s", url], warm, "hi"),
            lambda: run_once([PY, str(client), url], env, "hi"),
        )
        print(row("warm call echo, HTTP vs SDK client cold", ours, base, "≤ 0.25x", ours / base <= 0.25))
        kept = [*mcpcli, "call", "echo", "--arg", "text=hi", "-s", shlex.join(demo), "--keep-alive"]
        run_once(kept, warm, "hi")
        ours, base = alternate(
            runs, lambda: run_once(kept, warm, "hi"), lambda: run_once([PY, str(client), *demo], env, "hi")
        )
        print(row("warm call echo, kept stdio vs SDK cold", ours, base, "≤ 0.15x", ours / base <= 0.15))
        one_round = [*mcpcli, "call", "provision", "-a", "name=b", "--answer", "region=r", "-s", url]
        single = statistics.median(run_once(one_round, warm) for _ in range(max(3, runs // 3)))
        start = time.perf_counter()
        procs = [
            subprocess.Popen(one_round, env=warm, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100)
        ]
        codes = [p.wait(timeout=300) for p in procs]
        together = time.perf_counter() - start
        verdict = "ok" if together / single <= 3 else "MISS"
        print(
            f"{'100 concurrent one-round flows vs one':<40} {together:>9.3f} s  {single:>9.3f} s  "
            f"{together / single:>7.2f}x   ≤ 3x       {verdict}{'' if set(codes) == {0} else f' (exits {set(codes)})'}"
        )
        # The floor under that figure: a hundred bare interpreters at once, no mcpcli at all.
        start = time.perf_counter()
        bare = [subprocess.Popen([PY, "-c", "pass"]) for _ in range(100)]
        for proc in bare:
            proc.wait(timeout=300)
        floor = time.perf_counter() - start
        print(
            f"{'  floor: 100 concurrent python -c pass':<40} {floor:>9.3f} s  {single:>9.3f} s  {floor / single:>7.2f}x"
        )
        # The same hundred flows as one warm `mcpcli batch`: one process, one connection, 100 flows at once.
        flows = tmp / "batch.jsonl"
        lines = (json.dumps({"tool": "provision", "arguments": {"name": f"b{i}"}}) for i in range(100))
        flows.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        batch = [*mcpcli, "batch", str(flows), "--jobs", "100", "--answer", "region=r", "-s", url]
        run_once(batch, warm)
        batched = statistics.median(run_once(batch, warm) for _ in range(max(3, runs // 3)))
        label = "100 one-round flows, mcpcli batch (warm) vs one call"
        print(row(label, batched, single, "≤ 3x", batched / single <= 3))
        sdk_batch = tmp / "sdk_batch.py"
        sdk_batch.write_text(SDK_BATCH, encoding="utf-8")
        run_once([PY, str(sdk_batch), url, "100"], env, "100")
        sdk = statistics.median(
            run_once([PY, str(sdk_batch), url, "100"], env, "100") for _ in range(max(3, runs // 3))
        )
        print(
            f"{'  floor: SDK, 100 concurrent calls in one process':<40} {sdk:>9.3f} s  {single:>9.3f} s  "
            f"{sdk / single:>7.2f}x"
        )
        print(row("batch, per flow vs the SDK loop's", batched / 100, sdk / 100, "≤ 1.5x", batched / sdk <= 1.5, "ms"))
        status = subprocess.run(
            [*mcpcli, "worker", "status", "--json"], env=warm, cwd=ROOT, capture_output=True, text=True
        )
        rss = json.loads(status.stdout).get("rss_kb", 0)
        print(f"{'idle worker RSS (after the runs above)':<40} {rss / 1024:>9.1f} MiB")
    finally:
        subprocess.run([*mcpcli, "worker", "stop"], env=warm, cwd=ROOT, capture_output=True)


ROUNDS = 40
"""Rounds of the multi-round flow whose per-round cost is measured (beyond the flow's first)."""

SDK_ROUNDS = """\
import sys
import time

import anyio
import mcp_types as t
from mcp import Client


async def elicit(ctx, params):
    return t.ElicitResult(action="accept", content={"value": "x"})


async def main(url: str) -> None:
    async with Client(url, elicitation_callback=elicit, input_required_max_rounds=1000) as sdk:
        print("ready", flush=True)
        for line in sys.stdin:  # a count of rounds a line; each answered with the seconds its call took
            count = int(line)
            start = time.perf_counter()
            result = await sdk.call_tool("survey", {"count": count})
            took = time.perf_counter() - start
            assert result.content[0].text == f"answered {count}", result
            print(took, flush=True)


anyio.run(main, sys.argv[1])
"""
"""The SDK's own loop over the same survey, in one process and on one connection, driven line by line so that
its runs alternate with mcpcli's."""


def rounds_figure(tmp: Path, env: dict[str, str], runs: int, delay: float = 0.0) -> None:
    """A multi-round flow through the worker: per-round cost against the SDK's own loop doing the same rounds.

    ``bench/rounds_server.py``'s ``survey(count)`` asks one question a round. Each side's per-round cost is what a
    flow of ``ROUNDS + 1`` rounds takes beyond a flow of 1, divided by ``ROUNDS``: whole ``mcpcli call`` processes
    through a warm worker (durable writes and all), against the SDK's ``Client.call_tool`` with an elicitation
    callback, in one process. Process start, connection and handshake cancel out of both. ``delay``: the server
    waits that long in each call (a server farther away than this machine)."""

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp / "rounds-server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [PY, str(ROOT / "bench" / "rounds_server.py"), "--http", f"127.0.0.1:{port}", "--delay", str(delay)],
            stdout=out,
            stderr=out,
        )
    warm = {**env, "MCPCLI_WORKER": "1"}
    warm.pop("CI", None)
    mcpcli = mcpcli_argv()
    subprocess.run([*mcpcli, "worker", "start"], env=warm, cwd=ROOT, capture_output=True, check=True)
    try:
        wait_for_port(port, server, log)

        def survey(count: int) -> Callable[[], float]:
            argv = [*mcpcli, "call", "survey", "-a", f"count={count}", "--answer", "value=x", "--max-rounds", "1000"]
            return lambda: run_once([*argv, "-s", url], warm, f"answered {count}")

        script = tmp / "sdk_rounds.py"
        script.write_text(SDK_ROUNDS, encoding="utf-8")
        sdk = subprocess.Popen(
            [PY, str(script), url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert sdk.stdin is not None and sdk.stdout is not None
        assert sdk.stdout.readline().strip() == "ready"

        def sdk_survey(count: int) -> Callable[[], float]:
            def once() -> float:
                assert sdk.stdin is not None and sdk.stdout is not None
                sdk.stdin.write(f"{count}\n")
                sdk.stdin.flush()
                return float(sdk.stdout.readline())

            return once

        try:  # the four sides take turns: load that comes and goes hits the SDK's loop as it hits ours
            ours_one, ours_many, sdk_one, sdk_many = alternate(
                runs, survey(1), survey(ROUNDS + 1), sdk_survey(1), sdk_survey(ROUNDS + 1)
            )
        finally:
            sdk.stdin.close()
            sdk.wait(timeout=30)
        ours = (ours_many - ours_one) / ROUNDS
        base = (sdk_many - sdk_one) / ROUNDS
        label = (
            f"per round, {ROUNDS}-round flow, warm vs SDK" if not delay else f"  same, server {delay * 1000:g} ms away"
        )
        print(row(label, ours, base, "≤ 1.25x", ours / base <= 1.25, unit="ms"))
        extra = (ours - base) * 1000
        verdict = "ok" if extra <= 1.0 else "MISS"
        print(f"{'  beyond the SDK loop, per round':<40} {extra:>9.3f} ms {'':>12} {'':>8}   ≤ 1 ms      {verdict}")
    finally:
        subprocess.run([*mcpcli, "worker", "stop"], env=warm, cwd=ROOT, capture_output=True)
        server.terminate()
        server.wait(timeout=10)


def race_figure(tmp: Path, env: dict[str, str], pairs: int) -> None:
    """Racing resumes: ``pairs`` flows, each resumed by two processes at once; every retry the server received is
    logged by the tests' recorder server, so a double send is counted, not inferred. Target: 0 double sends."""
    import json

    record = tmp / "race-legs.jsonl"
    port = free_port()
    log = tmp / "race-server.log"
    argv = [PY, str(ROOT / "tests" / "servers.py"), "recorder", "--record", str(record), "--http", f"127.0.0.1:{port}"]
    with log.open("wb") as out:
        server = subprocess.Popen(argv, stdout=out, stderr=out, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    busy = replayed = 0
    start = time.perf_counter()
    try:
        wait_for_port(port, server, log)
        for n in range(pairs):
            started = subprocess.run(
                [*mcpcli_argv(), "call", "two_rounds", "-a", f"item=r{n}", "-s", url, "--no-input", "--json"],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                check=False,
            )
            session_id = json.loads(started.stdout)["session_id"]
            racers = [
                subprocess.Popen(
                    [*mcpcli_argv(), "resume", session_id, "--answer", "sure=true"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                    cwd=ROOT,
                )
                for _ in range(2)
            ]
            for proc in racers:
                _out, err = proc.communicate(timeout=60)
                busy += proc.returncode == 6
                replayed += proc.returncode == 0 and "here is its result" in err
    finally:
        server.terminate()
        server.wait(timeout=10)
    took = time.perf_counter() - start
    retries: dict[str, int] = {}
    for line in record.read_text().splitlines():
        leg = json.loads(line)
        if leg["state"] == "asked":
            retries[leg["item"]] = retries.get(leg["item"], 0) + 1
    doubles = sum(1 for count in retries.values() if count > 1)
    lost = sum(1 for n in range(pairs) if f"r{n}" not in retries)
    verdict = "ok" if doubles == 0 and lost == 0 else "MISS"
    print(
        f"{'racing resume pairs, SQLite':<40} {pairs:>9d}    double sends {doubles}, lost {lost};"
        f" losers busy {busy}, replayed {replayed}; {took:.1f} s   {verdict}"
    )


def task_figures(tmp: Path, env: dict[str, str], runs: int) -> None:
    """Tasks (2026-07-28) over HTTP against tests/task_servers.py (pollIntervalMs 0): one tasks/get round trip
    against an ordinary tool call's; the durable write a poll makes when the task changed (an unchanged poll
    writes nothing); and a task of 100 polls driven by ``Flow`` to its result, each poll a change (a new status
    message), so written."""
    import anyio

    port = free_port()
    log = tmp / "tasks-server.log"
    state = tmp / "tasks-state.json"
    argv = [PY, str(ROOT / "tests" / "task_servers.py"), "--state", str(state), "--poll-ms", "0"]
    with log.open("wb") as out:
        server = subprocess.Popen([*argv, "--http", f"127.0.0.1:{port}"], stdout=out, stderr=out, cwd=ROOT, env=env)
    try:
        wait_for_port(port, server, log)
        anyio.run(_task_figures, f"http://127.0.0.1:{port}/mcp", runs)
    finally:
        server.terminate()
        server.wait(timeout=10)


async def _task_figures(url: str, runs: int) -> None:
    from rich.console import Console

    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Call
    from mcpcli.net.connection import ConnectOptions, connect
    from mcpcli.net.tasks import get_task
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target
    from mcpcli.state.keeper import Keeper
    from mcpcli.state.store import open_store
    from mcpcli.terminal.output import Output

    paths = Paths.from_env()
    store = open_store(None, paths.store_file)
    quiet = Output(out_console=Console(file=io.StringIO()), err_console=Console(file=io.StringIO()))
    try:
        async with connect(ConnectOptions(Target(label=url, kind="http", url=url), paths)) as client:
            created = await client.session.call_tool("stuck", {}, allow_claimed=True)
            task_id = getattr(created, "task_id")  # noqa: B009 - a claimed result
            polls, pings = [], []
            for i in range(WARMUP + max(runs, 50)):
                start = time.perf_counter()
                await get_task(client, task_id)
                mid = time.perf_counter()
                await client.session.call_tool("plain", {})
                end = time.perf_counter()
                if i >= WARMUP:
                    polls.append(mid - start)
                    pings.append(end - mid)
            poll, ping = statistics.median(polls), statistics.median(pings)
            print(row("one poll (tasks/get) vs a plain tools/call", poll, ping, "", True, unit="ms"))
            totals = []
            for _ in range(3):
                flow = Flow(keeper=Keeper(open_store=lambda: store), server=url, sources=[], reporter=quiet)
                flow.client = client
                start = time.perf_counter()
                async with flow.keeper.running():
                    outcome = await flow.start(Call("tools/call", "slow_ok", {"polls": 100}))
                totals.append(time.perf_counter() - start)
                assert outcome.result["content"][0]["text"] == "slow_ok finished after 100 polls", outcome.result
            total = statistics.median(totals)
            from mcpcli.net.tasks import POLL_FLOOR

            # pollIntervalMs 0 is held at the floor: 100 waits of it are the server's pace, not the client's cost.
            beyond = (total - 100 * POLL_FLOOR) / 101 * 1000
            print(f"{'task of 100 polls, each written':<40} {total:>9.3f} s  {beyond:>9.3f} ms/poll beyond the wait")
    finally:
        store.close()
    sqlite = open_store(None, paths.store_file)
    try:
        print(f"{'poll durable write (changed), SQLite':<40} {_task_write_ms(sqlite):>9.3f} ms")
    finally:
        sqlite.close()


def _task_write_ms(store: Any) -> float:
    """Median ms of the write a changed poll makes: the task's JSON, under the lease, one transaction."""
    from datetime import timedelta

    from mcpcli.state.store import Lease, SessionRecord, new_lease_owner, utcnow
    from mcpcli.state.store.base import lease_columns

    session = SessionRecord(
        server="bench", method="tools/call", name="slow_ok", arguments={}, status="running", protocol_version=None
    )
    now = utcnow()
    owner = new_lease_owner("bench", os.getpid())
    lease = Lease(
        session_id=session.id, version=1, host="bench", pid=os.getpid(), owner=owner, acquired=now,
        expires=now + timedelta(hours=1),
    )  # fmt: skip
    store.create(session.model_copy(update=lease_columns(lease)))
    times = []
    for i in range(WRITES):
        task = {"id": "t", "status": "working", "message": f"step {i}", "polls": i, "delivered": [], "timeline": []}
        start = time.perf_counter()
        store.update(session.id, task=task, lease=lease)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


SECTIONS = ("startup", "list", "cold", "flow", "worker", "bounds", "store", "tasks", "recordings", "race")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="measured runs per figure (after 2 warm-up runs)")
    parser.add_argument("--race", type=int, default=20, help="racing resume pairs to run (0: none)")
    parser.add_argument("--no-worker", dest="worker", action="store_false", help="skip the warm-worker figures")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run (default all): {', '.join(SECTIONS)}",
    )
    given = parser.parse_args()
    runs = given.runs
    only = set(given.only.split(","))
    if unknown := only - set(SECTIONS):
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "mcpcli")], check=True, capture_output=True)

    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as tmp_name:
        tmp = Path(tmp_name)  # mkdtemp makes it 0700, as the store requires
        for name in ("MCPCLI_SERVER", "MCPCLI_STORE", "MCPCLI_ASSUME_TTY"):
            os.environ.pop(name, None)
        os.environ["MCPCLI_HOME"] = str(tmp / "home")
        os.environ["MCPCLI_WORKER"] = "0"  # the cold rows measure the cold path; worker_figures turns it on
        env = dict(os.environ)
        key = tmp / "demo.key"
        client_script = tmp / "sdk_client.py"
        client_script.write_text(SDK_CLIENT, encoding="utf-8")

        print(f"python   {platform.python_version()} ({platform.python_implementation()}) on {platform.platform()}")
        print(f"cpus     {os.cpu_count()}    mcp {version('mcp')}    mcpcli {version('mcpcli')}")
        print(f"method   median of {runs} runs after {WARMUP} warm-up runs; temp dir {tmp}")
        print()
        print(f"{'measure':<40} {'mcpcli':>12} {'baseline':>12} {'ratio':>8}   target")

        mcpcli = mcpcli_argv()
        floor = [PY, "-c", "pass"]
        if "startup" in only:
            for flag in ("--version", "--help"):
                ours, base = alternate(runs, lambda f=flag: run_once([*mcpcli, f], env), lambda: run_once(floor, env))
                print(row(f"mcpcli {flag} vs python -c pass", ours, base, "≤ 0.15 s", ours <= 0.15))

            # TAB after `mcpcli call ec`, as bash asks it, with the demo's tool list cached (legacy: 1 h fresh).
            run_once([*mcpcli, "tools", "--protocol", "legacy"], env)
            tab = {**env, "_MCPCLI_COMPLETE": "complete_bash", "COMP_WORDS": "mcpcli\ncall\nec", "COMP_CWORD": "2"}
            ours, base = alternate(runs, lambda: run_once(mcpcli, tab, "echo"), lambda: run_once(floor, env))
            print(row("completion, warm cache vs python -c pass", ours, base, "≤ 0.25 s", ours <= 0.25))
        if "list" in only:
            list_figures(tmp, env, runs)

        demo = [PY, "-m", "mcpcli.demo", "--key-file", str(key)]
        if "cold" in only:
            ours, base = alternate(
                runs,
                lambda: run_once([*mcpcli, "call", "echo", "--arg", "text=hi", "-s", shlex.join(demo)], env, "hi"),
                lambda: run_once([PY, str(client_script), *demo], env, "hi"),
            )
            print(row("call echo, stdio vs SDK client", ours, base, "≤ 1.15x", ours / base <= 1.15))

        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        log = tmp / "http-demo.log"
        with log.open("wb") as out:
            server = subprocess.Popen([*demo, "--http", f"127.0.0.1:{port}"], stdout=out, stderr=out, cwd=ROOT, env=env)
        try:
            wait_for_port(port, server, log)
            if "cold" in only:
                ours, base = alternate(
                    runs,
                    lambda: run_once([*mcpcli, "call", "echo", "--arg", "text=hi", "-s", url], env, "hi"),
                    lambda: run_once([PY, str(client_script), url], env, "hi"),
                )
                print(row("call echo, HTTP vs SDK client", ours, base, "≤ 1.15x", ours / base <= 1.15))

            import anyio

            if "flow" in only:
                ours, base = anyio.run(per_flow, url, FLOWS)
                label = f"per flow, HTTP, {FLOWS} flows vs SDK loop"
                print(row(label, ours, base, "≤ 1.25x", ours / base <= 1.25, unit="ms"))
            if given.worker and "worker" in only:
                worker_figures(tmp, env, runs, demo, url, client_script)
                rounds_figure(tmp, env, runs)
                rounds_figure(tmp, env, max(3, runs // 2), delay=0.01)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if "bounds" in only:
            print()
            bounds_figures(tmp, env, runs)
        if "store" in only:
            print()
            store_figures(tmp, env, runs)
        if "tasks" in only:
            print()
            task_figures(tmp, env, runs)
        if "recordings" in only:
            print()
            from recordings import recording_figures  # bench/recordings.py: a mock's rounds, a replay of 100 flows

            recording_figures(tmp, env, runs)
        if given.race and "race" in only:
            race_figure(tmp, env, given.race)


if __name__ == "__main__":
    main()
