"""Settings, paths and server targets: which server a command talks to, and how the config file is read."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcpcli.errors import ConfigError, ExitCode, UsageError
from mcpcli.settings.config import Paths, Settings, load_settings, private_dir
from mcpcli.settings.targets import parse_headers, resolve_target

DEMO_NOTE = "using the built-in demo server"


def write_config(home: Path, text: str) -> Path:
    path = private_dir(home) / "config.toml"  # 0700, as mcpcli makes it: the store refuses a shared directory
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def settings(**data: Any) -> Settings:
    return Settings.model_validate(data)


# --- which server ----------------------------------------------------------------------------------------------------


def test_server_option_wins_over_env_and_config() -> None:
    s = settings(default_server="http://config.example/mcp")
    target, note = resolve_target("http://flag.example/mcp", s, environ={"MCPCLI_SERVER": "http://env.example/mcp"})
    assert (target.kind, target.url, note) == ("http", "http://flag.example/mcp", None)


def test_env_wins_over_config() -> None:
    s = settings(default_server="http://config.example/mcp")
    target, note = resolve_target(None, s, environ={"MCPCLI_SERVER": "http://env.example/mcp"})
    assert (target.url, note) == ("http://env.example/mcp", None)


def test_config_default_server_is_used_when_nothing_else_is_given() -> None:
    target, note = resolve_target(None, settings(default_server="demo"), environ={})
    assert (target.kind, target.label, note) == ("demo", "demo", None)


def test_with_nothing_given_the_demo_is_used_with_a_note() -> None:
    target, note = resolve_target(None, Settings(), environ={})
    assert target.kind == "demo"
    assert note is not None
    assert DEMO_NOTE in note


def test_the_demo_fallback_note_goes_to_stderr(cli: Any) -> None:
    r = cli("tools")
    assert r.code == 0, r.err
    assert DEMO_NOTE in r.err
    assert DEMO_NOTE not in r.out
    assert "provision" in r.out


def test_no_note_when_the_server_comes_from_the_environment(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCLI_SERVER", "demo")
    r = cli("tools")
    assert r.code == 0, r.err
    assert DEMO_NOTE not in r.err


def test_config_default_server_through_the_cli(cli: Any, home: Path) -> None:
    write_config(home, 'default_server = "nonexistent-cmd-xyz"\n')
    r = cli("tools")
    assert r.code == ExitCode.USAGE  # no server and no command of that name: said before anything runs
    assert "nonexistent-cmd-xyz" in r.err
    assert DEMO_NOTE not in r.err
    assert cli("tools", "-s", "demo").code == 0


def test_anything_else_is_a_shlex_split_stdio_command() -> None:
    target, _ = resolve_target("python 'my server.py' --flag", Settings(), environ={})
    assert (target.kind, target.command, target.args) == ("stdio", "python", ("my server.py", "--flag"))


@pytest.mark.parametrize("given", ["python 'unclosed", "   "])
def test_an_unparseable_or_empty_command_is_a_usage_error(given: str) -> None:
    with pytest.raises(UsageError):
        resolve_target(given, Settings(), environ={})


# --- the mcpServers table --------------------------------------------------------------------------------------------


CONFIG = """\
default_server = "api"

[mcpServers.local]
command = "uvx"
args = ["my-server", "--verbose"]
env = {API_TOKEN = "t0ken"}
cwd = "/srv/app"

