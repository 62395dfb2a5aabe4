"""Third-party servers installed from their registries: the reference TypeScript "everything" server (npm, run
with the system node) and a fastmcp 4.x server (PyPI, the ``test`` extra). Skipped only where node/npm or fastmcp
are missing (never in CI, which installs both)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, free_port

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
FASTMCP_SERVER = Path(__file__).resolve().parent / "data" / "fastmcp_server.py"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must have it)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def everything() -> str:
    """A ``-s`` command line for the everything server, installed once into a cache outside the work tree."""
    if not (shutil.which("node") and shutil.which("npm")):
        _unavailable("needs node and npm")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpcli-tests" / "everything"
    main = cache / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not main.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache), EVERYTHING],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not main.is_file():
            _unavailable(f"npm install {EVERYTHING} failed: {done.stderr[-500:]}")
    return shlex.join(["node", str(main), "stdio"])


@pytest.fixture
def fastmcp_server() -> str:
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        _unavailable("needs fastmcp (pip install -e '.[test]')")
    return shlex.join([PY, str(FASTMCP_SERVER)])


def test_tools_lists_what_the_everything_server_offers_by_capability(process: Any, everything: str) -> None:
    r = process("tools", "--json", "-s", everything)
    assert r.code == 0, r.err
    names = {tool["name"] for tool in r.json()["tools"]}
    # Offered only to a client that declares elicitation, sampling and roots, as `call` always did.
    assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names


def test_a_call_to_the_node_server_prints_its_result_and_exits_without_idling(everything: str) -> None:
    argv = [PY, "-m", "mcpcli", "call", "echo", "-a", "message=hi", "-s", everything]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = time.monotonic()
    assert proc.wait(timeout=60) == 0
    assert line == b"Echo: hi\n"
    assert time.monotonic() - printed < 1.5  # the SDK's stdio teardown waited 2 s for node to exit by itself


def test_the_ts_servers_task_tool_runs_as_a_2025_task_and_its_question_is_answered_by_a_preset(
    process: Any, everything: str
) -> None:
    # It used to fail with -32601 "requires task augmentation" (issue 15): its execution.taskSupport is required.
    r = process("call", "simulate-research-query", "-a", "topic=x", "-s", everything)
    assert r.code == 0 and "# Research Report: x" in r.out, r.err
    assert "Gathering sources" in r.err
    asked = process(
        "call", "simulate-research-query", "-a", "topic=y", "-a", "ambiguous=true", "-s", everything,
        "--answer", "interpretation=technical",
    )  # fmt: skip
    assert asked.code == 0 and 'After receiving clarification ("technical")' in asked.out, asked.err


def test_the_ts_servers_task_tool_runs_as_a_2025_task_over_streamable_http(
    process: Any, everything: str, tmp_path: Path
) -> None:
    """The same third-party task tool over HTTP: tasks/get polls, tasks/result, and its question asked on the
    response stream of tasks/result, answered by a preset."""
    port = free_port()
    main = shlex.split(everything)[1]
    log = (tmp_path / "everything-http.log").open("wb")
    server = subprocess.Popen(
        ["node", main, "streamableHttp"], env={**os.environ, "PORT": str(port)}, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        r = process("call", "simulate-research-query", "-a", "topic=x", "-s", url)
        assert r.code == 0 and "# Research Report: x" in r.out, r.err
        asked = process(
            "call", "simulate-research-query", "-a", "topic=y", "-a", "ambiguous=true", "-s", url,
            "--answer", "interpretation=technical",
        )  # fmt: skip
        assert asked.code == 0 and 'After receiving clarification ("technical")' in asked.out, asked.err
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def test_the_everything_server_asks_over_the_back_channel_and_presets_answer(process: Any, everything: str) -> None:
    r = process("call", "get-roots-list", "--root", str(ROOT), "-s", everything)
    assert r.code == 0, r.err
    assert ROOT.as_uri() in r.out


def test_fastmcp_elicit_on_2026_says_the_fix_in_one_line(process: Any, fastmcp_server: str) -> None:
    r = process("call", "ask", "--answer", "value=bob", "-s", fastmcp_server)
    assert r.code == 1, r.err
    hints = [line for line in r.err.splitlines() if "--protocol legacy" in line]
    assert len(hints) == 1 and "servers add" in hints[0]


def test_fastmcp_elicit_works_with_the_named_servers_protocol_setting(process: Any, fastmcp_server: str) -> None:
    added = process("servers", "add", "fm", "--protocol", "legacy", "--", *shlex.split(fastmcp_server))
    assert added.code == 0, added.err
    r = process("call", "ask", "--answer", "value=bob", "-s", "fm")
    assert r.code == 0, r.err
    assert r.out == "hello bob\n"


def test_fastmcp_protocol_from_config_toml(process: Any, fastmcp_server: str, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = shlex.split(fastmcp_server)
    args = ", ".join(f'"{a}"' for a in argv[1:])
    (home / "config.toml").write_text(f'[mcpServers.fm]\ncommand = "{argv[0]}"\nargs = [{args}]\nprotocol = "legacy"\n')
    r = process("call", "ask", "--answer", "value=ann", "-s", "fm")
    assert r.code == 0, r.err
    assert r.out == "hello ann\n"


def test_a_bad_protocol_setting_is_a_usage_error(process: Any) -> None:
    r = process("servers", "add", "x", "--protocol", "2024", "--", "true")
    assert r.code == 2
    assert "Unknown protocol" in r.err
