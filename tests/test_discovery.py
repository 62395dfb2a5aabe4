"""Discovery commands and server progress, against the demo server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from mcpcli.engine.answers import Presets
from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import Call
from mcpcli.net.connection import ConnectOptions, connect
from mcpcli.settings.config import Paths
from mcpcli.settings.targets import Target
from mcpcli.state.keeper import Keeper
from mcpcli.state.store import open_store


def test_tools_as_a_table_and_as_json(cli: Any) -> None:
    table = cli("tools", "-s", "demo")
    assert table.code == 0, table.err
    assert "provision" in table.out and "name: string" in table.out
    tools = {t["name"]: t for t in cli("tools", "--json").json()["tools"]}
    assert {"provision", "onboard", "connect", "wait_for_build", "echo"} <= set(tools)
    assert tools["provision"]["inputSchema"]["required"] == ["name"]


def test_prompts_and_resources_with_templates(cli: Any) -> None:
    assert [p["name"] for p in cli("prompts", "--json").json()["prompts"]] == ["note"]
    resources = cli("resources", "--json").json()
    assert [r["uri"] for r in resources["resources"]] == ["ui://demo/provision", "demo://readme"]
    assert [r["uriTemplate"] for r in resources["resourceTemplates"]] == ["demo://report/{project}"]
    table = cli("resources")
    assert "demo://report/{project}" in table.out and "(template)" in table.out


def test_info_shows_the_server_the_negotiated_protocol_and_capabilities(cli: Any) -> None:
    doc = cli("info", "--json").json()
    assert doc["server"]["name"] == "mcpcli-demo"
    assert doc["protocolVersion"] == "2026-07-28"
    assert "tools" in doc["capabilities"]
    legacy = cli("info", "--protocol", "legacy", "--json").json()
    assert legacy["protocolVersion"] < "2026-07-28"
    assert "mcpcli-demo" in cli("info").out


def test_a_bad_protocol_is_a_usage_error(cli: Any) -> None:
    r = cli("tools", "--protocol", "2024-01-01")
    assert r.code == 2
    assert "Unknown protocol" in r.err


def test_verbose_says_what_each_round_asks(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=x", "--answer", "region=r", "-v")
    assert r.code == 0
    assert "round 1" in r.err and "asks region" in r.err


class Recorder:
    """A reporter that keeps what the flow told it."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.ticks: list[tuple[float, float | None, str | None]] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def detail(self, text: str) -> None:
        self.notes.append(text)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.ticks.append((progress, total, message))


def test_server_progress_notifications_reach_the_reporter(home: Path) -> None:
    paths = Paths.from_env()
    store = open_store(None, paths.store_file)
    reporter = Recorder()

    async def main() -> dict[str, Any]:
        flow = Flow(keeper=Keeper(open_store=lambda: store), server="demo", sources=[Presets()], reporter=reporter)
        async with connect(ConnectOptions(Target(label="demo", kind="demo"), paths)) as client:
            flow.client = client
            async with flow.keeper.running():
                outcome = await flow.start(Call("tools/call", "wait_for_build", {"build": "9"}))
        return outcome.result

    result = anyio.run(main)
    assert result["content"][0]["text"] == "Build 9 finished after 3 checks."
    assert [tick[0] for tick in reporter.ticks] == [0, 1, 2, 3]
    assert reporter.ticks[-1] == (3, 3, "build 9: step 3")
