"""Shell completion, asked the way the shells ask: a fresh ``mcpcli`` process with Typer's environment protocol
(``_MCPCLI_COMPLETE=complete_bash`` + ``COMP_WORDS``/``COMP_CWORD``, or ``complete_zsh`` + ``_TYPER_COMPLETE_ARGS``),
and once through a real bash reading the installed script.

The servers are real: the built-in demo (in-process in the refresh process), a stdio server with cache hints
written here, the demo over HTTP. Sessions come from real flows in a real SQLite store.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from mcpcli.net import listcache
from mcpcli.settings.config import Paths
from mcpcli.settings.targets import Target

PY = sys.executable
MARKER = "@@modules@@"
WAIT = {"MCPCLI_COMPLETION_WAIT": "60"}
"""Completion waits this long for a cold list here, so a loaded machine cannot make a test flaky."""

SDK_AND_UI = ("mcp", "mcp_types", "textual", "mcpcli.tui")

HINTED_SERVER = '''\
"""A stdio server whose lists carry a cache hint of argv[1] milliseconds."""
import sys
from typing import Literal

import anyio
from mcp.server import CacheHint
from mcp.server.mcpserver import MCPServer

hint = CacheHint(ttl_ms=int(sys.argv[1]))
server = MCPServer("hinted", cache_hints={"tools/list": hint, "prompts/list": hint})


@server.tool()
def deploy(env: Literal["staging", "prod"], dry_run: bool = False, note: str = "") -> str:
    """Deploy the service to an environment.

    This second line is not for the completion menu.
    """
    return f"{env} {dry_run} {note}"


@server.prompt()
def brief(topic: str) -> str:
    """Write a brief."""
    return topic


anyio.run(server.run_stdio_async)
'''


# --- helpers ---------------------------------------------------------------------------------------------------------

PROGRAM = f"""
import json, os, sys
sys.argv[0] = "mcpcli"
from mcpcli.cli import main
try:
    main()
except SystemExit:
    pass
if os.environ.get("LIST_MODULES"):
    print({MARKER!r} + json.dumps(sorted(sys.modules)))
