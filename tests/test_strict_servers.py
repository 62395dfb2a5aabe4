"""Servers that do not survive the 2026-07-28 probe (rmcp, the Rust SDK, ends the process when its first message is
not ``initialize``): ``auto`` starts them once more with the handshake, says so in one line, and remembers it — cold,
through the worker and for a kept-alive server. Stand-ins: tests/picky.py."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PY, ROOT, demo_stdio

PICKY = Path(__file__).resolve().parent / "picky.py"


def picky(kind: str, record: Path) -> str:
    return shlex.join([PY, str(PICKY), kind, "--record", str(record)])


def mcpcli(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [PY, "-m", "mcpcli", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def warm(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    assert mcpcli("worker", "start").returncode == 0
    yield
    mcpcli("worker", "stop")


def _starts(record: Path) -> list[list[str]]:
    """The methods each process of the server was sent, one list per process."""
    runs: list[list[str]] = []
    for line in record.read_text().splitlines():
        if line == "start":
            runs.append([])
        else:
            runs[-1].append(line)
    return runs


@pytest.mark.parametrize("kind", ["exits", "refuses_32600", "refuses_32603"])
def test_a_server_that_does_not_survive_the_probe_is_started_again_with_the_handshake_and_that_is_remembered(
    kind: str, home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "methods.txt"
    target = picky(kind, record)
    first = mcpcli("-s", target, "call", "echo", "-a", "text=hi")
    assert (first.returncode, first.stdout) == (0, "echo: hi\n"), first.stderr
    assert len(first.stderr.strip().splitlines()) == 1, first.stderr
    assert "did not survive the 2026-07-28 probe" in first.stderr and "initialize handshake" in first.stderr
    runs = _starts(record)
    assert [run[0] for run in runs] == ["server/discover", "initialize"]  # one restart, straight to the handshake
    assert "legacy" in (home / "cache" / "handshakes.json").read_text()
    record.unlink()
    second = mcpcli("-s", target, "call", "echo", "-a", "text=again")
    assert (second.returncode, second.stdout, second.stderr) == (0, "echo: again\n", "")
    assert [run[0] for run in _starts(record)] == ["initialize"]  # one process, no probe


def test_a_server_that_dies_on_the_handshake_too_is_one_error_naming_both_attempts(home: Path, tmp_path: Path) -> None:
    record = tmp_path / "methods.txt"
    r = mcpcli("-s", picky("dies", record), "tools")
    assert r.returncode == 4
    assert "Traceback" not in r.stderr
    first_line = r.stderr.splitlines()[0]
    assert "server/discover" in first_line and "then on the initialize handshake" in first_line
    assert "expect initialized request, but received: initialize" in r.stderr  # its stderr's tail
    assert "did not survive" not in r.stderr  # no note about a restart that did not help
    assert len(_starts(record)) == 2  # bounded: one restart
    assert (
        not (home / "cache" / "handshakes.json").exists()
        or "legacy" not in (home / "cache" / "handshakes.json").read_text()
    )


def test_a_server_that_does_not_survive_the_probe_works_through_the_worker_and_kept_alive(
    warm: None, home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "methods.txt"
    first = mcpcli("-s", picky("refuses_32600", record), "call", "echo", "-a", "text=warm")
    assert (first.returncode, first.stdout) == (0, "echo: warm\n"), first.stderr
    assert "did not survive" in first.stderr
    kept_record = tmp_path / "kept.txt"
    kept = picky("refuses_32600", kept_record)  # spoiled by the probe, alive: the worker must start it anew
    one = mcpcli("-s", kept, "--keep-alive", "call", "echo", "-a", "text=1")
    assert (one.returncode, one.stdout) == (0, "echo: 1\n"), one.stderr
    assert "did not survive" in one.stderr and "had stopped" not in one.stderr
    two = mcpcli("-s", kept, "--keep-alive", "call", "echo", "-a", "text=2")
    assert (two.returncode, two.stdout, two.stderr) == (0, "echo: 2\n", "")
    assert [run[0] for run in _starts(kept_record)] == ["server/discover", "initialize"]  # the second process kept


def test_a_kept_server_that_speaks_2026_refusing_a_later_legacy_command_says_how_to_go_on(
    warm: None, home: Path, tmp_path: Path
) -> None:
    """A kept server speaks one protocol to every command: a later ``--protocol legacy`` is refused by the server,
    and the one line says why and what to do, not only what the SDK saw."""
    kept = demo_stdio(tmp_path / "demo.key")
    first = mcpcli("-s", kept, "--keep-alive", "call", "echo", "-a", "text=new")
    assert (first.returncode, first.stdout) == (0, "new\n"), first.stderr
    legacy = mcpcli("-s", kept, "--keep-alive", "--protocol", "legacy", "call", "echo", "-a", "text=old")
    assert legacy.returncode == 4, legacy.stderr
    assert "mcpcli worker restart" in legacy.stderr and "without --keep-alive" in legacy.stderr
    assert "Traceback" not in legacy.stderr
    again = mcpcli("-s", kept, "--keep-alive", "call", "echo", "-a", "text=still")
    assert (again.returncode, again.stdout) == (0, "still\n"), again.stderr  # the kept server serves on


# --- a complete result after a refused back-channel question ----------------------------------------------------------


def _sessions() -> list[dict[str, str]]:
    listed = mcpcli("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def test_a_result_after_a_refused_sampling_request_is_printed_and_leaves_no_session_waiting(tmp_path: Path) -> None:
    r = mcpcli("-s", picky("samples", tmp_path / "m.txt"), "call", "summarize")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "no summary (the client said: The user is not available to answer.)\n"
    assert r.stderr.count("warning:") == 1 and "sampling-1" in r.stderr and "Input required" not in r.stderr
    assert [s["status"] for s in _sessions()] == ["done"]  # resume prints this result again, never calls again


def test_a_batch_line_whose_result_came_after_a_refused_request_carries_the_warning(tmp_path: Path) -> None:
    """``call``'s one warning, in the line's own document: a batch's stderr mixes its flows."""
    r = mcpcli("-s", picky("samples", tmp_path / "m.txt"), "batch", "-", input='{"tool": "summarize"}\n')
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.splitlines()[0])
    assert doc["status"] == "done", doc
    assert "sampling-1" in doc["warning"] and doc["warning"].startswith("The server finished without an answer")


