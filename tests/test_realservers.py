"""Third-party servers installed from their registries: the reference TypeScript servers (npm, run with the system
node: "everything", filesystem, memory, sequential-thinking), the official Python reference servers (PyPI, each in its
own venv: time, git) and a fastmcp 4.x server (the ``test`` extra); the official MCP Apps examples (npm,
``tests/npm_apps.py``), each view opened in a real browser (``tests/browser.py``). Each is installed once into a cache
outside the work tree; skipped only where node/npm or the registry are missing (never in CI, which has both)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shlex
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import npm_apps
import pytest
from conftest import PY, ROOT, Result, free_port, run_process, wait_until
from test_apps_browser import AppRun

pytest_plugins = ["browser"]

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
FILESYSTEM = "@modelcontextprotocol/server-filesystem@2026.8.31"
MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
THINKING = "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
# The official Python reference servers, each in its own venv (never ours: they pin their own SDK). The time server
# at a release built on the 1.x SDK (it speaks 2025-11-25), the git server at one built on 2.3 (2026-07-28).
TIME = ("time-2025.9.25", ["mcp-server-time==2025.9.25", "mcp==1.30.0"], "mcp-server-time")
GIT = ("git-2026.10.19", ["mcp-server-git==2026.10.19"], "mcp-server-git")
FETCH = ("fetch-2026.10.24", ["mcp-server-fetch==2026.10.24"], "mcp-server-fetch")
FASTMCP_SERVER = Path(__file__).resolve().parent / "data" / "fastmcp_server.py"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must have it)")
    pytest.skip(why)


def _cache() -> Path:
    """Where the servers are installed once: ``$MCPCLI_TEST_CACHE``, as for the conformance suite."""
    if given := os.environ.get("MCPCLI_TEST_CACHE"):
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpcli-tests"


def _npm_server(spec: str, folder: str) -> str:
    """A ``-s`` command line for an npm server package (``spec``: name@version), installed once under the cache."""
    if not (shutil.which("node") and shutil.which("npm")):
        _unavailable("needs node and npm")
    cache = _cache() / folder
    name = spec.rsplit("@", 1)[0]
    main = cache / "node_modules" / name / "dist" / "index.js"
    if not main.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache), spec],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not main.is_file():
            _unavailable(f"npm install {spec} failed: {done.stderr[-500:]}")
    return shlex.join(["node", str(main)])


def _pypi_server(folder: str, requirements: list[str], script: str) -> str:
    """The path of a PyPI server's console script, installed once into its own venv under the cache."""
    venv = _cache() / folder
    main = venv / "bin" / script
    if not main.is_file():
        shutil.rmtree(venv, ignore_errors=True)  # a half-made venv from an interrupted run
        made = subprocess.run([PY, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            _unavailable(f"python -m venv failed: {made.stderr[-500:]}")
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *requirements],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not main.is_file():
            shutil.rmtree(venv, ignore_errors=True)
            _unavailable(f"pip install {' '.join(requirements)} failed: {done.stderr[-500:]}")
    return str(main)


@pytest.fixture(scope="session")
def time_server() -> str:
    return shlex.join([_pypi_server(*TIME), "--local-timezone", "UTC"])


@pytest.fixture(scope="session")
def git_server() -> str:
    return shlex.join([_pypi_server(*GIT)])


@pytest.fixture(scope="session")
def fetch_server() -> str:
    return shlex.join([_pypi_server(*FETCH), "--allow-private-ips"])  # it is pointed at 127.0.0.1 here


@pytest.fixture
def web_page(tmp_path: Path) -> Iterator[str]:
    """A URL on 127.0.0.1 serving a page whose title and text carry terminal escapes and a bidi override."""
    site = tmp_path / "site"
    site.mkdir()
    page = "<html><head><title>T\x1b]0;pwned\x07</title></head><body><h1>Hello \x1b[31mred\x1b[0m world</h1>"
    (site / "index.html").write_text(page + "<p>bidi \u202e evil</p><p>Enough text to read.</p></body></html>")
    (site / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def everything() -> str:
    """A ``-s`` command line for the everything server (stdio)."""
    return _npm_server(EVERYTHING, "everything") + " stdio"


@pytest.fixture(scope="session")
def filesystem() -> str:
    """The reference filesystem server, started with no directory: it asks the client for its roots."""
    return _npm_server(FILESYSTEM, "filesystem")


@pytest.fixture(scope="session")
def memory() -> str:
    """The reference knowledge-graph server: stateful, kept in the file ``MEMORY_FILE_PATH`` names."""
    return _npm_server(MEMORY, "memory")


@pytest.fixture(scope="session")
def thinking() -> str:
    return _npm_server(THINKING, "sequential-thinking")


@pytest.fixture
def worker_on(home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The warm worker started for this home (the other tests run cold); stopped afterwards."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    started = run_in(ROOT, "worker", "start")
    assert started.code == 0, started.err
    yield
    run_in(ROOT, "worker", "stop")


def _config(home: Path, servers: dict[str, dict[str, Any]]) -> None:
    """``config.toml`` with these ``[mcpServers.NAME]`` entries (strings, lists of strings, tables, booleans)."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = []
    for name, entry in servers.items():
        lines.append(f"[mcpServers.{name}]")
        for key, value in entry.items():
            if isinstance(value, dict):
                value = "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
            else:
                value = json.dumps(value)
            lines.append(f"{key} = {value}")
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def run_in(cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: str = "", timeout: float = 60) -> Result:
    """``python -m mcpcli`` as a user runs it, from ``cwd`` (the default root), with a timeout."""
    return run_process(*args, stdin=stdin, env=env, timeout=timeout, cwd=cwd)


def left_running(cwd: Path) -> list[str]:
    """The command lines of processes still running in ``cwd``: a server that outlived the command that started it
    (each test starts its servers from its own directory, so others running meanwhile do not count)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and (proc / "cwd").resolve() == cwd.resolve():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return found


@pytest.fixture
def fastmcp_server() -> str:
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        _unavailable("needs fastmcp (pip install -e '.[test]')")
    return shlex.join([PY, str(FASTMCP_SERVER)])


def test_tools_lists_what_the_everything_server_offers_by_capability(process: Any, everything: str) -> None:
    r = process("tools", "--json", "-s", everything)
    assert r.code == 0, r.err
    names = {tool["name"] for tool in r.json()["tools"]}
    # Offered only to a client that declares elicitation, sampling and roots, as `call` always did.
    assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names


def test_a_call_to_the_node_server_prints_its_result_and_exits_without_idling(everything: str) -> None:
    argv = [PY, "-m", "mcpcli", "call", "echo", "-a", "message=hi", "-s", everything]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = time.monotonic()
    assert proc.wait(timeout=60) == 0
    assert line == b"Echo: hi\n"
    assert time.monotonic() - printed < 1.5  # the SDK's stdio teardown waited 2 s for node to exit by itself


def test_the_ts_servers_task_tool_runs_as_a_2025_task_and_its_question_is_answered_by_a_preset(
    process: Any, everything: str
) -> None:
    # It used to fail with -32601 "requires task augmentation": its execution.taskSupport is required.
    r = process("call", "simulate-research-query", "-a", "topic=x", "-s", everything)
    assert r.code == 0 and "# Research Report: x" in r.out, r.err
    assert "Gathering sources" in r.err
    asked = process(
        "call", "simulate-research-query", "-a", "topic=y", "-a", "ambiguous=true", "-s", everything,
        "--answer", "interpretation=technical",
    )  # fmt: skip
    assert asked.code == 0 and 'After receiving clarification ("technical")' in asked.out, asked.err


def test_the_ts_servers_task_lost_with_its_stdio_process_is_started_over_on_resume(
    process: Any, everything: str
) -> None:
    """The exit-3 hint says to resume with --answer; the task died with the server process, so the resume calls
    again (not "expired": its ttl had not passed) and the new task's question takes the answer."""
    asked = process(
        "call", "simulate-research-query", "-a", "topic=y", "-a", "ambiguous=true", "-s", everything,
        "--no-input", "--json",
    )  # fmt: skip
    assert asked.code == 3, asked.err
    session_id = json.loads(asked.out)["session_id"]
    assert f"mcpcli resume {session_id} --answer" in asked.err
    r = process("resume", session_id, "--answer", "interpretation=technical")
    assert r.code == 0 and 'After receiving clarification ("technical")' in r.out, r.err
    assert "expired" not in r.err
    said = [line for line in r.err.splitlines() if "not found on the server" in line]
    assert len(said) == 1 and "Starting the call over" in said[0], r.err


def test_the_ts_servers_task_tool_runs_as_a_2025_task_over_streamable_http(
    process: Any, everything: str, tmp_path: Path
) -> None:
    """The same third-party task tool over HTTP: tasks/get polls, tasks/result, and its question asked on the
    response stream of tasks/result, answered by a preset."""
    port = free_port()
    main = shlex.split(everything)[1]
    log = (tmp_path / "everything-http.log").open("wb")
    server = subprocess.Popen(
        ["node", main, "streamableHttp"], env={**os.environ, "PORT": str(port)}, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        r = process("call", "simulate-research-query", "-a", "topic=x", "-s", url)
        assert r.code == 0 and "# Research Report: x" in r.out, r.err
        asked = process(
            "call", "simulate-research-query", "-a", "topic=y", "-a", "ambiguous=true", "-s", url,
            "--answer", "interpretation=technical",
        )  # fmt: skip
        assert asked.code == 0 and 'After receiving clarification ("technical")' in asked.out, asked.err
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def test_the_everything_server_asks_over_the_back_channel_and_presets_answer(process: Any, everything: str) -> None:
    r = process("call", "get-roots-list", "--root", str(ROOT), "-s", everything)
    assert r.code == 0, r.err
    assert ROOT.as_uri() in r.out


def test_fastmcp_elicit_on_2026_says_the_fix_in_one_line(process: Any, fastmcp_server: str) -> None:
    r = process("call", "ask", "--answer", "value=bob", "-s", fastmcp_server)
    assert r.code == 1, r.err
    hints = [line for line in r.err.splitlines() if "--protocol legacy" in line]
    assert len(hints) == 1 and "servers add" in hints[0]


def test_fastmcp_elicit_works_with_the_named_servers_protocol_setting(process: Any, fastmcp_server: str) -> None:
    added = process("servers", "add", "fm", "--protocol", "legacy", "--", *shlex.split(fastmcp_server))
    assert added.code == 0, added.err
    r = process("call", "ask", "--answer", "value=bob", "-s", "fm")
    assert r.code == 0, r.err
    assert r.out == "hello bob\n"


def test_fastmcp_protocol_from_config_toml(process: Any, fastmcp_server: str, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = shlex.split(fastmcp_server)
    args = ", ".join(f'"{a}"' for a in argv[1:])
    (home / "config.toml").write_text(f'[mcpServers.fm]\ncommand = "{argv[0]}"\nargs = [{args}]\nprotocol = "legacy"\n')
    r = process("call", "ask", "--answer", "value=ann", "-s", "fm")
    assert r.code == 0, r.err
    assert r.out == "hello ann\n"


def test_a_bad_protocol_setting_is_a_usage_error(process: Any) -> None:
    r = process("servers", "add", "x", "--protocol", "2024", "--", "true")
    assert r.code == 2
    assert "Unknown protocol" in r.err


def test_the_filesystem_server_works_in_the_working_directory_it_was_given_as_root(
    filesystem: str, tmp_path: Path, worker_on: None
) -> None:
    """It asks for the roots as soon as the handshake is done, before any call: that request used to be refused
    (an internal assertion), leaving the server no directory at all ("Access denied" for every path)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("first line\nsecond line\n")
    fs = ["-s", filesystem]
    allowed = run_in(work, "call", "list_allowed_directories", *fs, "--no-worker")
    assert allowed.code == 0 and str(work.resolve()) in allowed.out, allowed.err
    assert "running on stdio" not in allowed.err  # the server's stderr goes to its log
    read = run_in(work, "call", "read_text_file", "-a", "path=notes.txt", "-a", "head=1", *fs)
    assert (read.code, read.out) == (0, "first line\n"), read.err
    wrote = run_in(work, "call", "write_file", "-a", "path=new.txt", "-a", "content=012", *fs)
    assert wrote.code == 0 and (work / "new.txt").read_text() == "012", wrote.err
    tree = run_in(work, "call", "directory_tree", "--args", '{"path": "."}', "--json", *fs)
    assert tree.code == 0, tree.err
    names = {entry["name"] for entry in json.loads(tree.json()["content"][0]["text"])}
    assert names == {"notes.txt", "new.txt"}
    both = run_in(work, "call", "read_multiple_files", "--args", '{"paths": ["notes.txt", "new.txt"]}', *fs)
    assert both.code == 0 and "second line" in both.out and "012" in both.out, both.err
    outside = run_in(work, "call", "read_text_file", "-a", f"path={tmp_path}", *fs)
    assert outside.code == 1 and "Access denied" in outside.err + outside.out, outside.err
    assert "Traceback" not in outside.err and "Internal error" not in outside.err
    # A batch lists the tools once, then gives each flow its own connection (a pre-2026 server): the calls went
    # out at once, before the server had taken the roots in ("Access denied" for every line).
    lines = [{"tool": "read_text_file", "arguments": {"path": "notes.txt", "head": 1}}] * 2
    batch = run_in(work, "batch", *fs, stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert batch.code == 0, batch.out + batch.err
    assert [json.loads(line)["result"]["content"][0]["text"] for line in batch.out.splitlines()] == ["first line"] * 2
    assert run_in(work, "sessions", "list", "--json").json() == []  # answering the roots is no flow to keep
    assert left_running(work) == []


def test_a_tools_only_server_lists_no_prompts_and_refuses_bad_calls_before_sending(
    filesystem: str, tmp_path: Path, worker_on: None
) -> None:
    """Listing prompts used to ask anyway: "The server refused to list prompts: Method not found", exit 4."""
    prompts = run_in(tmp_path, "prompts", "-s", filesystem)
    assert prompts.code == 0 and "no prompts" in prompts.err + prompts.out, prompts.err
    resources = run_in(tmp_path, "resources", "--json", "-s", filesystem, "--no-worker")
    assert resources.code == 0 and resources.json() == {"resources": [], "resourceTemplates": []}, resources.err
    missing = run_in(tmp_path, "call", "read_text_file", "-s", filesystem)
    assert missing.code == 2 and "path" in missing.err
    typed = run_in(tmp_path, "call", "read_text_file", "-a", "path=x", "-a", "head=many", "-s", filesystem)
    assert typed.code == 2 and "head" in typed.err
    unknown = run_in(tmp_path, "call", "read_everything", "-s", filesystem)
    assert unknown.code == 2 and "read_text_file" in unknown.err
    for r in (missing, typed, unknown):
        assert "Traceback" not in r.err and r.out == ""


def test_the_memory_server_keeps_its_graph_between_commands_cold_and_kept_alive_in_the_worker(
    memory: str, filesystem: str, home: Path, tmp_path: Path, worker_on: None
) -> None:
    """Kept alive, a server is one process for every command, whatever their directories: the filesystem server
    used to keep the roots of the first command that reached it (from another directory, "read f.txt" read the
    first directory's f.txt); the next command now tells it the roots changed, and waits for it to ask again."""
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "f.txt").write_text(f"in {folder.name}\n")
    node, main = shlex.split(memory)
    graph = {"MEMORY_FILE_PATH": str(tmp_path / "graph.jsonl")}
    fs_node, fs_main = shlex.split(filesystem)
    _config(
        home,
        {
            "mem": {"command": node, "args": [main], "env": graph},
            "kept": {"command": node, "args": [main], "env": graph, "keep_alive": True},
            "files": {"command": fs_node, "args": [fs_main], "keep_alive": True},
        },
    )
    ada = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}
    created = run_in(one, "call", "create_entities", "--args", json.dumps(ada), "-s", "mem", "--no-worker")
    assert created.code == 0 and '"Ada"' in created.out, created.err
    for how in ("--no-worker", "-v"):
        found = run_in(two, "call", "search_nodes", "-a", "query=program", "--json", "-s", "kept", how)
        assert found.code == 0, found.err
        assert [e["name"] for e in found.json()["structuredContent"]["entities"]] == ["Ada"]
    nested = run_in(one, "call", "create_entities", "--args", '{"entities": [{"name": "Bob"}]}', "-s", "kept")
    assert nested.code == 2 and "entities.0" in nested.err and "--arg entityType" not in nested.err, nested.err
    for folder in (one, two, one):
        read = run_in(folder, "call", "read_text_file", "-a", "path=f.txt", "-s", "files")
        assert (read.code, read.out.rstrip("\n")) == (0, f"in {folder.name}"), read.err
    ps = run_in(ROOT, "worker", "ps")
    assert "kept" in ps.out and "files" in ps.out, ps.err
    # Each runs where the command that started it ran (not in $PWD, which a program's cwd= leaves as it was).
    assert any("server-memory" in line for line in left_running(two)), left_running(tmp_path)
    assert any("server-filesystem" in line for line in left_running(one))
    assert run_in(ROOT, "worker", "stop").code == 0
    assert left_running(one) == [] and left_running(two) == []


def test_the_time_server_on_the_1x_python_sdk_tells_and_converts_times(
    time_server: str, tmp_path: Path, worker_on: None
) -> None:
    info = run_in(tmp_path, "info", "--json", "-s", time_server, "--no-worker")
    assert info.code == 0 and info.json()["protocolVersion"] == "2025-11-25", info.err
    now = run_in(tmp_path, "call", "get_current_time", "-a", "timezone=Europe/Paris", "-s", time_server)
    assert now.code == 0 and json.loads(now.out)["timezone"] == "Europe/Paris", now.err
    converted = run_in(
        tmp_path, "call", "convert_time", "-a", "source_timezone=UTC", "-a", "time=14:30",
        "-a", "target_timezone=Asia/Tokyo", "--json", "-s", time_server,
    )  # fmt: skip
    assert converted.code == 0, converted.err
    assert json.loads(converted.json()["content"][0]["text"])["target"]["datetime"].endswith("T23:30:00+09:00")
    wrong = run_in(tmp_path, "call", "get_current_time", "-a", "timezone=Mars/Olympus", "-s", time_server)
    assert wrong.code == 1 and "Error processing" in wrong.out + wrong.err, wrong.err
    missing = run_in(tmp_path, "call", "get_current_time", "-s", time_server)
    assert missing.code == 2 and "timezone" in missing.err
    # Made to speak 2026-07-28, which it cannot: its refusal is said, not read as "The server has no tools".
    forced = run_in(tmp_path, "tools", "--protocol", "2026-07-28", "-s", time_server)
    assert forced.code == 4 and "refused to list tools" in forced.err, forced.err
    prompts = run_in(tmp_path, "prompts", "-s", time_server)
    assert prompts.code == 0 and "no prompts" in prompts.err, prompts.err
    for r in (info, now, converted, wrong, missing, forced, prompts):
        assert "Traceback" not in r.err and "Internal error" not in r.err
    assert left_running(tmp_path) == []


def test_the_git_server_shows_status_stages_commits_and_logs_in_a_scratch_repository(
    git_server: str, tmp_path: Path, worker_on: None
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=30)
    for key, value in (("user.name", "T"), ("user.email", "t@example.com")):  # the server's env is not ours
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True, timeout=30)
    (repo / "new.txt").write_text("x\n")
    git = ["-s", git_server]
    status = run_in(repo, "call", "git_status", "-a", "repo_path=.", *git)
    assert status.code == 0 and "new.txt" in status.out, status.err
    added = run_in(repo, "call", "git_add", "-a", "repo_path=.", "-a", 'files=["new.txt"]', *git)
    assert added.code == 0, added.err
    message = 'first: with "quotes" and ünïcode'
    committed = run_in(repo, "call", "git_commit", "-a", "repo_path=.", "-a", f"message={message}", *git)
    assert committed.code == 0 and "committed" in committed.out, committed.err
    cold = run_in(repo, "call", "git_log", "-a", "repo_path=.", "-a", "max_count=1", *git, "--no-worker")
    assert cold.code == 0 and message in cold.out, cold.err
    warm = run_in(repo, "call", "git_log", "-a", "repo_path=.", "-a", "max_count=1", "-s", git_server)
    assert (warm.code, warm.out) == (0, cold.out), warm.err
    bad = run_in(repo, "call", "git_show", "-a", "repo_path=.", "-a", "revision=HEAD~5", "-s", git_server)
    assert bad.code == 1 and "HEAD~5" in bad.out + bad.err, bad.err
    typed = run_in(repo, "call", "git_log", "-a", "repo_path=.", "-a", "max_count=many", "-s", git_server)
    assert typed.code == 2 and "max_count" in typed.err and typed.out == ""
    for r in (status, added, committed, cold, warm, bad, typed):
        assert "Traceback" not in r.err and "Internal error" not in r.err
    assert left_running(repo) == []


def test_the_sequential_thinking_server_takes_typed_arguments_whose_schema_allows_two_types(
    thinking: str, tmp_path: Path
) -> None:
    """``nextThoughtNeeded`` is ``"type": ["boolean", "string"]``: checking the arguments used to fail with
    "Internal error: Unexpected TypeError: unhashable type: 'list'" (exit 4) before anything was sent."""
    step = ["-a", "thought=First, the ‮premise", "-a", "thoughtNumber=1", "-a", "totalThoughts=2"]
    r = run_in(tmp_path, "call", "sequentialthinking", *step, "-a", "nextThoughtNeeded=true", "--json", "-s", thinking)
    assert r.code == 0, r.err
    reply = json.loads(r.json()["content"][0]["text"])
    assert (reply["thoughtNumber"], reply["nextThoughtNeeded"]) == (1, True)
    low = run_in(tmp_path, "call", "sequentialthinking", *step[:2], "-a", "thoughtNumber=0", "-a", "totalThoughts=2",
                 "-a", "nextThoughtNeeded=false", "-s", thinking)  # fmt: skip
    assert low.code == 2 and "thoughtNumber" in low.err and low.out == ""
    for done in (r, low):
        assert "Internal error" not in done.err and "running on stdio" not in done.err  # the server's log
    assert left_running(tmp_path) == []


def test_the_everything_servers_prompts_resources_and_typed_tools(
    everything: str, tmp_path: Path, worker_on: None
) -> None:
    e = ["-s", everything]
    prompt = run_in(tmp_path, "prompt", "args-prompt", "-a", "city=Paris", "-a", "state=TX", *e)
    assert prompt.code == 0 and "Paris, TX" in prompt.out, prompt.err
    unnamed = run_in(tmp_path, "prompt", "args-prompt", "-a", "state=TX", *e)
    assert unnamed.code == 2 and "city" in unnamed.err
    read = run_in(tmp_path, "read", "demo://resource/dynamic/text/7", "--json", *e)
    assert read.code == 0 and read.json()["contents"][0]["text"].startswith("Resource 7:"), read.err
    missing = run_in(tmp_path, "read", "demo://resource/static/document/nowhere.md", *e)
    assert missing.code == 4 and "not found" in missing.err and missing.out == ""
    total = run_in(tmp_path, "call", "get-sum", "-a", "a=2", "-a", "b=3.5", *e)
    assert (total.code, total.out) == (0, "The sum of 2 and 3.5 is 5.5.\n"), total.err
    where = run_in(tmp_path, "call", "get-structured-content", "-a", "location=Paris", *e)
    assert where.code == 2 and "Chicago" in where.err
    slow = run_in(tmp_path, "call", "trigger-long-running-operation", "-a", "duration=1", "-a", "steps=2", *e)
    assert slow.code == 0 and "completed" in slow.out, slow.err
    # A command line given with -s runs as a shell would run it: with the caller's environment, warm or cold alike,
    # and never with the worker's own plumbing.
    mine = {"MCPCLI_TEST_VARIABLE": "for the server"}
    warm_env = run_in(tmp_path, "call", "get-env", *e, env=mine)
    cold_env = run_in(tmp_path, "call", "get-env", *e, "--no-worker", env=mine)
    assert warm_env.code == cold_env.code == 0, warm_env.err
    warm_seen, cold_seen = json.loads(warm_env.out), json.loads(cold_env.out)
    assert warm_seen["MCPCLI_TEST_VARIABLE"] == cold_seen["MCPCLI_TEST_VARIABLE"] == "for the server"
    assert "PATH" in warm_seen and "MCPCLI_WORKER_SOCKET" not in warm_seen and "MCPCLI_RELAY_SOCKET" not in warm_seen
    listed = run_in(tmp_path, "tools", *e)  # a table 80 columns wide: the name to copy stays whole, on one line
    assert listed.code == 0 and "trigger-long-running-operation" in listed.out, listed.err
    assert max(len(line) for line in listed.out.splitlines()) <= 80
    for r in (prompt, unnamed, read, missing, total, where, slow, listed):
        assert "Traceback" not in r.err and "Internal error" not in r.err
    assert left_running(tmp_path) == []


def test_the_everything_servers_mid_call_questions_wait_without_input_and_are_answered_through_the_worker(
    everything: str, tmp_path: Path, worker_on: None
) -> None:
    e = ["-s", everything, "--protocol", "legacy"]
    waiting = run_in(tmp_path, "call", "trigger-elicitation-request", "--no-input", "--json", *e)
    assert waiting.code == 3, waiting.err
    doc = waiting.json()
    assert doc["status"] == "input_required" and "elicitation-1.name" in doc["answers_template"]
    answers = ["--answer", "name=Ada", "--answer", "integer=7", "--answer", "untitledMultipleSelectEnum=Piano,Drums"]
    done = run_in(tmp_path, "resume", doc["session_id"][:6], *answers, *e)
    assert done.code == 0 and "- Name: Ada" in done.out and '"Drums"' in done.out, done.err
    out_of_range = run_in(tmp_path, "call", "trigger-elicitation-request", "--answer", "integer=500", "--answer",
                          "name=x", *e)  # fmt: skip
    assert out_of_range.code == 2 and "between 1 and 100" in out_of_range.err
    sampled = run_in(tmp_path, "call", "trigger-sampling-request", "-a", "prompt=hi", "--no-input", *e)
    assert sampled.code == 3 and "--approve-sampling" in sampled.err, sampled.err
    assert "--answer FIELD=VALUE" not in sampled.err  # no --answer answers an LLM completion
    # A link mcpcli would refuse to open at a terminal is not one to say you visited; a lookalike host is flagged.
    link = run_in(tmp_path, "call", "trigger-url-elicitation", "-a", "url=javascript:alert(1)", "--no-input", *e)
    assert link.code == 3 and "Refused: javascript scheme" in link.err, link.err
    assert "--decline elicitation-1" in link.err and "--accept elicitation-1" not in link.err
    assert "--answer FIELD=VALUE" not in link.err
    lookalike = run_in(tmp_path, "call", "trigger-url-elicitation", "-a", "url=https://xn--80ak6aa92e.com/pay",
                       "--no-input", *e)  # fmt: skip
    assert lookalike.code == 3 and "punycode xn--80ak6aa92e.com" in lookalike.err, lookalike.err
    shown = run_in(tmp_path, "sessions", "list", "--json")
    assert sorted((s["name"], s["status"]) for s in shown.json()) == [
        ("trigger-elicitation-request", "done"),
        ("trigger-elicitation-request", "waiting"),  # the one with an answer out of range, to be resumed
        ("trigger-sampling-request", "waiting"),
        ("trigger-url-elicitation", "waiting"),
        ("trigger-url-elicitation", "waiting"),
    ]
    assert left_running(tmp_path) == []


def test_the_fetch_servers_page_text_reaches_the_terminal_with_its_escapes_made_visible(
    fetch_server: str, web_page: str, tmp_path: Path, worker_on: None
) -> None:
    page = run_in(tmp_path, "call", "fetch", "-a", f"url={web_page}", "-s", fetch_server)
    assert page.code == 0 and "Hello" in page.out and "world" in page.out, page.err
    assert "\x1b" not in page.out and "\u202e" not in page.out  # made visible, not obeyed
    assert "\\x1b[31m" in page.out and "\\u202e" in page.out
    whole = run_in(tmp_path, "call", "fetch", "-a", f"url={web_page}", "-a", "raw=true", "--json", "-s", fetch_server)
    assert whole.code == 0 and "\x1b]0;pwned\x07" in whole.json()["content"][0]["text"]  # --json: as sent
    refused = run_in(tmp_path, "call", "fetch", "-a", f"url={web_page}", "-s", _pypi_server(*FETCH), "--no-worker")
    assert refused.code == 1 and "not a public address" in refused.out + refused.err, refused.err
    assert left_running(tmp_path) == []


# --- a Rust server (rmcp) ---------------------------------------------------------------------------------------------

CORTEX = "@temporal-cortex/cortex-mcp-linux-x64@0.9.1"
"""Temporal Cortex (Rust, rmcp 1.1.1; 2025-06-18), a prebuilt binary on npm: it ends its process when the first
message is not ``initialize``, so ``auto`` must start it again with the handshake."""


@pytest.fixture(scope="session")
def cortex() -> str:
    """The path of the rmcp server's binary, ``npm pack``ed once into the cache (no install scripts run)."""
    import platform
    import tarfile

    if not shutil.which("npm"):
        _unavailable("needs npm")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the pinned rmcp server is a linux-x64 binary")
    folder = _cache() / "cortex"
    binary = folder / "package" / "bin" / "cortex-mcp"
    if not binary.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "pack", "--silent", CORTEX], capture_output=True, text=True, timeout=300, cwd=folder
        )
        packed = folder / done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else None
        if packed is None or not packed.is_file():
            _unavailable(f"npm pack {CORTEX} failed: {done.stderr[-500:]}")
        with tarfile.open(packed) as tar:
            tar.extractall(folder, filter="data")
        binary.chmod(0o755)
    return str(binary)


def _sdk_listing(command: str, env: dict[str, str]) -> dict[str, Any]:
    """What the SDK's own client lists (tools, prompts, resources), over the handshake it speaks to rmcp."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def listed() -> dict[str, Any]:
        params = StdioServerParameters(command=command, env=env)
        async with Client(params, mode="legacy") as client:
            return {
                "tools": [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for t in (await client.list_tools()).tools
                ],
                "prompts": [p.name for p in (await client.list_prompts()).prompts],
                "resources": [r.uri for r in (await client.list_resources()).resources],
            }

    return anyio.run(listed)


def test_the_rust_servers_first_run_restarts_it_with_the_handshake_and_the_second_goes_straight_there(
    cortex: str, tmp_path: Path, home: Path
) -> None:
    env = {"HOME": str(tmp_path)}  # it writes its settings under ~/.config
    first = run_in(tmp_path, "info", "--json", "-s", cortex, env=env)
    assert first.code == 0, first.err
    assert first.json()["server"]["name"] == "temporal-cortex-mcp"
    assert "did not survive the 2026-07-28 probe" in first.err and len(first.err.strip().splitlines()) == 1
    second = run_in(tmp_path, "info", "--json", "-s", cortex, env=env)
    assert (second.code, second.err) == (0, ""), second.err
    assert "legacy" in (home / "cache" / "handshakes.json").read_text()
    sdk = _sdk_listing(cortex, env)
    tools = run_in(tmp_path, "tools", "--json", "-s", cortex, env=env)
    assert tools.code == 0 and tools.json()["tools"] == sdk["tools"], tools.err
    prompts = run_in(tmp_path, "prompts", "--json", "-s", cortex, env=env)
    assert [p["name"] for p in prompts.json()["prompts"]] == sdk["prompts"]
    resources = run_in(tmp_path, "resources", "--json", "-s", cortex, env=env)
    assert [r["uri"] for r in resources.json()["resources"]] == sdk["resources"]
    listed = run_in(tmp_path, "tools", "-s", cortex, env={**env, "COLUMNS": "200"})
    assert "timezone?: string" in listed.out and "'null'" not in listed.out  # schemars' ["string", "null"]
    assert left_running(tmp_path) == []


def test_the_rust_server_calls_prompts_reads_and_refuses_bad_input_cold_and_warm(
    cortex: str, tmp_path: Path, worker_on: None
) -> None:
    env = {"HOME": str(tmp_path)}
    for how in ("--no-worker", "-v"):  # cold, then through the worker; each time the first command meets the probe
        (Path(os.environ["MCPCLI_HOME"]) / "cache" / "handshakes.json").unlink(missing_ok=True)
        c = ["-s", cortex, how]
        tokyo = run_in(
            tmp_path, "call", "convert_timezone", "-a", "datetime=2026-03-01T12:00:00Z",
            "-a", "target_timezone=Asia/Tokyo", *c, env=env,
        )  # fmt: skip
        assert tokyo.code == 0, tokyo.err
        assert json.loads(tokyo.out)["local"] == "2026-03-01T21:00:00+09:00"
        assert "did not survive" in tokyo.err
        prompt = run_in(tmp_path, "prompt", "convert_time", "-a", "time=noon", "-a", "target_timezone=UTC", *c, env=env)
        assert prompt.code == 0 and "Convert 'noon' to UTC" in prompt.out, prompt.err
        read = run_in(tmp_path, "read", "cortex://docs/rrule-reference", *c, env=env)
        assert read.code == 0 and "RRULE" in read.out, read.err
        wrong = run_in(
            tmp_path, "call", "convert_timezone", "-a", "datetime=soon", "-a", "target_timezone=UTC", *c, env=env
        )
        assert wrong.code == 1 and "Invalid datetime" in wrong.out, wrong.err
        missing = run_in(tmp_path, "call", "convert_timezone", "-a", "datetime=x", *c, env=env)
        assert missing.code == 2 and "target_timezone" in missing.err
        nowhere = run_in(tmp_path, "read", "cortex://nope", *c, env=env)
        assert nowhere.code == 4 and "resource not found" in nowhere.err
        for r in (tokyo, prompt, read, wrong, missing, nowhere):
            assert "Traceback" not in r.err and "Internal error" not in r.err
    assert left_running(tmp_path) == []


def test_the_rust_server_over_streamable_http_in_auto_mode(cortex: str, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "HTTP_PORT": str(port)}
    server = subprocess.Popen(
        [cortex], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        info = run_in(tmp_path, "info", "--json", "-s", url)
        assert info.code == 0 and info.json()["server"]["name"] == "temporal-cortex-mcp", info.err
        called = run_in(
            tmp_path,
            "call",
            "compute_duration",
            "-a",
            "start=2026-01-01T00:00:00Z",
            "-a",
            "end=2026-01-02T01:00:00Z",
            "-s",
            url,
        )
        assert called.code == 0 and json.loads(called.out)["total_seconds"] == 90000, called.err
        assert "did not survive" not in info.err + called.err  # HTTP: the probe's error already fell back
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- a C# server (the official C# SDK) --------------------------------------------------------------------------------

AZURE = "@azure/mcp-linux-x64@2.0.5"
"""Azure MCP Server 2.0.5: C#, on the official C# SDK (ModelContextProtocol), 2025-11-25; a self-contained binary on
npm. Its best-practice tools answer without an Azure account."""


@pytest.fixture(scope="session")
def azure() -> str:
    """A ``-s`` command line for the C# server, ``npm pack``ed once into the cache (no install scripts run)."""
    import platform
    import tarfile

    if not shutil.which("npm"):
        _unavailable("needs npm")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the pinned C# server is a linux-x64 binary")
    folder = _cache() / "azure"
    binary = folder / "package" / "dist" / "azmcp"
    if not binary.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "pack", "--silent", AZURE], capture_output=True, text=True, timeout=600, cwd=folder
        )
        packed = folder / done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else None
        if packed is None or not packed.is_file():
            _unavailable(f"npm pack {AZURE} failed: {done.stderr[-500:]}")
        with tarfile.open(packed) as tar:
            tar.extractall(folder, filter="data")
        binary.chmod(0o755)
    return shlex.join([str(binary), "server", "start"])


