"""What a stdio server's process starts with: a typed command line gets the caller's whole environment (as a shell
would run it), a config entry the SDK's safe defaults with its ``env`` over them — the same cold, through the worker
and kept alive, where the environment is part of which kept server a command gets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import PY, ROOT, stdio_server
from test_worker import mcpcli
from test_worker import warm as _warm  # noqa: F401  # the fixture, for the warm tests
from test_worker import worker_dir as _worker_dir  # noqa: F401  # each test's own worker directory

pytestmark = pytest.mark.usefixtures("_worker_dir")

PLUMBING = "MCPCLI_WORKER_SOCKET,MCPCLI_RELAY_SOCKET"


def seen(*args: str, names: str, env: dict[str, str] | None = None) -> tuple[dict[str, str], int]:
    """``call seen`` on the counter server: the variables' values in the server's process, and its pid."""
    done = mcpcli(*args, "call", "seen", "-a", f"names={names}", env=env)
    assert done.returncode == 0, done.stderr
    *pairs, _, pid = done.stdout.split()
    return dict(pair.split("=", 1) for pair in pairs), int(pid)


def entry(home: Path, name: str, extra: str = "") -> None:
    args = json.dumps([str(ROOT / "tests" / "servers.py"), "counter"])
    config = f"[mcpServers.{name}]\ncommand = {json.dumps(PY)}\nargs = {args}\n{extra}"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")


def test_a_typed_command_line_gets_the_callers_environment(home: Path) -> None:
    values, _ = seen("-s", stdio_server("counter"), names="FOO_FOR_SERVER,HOME", env={"FOO_FOR_SERVER": "bar"})
    assert values == {"FOO_FOR_SERVER": "bar", "HOME": os.environ["HOME"]}


def test_a_config_entry_gets_the_safe_defaults_and_its_env_only(home: Path) -> None:
    entry(home, "envy", '[mcpServers.envy.env]\nBAZ = "1"\nHOME = "/elsewhere"\n')
    values, _ = seen("-s", "envy", names="FOO_FOR_SERVER,BAZ,HOME,PATH", env={"FOO_FOR_SERVER": "bar"})
    assert values["FOO_FOR_SERVER"] == "<unset>"  # the caller's own variables stay with the caller
    assert (values["BAZ"], values["HOME"]) == ("1", "/elsewhere")  # the entry's env, over the defaults
    assert values["PATH"] == os.environ["PATH"]  # a default the SDK passes on


@pytest.mark.slow
@pytest.mark.usefixtures("_warm")
def test_through_the_worker_a_server_gets_what_it_gets_cold_and_never_the_workers_plumbing() -> None:
    values, _ = seen("-s", stdio_server("counter"), names=f"FOO_FOR_SERVER,{PLUMBING}", env={"FOO_FOR_SERVER": "w"})
    assert values == {"FOO_FOR_SERVER": "w", "MCPCLI_WORKER_SOCKET": "<unset>", "MCPCLI_RELAY_SOCKET": "<unset>"}


@pytest.mark.slow
@pytest.mark.usefixtures("_warm")
def test_a_kept_server_is_one_per_environment_it_starts_with() -> None:
    target = ("-s", stdio_server("counter"), "--keep-alive")
    names = f"FOO_FOR_SERVER,{PLUMBING}"
    one, first = seen(*target, names=names, env={"FOO_FOR_SERVER": "1"})
    two, second = seen(*target, names=names, env={"FOO_FOR_SERVER": "2"})
    assert one == {"FOO_FOR_SERVER": "1", "MCPCLI_WORKER_SOCKET": "<unset>", "MCPCLI_RELAY_SOCKET": "<unset>"}
    assert two["FOO_FOR_SERVER"] == "2" and second != first  # another environment: another server
    # What two shells running the same command differ in (the last command, the previous directory, the depth)
    # does not split a kept server.
    again, third = seen(*target, names=names, env={"FOO_FOR_SERVER": "1", "_": "/bin/x", "OLDPWD": "/", "SHLVL": "7"})
    assert (again["FOO_FOR_SERVER"], third) == ("1", first)
    listed = json.loads(mcpcli("worker", "ps", "--json").stdout)
    assert sorted(s["pid"] for s in listed) == sorted([first, second])
    assert "FOO_FOR_SERVER" not in mcpcli("worker", "ps").stdout + json.dumps(listed)  # values are not shown


@pytest.mark.slow
@pytest.mark.usefixtures("_warm")
def test_a_kept_config_entry_gets_its_env_not_the_callers(home: Path) -> None:
    entry(home, "tally", 'keep_alive = true\n[mcpServers.tally.env]\nBAZ = "kept"\n')
    values, pid = seen("-s", "tally", names="FOO_FOR_SERVER,BAZ", env={"FOO_FOR_SERVER": "a"})
    assert values == {"FOO_FOR_SERVER": "<unset>", "BAZ": "kept"}
    # The caller's own variables are not the entry's server's: another value of one does not start another.
    _, again = seen("-s", "tally", names="BAZ", env={"FOO_FOR_SERVER": "b"})
    assert again == pid