def test_a_server_that_fails_after_the_refusal_leaves_the_session_waiting_as_before(tmp_path: Path) -> None:
    r = mcpcli("-s", picky("samples_then_fails", tmp_path / "m.txt"), "call", "summarize")
    assert r.returncode == 3, r.stderr
    assert "cannot be deferred" in r.stderr
    assert [s["status"] for s in _sessions()] == ["waiting"]


# --- capabilities that tell the truth --------------------------------------------------------------------------------


def _declared(trace: Path, method: str) -> set[str]:
    for line in trace.read_text().splitlines():
        message = json.loads(line).get("message") or {}
        if message.get("method") == method and "id" in message:
            params = message.get("params") or {}
            caps = params.get("capabilities") or (params.get("_meta") or {}).get(
                "io.modelcontextprotocol/clientCapabilities", {}
            )
            return set(caps) & {"sampling", "elicitation", "roots"}
    raise AssertionError(f"no {method} in the trace")


def test_the_handshake_declares_only_what_this_run_can_answer(home: Path, tmp_path: Path) -> None:
    target = picky("samples", tmp_path / "m.txt")
    trace = tmp_path / "trace.ndjson"
    assert mcpcli("-s", target, "call", "--trace", str(trace), "summarize").returncode == 0
    assert _declared(trace, "initialize") == {"roots"}  # no provider, nobody at the terminal, no presets
    assert mcpcli("-s", target, "call", "--trace", str(trace), "summarize", "--answer", "x=1").returncode == 0
    assert _declared(trace, "initialize") == {"roots", "elicitation"}
    (home / "config.toml").write_text(
        '[providers.fake]\napi = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["m"]\n'
        '[sampling]\nprovider = "fake"\npolicy = "always"\n'
    )
    mcpcli("-s", target, "call", "--trace", str(trace), "summarize")  # the provider is not there: only the ad counts
    assert _declared(trace, "initialize") == {"roots", "sampling"}


def test_the_2026_era_declares_every_back_channel_capability_as_before(tmp_path: Path) -> None:
    from test_bounds import hostile

    trace = tmp_path / "trace.ndjson"
    assert mcpcli("-s", hostile("no_cache_hints"), "call", "--trace", str(trace), "work").returncode == 0
    assert _declared(trace, "server/discover") == {"roots", "sampling", "elicitation"}


def test_server_info_at_the_top_of_a_discover_result_names_the_server() -> None:
    """C# SDK 2.0 puts ``serverInfo`` beside ``capabilities`` in its ``server/discover`` result, not in ``_meta``."""
    from test_bounds import hostile

    r = mcpcli("-s", hostile("no_cache_hints"), "info", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["server"] == {"name": "hostile", "version": "1"}
    plain = mcpcli("-s", hostile("no_cache_hints"), "info")
    assert "hostile 1" in plain.stdout


def test_resume_survives_the_probe_too(home: Path, tmp_path: Path) -> None:
    """A waiting session of a strict server, resumed with the probe asked for (``--protocol auto``; nothing is
    remembered any more): the resume restarts the server with the handshake, as a call does."""
    target = shlex.join([PY, str(PICKY), "samples_then_fails", "--strict"])
    first = mcpcli("-s", target, "call", "summarize")
    assert first.returncode == 3, first.stderr
    (session,) = _sessions()
    (home / "cache" / "handshakes.json").unlink()
    again = mcpcli("resume", session["id"], "--protocol", "auto")
    assert again.returncode == 3, again.stderr  # asked again, refused again: still waiting, not a dead connection
    assert "did not survive the 2026-07-28 probe" in again.stderr and "Connection failed" not in again.stderr
    assert "legacy" in (home / "cache" / "handshakes.json").read_text()
