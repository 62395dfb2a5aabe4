"""MCP Apps from the command line, without a browser: which tools have a view, each way a view fails to render
(one line, before any page is served), the options, and the extension declared exactly when a view can be shown —
on 2026-07-28 in every request's ``_meta``, on 2025-11-25 in the handshake. The browser side is
tests/test_apps_browser.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT

APPS = shlex.join([PY, str(ROOT / "tests" / "app_servers.py"), "apps"])


def _recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_tools_marks_the_tools_that_have_an_app(cli: Any) -> None:
    done = cli("tools", "-s", "demo")
    assert done.code == 0, done.err
    row = next(line for line in done.out.splitlines() if line.startswith("provision"))
    assert "[app]" in row
    assert "[app]" not in next(line for line in done.out.splitlines() if line.startswith("echo"))


def test_tools_marks_an_app_given_by_the_deprecated_flat_key_too(cli: Any) -> None:
    done = cli("tools", "-s", APPS)
    assert done.code == 0, done.err
    rows = {line.split()[0]: line for line in done.out.splitlines() if line and line[0].isalpha()}
    assert "[app]" in rows["dashboard"]
    assert "[app]" in rows["flat_meta"]
    assert "[app]" not in rows["model_only"]
    assert "[app only]" in rows["provision_app"]  # the server keeps it for views: not for an agent to call


@pytest.mark.parametrize("option", [["--no-browser"], ["--for", "5"]])
def test_app_companions_without_app_are_a_usage_error(cli: Any, option: list[str]) -> None:
    done = cli("call", "echo", "-a", "text=hi", *option, "-s", "demo")
    assert done.code == 2
    assert "goes with --app" in done.err
    assert "Traceback" not in done.err


def test_a_tool_without_an_app_is_refused_with_one_line_and_nothing_called(cli: Any) -> None:
    done = cli("call", "echo", "-a", "text=hi", "--app", "--no-browser", "-s", "demo")
    assert done.code == 2, done.err
    assert "has no app" in done.err
    assert "hi" not in done.out


def test_a_nonpositive_for_is_a_usage_error(cli: Any) -> None:
    done = cli("call", "provision", "-a", "name=x", "--app", "--for", "0", "-s", "demo")
    assert done.code == 2
    assert "--for needs a positive number" in done.err


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("wrong_mime", "is text/html, not text/html;profile=mcp-app"),
        ("no_contents", "returned no content for the view"),
        ("two_contents", "returned 2 contents for the view"),
        ("unknown_view", "could not be read"),
    ],
)
def test_why_a_view_did_not_render_is_one_line_and_no_call_is_made(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, said: str
) -> None:
    record = tmp_path / "record.ndjson"
    monkeypatch.setenv("MCPCLI_TEST_APP_RECORD", str(record))
    done = cli("call", tool, "--app", "--no-browser", "-s", APPS)
    assert done.code == 4, done.err
    assert said in done.err
    assert "Traceback" not in done.err and "Internal error" not in done.err
    assert len([line for line in done.err.splitlines() if line.strip()]) <= 3  # the line and its hint
    assert not [r for r in _recorded(record) if r["method"] == "tools/call"]  # the call never went out


def test_why_a_view_did_not_render_as_json_is_an_error_document(cli: Any) -> None:
    done = cli("call", "wrong_mime", "--app", "--no-browser", "--json", "-s", APPS)
    assert done.code == 4
    document = json.loads(done.out.strip().splitlines()[-1])
    assert "not text/html;profile=mcp-app" in document["error"]["message"]


@pytest.mark.parametrize("protocol", ["2026-07-28", "legacy"])
def test_the_ui_extension_is_declared_exactly_when_a_view_can_be_shown(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    record = tmp_path / "record.ndjson"
    monkeypatch.setenv("MCPCLI_TEST_APP_RECORD", str(record))
    plain = cli("call", "dashboard", "-a", "name=plain", "--protocol", protocol, "-s", APPS)
    assert plain.code == 0, plain.err
    without = _recorded(record)
    assert without and all(r["ui"] is None for r in without)
    record.unlink()
    shown = cli(
        "call",
        "dashboard",
        "-a",
        "name=app",
        "--app",
        "--no-browser",
        "--for",
        "0.3",
        "--protocol",
        protocol,
        "-s",
        APPS,
    )
    assert shown.code == 0, shown.err
    assert "Hello, app!" in shown.out
    seen = _recorded(record)
    assert {r["method"] for r in seen} >= {"tools/list", "resources/read", "tools/call"}
    assert all(r["ui"] == {"mimeTypes": ["text/html;profile=mcp-app"]} for r in seen), seen


def test_a_tool_listed_only_to_apps_is_called_with_app(cli: Any) -> None:
    plain = cli("call", "gated_view", "-a", "name=x", "-s", APPS)
    assert plain.code == 2  # not listed to a client that cannot show a view: an unknown tool, nothing sent
    shown = cli("call", "gated_view", "-a", "name=x", "--app", "--no-browser", "--for", "0.3", "-s", APPS)
    assert shown.code == 0, shown.err
    assert "gated x (ui declared: true)" in shown.out


def test_app_url_is_the_first_json_line_and_the_result_follows(cli: Any) -> None:
    done = cli("call", "dashboard", "-a", "name=j", "--app", "--no-browser", "--for", "0.3", "--json", "-s", APPS)
    assert done.code == 0, done.err
    lines = [json.loads(line) for line in done.out.splitlines() if line.strip()]
    assert lines[0]["event"] == "app-url"
    url = lines[0]["url"]
    assert url.startswith("http://127.0.0.1:") and "#" in url
    assert len(url.partition("#")[2]) >= 22  # the one-time token: at least 128 bits
    assert any(line.get("structuredContent", {}).get("greeting") == "Hello, j!" for line in lines[1:])
    assert url.partition("#")[2] not in done.err  # the token is printed once, where asked, never logged
