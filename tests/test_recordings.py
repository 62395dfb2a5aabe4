"""Recordings (``--record FILE``), ``mcpcli replay`` and ``mcpcli mock`` against real servers: the demo, SDK servers
over stdio and HTTP, a pre-2026 server, the SDK's own ``Client`` driving the mock; and hostile recordings."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PY, free_port, stdio_server
from test_realservers import EVERYTHING, _npm_server
from test_worker import mcpcli, served, warm  # noqa: F401  (warm: the worker fixture)

from mcpcli.state.recording import Malformed, read_recording
from mcpcli.state.trace import sealed

pytestmark = pytest.mark.slow

PROVISION = ("call", "provision", "-a", "name=orders", "-A", "region=eu-west-1")
TOKEN = "tok-header-0123456789"


def mock_command(*files: Path) -> str:
    return shlex.join([PY, "-m", "mcpcli", "mock", *map(str, files)])


def entries(path: Path) -> list[dict[str, Any]]:
    """A recording's lines, without their checksums."""
    return [{k: v for k, v in json.loads(line).items() if k != "sum"} for line in path.read_text().splitlines()]


def rewrite(path: Path, lines: list[dict[str, Any]]) -> None:
    """A recording made anew from ``lines``, each with its chained checksum: a file another tool wrote, valid."""
    previous, out = "", []
    for line in lines:
        text, previous = sealed(json.dumps(line, ensure_ascii=True, separators=(",", ":")), previous)
        out.append(text + "\n")
    path.write_text("".join(out))


def marker_server(tmp_path: Path) -> tuple[str, Path]:
    """A stdio "server" that only leaves a file behind: it shows whether anything was started."""
    mark = tmp_path / "started"
    return shlex.join([PY, "-c", f"open({str(mark)!r}, 'w')"]), mark


# --- recording -------------------------------------------------------------------------------------------------------