def test_the_csharp_server_is_discovered_like_the_sdk_client_does_and_answers_without_an_account(
    azure: str, tmp_path: Path
) -> None:
    env = {"HOME": str(tmp_path), "AZURE_MCP_COLLECT_TELEMETRY": "false"}
    info = run_in(tmp_path, "info", "--json", "-s", azure, env=env, timeout=120)
    assert info.code == 0, info.err
    assert (info.json()["server"]["name"], info.json()["protocolVersion"]) == ("Azure MCP Server", "2025-11-25")
    command, *args = shlex.split(azure)
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def sdk_tools() -> list[dict[str, Any]]:
        async with Client(StdioServerParameters(command=command, args=args, env=env), mode="legacy") as client:
            return [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools
            ]

    tools = run_in(tmp_path, "tools", "--json", "-s", azure, env=env, timeout=120)
    assert tools.code == 0 and tools.json()["tools"] == anyio.run(sdk_tools), tools.err
    ask = ["-a", "intent=terraform", "-a", "command=azureterraformbestpractices_get", "-a", "parameters={}"]
    practices = run_in(tmp_path, "call", "azureterraformbestpractices", *ask, "-s", azure, env=env, timeout=120)
    assert practices.code == 0 and "Terraform" in practices.out, practices.err
    missing = run_in(tmp_path, "call", "azureterraformbestpractices", "-s", azure, env=env, timeout=120)
    assert missing.code == 2 and "intent" in missing.err
    for r in (info, tools, practices, missing):
        assert "Traceback" not in r.err and "Internal error" not in r.err
    assert left_running(tmp_path) == []


