"""JSON nested past what Python can read — from the user (``--args``, ``--answers``, ``-a KEY=JSON``, a batch line,
``config.toml``, ``.mcp.json``) or from a server's response — is bad input like any other: one clear line and its
exit code, never "Internal error", and never a request left waiting for an answer that was dropped."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, run_process

DEEP = 100_000
"""Far past the JSON decoder's recursion limit (and TOML's)."""


def nested(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture
def deep_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "args": tmp_path / "args.json",
        "answers": tmp_path / "answers.json",
        "value": tmp_path / "value.json",
        "batch": tmp_path / "flows.jsonl",
    }
    files["args"].write_text(f'{{"text": "a", "count": {nested()}}}', encoding="utf-8")
    files["answers"].write_text(f'{{"region": {nested()}}}', encoding="utf-8")
    files["value"].write_text(nested(), encoding="utf-8")
    files["batch"].write_text(f'{{"tool": "echo", "id": {nested()}}}\n', encoding="utf-8")
    return files


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["call", "echo", "--args", "@{args}"], "is nested too deeply to read"),
        (["call", "provision", "-a", "name=x", "--answers", "{answers}"], "nested too deeply to read"),
        (["batch", "{batch}"], "line 1: nested too deeply to read; nothing was sent"),
    ],
)
def test_user_json_nested_too_deeply_is_a_usage_error(
    cli: Any, deep_files: dict[str, Path], argv: list[str], says: str
) -> None:
    r = cli(*[word.format(**deep_files) for word in argv], "-s", "demo")
    assert r.code == 2, r.err
    assert says in r.err and "Internal error" not in r.err and "Traceback" not in r.err


def test_a_typed_value_nested_too_deeply_is_refused_by_its_schema(cli: Any, deep_files: dict[str, Path]) -> None:
    r = cli("call", "echo", "-a", "text=hi", "-a", f"count=@{deep_files['value']}", "-s", "demo")
    assert r.code == 2, r.err
    assert "count" in r.err and "Internal error" not in r.err


def test_a_config_nested_too_deeply_is_a_config_error(cli: Any, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"x = {nested()}\n", encoding="utf-8")
    r = cli("tools", "-s", "demo")
    assert r.code == 2, r.err
    assert "config.toml is nested too deeply to read" in r.err and "Internal error" not in r.err


def test_a_project_server_file_nested_too_deeply_is_a_config_error(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(f'{{"mcpServers": {nested()}}}', encoding="utf-8")
    monkeypatch.chdir(project)
    r = cli("servers", "list")
    assert r.code == 2, r.err
    assert ".mcp.json is nested too deeply to read" in r.err and "Internal error" not in r.err


DEEP_SERVER = """\
import json, sys
depth = int(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    ident, method = message.get("id"), message.get("method")
    if method == "initialize":
        info = {"name": "deep", "version": "1"}
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)
    elif method == "tools/list":
        tools = [{"name": "deep", "inputSchema": {"type": "object"}}]
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}}), flush=True)
    elif method == "tools/call":
        deep = "[" * depth + "]" * depth
        result = '{"content": [], "structuredContent": {"x": %s}}' % deep
        print('{"jsonrpc": "2.0", "result": %s, "id": %s}' % (result, json.dumps(ident)), flush=True)
    elif ident is not None:
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}}), flush=True)
"""


@pytest.mark.parametrize("depth", [500, DEEP])
def test_a_response_too_deep_to_read_ends_its_request_with_one_line(tmp_path: Path, depth: int) -> None:
    server = tmp_path / "deep_server.py"
    server.write_text(DEEP_SERVER, encoding="utf-8")
    command = shlex.join([PY, str(server), str(depth)])
    start = time.monotonic()
    r = run_process("call", "deep", "-s", command, "--protocol", "legacy", timeout=60)
    assert time.monotonic() - start < 30  # answered, not waited out
    assert r.code == 4, r.err
    assert "could not read the server's response" in r.err and "Internal error" not in r.err


def test_the_scan_finds_only_a_top_level_response_id() -> None:
    from mcpcli.net.transports import _response_id

    deep = nested(5000).encode()
    assert _response_id(b'{"jsonrpc": "2.0", "id": 7, "result": {"x": ' + deep + b"}}") == 7
    # an "id" inside the result is not the response's; the real one may come last, escapes and all
    line = b'{"result": {"id": 9, "x": ' + deep + b'}, "id": "mcpcli-a\\"b", "jsonrpc": "2.0"}'
    assert _response_id(line) == 'mcpcli-a"b'
    assert _response_id(b'{"id": null, "error": 5}') is None
    assert _response_id(b'{"id": 3, "method": "elicitation/create", "params": ' + deep + b"}") is None  # a request
    assert _response_id(b"[" + json.dumps({"id": 1, "result": {}}).encode() + b"]") is None  # not an object
    assert _response_id(b"hello") is None