def test_a_recording_is_private_says_its_server_and_where_each_answer_came_from(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    r = cli("--record", str(path), *PROVISION)
    assert r.code == 0, r.err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = entries(path)
    assert lines[0]["recording"] == 2
    facts = {e["fact"]: e for e in lines if "fact" in e}
    assert facts["connect"]["target"]["kind"] == "demo"
    assert facts["connected"]["server_info"]["name"] == "mcpcli-demo"
    assert facts["answer"] == {**facts["answer"], "key": "region", "source": "preset"}
    recording = read_recording(path)
    (flow,) = recording.flows
    assert (flow.name, flow.arguments, len(flow.legs)) == ("provision", {"name": "orders"}, 2)


def test_a_full_disk_stops_the_recording_with_one_line_and_the_flow_finishes(cli: Any) -> None:
    r = cli("--record", "/dev/full", *PROVISION)
    assert r.code == 0, r.err
    assert "Provisioned 'orders' in eu-west-1." in r.out
    assert r.err.count("recording stopped") == 1


# --- replay ----------------------------------------------------------------------------------------------------------


def test_a_recorded_demo_flow_replays_equal_and_says_so_in_json(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    r = cli("replay", str(path))
    assert r.code == 0, r.err
    assert r.out.startswith("Equal: 2 exchanges, 3 rounds")
    doc = cli("replay", str(path), "--json").json()
    assert doc["status"] == "equal" and [x["label"] for x in doc["exchanges"]] == ["tools/list", "tools/call provision"]


def test_a_sessions_stored_trace_is_a_recording_replay_and_mock_accept(cli: Any, tmp_path: Path) -> None:
    assert cli(*PROVISION).code == 0
    (session,) = json.loads(cli("sessions", "list", "--json").out)
    trace = tmp_path / "session.json"
    trace.write_text(cli("sessions", "show", session["id"], "--trace", "--json").out)
    r = cli("replay", str(trace))  # no target in it: the session it names says which server
    assert r.code == 0, r.err
    assert "Equal" in r.out
    mocked = cli("-s", mock_command(trace), *PROVISION)
    assert (mocked.code, mocked.out.strip()) == (0, "Provisioned 'orders' in eu-west-1."), mocked.err


@pytest.mark.parametrize(
    ("variant", "where"),
    [
        ("text", "round 2, result, at /result/content/0/text"),
        ("question", "round 2, another round where the recording finished, at /result"),
        ("schema", "round 1, result, at /result/inputRequests/size/params/requestedSchema/properties/size/type"),
    ],
)
def test_a_changed_server_replays_to_exit_1_naming_the_first_difference(
    cli: Any, tmp_path: Path, variant: str, where: str
) -> None:
    path = tmp_path / "plan.ndjson"
    r = cli("--record", str(path), "-s", stdio_server("shifting"), "call", "plan", "-a", "topic=roads", "-A", "size=3")
    assert r.code == 0, r.err
    same = cli("replay", str(path))  # the recorded command line: typed by this user, so it runs without asking
    assert same.code == 0, same.err + same.out
    changed = cli("replay", str(path), "-s", stdio_server("shifting", "--variant", variant))
    assert changed.code == 1, changed.err + changed.out
    assert f"Different: exchange 2 (tools/call plan), {where}" in changed.out
    assert "expected:" in changed.out and "got:" in changed.out
    doc = cli("replay", str(path), "-s", stdio_server("shifting", "--variant", variant), "--json")
    assert doc.code == 1 and doc.json()["status"] == "different"


def test_ignore_takes_a_json_pointer_out_of_the_comparison(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "plan.ndjson"
    assert (
        cli("--record", str(path), "-s", stdio_server("shifting"), "call", "plan", "-a", "topic=x", "-A", "size=1").code
        == 0
    )
    changed = ["-s", stdio_server("shifting", "--variant", "text")]
    assert cli("replay", str(path), *changed, "--ignore", "/result/content/0/text").code == 0
    bad = cli("replay", str(path), *changed, "--ignore", "result/content")
    assert bad.code == 2 and "not a JSON pointer" in bad.err


def test_a_secret_answer_is_recorded_hidden_and_replayed_from_answer_and_a_header_token_never_lands(
    cli: Any, http_server: Any, tmp_path: Path
) -> None:
    server = http_server("vault")
    path = tmp_path / "vault.ndjson"
    r = cli(
        "--record", str(path), "-s", server.url, "-H", f"Authorization: Bearer {TOKEN}",
        "call", "unlock", "-a", "door=front", "-A", "user=ann", "-A", "password=hunter2-secret", "-A", "yes=true",
    )  # fmt: skip
    assert r.code == 0, r.err
    raw = path.read_text()
    assert TOKEN not in raw and "hunter2-secret" not in raw
    assert '"password":"[secret]"' in raw
    nobody = cli("replay", str(path), "--no-input")
    assert nobody.code == 3, nobody.err
    assert "creds.password" in nobody.err and "nothing was sent" in nobody.err
    given = cli("replay", str(path), "-A", "creds.password=hunter2-secret")
    assert given.code == 0, given.err + given.out


def test_a_pre_2026_flow_replays_its_back_channel_questions(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "legacy.ndjson"
    r = cli("--record", str(path), "-s", stdio_server("legacy_only"), *PROVISION)
    assert r.code == 0, r.err
    (flow,) = read_recording(path).flows
    assert flow.legs[0].asked and read_recording(path).legacy
    assert cli("replay", str(path)).code == 0
    other = tmp_path / "other.ndjson"
    changed = ["-s", stdio_server("calls_back"), "--protocol", "legacy", "call", "ask", "-A", "n=4"]
    assert cli("--record", str(other), *changed).code == 0
    assert cli("replay", str(other)).code == 0


def test_an_unreachable_server_is_exit_4(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    r = cli("replay", str(path), "-s", f"http://127.0.0.1:{free_port()}/mcp")
    assert r.code == 4, r.err


def test_a_recorded_command_line_from_elsewhere_runs_only_with_consent(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    command, mark = marker_server(tmp_path)
    lines = entries(path)
    for line in lines:
        if line.get("fact") == "connect":
            line["target"] = {"label": command, "kind": "stdio", "source": "command", "command": shlex.split(command)}
    rewrite(path, lines)
    r = cli("replay", str(path), "--no-input")
    assert r.code == 2, r.err
    assert "did not come from you" in r.err and "--trust-server" in r.err
    assert not mark.exists()


# --- hostile recordings ----------------------------------------------------------------------------------------------


def _hostile(tmp_path: Path, cli: Any, kind: str) -> tuple[Path, str]:
    """A recording spoilt one way; and the line (number) the error must name."""
    path = tmp_path / f"{kind}.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    text = path.read_text()
    lines = text.splitlines()
    at = {key: next(n for n, line in enumerate(lines, 1) if f'"{key}"' in line) for key in ("event", "answer")}
    spoilt = {
        "appended": lambda: [*lines, *['{"t":1,"fact":"note"}'] * 100_000],  # lines a recording never has
        "blank": lambda: [*lines[:3], "", *lines[3:]],
        "empty": lambda: [*lines[:3], "{}", *lines[3:]],
        "unsummed": lambda: [*lines[:3], re.sub(r',"(sum|sha256)":"[0-9a-f]+"', "", lines[3]), *lines[4:]],
        "moved": lambda: [
            *lines[: at["event"] - 1],
            lines[at["event"]],
            lines[at["event"] - 1],
            *lines[at["event"] + 1 :],
        ],
        "removed": lambda: [*lines[: at["event"] - 1], *lines[at["event"] :]],
    }
    if kind in spoilt:
        path.write_text("\n".join(spoilt[kind]()) + "\n")
        where = {"appended": len(lines) + 1, "blank": 4, "empty": 4, "unsummed": 4}
        return path, f"line {where.get(kind, at['event'])}:"
    if kind == "edited":
        path.write_text(text.replace("Provisioned 'orders'", "Provisioned 'all the orders'"))
        return path, f"line {next(n for n, line in enumerate(lines, 1) if 'Provisioned' in line)}:"
    if kind == "truncated":
        path.write_text(text[: len(text) - 40])
        return path, f"line {len(lines)}:"
    path.write_text(text + "x" * (10 * 2**20))
    return path, ""


NOT_AS_RECORDED = "not the line recorded here (edited by hand, or a line added, moved or removed before it?)"
UNSUMMED = "a line without its checksum (added by hand?)"


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("edited", NOT_AS_RECORDED),
        ("truncated", "cut short (the file ends mid-line)"),
        ("big", "10.0 MB, more than the 8 MB a recording may be"),
        ("appended", UNSUMMED),
        ("blank", "a blank line, which a recording never has (added by hand?)"),
        ("empty", UNSUMMED),
        ("unsummed", UNSUMMED),
        ("moved", NOT_AS_RECORDED),
        ("removed", NOT_AS_RECORDED),
    ],
)
def test_a_hostile_recording_is_one_line_exit_2_and_nothing_is_sent(
    cli: Any, tmp_path: Path, kind: str, said: str
) -> None:
    path, line = _hostile(tmp_path, cli, kind)
    command, mark = marker_server(tmp_path)
    for args in (("replay", str(path), "-s", command), ("mock", str(path))):
        r = cli(*args)
        assert r.code == 2, r.err
        first, *rest = r.err.strip().splitlines()
        assert first.startswith("Malformed recording: ") and said in first and line in first, first
        assert [line for line in rest if not line.startswith("hint:")] == []
    assert not mark.exists()
    with pytest.raises(Malformed):
        read_recording(path)


def test_an_entry_added_to_a_sessions_exported_trace_is_refused_naming_it(cli: Any, tmp_path: Path) -> None:
    assert cli(*PROVISION).code == 0
    (session,) = json.loads(cli("sessions", "list", "--json").out)
    entries = json.loads(cli("sessions", "show", session["id"], "--trace", "--json").out)
    trace = tmp_path / "session.json"
    trace.write_text(json.dumps([*entries[:2], {"t": 1, "fact": "note"}, *entries[2:]]))
    command, mark = marker_server(tmp_path)
    for args in (("replay", str(trace), "-s", command), ("mock", str(trace))):
        r = cli(*args)
        assert r.code == 2, r.err
        first = r.err.strip().splitlines()[0]
        assert first.startswith("Malformed recording: ") and "entry 3: an entry without its checksum" in first, first
    assert not mark.exists()


def test_text_from_a_recording_is_sanitized_in_a_diff(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "hostile.ndjson"
    r = cli("--record", str(path), "-s", stdio_server("hostile"), "call", "trap", "-A", "choice=b")
    assert r.code == 0, r.err
    changed = cli("replay", str(path), "-s", stdio_server("shifting"))
    assert changed.code == 1
    assert "\x1b" not in changed.out and "\u202e" not in changed.out and "\x9b" not in changed.out


# --- mock ------------------------------------------------------------------------------------------------------------


def test_record_then_mock_gives_the_client_the_same_output(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    live = cli("--record", str(path), *PROVISION)
    tools = cli("tools", "--json")
    mocked = cli("-s", mock_command(path), *PROVISION)
    assert (mocked.code, mocked.out) == (live.code, live.out), mocked.err
    assert cli("-s", mock_command(path), "tools", "--json").json() == tools.json()
    info = cli("-s", mock_command(path), "info", "--json").json()
    assert info["server"]["name"] == "mcpcli-demo"


def test_the_mock_names_the_difference_of_another_answer_and_what_it_has_for_an_unknown_call(
    cli: Any, tmp_path: Path
) -> None:
    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    other = cli("-s", mock_command(path), "call", "provision", "-a", "name=orders", "-A", "region=mars", "--no-input")
    assert other.code == 4
    assert "Not the recorded answer (round 1)" in other.err and '"mars"' in other.err
    unknown = cli("-s", mock_command(path), "call", "provision", "-a", "name=books", "--no-input")
    assert unknown.code == 4 and "other arguments" in unknown.err and '"books"' in unknown.err
    missing = cli("-s", mock_command(path), "call", "echo", "-a", "text=hi", "--no-input")
    assert missing.code == 4 and "has: provision" in missing.err


def test_several_recordings_serve_together_and_a_pre_2026_one_to_either_era(cli: Any, tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.ndjson"
    assert cli("--record", str(legacy), "-s", stdio_server("legacy_only"), *PROVISION).code == 0
    plan = tmp_path / "plan.ndjson"
    args = ("call", "plan", "-a", "topic=x", "-A", "size=2")
    assert cli("--record", str(plan), "-s", stdio_server("shifting"), *args).code == 0
    both = mock_command(legacy, plan)
    for era in ("2026-07-28", "legacy"):
        r = cli("-s", both, "--protocol", era, *PROVISION)
        assert (r.code, r.out.strip()) == (0, "Provisioned 'orders' in eu-west-1."), r.err
        r = cli("-s", both, "--protocol", era, *args)
        assert (r.code, r.out.strip()) == (0, "Plan for x: size 2"), r.err


def test_the_mock_serves_streamable_http(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    port = free_port()
    proc = subprocess.Popen(
        [PY, "-m", "mcpcli", "mock", str(path), "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(200):  # until it listens (bounded: 20 s)
            r = cli("-s", url, *PROVISION)
            if r.code == 0:
                break
            anyio.run(anyio.sleep, 0.1)
        assert (r.code, r.out.strip()) == (0, "Provisioned 'orders' in eu-west-1."), r.err
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_sdks_own_client_drives_the_mock(cli: Any, tmp_path: Path) -> None:
    import mcp_types as t
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    path = tmp_path / "plan.ndjson"
    args = ("call", "plan", "-a", "topic=rails", "-A", "size=7")
    assert cli("--record", str(path), "-s", stdio_server("shifting"), *args).code == 0
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> t.ElicitResult:
        asked.append(params.message)
        return t.ElicitResult(action="accept", content={"size": 7})

    async def main() -> tuple[str, list[str]]:
        server = StdioServerParameters(command=PY, args=["-m", "mcpcli", "mock", str(path)])
        with (tmp_path / "mock.log").open("w") as log:
            async with Client(stdio_client(server, errlog=log), elicitation_callback=answer) as client:
                tools = await client.list_tools()
                result = await client.call_tool("plan", {"topic": "rails"})
        block = result.content[0]
        assert isinstance(block, t.TextContent)
        return block.text, [tool.name for tool in tools.tools]

    text, names = anyio.run(main)
    assert (text, names, asked) == ("Plan for rails: size 7", ["plan"], ["How big is rails?"])


@pytest.fixture(scope="module")
def everything() -> str:
    """The reference TypeScript server ("everything", stdio), installed as tests/test_realservers.py installs it."""
    return _npm_server(EVERYTHING, "everything") + " stdio"


def test_the_reference_typescript_servers_back_channel_flow_records_replays_and_mocks(
    cli: Any, tmp_path: Path, everything: str
) -> None:
    path = tmp_path / "ts.ndjson"
    answers = ["-A", "name=Ann", "-A", "check=true", "-A", "email=a@example.com", "-A", "homepage=https://example.com"]
    args = ("call", "trigger-elicitation-request", *answers, "-A", "birthdate=2000-01-01", "--accept-defaults")
    live = cli("--record", str(path), "-s", everything, *args)
    assert live.code == 0, live.err
    assert "User inputs:" in live.out
    replayed = cli("replay", str(path))
    assert replayed.code == 0, replayed.err + replayed.out
    mocked = cli("-s", mock_command(path), *args)
    assert (mocked.code, mocked.out) == (0, live.out), mocked.err


def test_prompts_and_resource_reads_that_ask_record_replay_and_mock_too(cli: Any, tmp_path: Path) -> None:
    prompt, read = tmp_path / "prompt.ndjson", tmp_path / "read.ndjson"
    asks = {
        prompt: ("prompt", "note", "-a", "topic=cats", "-A", "tone=pirate"),
        read: ("read", "demo://report/x", "-A", "private=true"),
    }
    outputs = {}
    for path, args in asks.items():
        live = cli("-s", "demo", "--record", str(path), *args)
        assert live.code == 0, live.err
        outputs[path] = live.out
    for path, args in asks.items():
        assert cli("replay", str(path)).code == 0
        mocked = cli("-s", mock_command(prompt, read), *args)
        assert (mocked.code, mocked.out) == (0, outputs[path]), mocked.err


def test_a_flow_recorded_from_a_resume_is_skipped_with_a_note(cli: Any, tmp_path: Path) -> None:
    waiting = cli("call", "provision", "-a", "name=zz", "--no-input", "--json")
    assert waiting.code == 3
    path = tmp_path / "resumed.ndjson"
    assert cli("--record", str(path), "resume", waiting.json()["session_id"], "-A", "region=x").code == 0
    r = cli("replay", str(path))
    assert "Skipping 1 flow recorded from a retry on (a resume)" in r.err


# --- comparing, unit by unit -----------------------------------------------------------------------------------------


def test_volatile_fields_and_ignored_pointers_leave_the_comparison() -> None:
    from mcpcli.engine.replay import ABSENT, first_difference, normalize, parse_pointer

    recorded = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "at 12:00"}],
            "requestState": {"redacted": "request_state", "length": 3, "sha256": "x"},
            "_meta": {"progressToken": 1, "io.example/timestamp": "t1", "kept": True},
        },
    }
    live = json.loads(json.dumps(recorded))
    live.update(id="mcpcli-9")
    live["result"]["content"][1]["text"] = "at 12:01"
    live["result"]["requestState"]["sha256"] = "y"
    live["result"]["_meta"].update(progressToken=2, **{"io.example/timestamp": "t2"})
    assert first_difference(normalize(recorded), normalize(live)) == ("/result/content/1/text", "at 12:00", "at 12:01")
    ignore = [parse_pointer("/result/content/1/text")]
    assert first_difference(normalize(recorded, ignore), normalize(live, ignore)) is None
    live["result"]["_meta"]["kept"] = False
    assert first_difference(normalize(recorded), normalize(live))[0] == "/result/_meta/kept"
    assert first_difference({"a": 1}, {})[1:] == (1, ABSENT)
    assert first_difference(1, 1.0) is not None  # an integer that became a number is a change
    with pytest.raises(ValueError):
        parse_pointer("result")


# --- at a terminal ---------------------------------------------------------------------------------------------------


def _spawn(*args: str) -> Any:
    import os
    import sys

    import pexpect
    from conftest import ROOT

    return pexpect.spawn(
        sys.executable,
        ["-m", "mcpcli", *args],
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
        cwd=str(ROOT),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=60,
    )


def test_at_a_terminal_a_hidden_answer_is_asked_without_echo_and_a_foreign_command_is_confirmed(
    cli: Any, tmp_path: Path
) -> None:
    import pexpect

    path = tmp_path / "vault.ndjson"
    unlock = ("call", "unlock", "-a", "door=front", "-A", "user=ann", "-A", "password=s3cret-value", "-A", "yes=true")
    assert cli("--record", str(path), "-s", stdio_server("vault"), *unlock).code == 0
    child = _spawn("replay", str(path))
    child.expect_exact("creds.password (hidden in the recording): ")
    child.sendline("s3cret-value")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "s3cret-value" not in (child.before or "")

    command, mark = marker_server(tmp_path)
    lines = entries(path)
    for line in lines:
        if line.get("fact") == "connect":
            line["target"] = {"label": command, "kind": "stdio", "source": "command", "command": shlex.split(command)}
    rewrite(path, lines)
    child = _spawn("replay", str(path), "-A", "password=x")
    child.expect_exact("This recording starts its server with a command that did not come from you")
    child.expect_exact("Run it? [y/N] ")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 5 and not mark.exists()


def test_the_mock_refuses_a_request_state_it_did_not_seal(cli: Any, tmp_path: Path) -> None:
    import mcp_types as t
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from mcpcli.engine.mock import build_server

    path = tmp_path / "flow.ndjson"
    assert cli("--record", str(path), *PROVISION).code == 0
    server = build_server([read_recording(path)])

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            first = await client.session.call_tool("provision", {"name": "orders"}, allow_input_required=True)
            assert isinstance(first, t.InputRequiredResult) and first.request_state
            forged = first.request_state[:-1] + ("0" if first.request_state[-1] != "0" else "1")
            answer = {"region": t.ElicitResult(action="accept", content={"region": "eu-west-1"})}
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    "provision", {"name": "orders"}, input_responses=answer, request_state=forged,
                    allow_input_required=True,
                )  # fmt: skip
            done = await client.session.call_tool(
                "provision", {"name": "orders"}, input_responses=answer, request_state=first.request_state,
                allow_input_required=True,
            )  # fmt: skip
            return refused.value, done

    refused, done = anyio.run(main)
    assert (refused.code, refused.error.message) == (-32602, "Invalid or expired requestState")
    assert isinstance(done, t.CallToolResult) and done.content[0].text == "Provisioned 'orders' in eu-west-1."


def test_a_replay_can_itself_be_recorded_and_that_recording_replays_equal(cli: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "first.ndjson", tmp_path / "second.ndjson"
    assert cli("--record", str(first), *PROVISION).code == 0
    assert cli("--record", str(second), "replay", str(first)).code == 0
    assert [x.label() for x in read_recording(second).exchanges] == ["tools/list", "tools/call provision"]
    assert cli("replay", str(second)).code == 0


def test_through_the_worker_a_recording_lands_in_the_callers_directory_and_replay_is_served_as_cold(
    warm: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    before = served(warm)
    recorded = mcpcli("--record", "flow.ndjson", *PROVISION, cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert (tmp_path / "flow.ndjson").exists() and served(warm) == before + 1
    hot = mcpcli("replay", "flow.ndjson", cwd=tmp_path)
    cold = mcpcli("replay", "flow.ndjson", cwd=tmp_path, env={"MCPCLI_WORKER": "0"})
    assert served(warm) == before + 2
    assert (hot.returncode, hot.stdout) == (cold.returncode, cold.stdout) == (0, cold.stdout), hot.stderr
    mocked = mcpcli("-s", mock_command(tmp_path / "flow.ndjson"), *PROVISION)
    assert mocked.returncode == 0, mocked.stderr
    assert served(warm) == before + 3  # the call went through the worker; the mock it started did not


def test_a_recorded_target_keeps_no_password_header_value_or_environment() -> None:
    from mcpcli.net.connection import recorded_target
    from mcpcli.settings.targets import Target

    http = Target(label="https://ann:pw-123456@h.example/mcp", kind="http", url="https://ann:pw-123456@h.example/mcp")
    http.headers["Authorization"] = f"Bearer {TOKEN}"
    stdio = Target(label="srv", kind="stdio", command="srv", args=("--x",), env={"API_KEY": "k-123456789"})
    kept = json.dumps([recorded_target(http), recorded_target(stdio)])
    assert "pw-123456" not in kept and TOKEN not in kept and "k-123456789" not in kept
    assert recorded_target(http)["header_names"] == ["Authorization"]
    assert recorded_target(stdio)["env_names"] == ["API_KEY"]


def test_the_mock_takes_any_value_for_an_answer_the_recording_hides(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "vault.ndjson"
    unlock = ("call", "unlock", "-a", "door=front", "-A", "user=ann", "-A", "yes=true")
    assert cli("--record", str(path), "-s", stdio_server("vault"), *unlock, "-A", "password=first-secret").code == 0
    other = cli("-s", mock_command(path), *unlock, "-A", "password=another-one")
    assert other.code == 0, other.err
    assert other.out.strip() == "[redacted]"  # what the recording holds of a text that held the secret
    wrong_user = cli("-s", mock_command(path), *unlock[:-4], "-A", "user=bob", "-A", "password=x", "--no-input")
    assert wrong_user.code == 4 and '"ann"' in wrong_user.err and '"bob"' in wrong_user.err


# --- replay under every state of the warm cache ----------------------------------------------------------------------

WARM_STATES = ("fresh", "remembered", "stale")
"""What the home holds of the server when the recording is made, and again when it is replayed: nothing; a listing
a call just left (the recorded call then sends no ``tools/list``); a listing past its time."""
FLOWS = {
    "legacy back-channel": (("calls_back",), ("--protocol", "legacy", "call", "ask", "-A", "n=4")),
    # Two rounds (the size, then "sure?") and a complete third leg.
    "2026 multi-round": (
        ("shifting", "--variant", "question"),
        ("call", "plan", "-a", "topic=roads", "-A", "size=3", "-A", "sure=true"),
    ),
}
"""Per flow: the server of tests/servers.py that runs it, and the call."""


def _warm_home(cli: Any, monkeypatch: pytest.MonkeyPatch, home: Path, state: str, server: str, call: Any) -> None:
    """Put the home in ``state`` for ``server``: a new home (fresh), or one whose warm cache a call just filled —
    as it is (remembered) or with every entry past its time (stale)."""
    if state == "fresh":
        monkeypatch.setenv("MCPCLI_HOME", str(home))
        return
    assert cli("-s", server, *call).code == 0
    cache = Path(os.environ["MCPCLI_HOME"]) / "cache"
    for entry in [*(cache / "warm").glob("*.json"), *(cache / "tools").glob("*.json")]:
        doc = json.loads(entry.read_text())
        for what in ("discover", "tools"):
            if isinstance(doc.get(what), dict) and state == "stale":
                doc[what] |= {"expires_at": 0, "fetched_at": 0}
        entry.write_text(json.dumps(doc))


@pytest.mark.parametrize("state", WARM_STATES)
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("flow", list(FLOWS))
def test_a_flow_replays_equal_whatever_the_warm_cache_holds(
    cli: Any, http_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, transport: str, flow: str
) -> None:
    kind, call = FLOWS[flow]
    server = stdio_server(*kind) if transport == "stdio" else http_server(*kind).url
    _warm_home(cli, monkeypatch, tmp_path / "recording-home", state, server, call)
    path = tmp_path / "flow.ndjson"
    recorded = cli("--record", str(path), "-s", server, *call)
    assert recorded.code == 0, recorded.err
    exchanges = read_recording(path).exchanges
    if state == "remembered":  # the case that lost the result: the SDK lists only after the replayed call
        assert "tools/list" not in [x.method for x in exchanges]
    (exchange,) = [x for x in exchanges if x.is_flow]
    assert len(exchange.legs) == (1 if flow == "legacy back-channel" else 3)
    _warm_home(cli, monkeypatch, tmp_path / "replaying-home", state, server, call)
    replayed = cli("replay", str(path), "-s", server, "--no-input")
    assert (replayed.code, replayed.out.split(":")[0]) == (0, "Equal"), replayed.out + replayed.err


def test_the_capture_keeps_the_answer_to_the_replayed_request_not_the_sdks_own_listing_after_it() -> None:
    from mcpcli.engine.replay import Capture

    capture = Capture()
    capture.expect("tools/call")
    lines = [
        {"dir": "send", "kind": "request", "method": "tools/call", "message": {"id": "a", "method": "tools/call"}},
        {"dir": "recv", "kind": "request", "method": "elicitation/create", "message": {"id": 1}},
        {"dir": "recv", "kind": "response", "method": "tools/call", "message": {"id": "a", "result": {"content": []}}},
        # The SDK lists on its own after a call whose output schema it does not know yet.
        {"dir": "send", "kind": "request", "method": "tools/list", "message": {"id": 2, "method": "tools/list"}},
        {"dir": "recv", "kind": "response", "method": "tools/list", "message": {"id": 2, "result": {"tools": []}}},
    ]
    capture.write("".join(json.dumps(line) + "\n" for line in lines))
    assert capture.response == {"id": "a", "result": {"content": []}}
    assert capture.questions == [{"id": 1}]
    capture.expect("tools/call")  # the next leg starts afresh
    assert (capture.response, capture.questions) == (None, [])