def test_a_watch_of_the_everything_server_gets_the_updates_another_command_turned_on(
    everything: str, worker_on: Any
) -> None:
    """The reference TypeScript server (2025-11-25) sends resource updates to a session that subscribed, once a
    tool of the same session turned them on: the watch and the call share the kept-alive server (one session),
    and the updates go to the watch."""
    uri = "demo://resource/static/document/architecture.md"
    argv = [PY, "-m", "mcpcli", "watch", uri, "--read", "--json", "--count", "2", "--keep-alive", "-s", everything]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        said = [proc.stderr.readline() for _ in range(1)]
        assert "resources/subscribe" in said[0], said
        turned_on = run_process("call", "toggle-subscriber-updates", "--keep-alive", "-s", everything)
        assert turned_on.code == 0, turned_on.err
        assert "Started simulated resource updated notifications" in turned_on.out
        updates = [json.loads(line) for line in proc.stdout]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [u["uri"] for u in updates] == [uri, uri]
    assert "architecture" in updates[0]["result"]["contents"][0]["text"].lower()


# --- the official MCP Apps examples (npm), each in a real browser -----------------------------------------------------


def _view_text(page: Any) -> str:
    """The rendered text of the view (inside the host page's sandbox proxy), or "" while it is not there yet."""
    try:
        return str(page.frame_locator("section.view iframe").frame_locator("iframe").locator("body").inner_text())
    except Exception:  # boundary: the frames are still loading
        return ""


