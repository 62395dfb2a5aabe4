"""The app and tasks: a running task shows its status on the run screen, its questions open the round screen, and
``d``/``c`` detach or cancel it — driven by Textual's pilot against the real task server over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import SIZE, finished, make_app, screen_of, shown_text, until

from mcpcli.commands.jobs import CallJob
from mcpcli.settings.config import Paths, private_dir
from mcpcli.state.store import open_store
from mcpcli.tui.round import RoundScreen
from mcpcli.tui.run import RunScreen

TASK_SERVERS = Path(__file__).with_name("task_servers.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


@pytest.fixture(autouse=True)
def fixed_session_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpcli.state.store.new_session_id", lambda: "7a5c00000001")


def tasks_server(state: Path, poll_ms: int = 50) -> str:
    """The task server over stdio as the config entry ``tasks`` (a short label, as the screens show it)."""
    home = private_dir(Path(os.environ["MCPCLI_HOME"]))
    args = [str(TASK_SERVERS), "--state", str(state), "--poll-ms", str(poll_ms), "--fixed-ids"]
    entry = f"[mcpServers.tasks]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    (home / "config.toml").write_text(entry, encoding="utf-8")
    return "tasks"


def status(pilot: Pilot[Any]) -> str:
    screen = pilot.app.screen
    return str(screen.query_one("#run-status").render()) if isinstance(screen, RunScreen) else ""


def on_server(state: Path, task_id: str) -> str:
    return str(json.loads(state.read_text())["tasks"][task_id]["task"]["status"])


@pytest.mark.anyio
async def test_a_task_question_opens_the_round_screen_and_the_answer_is_sent_once(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    app = make_app(CallJob("tools/call", "ask_twice", arguments={}), server=tasks_server(state))
    async with app.run_test(size=SIZE) as pilot:
        form = await screen_of(pilot, RoundScreen)
        assert "Name?" in shown_text(form)
        await pilot.press(*"orders", "ctrl+s")
        second = await screen_of(pilot, RoundScreen)
        assert "Region?" in shown_text(second)
        await pilot.press(*"eu", "ctrl+s")
        done = await finished(pilot)
        assert "Provisioned 'orders' in eu." in shown_text(done)
    updates = json.loads(state.read_text())["updates"]
    assert updates == {"task-0001": {"name-1": 1, "region-2": 1}}


@pytest.mark.anyio
@pytest.mark.parametrize("key", ["c", "d"])
async def test_the_cancel_and_detach_keys_act_on_the_running_task(key: str, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    app = make_app(CallJob("tools/call", "stuck", arguments={}), server=tasks_server(state, poll_ms=200))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "Task task-0001 · working" in status(pilot), "the task's status")
        await pilot.press(key)
        done = await finished(pilot)
        text = shown_text(done)
        title = str(done.query_one(".result").border_title)
    with open_store(None, Paths.from_env().store_file) as store:
        session = store.get("7a5c00000001")
    if key == "c":
        assert title == "Task cancelled · session 7a5c00000001"
        assert on_server(state, "task-0001") == "cancelled" and session.status == "failed"
    else:
        assert title == "Task left running · session 7a5c00000001" and "mcpcli resume 7a5c00000001" in text
        assert on_server(state, "task-0001") == "working" and session.status == "waiting"


def test_a_running_task_on_the_run_screen(snap_compare: Any, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    app = make_app(CallJob("tools/call", "stuck", arguments={}), server=tasks_server(state, poll_ms=5000))

    async def run_before(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: "Task task-0001 · working — working" in status(pilot), "the task's status")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
