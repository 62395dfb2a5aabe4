"""A command handed its surroundings (``runtime.Surroundings``: environment, directory, streams, log) runs in them and
leaves the process's own as it found them — what lets the worker rehearse commands without putting anything back."""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from pathlib import Path

import pytest
import typer.main

from mcpcli.cli import app
from mcpcli.cli.app import run_command
from mcpcli.commands.runtime import Globals, Runtime, Surroundings


def _handed(tmp_path: Path, **extra: str) -> Surroundings:
    home = tmp_path / "handed-home"
    environ = {"MCPCLI_HOME": str(home), "HOME": str(home), "PATH": os.defpath, **extra}
    where = tmp_path / "handed-dir"
    where.mkdir(exist_ok=True)
    return Surroundings(environ, where, io.StringIO(), io.StringIO(), io.StringIO(), log=logging.NullHandler())


def test_a_handed_command_writes_its_home_and_streams_and_leaves_the_processs_alone(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.chdir(mine)
    handed = _handed(tmp_path)
    root = logging.getLogger()
    before = dict(os.environ), (sys.stdin, sys.stdout, sys.stderr), list(root.handlers), root.level
    argv = ["call", "provision", "--arg", "name=handed", "--answer", "region=eu-west", "-s", "demo", "--json"]
    with pytest.raises(SystemExit) as stopped:
        run_command(typer.main.get_command(app), argv, handed)
    assert stopped.value.code == 0, handed.stderr.getvalue()  # type: ignore[attr-defined]
    result = json.loads(handed.stdout.getvalue())  # type: ignore[attr-defined]
    assert result["content"][0]["text"] == "Provisioned 'handed' in eu-west."
    assert (dict(os.environ), (sys.stdin, sys.stdout, sys.stderr), list(root.handlers), root.level) == before
    assert Path.cwd() == mine and list(mine.iterdir()) == []
    assert (tmp_path / "handed-home" / "sessions.db").exists()  # the handed home's store, not the process's
    assert not home.exists()
    assert not (tmp_path / "handed-home" / "logs" / "mcpcli.log").exists()  # its log lines went to the handed sink


def test_a_name_is_looked_up_in_the_handed_directorys_mcp_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"nearby": {"command": "elsewhere"}}}))
    handed = _handed(tmp_path)
    assert handed.cwd is not None
    (handed.cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"nearby": {"command": "here", "args": ["x"]}}}))
    rt = Runtime(Globals(server="nearby", surroundings=handed))
    try:
        target = rt.target()
    finally:
        rt.close()
    assert (target.command, list(target.args)) == ("here", ["x"])


def test_a_command_run_the_usual_way_gets_the_processs_own_surroundings() -> None:
    given = Globals().surroundings
    assert given.environ is os.environ and given.cwd is None and given.log is None
    assert (given.stdin, given.stdout, given.stderr) == (sys.stdin, sys.stdout, sys.stderr)