"""


def run_mcpcli(env: dict[str, str], cwd: Path, *args: str, modules: bool = False) -> subprocess.CompletedProcess[str]:
    """``mcpcli ARGS`` as installed (argv[0] is ``mcpcli``), in a fresh interpreter; with ``modules``, it then
    prints the modules it imported."""
    extra = {"PYTHONPATH": str(ROOT), **({"LIST_MODULES": "1"} if modules else {}), **env}
    return subprocess.run(
        [PY, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env={**os.environ, **extra}
    )


def show_completion(shell: str, cwd: Path) -> str:
    """``mcpcli --show-completion SHELL`` (naming the shell needs Typer's test switch; users get theirs detected)."""
    proc = run_mcpcli({"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}, cwd, "--show-completion", shell)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def bash(words: list[str], cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """What bash gets for ``words`` (the last one is being completed), split as bash splits them (at ``=`` and
    ``:`` too)."""
    proc = run_mcpcli(
        {
            "_MCPCLI_COMPLETE": "complete_bash",
            "COMP_WORDS": "\n".join(words),  # Typer's script joins COMP_WORDS with IFS=$'\n'
            "COMP_CWORD": str(len(words) - 1),
            **(env or {}),
        },
        cwd,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


def zsh(line: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """What zsh gets for the command line ``line`` (up to the cursor): ``{value: help}``."""
    proc = run_mcpcli({"_MCPCLI_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": line, **(env or {})}, cwd)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    body = proc.stdout.strip()
    if body == "_files":  # Typer's answer when there is nothing to offer
        return {}
    head, tail = "_arguments '*: :((", "))'"
    assert body.startswith(head) and body.endswith(tail), body
    offered = {}
    for entry in body.removeprefix(head).removesuffix(tail).split("\n"):
        match = re.fullmatch(r'"((?:[^"]|"")*)"(?::"((?:[^"]|"")*)")?', entry)
        assert match is not None, entry
        value, text = (match.group(1), match.group(2) or "")
        offered[value.replace("\\\\:", ":")] = text.replace("\\\\:", ":")
    return offered


def cache_doc(target: Target) -> dict[str, Any]:
    return dict(json.loads(listcache.cache_file(Paths.from_env(), target).read_text()))


DEMO = Target(label="demo", kind="demo")


def write_config(home: Path, text: str) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


@pytest.fixture
def hinted(home: Path, tmp_path: Path) -> dict[str, Target]:
    """Two configured stdio servers with cache hints: ``hinted`` (90 s) and ``forever`` (48 h)."""
    script = tmp_path / "hinted_server.py"
    script.write_text(HINTED_SERVER)
    servers = {"hinted": 90_000, "forever": 48 * 3600 * 1000}
    write_config(
        home,
        "".join(
            f'[mcpServers.{name}]\ncommand = {json.dumps(PY)}\nargs = [{json.dumps(str(script))}, "{ttl}"]\n'
            for name, ttl in servers.items()
        ),
    )
    return {
        name: Target(label=name, kind="stdio", command=PY, args=(str(script), str(ttl)))
        for name, ttl in servers.items()
    }


def wait_until(condition: Any, seconds: float = 60) -> None:
    """Poll for something another process does (a background refresh has no event to wait on)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


# --- servers ---------------------------------------------------------------------------------------------------------


def test_server_names_come_from_every_place_mcpcli_reads_and_include_the_demo(home: Path, tmp_path: Path) -> None:
    write_config(home, '[mcpServers.alpha]\nurl = "https://alpha.example/mcp"\n')
    (home / "servers.json").write_text(json.dumps({"mcpServers": {"beta": {"command": "beta-server"}}}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"gamma": {"command": "npx", "args": ["gamma"]}}}))

    assert bash(["mcpcli", "-s", ""], tmp_path) == ["alpha", "beta", "gamma", "demo"]
    assert bash(["mcpcli", "call", "--server", "a"], tmp_path) == ["alpha"]
    assert bash(["mcpcli", "sessions", "list", "-s", "g"], tmp_path) == ["gamma"]
    assert bash(["mcpcli", "--server", "=", "be"], tmp_path) == ["beta"]  # --server=be<TAB>
    assert zsh("mcpcli tools -s ", tmp_path) == {
        "alpha": "https://alpha.example/mcp",
        "beta": "beta-server",
        "gamma": "npx gamma",
        "demo": "the built-in demo server",
    }


def test_a_broken_config_still_offers_the_other_names_and_prints_nothing(home: Path, tmp_path: Path) -> None:
    write_config(home, "this is [not toml\n")
    (home / "servers.json").write_text(json.dumps({"mcpServers": {"beta": {"command": "beta-server"}}}))
    (tmp_path / ".mcp.json").write_text("{ not json")

    assert bash(["mcpcli", "-s", ""], tmp_path) == ["beta", "demo"]  # (bash() checks: exit 0, stderr empty)
    assert bash(["mcpcli", "call", ""], tmp_path) == []  # no server can be resolved: nothing, quietly


# --- the cache, warm and cold ----------------------------------------------------------------------------------------


def test_tool_names_come_from_the_cache_mcpcli_tools_wrote_without_importing_the_sdk(
    cli: Any, home: Path, tmp_path: Path
) -> None:
    r = cli("tools", "--protocol", "legacy")  # a pre-2026 session: no hint, the default TTL
    assert r.code == 0, r.err
    doc = cache_doc(DEMO)
    assert doc["tools"]["ttl"] == "default"
    assert doc["tools"]["expires_at"] - doc["tools"]["fetched_at"] == listcache.DEFAULT_TTL == 3600

    proc = run_mcpcli(
        {"_MCPCLI_COMPLETE": "complete_bash", "COMP_WORDS": "mcpcli\ncall\npro", "COMP_CWORD": "2"},
        tmp_path,
        modules=True,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "provision"
    modules = set(json.loads(next(x for x in lines if x.startswith(MARKER)).removeprefix(MARKER)))
    assert {"mcpcli.cli.completion", "mcpcli.net.listcache"} <= modules  # the list is real: completion read the cache
    assert sorted(m for m in modules if m.split(".")[0] in SDK_AND_UI or m.startswith("mcpcli.tui")) == []
    assert not listcache.cache_file(Paths.from_env(), DEMO).with_suffix(".refresh").exists()  # fresh: no refresh


def test_the_cache_file_is_private_and_holds_first_lines_and_schemas(
    cli: Any, home: Path, hinted: dict[str, Target]
) -> None:
    assert cli("tools", "-s", "hinted").code == 0
    path = listcache.cache_file(Paths.from_env(), hinted["hinted"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    (deploy,) = json.loads(path.read_text())["tools"]["items"]
    assert deploy["description"] == "Deploy the service to an environment."
    assert deploy["inputSchema"]["properties"]["env"]["enum"] == ["staging", "prod"]


def test_a_cold_cache_is_filled_by_completion_from_the_demo(home: Path, tmp_path: Path) -> None:
    assert bash(["mcpcli", "call", ""], tmp_path, WAIT) == ["provision", "onboard", "connect", "wait_for_build", "echo"]
    assert bash(["mcpcli", "prompt", ""], tmp_path, WAIT) == ["note"]  # the same refresh kept the prompts
    assert [t["name"] for t in cache_doc(DEMO)["tools"]["items"]][:1] == ["provision"]


def test_a_cold_cache_is_filled_from_a_configured_stdio_server_honouring_its_hint(
    home: Path, tmp_path: Path, hinted: dict[str, Target]
) -> None:
    assert bash(["mcpcli", "call", "-s", "hinted", ""], tmp_path, WAIT) == ["deploy"]  # -s after the subcommand
    tools = cache_doc(hinted["hinted"])["tools"]
    assert (tools["ttl"], tools["expires_at"] - tools["fetched_at"]) == ("server", 90.0)
    assert bash(["mcpcli", "-s", "hinted", "prompt", ""], tmp_path) == ["brief"]  # -s before: fresh, no wait


def test_a_server_hint_beyond_24_hours_is_capped_as_the_sdk_caps_it(cli: Any, hinted: dict[str, Target]) -> None:
    from mcp.client.caching import MAX_TTL_MS

    assert cli("prompts", "-s", "forever").code == 0
    prompts = cache_doc(hinted["forever"])["prompts"]
    assert prompts["items"] == [
        {
            "name": "brief",
            "description": "Write a brief.",
            "arguments": [{"name": "topic", "description": "", "required": True}],
        }
    ]
    assert prompts["expires_at"] - prompts["fetched_at"] == listcache.MAX_TTL == MAX_TTL_MS / 1000


def test_a_cold_cache_is_filled_from_an_http_server(http_demo: Any, home: Path, tmp_path: Path) -> None:
    server = http_demo()
    url = server.url
    split = ["http", ":", "//127.0.0.1", ":", f"{server.port}/mcp"]  # bash splits at ":" as at "="
    assert bash(["mcpcli", "-s", *split, "call", "w"], tmp_path, WAIT) == ["wait_for_build"]
    tools = cache_doc(Target(label=url, kind="http", url=url))["tools"]
    assert tools["ttl"] == "server"  # a 2026-07-28 server always sends ttlMs (the SDK's default is 0)


def test_calling_a_tool_keeps_its_listing_for_completion(cli: Any, home: Path) -> None:
    r = cli("call", "echo", "--arg", "text=hi", "--protocol", "legacy")
    assert r.code == 0, r.err
    assert "echo" in [t["name"] for t in cache_doc(DEMO)["tools"]["items"]]


def test_a_stale_list_is_offered_at_once_and_refreshed_in_the_background(home: Path, tmp_path: Path) -> None:
    path = listcache.cache_file(Paths.from_env(), DEMO)
    path.parent.mkdir(mode=0o700, parents=True)
    old = {"fetched_at": 1.0, "expires_at": 2.0, "ttl": "server", "items": [{"name": "old_tool", "inputSchema": {}}]}
    path.write_text(json.dumps({"version": listcache.CACHE_VERSION, "server": "demo", "tools": old}))

    assert bash(["mcpcli", "call", ""], tmp_path) == ["old_tool"]  # the stale list, not the one being fetched
    wait_until(lambda: "provision" in path.read_text())
    assert bash(["mcpcli", "call", "p"], tmp_path) == ["provision"]
    assert cache_doc(DEMO)["tools"]["fetched_at"] > 2.0


def test_a_corrupt_cache_file_is_ignored(home: Path, tmp_path: Path) -> None:
    path = listcache.cache_file(Paths.from_env(), DEMO)
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_text('{"version": 1, "tools": {"items": [tr')

    assert bash(["mcpcli", "call", "ec"], tmp_path, WAIT) == ["echo"]  # as if cold: fetched again
    assert cache_doc(DEMO)["tools"]["items"]


def test_a_command_line_typed_after_s_is_never_started_by_completion(home: Path, tmp_path: Path) -> None:
    started = tmp_path / "started"
    line = shlex.join([PY, "-c", f"open({str(started)!r}, 'w')"])

    assert bash(["mcpcli", "-s", line, "call", ""], tmp_path, WAIT) == []
    assert not started.exists()
    assert not list((home / "cache").glob("**/*.refresh"))  # and nothing was left to start it later


# --- arguments -------------------------------------------------------------------------------------------------------


def test_arg_keys_come_from_the_schema_with_their_type_and_description(
    cli: Any, tmp_path: Path, hinted: dict[str, Target]
) -> None:
    assert cli("tools", "-s", "hinted").code == 0
    assert zsh("mcpcli -s hinted call deploy --arg ", tmp_path) == {
        "env=": "string, required",
        "dry_run=": "boolean",
        "note=": "string",
    }
    assert bash(["mcpcli", "-s", "hinted", "call", "deploy", "-a", "env=prod", "-a", ""], tmp_path) == [
        "dry_run=",
        "note=",
    ]  # a key already given is not offered again
    assert bash(["mcpcli", "prompt", "note", "-a", ""], tmp_path, WAIT) == ["topic="]


def test_values_after_key_equals_come_from_enums_and_booleans_in_bash_and_zsh(
    cli: Any, tmp_path: Path, hinted: dict[str, Target]
) -> None:
    assert cli("tools", "-s", "hinted").code == 0
    call = ["mcpcli", "-s", "hinted", "call", "deploy", "--arg"]
    # bash splits at "=": KEY, "=", VALUE are separate words, and it replaces only what follows the "=".
    assert bash([*call, "env", "="], tmp_path) == ["staging", "prod"]
    assert bash([*call, "env", "=", "st"], tmp_path) == ["staging"]
    assert bash([*call, "dry_run", "="], tmp_path) == ["true", "false"]
    assert bash([*call, "note", "="], tmp_path) == []
    assert list(zsh("mcpcli -s hinted call deploy --arg env=p", tmp_path)) == ["env=prod"]


def _installed(shell: str, tmp_path: Path) -> dict[str, str]:
    """An ``mcpcli`` on PATH and ``completion.SHELL`` (the script ``--show-completion`` prints) in ``tmp_path``;
    returns the environment a real shell runs them in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mcpcli").write_text(f'#!/bin/sh\nexec {shlex.quote(PY)} -m mcpcli "$@"\n')
    (bin_dir / "mcpcli").chmod(0o755)
    (tmp_path / f"completion.{shell}").write_text(show_completion(shell, tmp_path))
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_real_bash_completes_a_tool_and_a_value_with_the_installed_script(
    cli: Any, home: Path, tmp_path: Path, hinted: dict[str, Target]
) -> None:
    import pexpect

    assert cli("tools", "-s", "hinted").code == 0
    env = {**_installed("bash", tmp_path), "PS1": "$ "}
    sh = pexpect.spawn("bash", ["--norc", "--noprofile"], cwd=str(tmp_path), env=env, encoding="utf-8", timeout=30)
    try:
        sh.expect_exact("$ ")
        sh.sendline("source completion.bash && echo sourced")
        sh.expect_exact("sourced")
        sh.expect_exact("$ ")
        sh.send("mcpcli -s hinted call dep\t")
        sh.expect_exact("deploy ")
        sh.send("--arg env=st\t")
        sh.expect_exact("env=staging ")
        sh.send("\x01echo \r")  # Ctrl-A: to the start of the line, to echo it instead of running it
        sh.expect_exact("mcpcli -s hinted call deploy --arg env=staging\r\n")  # echo's output: no trailing blank
    finally:
        sh.close(force=True)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
def test_real_zsh_completes_a_tool_and_a_value_with_the_installed_script(
    cli: Any, home: Path, tmp_path: Path, hinted: dict[str, Target]
) -> None:
    import pexpect

    assert cli("tools", "-s", "hinted").code == 0
    env = {**_installed("zsh", tmp_path), "TERM": "dumb"}
    sh = pexpect.spawn("zsh", ["-f", "-i"], cwd=str(tmp_path), env=env, encoding="utf-8", timeout=30)
    try:
        sh.sendline("PS1='%% '; autoload -U compinit && compinit -u && source completion.zsh && echo sour''ced")
        sh.expect_exact("sourced")
        sh.send("mcpcli -s hinted call dep\t")
        sh.expect_exact("deploy")
        sh.send(" --arg env=st\t")
        sh.expect_exact("env=staging")
        sh.send("\x01echo \r")  # Ctrl-A: to the start of the line, to echo it instead of running it
        sh.expect(r"mcpcli -s hinted call deploy +--arg env=staging *\r\n")
    finally:
        sh.close(force=True)


# --- sessions --------------------------------------------------------------------------------------------------------


def test_session_ids_are_offered_with_what_each_session_is(cli: Any, home: Path, tmp_path: Path) -> None:
    assert bash(["mcpcli", "resume", ""], tmp_path) == []  # no store yet: nothing, and none created
    assert not Paths.from_env().store_file.exists()

    waiting = cli("call", "provision", "-a", "name=orders", "--json")
    assert waiting.code == 3, waiting.err
    first = waiting.json()["session_id"]
    done = cli("call", "provision", "-a", "name=billing", "--answer", "region=eu-west-1", "--json")
    assert done.code == 0, done.err
    from mcpcli.state.store import open_store

    store = open_store(None, Paths.from_env().store_file)
    try:
        second = next(r.id for r in store.list() if r.id != first)
    finally:
        store.close()

    offered = zsh("mcpcli resume ", tmp_path)
    assert offered == {second: "done provision (round 1)", first: "waiting provision (round 1)"}
    assert bash(["mcpcli", "resume", first[:5]], tmp_path) == [first]
    assert sorted(bash(["mcpcli", "tui", ""], tmp_path)) == sorted([first, second])
    assert sorted(bash(["mcpcli", "sessions", "show", ""], tmp_path)) == sorted([first, second])
    assert sorted(bash(["mcpcli", "sessions", "export", ""], tmp_path)) == sorted([first, second])
    assert bash(["mcpcli", "sessions", "rm", first, ""], tmp_path) == [second]  # one already given


# --- the scripts -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shell", "expected"),
    [
        (
            "bash",
            [
                "_mcpcli_completion()",
                "_MCPCLI_COMPLETE=complete_bash",
                "complete -o default -F _mcpcli_completion mcpcli",
            ],
        ),
        ("zsh", ["#compdef mcpcli", "_MCPCLI_COMPLETE=complete_zsh", "compdef _mcpcli_completion mcpcli"]),
        ("fish", ["complete --command mcpcli", "_MCPCLI_COMPLETE=complete_fish"]),
    ],
)
def test_the_completion_script_for_each_shell(shell: str, expected: list[str], tmp_path: Path) -> None:
    script = show_completion(shell, tmp_path)
    for text in expected:
        assert text in script