def _app_messages(trace: Path, direction: str) -> list[dict[str, Any]]:
    """The view's messages one way (``to-view``/``from-view``) as mcpcli's ``--trace`` recorded them, in order."""
    lines = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [e["message"] for e in lines if e.get("event") == "app" and e.get("direction") == direction]


@pytest.mark.parametrize("app", npm_apps.APPS, ids=[app.name for app in npm_apps.APPS])
def test_each_official_example_apps_view_initializes_in_the_browser_and_gets_the_tool_result(
    app: npm_apps.NpmApp, browser_context: Any, tmp_path: Path
) -> None:
    """``mcpcli call TOOL --app`` on the pinned ``@modelcontextprotocol/server-*`` examples (TypeScript SDK 2.0,
    ext-apps ``App``; 2025-11-25): the view says ``ui/initialize`` to mcpcli, gets the tool's input and then its
    result (after ``initialized``, as the spec orders), renders what only that result shows, and its own calls —
    system-monitor's polling and debug's logging go to app-only tools — reach the server, none refused. Closing the
    page ends the run with exit 0."""
    trace = tmp_path / "trace.ndjson"
    args = ["call", app.tool, "--args", json.dumps(app.arguments), "--trace", str(trace)]
    run = AppRun([*args, "--no-input", "--app", "--no-browser", "--json", "-s", npm_apps.command(app)], {})
    try:
        page = browser_context.new_page()
        page.goto(run.url())
        assert wait_until(lambda: run.events("app-initialized"), 20), (run.lines, run.err)
        assert run.events("app-initialize")
        assert wait_until(lambda: all(s in _view_text(page) for s in app.shows), 15), _view_text(page)
        result = next(line for line in run.lines if "event" not in line)  # the call's result, printed once
        assert result.get("isError") is not True, result
        if app.shows_result:
            assert wait_until(lambda: result["content"][0]["text"] in _view_text(page), 10), _view_text(page)
        asked = set(app.app_calls)  # system-monitor polls every 2 s: its first poll comes within one period
        assert wait_until(lambda: asked <= {e["tool"] for e in run.events("app-tool-call")}, 10), run.lines
        if app.name == "debug":  # it shows what the host said of itself at ui/initialize
            assert "mcpcli v" in _view_text(page) and "Display Mode" in _view_text(page)
        assert run.events("app-refused") == []
        # Each view probes eval (zod's allowsEval) and is refused it by the spec's CSP; nothing else is blocked.
        assert [e["blocked"] for e in run.events("app-csp-violation")] in ([], ["eval"])
        page.close()
        assert run.wait(15) == 0, run.err
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait(10)
    sent = _app_messages(trace, "to-view")
    methods = [m.get("method") for m in sent if "method" in m]
    assert methods[:2] == ["ui/notifications/tool-input", "ui/notifications/tool-result"], methods
    delivered = next(m for m in sent if m.get("method") == "ui/notifications/tool-result")
    assert delivered["params"]["content"] == result["content"]  # the result the view got is the one printed
    assert sent[0].get("result", {}).get("protocolVersion") == "2026-01-26"  # the answer to ui/initialize came first
    heard = [m.get("method") for m in _app_messages(trace, "from-view")]
    assert heard.index("ui/notifications/initialized") > heard.index("ui/initialize")
