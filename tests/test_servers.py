"""Named servers: config.toml, servers.json and ./.mcp.json; importing other clients' files; env references.

Samples of the files Claude Desktop, Claude Code, VS Code and Cursor keep are in ``tests/data``; the import
tests copy them into a temporary ``$HOME`` (and a temporary project directory as the current directory), so no
test reads the real home.
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_imports import SDK, UI, _matching, _run_main, run_and_list_modules

from mcpcli.errors import ConfigError, ExitCode
from mcpcli.settings.config import Paths, ServerEntry, Settings, private_dir
from mcpcli.settings.servers import ServerTable, app_files, convert, strip_jsonc
from mcpcli.settings.targets import resolve_target

DATA = Path(__file__).resolve().parent / "data"
ECHO = DATA / "echo_server.py"


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary ``$HOME`` (Linux layout: ``~/.config``) and a temporary project as the current directory."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("COLUMNS", "250")  # tables unwrapped, so lines can be matched whole
    return home


def place(sample: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / sample, dest)
    return dest


def managed(home: Path) -> dict[str, Any]:
    entries: dict[str, Any] = json.loads((home / "servers.json").read_text())["mcpServers"]
    return entries


def write_config(home: Path, text: str) -> None:
    (private_dir(home) / "config.toml").write_text(textwrap.dedent(text), encoding="utf-8")


def write_managed(home: Path, entries: dict[str, Any]) -> None:
    (private_dir(home) / "servers.json").write_text(json.dumps({"mcpServers": entries}), encoding="utf-8")


def echo_entry(*args: str, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ECHO), *args], "env": env}


# --- JSON with comments ----------------------------------------------------------------------------------------------


def test_comments_and_trailing_commas_are_removed_but_strings_are_left_alone() -> None:
    text = '{\n  // a comment\n  "a": "http://x/*y*/ // z", /* block */\n  "b": [1, 2,],\n  "c": {"d": "\\"//",},\n}\n'
    assert json.loads(strip_jsonc(text)) == {"a": "http://x/*y*/ // z", "b": [1, 2], "c": {"d": '"//'}}


def test_a_block_comment_keeps_the_line_numbers_of_what_follows() -> None:
    text = '{\n/* one\ntwo\nthree */\n"a": tru\n}'
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(strip_jsonc(text))
    assert caught.value.lineno == 5


def test_a_comma_between_values_is_not_trailing() -> None:
    assert json.loads(strip_jsonc("[1, // one\n 2 /* two */, 3]")) == [1, 2, 3]


# --- other clients' entries ------------------------------------------------------------------------------------------


def test_unknown_keys_are_dropped_and_named_and_numbers_become_text() -> None:
    raw = {"command": "npx", "args": ["--port", 8080, True], "disabled": False, "autoApprove": ["x"], "timeout": 60}
    entry, dropped, problem = convert(raw)
    assert problem is None and entry is not None
    assert entry.args == ["--port", "8080", "true"]
    assert dropped == ("autoApprove", "disabled", "timeout")


def test_another_clients_meaning_of_a_key_mcpcli_also_has_is_dropped_not_fatal() -> None:
    """Claude Code's ``oauth`` table is not mcpcli's: the server is still imported, without it."""
    entry, dropped, problem = convert({"url": "https://x.example/mcp", "oauth": {"clientId": "abc"}})
    assert problem is None and entry is not None and entry.url == "https://x.example/mcp"
    assert dropped == ("oauth",)


def test_an_entry_without_command_or_url_is_unusable_with_the_reason() -> None:
    entry, _, problem = convert({"args": ["x"]})
    assert entry is None
    assert problem is not None and "command" in problem


@pytest.mark.parametrize(
    ("platform", "env", "desktop", "vscode"),
    [
        ("linux", {"HOME": "/h"}, "/h/.config/Claude", "/h/.config/Code/User"),
        ("linux", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/Claude", "/x/Code/User"),
        ("darwin", {"HOME": "/h"}, "/h/Library/Application Support/Claude", "/h/Library/Application Support/Code/User"),
        ("win32", {"HOME": "/h", "APPDATA": "/r"}, "/r/Claude", "/r/Code/User"),
    ],
)
def test_each_platform_has_its_own_app_data_dir(platform: str, env: dict[str, str], desktop: str, vscode: str) -> None:
    cwd = Path("/p")
    claude = app_files("claude", environ=env, platform=platform, cwd=cwd)
    assert claude == [Path(desktop) / "claude_desktop_config.json", Path("/h/.claude.json")]
    code = app_files("vscode", environ=env, platform=platform, cwd=cwd)
    assert code == [Path(vscode) / "mcp.json", Path(vscode) / "settings.json", cwd / ".vscode" / "mcp.json"]
    cursor = app_files("cursor", environ=env, platform=platform, cwd=cwd)
    assert cursor == [Path("/h/.cursor/mcp.json"), cwd / ".cursor" / "mcp.json"]


# --- import ----------------------------------------------------------------------------------------------------------


def test_imports_claude_desktop_and_claude_code_servers_verbatim(cli: Any, home: Path, user_home: Path) -> None:
    place("claude_desktop_config.json", user_home / ".config" / "Claude" / "claude_desktop_config.json")
    place("claude_code.json", user_home / ".claude.json")
    r = cli("servers", "import", "--from", "claude")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("imported: filesystem from ") and "dropped autoApprove, disabled" in lines[0]
    assert lines[2].startswith("imported: Brave-Search ") and "renamed from 'Brave Search'" in lines[2]
    assert lines[3].startswith("imported: sentry ") and "dropped oauth" in lines[3]
    saved = managed(home)
    assert list(saved) == ["filesystem", "github", "Brave-Search", "sentry"]  # not Claude Code's per-project one
    assert saved["github"]["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}  # a reference stays one
    assert saved["Brave-Search"]["env"] == {"BRAVE_API_KEY": "BSA-kept-as-written"}  # the user's own value, as given
    assert saved["sentry"] == {
        "url": "https://mcp.sentry.dev/mcp",
        "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"},
        "type": "http",
    }
    assert "Found 3 servers in" in r.err and "Found 1 server in" in r.err


def test_imports_vscode_settings_with_comments_inputs_and_an_sse_server(cli: Any, home: Path, user_home: Path) -> None:
    place("vscode_settings.json", user_home / ".config" / "Code" / "User" / "settings.json")
    place("vscode_mcp.json", Path.cwd() / ".vscode" / "mcp.json")
    r = cli("servers", "import", "--from", "vscode")
    assert r.code == 0, r.err
    report = {line.split()[1]: line for line in r.out.splitlines()}
    assert list(report) == ["perplexity", "fetch", "legacy-events", "remote", "memory"]
    assert all(line.startswith("imported: ") for line in report.values())
    assert "dropped envFile" in report["perplexity"]
    assert "needs a value for ${input:perplexity-key}" in report["perplexity"]
    assert "mcpcli servers add perplexity ... --env PERPLEXITY_API_KEY=VALUE --force" in report["perplexity"]
    assert "SSE" in report["legacy-events"] and "streamable HTTP" in report["legacy-events"]
    assert "dropped dev" in report["memory"] and str(Path.cwd() / ".vscode" / "mcp.json") in report["memory"]
    saved = managed(home)
    assert saved["fetch"]["args"] == ["mcp-server-fetch", "--allow", "http://example.com/*/x // y"]
    assert saved["perplexity"]["env"] == {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}
    assert saved["remote"]["headers"] == {"X-Api-Key": "${env:REMOTE_KEY}"}


def test_imports_cursor_servers_and_skips_a_broken_one_saying_why(cli: Any, home: Path, user_home: Path) -> None:
    place("cursor_mcp.json", user_home / ".cursor" / "mcp.json")
    r = cli("servers", "import", "--from", "cursor")
    assert r.code == 0, r.err
    report = {line.split()[1]: line for line in r.out.splitlines()}
    assert report["linear"].startswith("imported: ") and "SSE" in report["linear"]
    assert report["postgres"].startswith("imported: ") and "dropped alwaysAllow, timeout" in report["postgres"]
    assert report["broken"].startswith("skipped: ") and "command" in report["broken"]
    saved = managed(home)
    assert set(saved) == {"linear", "postgres"}
    assert saved["postgres"]["args"][-1] == "5432"


def test_import_without_from_looks_everywhere_and_says_what_it_found(cli: Any, home: Path, user_home: Path) -> None:
    place("claude_desktop_config.json", user_home / ".config" / "Claude" / "claude_desktop_config.json")
    place("cursor_mcp.json", user_home / ".cursor" / "mcp.json")
    r = cli("servers", "import")
    assert r.code == 0, r.err
    assert f"Found 3 servers in {user_home / '.config' / 'Claude' / 'claude_desktop_config.json'}" in r.err
    assert f"Found 3 servers in {user_home / '.cursor' / 'mcp.json'}" in r.err
    assert set(managed(home)) == {"filesystem", "github", "Brave-Search", "linear", "postgres"}


def test_import_finds_nothing_politely_or_fails_when_the_app_was_named(cli: Any, home: Path, user_home: Path) -> None:
    r = cli("servers", "import")
    assert r.code == 0, r.err
    assert "No MCP client config found" in r.err and str(user_home / ".cursor" / "mcp.json") in r.err
    r = cli("servers", "import", "--from", "cursor")
    assert r.code == ExitCode.USAGE
    assert "No cursor config found" in r.err
    assert not (home / "servers.json").exists()


def test_import_from_a_file_only_the_named_servers(cli: Any, home: Path, user_home: Path, tmp_path: Path) -> None:
    sample = place("cursor_mcp.json", tmp_path / "theirs.json")
    r = cli("servers", "import", "--from", str(sample), "--name", "postgres")
    assert r.code == 0, r.err
    assert [line.split()[1] for line in r.out.splitlines()] == ["postgres"]
    assert list(managed(home)) == ["postgres"]


def test_an_unknown_name_to_import_is_a_usage_error_and_nothing_is_written(
    cli: Any, home: Path, user_home: Path, tmp_path: Path
) -> None:
    sample = place("cursor_mcp.json", tmp_path / "theirs.json")
    r = cli("servers", "import", "--from", str(sample), "--name", "postgres", "--name", "nope")
    assert r.code == ExitCode.USAGE
    assert "nope" in r.err
    assert not (home / "servers.json").exists()


def test_a_different_entry_of_the_same_name_is_skipped_unless_forced(
    cli: Any, home: Path, user_home: Path, tmp_path: Path
) -> None:
    sample = place("cursor_mcp.json", tmp_path / "theirs.json")
    write_managed(home, {"linear": {"url": "https://mine.example/mcp"}})
    r = cli("servers", "import", "--from", str(sample))
    assert r.code == 0, r.err
    assert "skipped: linear" in r.out and "--force" in r.out
    assert managed(home)["linear"] == {"url": "https://mine.example/mcp"}
    assert "unchanged: postgres" in cli("servers", "import", "--from", str(sample)).out
    r = cli("servers", "import", "--from", str(sample), "--force")
    assert "replaced: linear" in r.out
    assert managed(home)["linear"] == {"url": "https://mcp.linear.app/sse"}


def test_a_dry_run_reports_and_writes_nothing(cli: Any, home: Path, user_home: Path, tmp_path: Path) -> None:
    sample = place("cursor_mcp.json", tmp_path / "theirs.json")
    r = cli("servers", "import", "--from", str(sample), "--dry-run")
    assert r.code == 0, r.err
    assert "(dry run) imported: postgres" in r.out
    assert not (home / "servers.json").exists()


def test_a_broken_file_given_to_import_is_a_one_line_error(cli: Any, home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "mcpServers": {\n    "x": {"command": "a"\n  }\n', encoding="utf-8")
    r = cli("servers", "import", "--from", str(bad))
    assert r.code == ExitCode.USAGE
    first = r.err.splitlines()[0]
    assert str(bad) in first and "not valid JSON" in first and "line" in first


# --- list and shadowing ----------------------------------------------------------------------------------------------


def test_list_shows_every_place_and_which_entry_shadows_which(cli: Any, home: Path, user_home: Path) -> None:
    write_config(
        home, '[mcpServers.api]\nurl = "https://config.example/mcp"\nheaders = {Authorization = "Bearer s3"}\n'
    )
    write_managed(home, {"api": {"command": "managed-api"}, "tool": echo_entry("x", ECHO_SUFFIX="${env:SECRET}")})
    (Path.cwd() / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tool": {"command": "project-tool"}, "proj": {"url": "https://p.example/mcp"}}})
    )
    r = cli("servers", "list", "--json")
    assert r.code == 0, r.err
    rows = [(row["name"], row["source"], row["shadowed_by"]) for row in r.json()]
    assert rows == [
        ("api", "config", None),
        ("api", "servers.json", "config"),
        ("tool", "servers.json", None),
        ("tool", "project", "servers.json"),
        ("proj", "project", None),
        ("demo", "built-in", None),
    ]
    first = r.json()[0]
    assert (first["kind"], first["target"], first["headers"]) == (
        "http",
        "https://config.example/mcp",
        ["Authorization"],
    )
    assert r.json()[2]["env"] == ["ECHO_SUFFIX"]
    assert "s3" not in r.out and "${env:SECRET}" not in r.out  # names only, never values
    r = cli("servers", "list")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert any("managed-api" in line and "shadowed by config.toml" in line for line in lines)
    assert any(
        "project-tool" in line and "./.mcp.json" in line and "shadowed by servers.json" in line for line in lines
    )
    assert "s3" not in r.out


def test_the_first_place_wins_when_a_name_is_resolved(home: Path, user_home: Path) -> None:
    write_config(home, '[mcpServers.api]\nurl = "https://config.example/mcp"\n')
    write_managed(home, {"api": {"command": "managed-api"}, "tool": {"command": "managed-tool"}})
    (Path.cwd() / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tool": {"command": "p"}, "proj": {"command": "q"}}})
    )
    paths = Paths.from_env()
    from mcpcli.settings.config import load_settings

    table = ServerTable(paths, load_settings(paths))
    assert [resolve_target(n, Settings(), servers=table, environ={})[0].label for n in ("api", "tool", "proj")] == [
        "api",
        "tool",
        "proj",
    ]
    assert resolve_target("api", Settings(), servers=table, environ={})[0].url == "https://config.example/mcp"
    assert resolve_target("tool", Settings(), servers=table, environ={})[0].command == "managed-tool"
    assert resolve_target("proj", Settings(), servers=table, environ={})[0].command == "q"


def test_a_project_mcp_json_server_is_usable_by_name(cli: Any, user_home: Path) -> None:
    entry = echo_entry("from-the-project")
    (Path.cwd() / ".mcp.json").write_text(json.dumps({"mcpServers": {"local": {**entry, "disabled": False}}}))
    r = cli("call", "echo", "-s", "local", "-a", "text=hi")
    assert r.code == 0, r.err
    assert r.out == "hi args=from-the-project suffix=<unset>\n"


def test_with_no_named_servers_list_shows_the_demo_and_how_to_add_one(cli: Any, user_home: Path) -> None:
    r = cli("servers", "list")
    assert r.code == 0, r.err
    assert "demo" in r.out and "built-in" in r.out
    assert "mcpcli servers add" in r.err


# --- add and remove --------------------------------------------------------------------------------------------------


def test_add_and_remove_round_trip_in_a_private_file(cli: Any, home: Path, user_home: Path) -> None:
    r = cli("servers", "add", "api", "https://api.example/mcp", "-H", "Authorization: Bearer ${env:API_TOKEN}")
    assert r.code == 0, r.err
    r = cli("servers", "add", "echo", "--env", "ECHO_SUFFIX=${X}", "--cwd", ".", "--", sys.executable, str(ECHO), "a b")
    assert r.code == 0, r.err
    assert managed(home) == {
        "api": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}},
        "echo": {
            "command": sys.executable,
            "args": [str(ECHO), "a b"],  # words after -- are taken as they are, not split again
            "env": {"ECHO_SUFFIX": "${X}"},
            "cwd": str(Path.cwd().resolve()),
        },
    }
    assert stat.S_IMODE((home / "servers.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert cli("servers", "remove", "api").code == 0
    assert list(managed(home)) == ["echo"]
    assert stat.S_IMODE((home / "servers.json").stat().st_mode) == 0o600
    assert [p.name for p in home.iterdir() if p.name.startswith(".servers.json")] == []  # no temporary file left


def test_one_quoted_command_line_is_split_like_a_shell_would(cli: Any, home: Path) -> None:
    assert cli("servers", "add", "py", "python 'my server.py' --flag").code == 0
    assert managed(home)["py"] == {"command": "python", "args": ["my server.py", "--flag"]}


def test_adding_over_an_existing_name_needs_force(cli: Any, home: Path) -> None:
    assert cli("servers", "add", "x", "https://one.example/mcp").code == 0
    r = cli("servers", "add", "x", "https://two.example/mcp")
    assert r.code == ExitCode.USAGE and "--force" in r.err
    assert cli("servers", "add", "x", "https://one.example/mcp").code == 0  # the same entry again: nothing to do
    assert cli("servers", "add", "x", "https://two.example/mcp", "--force").code == 0
    assert managed(home)["x"] == {"url": "https://two.example/mcp"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "https://x.example/mcp"], "cannot name a server"),
        (["my server", "https://x.example/mcp"], "cannot name a server"),
        (["http://x", "https://x.example/mcp"], "cannot name a server"),
        (["x", "https://x.example/mcp", "--env", "A=1"], "--env and --cwd are for stdio servers"),
        (["x", "cmd", "-H", "A: 1"], "--header is for HTTP servers"),
        (["x", "cmd", "--env", "NOEQUALS"], "Bad --env"),
        (["x", "https://x.example/mcp", "-H", "no colon"], "Bad header"),
    ],
)
def test_add_refuses_what_it_cannot_use(cli: Any, home: Path, args: list[str], says: str) -> None:
    r = cli("servers", "add", *args)
    assert r.code == ExitCode.USAGE, r.err
    assert says in r.err
    assert not (home / "servers.json").exists()


def test_removing_a_server_of_another_file_says_which_file_to_edit(cli: Any, home: Path, user_home: Path) -> None:
    write_config(home, '[mcpServers.conf]\nurl = "https://config.example/mcp"\n')
    (Path.cwd() / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "p"}}}))
    r = cli("servers", "remove", "conf")
    assert r.code == ExitCode.USAGE
    assert "config.toml" in r.err and "Edit" in r.err
    r = cli("servers", "remove", "proj")
    assert r.code == ExitCode.USAGE
    assert ".mcp.json" in r.err
    r = cli("servers", "remove", "nowhere")
    assert r.code == ExitCode.USAGE and "servers list" in r.err


# --- env references, expanded at connect time ------------------------------------------------------------------------


def test_an_imported_servers_env_references_are_expanded_when_it_starts(
    cli: Any, home: Path, user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = tmp_path / "mcp.json"
    theirs.write_text(
        json.dumps({"mcpServers": {"echo": echo_entry("${env:MCPCLI_T_ARG}", ECHO_SUFFIX="${MCPCLI_T_S}")}})
    )
    assert cli("servers", "import", "--from", str(theirs)).code == 0
    monkeypatch.setenv("MCPCLI_T_ARG", "arg-value-7")
    monkeypatch.setenv("MCPCLI_T_S", "suffix-value-9")
    r = cli("call", "echo", "-s", "echo", "-a", "text=hi")
    assert r.code == 0, r.err
    assert r.out == "hi args=arg-value-7 suffix=suffix-value-9\n"
    stored_text = (home / "servers.json").read_text()
    assert "arg-value-7" not in stored_text and "suffix-value-9" not in stored_text
    assert "${env:MCPCLI_T_ARG}" in stored_text

    monkeypatch.delenv("MCPCLI_T_ARG")
    r = cli("call", "echo", "-s", "echo", "-a", "text=hi")
    assert r.code == ExitCode.USAGE
    assert r.out == ""
    message, hint = r.err.splitlines()
    assert "'echo'" in message and "MCPCLI_T_ARG" in message and "not set" in message
    assert "export MCPCLI_T_ARG=" in hint


def test_references_in_urls_and_headers_and_defaults_are_expanded() -> None:
    entry = ServerEntry(url="https://${HOST}/mcp", headers={"Authorization": "Bearer ${env:TOKEN}", "X": "${X:-none}"})
    target, _ = resolve_target("api", Settings(), servers={"api": entry}, environ={"HOST": "h.example", "TOKEN": "t"})
    assert (target.url, target.headers) == ("https://h.example/mcp", {"Authorization": "Bearer t", "X": "none"})
    assert entry.headers["Authorization"] == "Bearer ${env:TOKEN}"  # the entry itself is left alone


def test_a_vscode_input_reference_says_the_server_needs_a_value() -> None:
    entry = ServerEntry(command="npx", env={"KEY": "${input:api-key}"})
    with pytest.raises(ConfigError) as caught:
        resolve_target("ask", Settings(), servers={"ask": entry}, environ={})
    assert caught.value.exit_code == ExitCode.USAGE
    assert "'ask' needs a value for ${input:api-key}" in caught.value.message
    assert caught.value.hint is not None and "mcpcli servers add ask" in caught.value.hint


def test_a_url_target_reads_no_server_file(home: Path, user_home: Path) -> None:
    """``-s URL`` stays fast and works even when servers.json is broken; a name lookup reports the file."""
    (private_dir(home) / "servers.json").write_text("{not json")
    table = ServerTable(Paths.from_env(), Settings())
    target, _ = resolve_target("https://x.example/mcp", Settings(), servers=table, environ={})
    assert target.url == "https://x.example/mcp"
    with pytest.raises(ConfigError):
        resolve_target("anything", Settings(), servers=table, environ={})


# --- a broken servers.json -------------------------------------------------------------------------------------------


def test_a_corrupt_servers_json_is_a_one_line_error_and_is_never_overwritten(cli: Any, home: Path) -> None:
    path = private_dir(home) / "servers.json"
    path.write_text('{"mcpServers": {"a": ')
    for args in (["servers", "list"], ["servers", "add", "b", "https://b.example/mcp"], ["tools", "-s", "a"]):
        r = cli(*args)
        assert r.code == ExitCode.USAGE, args
        message, hint = r.err.splitlines()
        assert str(path) in message and "not valid JSON" in message
        assert "Fix or move" in hint
    assert path.read_text() == '{"mcpServers": {"a": '


def test_an_invalid_entry_in_servers_json_names_the_server(cli: Any, home: Path) -> None:
    write_managed(home, {"a": {"command": "x", "url": "https://both.example/mcp"}})
    r = cli("servers", "list")
    assert r.code == ExitCode.USAGE
    assert "'a'" in r.err.splitlines()[0]


# --- help, startup cost, paths ---------------------------------------------------------------------------------------


def test_the_servers_group_help_lists_its_commands(cli: Any) -> None:
    r = cli("servers", "--help")
    assert r.code == 0
    for command in ("list", "import", "add", "remove"):
        assert f"  {command} " in r.out


def test_servers_list_imports_neither_the_sdk_nor_textual(home: Path, tmp_path: Path) -> None:
    """On real entries in all three places, so each is read and shown."""
    write_config(home, '[mcpServers.conf]\nurl = "https://config.example/mcp"\n')
    write_managed(home, {"tool": echo_entry("x")})
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"url": "https://p.example/sse"}}}))
    out, modules = run_and_list_modules(_run_main("servers", "list"), home, cwd=tmp_path)
    assert "proj" in out and "conf" in out  # the command really listed them
    assert "mcpcli.commands.servers" in modules
    assert _matching(modules, SDK + UI) == []


def test_paths_lists_servers_tokens_keys_cache_and_the_project_file(cli: Any, home: Path, user_home: Path) -> None:
    doc = cli("paths", "--json").json()
    assert "project" not in doc
    (Path.cwd() / ".mcp.json").write_text("{}")
    r = cli("paths", "--json")
    assert r.code == 0, r.err
    assert r.json() == {
        "config": str(home / "config.toml"),
        "servers": str(home / "servers.json"),
        "project": str(Path.cwd() / ".mcp.json"),
        "state": str(home),
        "store": str(home / "sessions.db"),
        "logs": str(home / "logs"),
        "tokens": str(home / "tokens"),
        "keys": str(home / "keys"),
        "cache": str(home / "cache"),
    }
    plain = dict(line.split(None, 1) for line in cli("paths").out.splitlines())
    assert plain == r.json()