[mcpServers.api]
type = "http"
url = "https://api.example.com/mcp"
headers = {Authorization = "Bearer abc", "X-Team" = "data"}
"""


def test_a_stdio_entry_carries_command_args_env_and_cwd(home: Path) -> None:
    write_config(home, CONFIG)
    target, _ = resolve_target("local", load_settings(Paths.from_env()), environ={})
    assert target.kind == "stdio"
    assert (target.label, target.command, target.args) == ("local", "uvx", ("my-server", "--verbose"))
    assert (target.env, target.cwd) == ({"API_TOKEN": "t0ken"}, "/srv/app")


def test_an_http_entry_carries_url_and_headers_and_dash_h_adds_to_them(home: Path) -> None:
    write_config(home, CONFIG)
    extra = parse_headers(["X-Team: ops", "X-Trace: 1"])
    target, note = resolve_target(None, load_settings(Paths.from_env()), headers=extra, environ={})
    assert (target.kind, target.label, target.url, note) == ("http", "api", "https://api.example.com/mcp", None)
    assert target.headers == {"Authorization": "Bearer abc", "X-Team": "ops", "X-Trace": "1"}


def test_dash_h_overrides_a_config_header_whatever_its_case(home: Path) -> None:
    """HTTP header names are case-insensitive: sending both would send two Authorization values."""
    write_config(home, CONFIG)
    extra = parse_headers(["authorization: Bearer new"])
    target, _ = resolve_target("api", load_settings(Paths.from_env()), headers=extra, environ={})
    assert target.headers == {"X-Team": "data", "authorization": "Bearer new"}


def test_dash_h_headers_go_with_a_url_target() -> None:
    target, _ = resolve_target("https://x.example/mcp", Settings(), headers={"A": "1"}, environ={})
    assert target.headers == {"A": "1"}


@pytest.mark.parametrize(
    "entry",
    [
        'command = "a"\nurl = "http://x"',  # both
        'args = ["a"]',  # neither
        'command = "a"\nflavour = "x"',  # unknown key
        'command = "a"\nargs = "not a list"',
    ],
)
def test_a_bad_server_entry_is_a_config_error_naming_it(home: Path, entry: str) -> None:
    write_config(home, f"[mcpServers.broken]\n{entry}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(Paths.from_env())
    assert "mcpServers.broken" in info.value.message
    assert "\n" not in info.value.message


# --- OAuth client identity: Client ID Metadata Documents --------------------------------------------------------------

CIMD = "https://mcpcli.example/oauth/client.json"


def test_the_top_level_client_metadata_url_goes_with_every_http_target(home: Path) -> None:
    write_config(home, f'client_metadata_url = "{CIMD}"\n' + CONFIG)
    loaded = load_settings(Paths.from_env())
    assert resolve_target("https://x.example/mcp", loaded, environ={})[0].client_metadata_url == CIMD
    assert resolve_target("api", loaded, environ={})[0].client_metadata_url == CIMD
    assert resolve_target("https://x.example/mcp", Settings(), environ={})[0].client_metadata_url is None


def test_a_servers_own_client_metadata_url_wins_over_the_top_level_one(home: Path) -> None:
    mine = "https://corp.example/mcpcli.json"
    write_config(
        home,
        f'client_metadata_url = "{CIMD}"\n[mcpServers.corp]\nurl = "https://corp.example/mcp"\n'
        f'[mcpServers.corp.oauth]\nclient_metadata_url = "{mine}"\n',
    )
    target, _ = resolve_target("corp", load_settings(Paths.from_env()), environ={})
    assert target.client_metadata_url == mine
    assert target.oauth is not None and target.oauth.client_id is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('client_metadata_url = "http://mcpcli.example/client.json"\n', "is not an https URL with a path"),
        ('client_metadata_url = "https://mcpcli.example/"\n', "is not an https URL with a path"),
        ('[mcpServers.a]\nurl = "https://a.example"\n[mcpServers.a.oauth]\nscope = "x"\n', "give 'client_id'"),
        (
            f'[mcpServers.a]\nurl = "https://a.example"\n[mcpServers.a.oauth]\nclient_metadata_url = "{CIMD}"\n'
            'client_secret_env = "S"\n',
            "belongs to a pre-registered client",
        ),
    ],
)
def test_a_bad_oauth_client_setting_is_one_config_error(home: Path, text: str, says: str) -> None:
    write_config(home, text)
    with pytest.raises(ConfigError) as info:
        load_settings(Paths.from_env())
    assert says in info.value.message and "\n" not in info.value.message


# --- -H --------------------------------------------------------------------------------------------------------------


def test_headers_are_split_on_the_first_colon_and_stripped() -> None:
    parsed = parse_headers(["Authorization: Bearer a:b", "X-Empty:", "  X-Pad  :   v  "])
    assert parsed == {"Authorization": "Bearer a:b", "X-Empty": "", "X-Pad": "v"}


def test_a_repeated_header_in_another_case_replaces_the_earlier_one() -> None:
    assert parse_headers(["X-A: 1", "x-a: 2"]) == {"x-a": "2"}


@pytest.mark.parametrize("bad", ["no-colon", ": value", "Two Words: v", ""])
def test_a_malformed_header_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="Bad header"):
        parse_headers([bad])


def test_a_malformed_header_exits_2_before_connecting(cli: Any) -> None:
    r = cli("tools", "-s", "http://127.0.0.1:9/mcp", "-H", "nocolon")
    assert r.code == ExitCode.USAGE
    assert "Bad header 'nocolon'" in r.err
    assert "Traceback" not in r.err


# --- a broken config file --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("default_server = \n", "is not valid TOML"),
        ("[mcpServers\n", "is not valid TOML"),
        ('colour = "blue"\n', "colour: Extra inputs are not permitted"),
        ("default_server = 3\n", "default_server:"),
    ],
)
@pytest.mark.parametrize("command", [("tools",), ("sessions", "list"), ("call", "echo", "--arg", "text=x")])
def test_a_broken_config_is_one_config_error_line_and_exit_2(
    cli: Any, home: Path, text: str, says: str, command: tuple[str, ...]
) -> None:
    path = write_config(home, text)
    r = cli(*command)
    assert r.code == ExitCode.USAGE
    assert r.out == ""
    assert "Traceback" not in r.err
    lines = r.err.splitlines()
    assert lines[0].startswith(f"Config error: {path}")
    assert says in lines[0]
    assert len(lines) == 2
    assert lines[1].startswith("hint: ")


def test_a_config_file_that_is_not_utf8_is_a_config_error(home: Path) -> None:
    (private_dir(home) / "config.toml").write_bytes(b"default_server = '\xff'\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(Paths.from_env())


def test_no_config_file_means_defaults(home: Path) -> None:
    assert load_settings(Paths.from_env()) == Settings()


# --- paths -----------------------------------------------------------------------------------------------------------


def test_paths_prints_everything_under_mcpcli_home(cli: Any, home: Path) -> None:
    r = cli("paths")
    assert r.code == 0, r.err
    rows = dict(line.split(None, 1) for line in r.out.splitlines())
    assert rows == {
        "config": str(home / "config.toml"),
        "servers": str(home / "servers.json"),
        "state": str(home),
        "store": str(home / "sessions.db"),
        "logs": str(home / "logs"),
        "tokens": str(home / "tokens"),
        "keys": str(home / "keys"),
        "cache": str(home / "cache"),
    }


def test_paths_json(cli: Any, home: Path) -> None:
    r = cli("paths", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["config"] == str(home / "config.toml")
    assert doc["store"] == str(home / "sessions.db")
    assert all(Path(v).is_relative_to(home) for v in doc.values())


def test_paths_works_even_with_a_broken_config(cli: Any, home: Path) -> None:
    """The command that says where the config lives must not fail because of it."""
    write_config(home, "this is not toml\n")
    assert cli("paths").code == 0


# --- global options before and after the subcommand ------------------------------------------------------------------


def test_a_server_given_after_the_subcommand_wins(cli: Any) -> None:
    r = cli("-s", "nonexistent-cmd-xyz", "tools", "-s", "demo")
    assert r.code == 0, r.err
    assert "echo" in r.out


def test_a_server_given_before_the_subcommand_is_used(cli: Any) -> None:
    r = cli("-s", "nonexistent-cmd-xyz", "tools")
    assert r.code == ExitCode.USAGE
    assert "nonexistent-cmd-xyz" in r.err


def test_protocol_given_after_the_subcommand_wins(cli: Any) -> None:
    r = cli("--protocol", "2026-07-28", "info", "--json", "-s", "demo", "--protocol", "legacy")
    assert r.code == 0, r.err
    assert r.json()["protocolVersion"] < "2026-07-28"
    r = cli("--protocol", "legacy", "info", "--json", "-s", "demo", "--protocol", "2026-07-28")
    assert r.json()["protocolVersion"] == "2026-07-28"


def test_global_options_work_after_call_too(cli: Any) -> None:
    r = cli("-s", "nonexistent-cmd-xyz", "call", "echo", "--arg", "text=hi", "-s", "demo")
    assert r.code == 0, r.err
    assert r.out == "hi\n"


def test_an_unknown_protocol_is_a_usage_error(cli: Any) -> None:
    r = cli("tools", "-s", "demo", "--protocol", "2099-01-01")
    assert r.code == ExitCode.USAGE
    assert "Unknown protocol" in r.err


# --- a stdio server from the config gets its env and cwd -------------------------------------------------------------


ENV_SERVER = """\
import os

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("envtest")


