"""The MCP Apps test server (tests/app_servers.py) behaves as the app host's tests rely on, seen by the SDK's own
client (no mcpcli code): its tools name their views, its views read with the right MIME type and CSP, its
multi-round tool asks then answers in both eras, its broken views are broken the intended way, and the tool it gates
on the extension is listed only to a client that declared it."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import app_servers as apps
import mcp_types as t
import pytest
from app_view import BUTTONS, ELEMENTS, VIEW_SCRIPT
from mcp import Client
from mcp.client import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

UI = advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})
ERAS = ["legacy", "2026-07-28"]


def run(body: Any, *, mode: str = "2026-07-28", ui: bool = True, server: Any = None, **options: Any) -> Any:
    """``body(client)`` against the apps server (built in-process unless ``server`` is given)."""

    async def go() -> Any:
        extensions = [UI] if ui else []
        async with Client(server or apps.build(), mode=mode, extensions=extensions, **options) as client:
            return await body(client)

    return anyio.run(go)


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def test_the_tools_name_their_views_and_their_visibility_in_meta_ui() -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {tool.name: (tool.meta or {}) for tool in (await client.list_tools()).tools}

    metas = run(body)
    assert metas["dashboard"] == {"ui": {"resourceUri": apps.DASHBOARD}}
    assert metas["provision_app"] == {"ui": {"visibility": ["app"]}}
    assert metas["model_only"] == {"ui": {"visibility": ["model"]}}
    assert metas["flat_meta"] == {"ui/resourceUri": apps.DASHBOARD}
    for tool, uri in apps.BROKEN_TOOLS.items():
        assert metas[tool] == {"ui": {"resourceUri": uri}}
    assert metas["needs_input_first"]["ui"]["resourceUri"] == apps.DASHBOARD


def test_the_server_declares_the_ui_extension_on_2026_07_28_only() -> None:
    """The SDK sieves ``capabilities.extensions`` out of a 2025-11-25 ``initialize`` result (SEP-2133 is 2026)."""

    async def body(client: Client) -> Any:
        return client.session.protocol_version, client.session.server_capabilities.extensions

    assert run(body, mode="auto") == ("2026-07-28", {"io.modelcontextprotocol/ui": {}})
    assert run(body, mode="legacy") == ("2025-11-25", None)


def test_the_dashboard_reads_as_one_mcp_app_html_with_the_csp_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    csp = {"connectDomains": ["http://127.0.0.1:9"], "resourceDomains": ["http://127.0.0.1:9"]}
    monkeypatch.setenv("MCPCLI_TEST_APP_CSP", json.dumps(csp))
    monkeypatch.setenv("MCPCLI_TEST_APP_PERMISSIONS", json.dumps({"clipboardWrite": {}}))

    async def body(client: Client) -> Any:
        return (await client.read_resource(apps.DASHBOARD)).contents

    contents = run(body)
    assert len(contents) == 1
    read = dump(contents[0])
    assert read["mimeType"] == "text/html;profile=mcp-app"
    assert read["_meta"] == {"ui": {"csp": csp, "permissions": {"clipboardWrite": {}}}}
    assert "ui/initialize" in read["text"]


def test_without_a_declared_csp_the_view_carries_no_meta_and_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPCLI_TEST_APP_CSP", raising=False)
    monkeypatch.delenv("MCPCLI_TEST_APP_PERMISSIONS", raising=False)

    async def body(client: Client) -> Any:
        return dump((await client.read_resource(apps.DASHBOARD)).contents[0])

    read = run(body)
    assert "_meta" not in read
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", read["text"])
    for name in (*ELEMENTS, *BUTTONS, "status", "log", "sent"):
        assert f'id="{name}"' in read["text"], name


def test_the_views_script_is_valid_javascript() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to check the script's syntax")
    done = subprocess.run([node, "--check", "-"], input=VIEW_SCRIPT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_provision_app_asks_a_region_and_a_confirmation_then_answers_with_the_state_echoed() -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        first = await client.session.call_tool("provision_app", {"name": "web"}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult)
        answer = t.ElicitResult(action="accept", content={"region": "us-east", "confirm": True})
        final = await client.session.call_tool(
            "provision_app",
            {"name": "web"},
            input_responses={"setup": answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        return first, final

    first, final = run(body)
    ask = first.input_requests["setup"].params
    assert ask.requested_schema["properties"]["region"]["enum"] == apps.REGIONS
    assert ask.requested_schema["required"] == ["region", "confirm"]
    assert isinstance(final, t.CallToolResult)
    assert final.content[0].text == "provisioned web in us-east (confirm=true)"
    assert final.structured_content["requestState"] == apps.provision_state("web")
    assert final.structured_content["echoedExactly"] is True


def test_a_request_state_changed_by_one_byte_is_refused() -> None:
    async def body(client: Client) -> None:
        first = await client.session.call_tool("provision_app", {"name": "web"}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult) and first.request_state
        answer = t.ElicitResult(action="accept", content={"region": "us-east", "confirm": True})
        state = first.request_state
        changed = state[:-1] + ("A" if state[-1] != "A" else "B")
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "provision_app", {"name": "web"}, input_responses={"setup": answer}, request_state=changed
            )

    run(body)


def test_on_2025_11_25_provision_app_asks_over_the_back_channel() -> None:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> t.ElicitResult:
        asked.append(params)
        return t.ElicitResult(action="accept", content={"region": "ap-south", "confirm": False})

    async def body(client: Client) -> Any:
        return await client.call_tool("provision_app", {"name": "db"})

    final = run(body, mode="legacy", elicitation_callback=elicit)
    assert len(asked) == 1
    assert final.content[0].text == "provisioned db in ap-south (confirm=false)"
    assert final.structured_content["requestState"] is None


@pytest.mark.parametrize("mode", ERAS)
def test_a_declined_launching_question_ends_in_an_error_result(mode: str) -> None:
    async def elicit(context: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    async def body(client: Client) -> list[Any]:
        return [await client.call_tool(tool, {"name": "x"}) for tool in ("needs_input_first", "declinable")]

    first, second = run(body, mode=mode, elicitation_callback=elicit)
    assert (first.is_error, first.content[0].text) == (True, "needs_input_first: decline")
    assert (second.is_error, second.content[0].text) == (True, "declinable: declined")


def test_needs_input_first_asks_a_colour_before_its_result() -> None:
    async def elicit(context: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"color": "green"})

    async def body(client: Client) -> Any:
        first = await client.session.call_tool("needs_input_first", {"name": "x"}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult)
        assert list(first.input_requests) == ["color"]
        return await client.call_tool("needs_input_first", {"name": "x"})

    final = run(body, elicitation_callback=elicit)
    assert final.content[0].text == "x in green"
    assert final.structured_content == {"name": "x", "color": "green"}


def test_the_broken_views_are_broken_the_intended_way() -> None:
    async def body(client: Client) -> dict[str, Any]:
        got: dict[str, Any] = {}
        for uri in (apps.BLOB, apps.WRONG_MIME, apps.EMPTY, apps.TWO, apps.SILENT):
            got[uri] = [dump(c) for c in (await client.read_resource(uri)).contents]
        with pytest.raises(MCPError) as missing:
            await client.read_resource(apps.MISSING)
        got[apps.MISSING] = missing.value.error.code
        return got

    got = run(body)
    blob = got[apps.BLOB]
    assert len(blob) == 1 and blob[0]["mimeType"] == "text/html;profile=mcp-app" and "text" not in blob[0]
    assert "ui/initialize" in base64.b64decode(blob[0]["blob"]).decode()
    assert [c["mimeType"] for c in got[apps.WRONG_MIME]] == ["text/html"]
    assert got[apps.EMPTY] == []
    assert len(got[apps.TWO]) == 2
    assert "<script>" not in got[apps.SILENT][0]["text"] and 'id="status"' in got[apps.SILENT][0]["text"]
    assert got[apps.MISSING] == t.INVALID_PARAMS


@pytest.mark.parametrize("mode", ERAS)
def test_the_gated_tool_is_listed_only_to_a_client_that_declared_the_extension(mode: str) -> None:
    async def body(client: Client) -> tuple[list[str], str]:
        names = [tool.name for tool in (await client.list_tools()).tools]
        declared = (await client.call_tool("ui_declared", {})).content[0].text
        return names, declared

    with_ui, declared = run(body, mode=mode, ui=True)
    without_ui, undeclared = run(body, mode=mode, ui=False)
    assert "gated_view" in with_ui and "gated_view" not in without_ui
    assert json.loads(declared)["settings"] == {"mimeTypes": ["text/html;profile=mcp-app"]}
    assert json.loads(undeclared) == {"declared": False, "settings": None, "protocol": json.loads(declared)["protocol"]}


def test_over_stdio_every_request_is_recorded_with_the_extension_it_declared(tmp_path: Path) -> None:
    """A real process on 2026-07-28: the extension travels in each request's ``_meta``, and the record file says
    what each request declared, and that ``model_only`` was called only when called."""
    record = tmp_path / "record.jsonl"
    env = {"MCPCLI_TEST_APP_RECORD": str(record), "PATH": "/usr/bin:/bin"}
    script = str(Path(apps.__file__))
    params = StdioServerParameters(command=sys.executable, args=[script, "apps"], env=env)

    async def body(client: Client) -> list[str]:
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("dashboard", {"name": "Ada"})
        assert (result.is_error, result.content[0].text) == (False, "Hello, Ada!")
        assert result.structured_content == {"greeting": "Hello, Ada!", "name": "Ada"}
        await client.read_resource(apps.DASHBOARD)
        return names

    assert "gated_view" in run(body, server=params)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["method"] for line in lines] == ["tools/list", "tools/call", "resources/read"]
    assert {line["protocol"] for line in lines} == {"2026-07-28"}
    assert all(line["ui"] == {"mimeTypes": ["text/html;profile=mcp-app"]} for line in lines)
    assert lines[1]["name"] == "dashboard" and lines[1]["arguments"] == {"name": "Ada"}
    assert not any(line.get("name") == "model_only" for line in lines)