@server.tool()
def token() -> str:
    return os.environ.get("MCPCLI_TEST_TOKEN") or "<unset>"


@server.tool()
def where() -> str:
    return os.getcwd()


anyio.run(server.run_stdio_async)
"""


def test_a_config_entrys_env_and_cwd_reach_the_stdio_server(
    cli: Any, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPCLI_TEST_TOKEN", raising=False)
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    q = json.dumps  # a JSON string is a valid TOML basic string
    write_config(
        home,
        f"[mcpServers.envtest]\ncommand = {q(sys.executable)}\nargs = [{q(str(script))}]\n"
        f'env = {{MCPCLI_TEST_TOKEN = "s3cret"}}\ncwd = {q(str(workdir))}\n'
        f"[mcpServers.bare]\ncommand = {q(sys.executable)}\nargs = [{q(str(script))}]\n",
    )
    r = cli("call", "token", "-s", "envtest")
    assert r.code == 0, r.err
    assert r.out == "s3cret\n"
    r = cli("call", "where", "-s", "envtest")
    assert r.code == 0, r.err
    assert Path(r.out.strip()).resolve() == workdir.resolve()
    r = cli("call", "token", "-s", "bare")
    assert r.code == 0, r.err
    assert r.out == "<unset>\n"


def test_a_misspelt_server_name_is_said_so_with_the_close_names(cli: Any, home: Path) -> None:
    write_config(home, '[mcpServers.ev]\nurl = "http://127.0.0.1:9/mcp"\n[mcpServers.evh]\ncommand = "true"\n')
    r = cli("-s", "ev2", "tools")
    assert r.code == ExitCode.USAGE
    assert "There is no server named 'ev2'" in r.err
    assert "Did you mean ev or evh?" in r.err
    assert "No such file" not in r.err
    other = cli("call", "x", "-s", "qqqq")
    assert other.code == ExitCode.USAGE and "Named servers: demo, ev, evh." in other.err
    assert cli("tools", "-s", "python3 -c pass").code == ExitCode.SERVER  # a command line still runs as one
