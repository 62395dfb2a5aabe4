"""Bounded by default: hostile raw servers (tests/hostile.py) over stdio and HTTP on 127.0.0.1,
and SDK servers, against a real ``mcpcli`` process. Nothing hangs, nothing is read without bound, long server text
is cut on a terminal, and what each server negotiated is remembered."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import PY, ROOT, stdio_server

from mcpcli.net.serverlog import failure_lines

HOSTILE = Path(__file__).resolve().parent / "hostile.py"


def hostile(kind: str, *extra: str) -> str:
    return shlex.join([PY, str(HOSTILE), kind, *extra])


def timed(process: Any, *args: str, env: dict[str, str] | None = None) -> tuple[Any, float]:
    start = time.monotonic()
    result = process(*args, env=env)
    return result, time.monotonic() - start


# --- the handshake ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["silent", "junk"])
def test_a_stdio_server_that_never_answers_the_handshake_exits_4_within_the_connect_timeout(
    process: Any, kind: str
) -> None:
    r, took = timed(process, "tools", "-s", hostile(kind), env={"MCPCLI_CONNECT_TIMEOUT": "1.5"})
    assert r.code == 4, r.err
    assert "did not answer the handshake within 1.5 s" in r.err
    assert "MCPCLI_CONNECT_TIMEOUT" in r.err and "Traceback" not in r.err
    # Python start-up and the server's own start are in it too; the SDK alone would wait forever (or 10 s + ∞).
    assert took < 12, took


def test_the_connect_timeout_comes_from_the_config_file_too(process: Any, home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text("[limits]\nconnect_timeout = 1\n")
    r = process("tools", "-s", hostile("silent"))
    assert r.code == 4, r.err
    assert "within 1 s" in r.err


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_limit_in_the_environment_is_a_usage_error(process: Any, value: str) -> None:
    r = process("tools", "-s", "demo", env={"MCPCLI_IDLE_TIMEOUT": value})
    assert r.code == 2, r.err
    assert "MCPCLI_IDLE_TIMEOUT" in r.err


# --- the size of one message -----------------------------------------------------------------------------------------


def test_a_stdio_message_over_the_limit_is_not_read_and_exits_4_naming_the_setting(process: Any) -> None:
    r = process("call", "work", "-s", hostile("huge", "--size", str(3 * 2**20)), env={"MCPCLI_MAX_MESSAGE_MB": "1"})
    assert r.code == 4, r.err
    assert "more than 1.0 MiB, over the 1.0 MiB limit" in r.err
    assert "max_message_mb" in r.err and "MCPCLI_MAX_MESSAGE_MB" in r.err
    assert r.out == ""


def test_a_stdio_message_under_the_limit_arrives_whole(process: Any) -> None:
    r = process("call", "work", "-s", hostile("huge", "--size", str(2**20)), env={"MCPCLI_MAX_MESSAGE_MB": "2"})
    assert r.code == 0, r.err
    assert r.out == "x" * 2**20 + "\n"


def test_an_http_json_body_over_the_limit_is_not_read_and_exits_4(process: Any, hostile_http: Any) -> None:
    server = hostile_http("huge", "--size", str(3 * 2**20))
    r = process("call", "work", "-s", server.url, env={"MCPCLI_MAX_MESSAGE_MB": "1"})
    assert r.code == 4, r.err
    assert "over the 1.0 MiB limit" in r.err and "MCPCLI_MAX_MESSAGE_MB" in r.err


def test_an_http_json_body_under_the_limit_arrives_whole(process: Any, hostile_http: Any) -> None:
    server = hostile_http("huge", "--size", "300000")
    r = process("call", "work", "-s", server.url, "--json", env={"MCPCLI_MAX_MESSAGE_MB": "1"})
    assert r.code == 0, r.err
    assert r.json()["content"][0]["text"] == "x" * 300000


# --- idle streams ----------------------------------------------------------------------------------------------------


def test_an_sse_stream_of_keep_alive_comments_ends_at_the_idle_timeout(process: Any, hostile_http: Any) -> None:
    server = hostile_http("keepalive")
    r, took = timed(process, "call", "work", "-s", server.url, env={"MCPCLI_IDLE_TIMEOUT": "2"})
    assert r.code == 4, r.err
    assert "sent nothing for 2 s" in r.err and "MCPCLI_IDLE_TIMEOUT" in r.err
    assert took < 30, took


# --- stopping a stdio server -----------------------------------------------------------------------------------------


def test_the_result_is_printed_at_once_and_a_server_that_ignores_its_stdin_closing_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    argv = [PY, "-m", "mcpcli", "call", "work", "-s", hostile("stubborn", "--size", "5", "--pid-file", str(pid_file))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = time.monotonic()
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    exited = time.monotonic()
    assert line == b"xxxxx\n"
    # The SDK's stdio transport gives a server 2 s after its stdin closes before terminating it.
    assert exited - printed < 1.5, exited - printed
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# --- long server text ------------------------------------------------------------------------------------------------


def test_a_huge_error_message_is_cut_on_a_terminal_and_whole_in_a_pipe(process: Any) -> None:
    target = hostile("big_error", "--size", "200000")
    piped = process("call", "work", "-s", target)
    assert piped.code == 4
    assert "E" * 200000 in piped.err
    child = pexpect.spawn(
        PY, ["-m", "mcpcli", "call", "work", "-s", target], cwd=str(ROOT), env=dict(os.environ), timeout=60
    )
    child.setwinsize(40, 120)
    seen = child.read().decode()
    child.close()
    assert child.exitstatus == 4
    assert "[cut: 4,000 of" in seen and "--json" in seen
    assert seen.count("E") < 10000


def test_a_long_result_is_cut_on_a_terminal_with_how_to_see_all(tmp_path: Path) -> None:
    target = hostile("huge", "--size", "100000")
    child = pexpect.spawn(
        PY, ["-m", "mcpcli", "call", "work", "-s", target], cwd=str(ROOT), env=dict(os.environ), timeout=60
    )
    child.setwinsize(40, 120)
    seen = child.read().decode()
    child.close()
    assert child.exitstatus == 0
    assert "--json" in seen and "cut: 4,000 of 100,001 characters" in seen
    assert seen.count("x") < 10000


# --- shape drift and spec defaults -----------------------------------------------------------------------------------


def test_a_listing_the_sdk_rejects_sends_arg_values_untyped_with_a_note(process: Any) -> None:
    r = process("call", "work", "-a", "n=012", "-s", hostile("drift"))
    assert r.code == 0, r.err
    assert r.out == 'arguments: {"n": "012"}\n'
    assert "tool listing could not be read" in r.err and "as strings" in r.err
    listing = process("tools", "-s", hostile("drift"))
    assert listing.code == 4
    assert "listing is malformed" in listing.err and "Traceback" not in listing.err


def test_a_listing_without_cache_hints_is_read_and_types_the_arguments(process: Any) -> None:
    r = process("call", "work", "-a", "n=12", "-s", hostile("no_cache_hints"))
    assert r.code == 0, r.err
    assert r.out == 'arguments: {"n": 12}\n'
    assert process("tools", "-s", hostile("no_cache_hints")).code == 0


# --- exit codes ------------------------------------------------------------------------------------------------------


def test_url_elicitation_required_shows_each_url_with_its_warnings_and_exits_4(process: Any) -> None:
    r = process("call", "work", "-s", hostile("url_required"))
    assert r.code == 4, r.err
    assert "https://auth.example.com/start?x=1" in r.err
    assert "http://xn--pple-43d.example/pay" in r.err
    assert "not encrypted" in r.err and "punycode" in r.err
    assert "(code -32042)" in r.err


def test_a_bad_answer_to_a_pre_2026_question_exits_2_as_on_2026(process: Any) -> None:
    r = process("call", "ask", "--answer", "n=abc", "--protocol", "legacy", "-s", stdio_server("calls_back"))
    assert r.code == 2, r.err
    assert "must be an integer" in r.err


def test_a_server_that_calls_back_on_2026_is_called_again_over_the_handshake(process: Any) -> None:
    target = stdio_server("calls_back")
    first = process("call", "ask", "--answer", "n=7", "-s", target)
    assert first.code == 0, first.err
    assert first.out == "got accept 7\n"
    assert "--protocol legacy" in first.err
    second = process("call", "ask", "--answer", "n=8", "-s", target)
    assert second.code == 0 and second.out == "got accept 8\n"
    assert "back-channel" not in second.err  # remembered: straight to the handshake


# --- remembering the handshake ---------------------------------------------------------------------------------------


def test_a_pre_2026_server_gets_the_handshake_straight_away_the_second_time(process: Any, home: Path) -> None:
    record = home.parent / "methods.txt"
    target = hostile("legacy", "--record", str(record))
    assert process("call", "work", "-a", "n=1", "-s", target).code == 0
    assert record.read_text().splitlines()[:2] == ["server/discover", "initialize"]
    cache = home / "cache" / "handshakes.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    record.unlink()
    r = process("call", "work", "-a", "n=2", "-s", target)
    assert r.code == 0, r.err
    assert r.out == 'arguments: {"n": 2}\n'
    assert record.read_text().splitlines()[0] == "initialize"


def test_a_server_that_changed_since_is_asked_afresh(process: Any, home: Path) -> None:
    target = hostile("no_cache_hints")
    from mcpcli.net.handshakes import remember, remembered
    from mcpcli.settings.config import Paths, Settings
    from mcpcli.settings.targets import resolve_target

    paths = Paths(home, home)
    resolved, _ = resolve_target(target, Settings())
    remember(paths, resolved, legacy=True)  # as if it had spoken the handshake last time
    r = process("call", "work", "-a", "n=3", "-s", target)
    assert r.code == 0, r.err
    assert r.out == 'arguments: {"n": 3}\n'
    assert remembered(paths, resolved) is None
    assert json.loads((home / "cache" / "handshakes.json").read_text()) == {}


def test_an_explicit_protocol_is_never_overridden_by_what_was_remembered(process: Any, home: Path) -> None:
    record = home.parent / "methods.txt"
    target = hostile("legacy", "--record", str(record))
    assert process("call", "work", "-s", target).code == 0
    record.unlink()
    process("call", "work", "-s", target, "--protocol", "2026-07-28")
    assert "initialize" not in record.read_text().splitlines()
    assert "legacy" in (home / "cache" / "handshakes.json").read_text()  # an explicit choice teaches nothing


def test_a_listing_refused_at_a_protocol_asked_for_by_name_suggests_an_older_one(process: Any) -> None:
    r = process("tools", "-s", hostile("legacy"), "--protocol", "2026-07-28")
    assert r.code == 4
    assert "try --protocol auto (or legacy)" in r.err
    assert "try --protocol" not in process("tools", "-s", hostile("drift")).err  # not asked for: no such hint


NODE_MISSING_MODULE = """node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module '/srv/server.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
"""


def test_a_server_that_fails_to_start_is_quoted_by_its_error_not_its_stack() -> None:
    shown = failure_lines(NODE_MISSING_MODULE).splitlines()
    assert "Error: Cannot find module '/srv/server.js'" in shown
    assert not any(line.lstrip().startswith("at ") for line in shown)
    chatty = "Error: the first thing that went wrong\n" + "".join(f"line {n}\n" for n in range(20))
    assert failure_lines(chatty).splitlines() == ["Error: the first thing that went wrong"] + [
        f"line {n}" for n in range(12, 20)
    ]


def test_a_server_that_wrote_megabytes_before_failing_is_read_only_at_its_end(process: Any, tmp_path: Path) -> None:
    script = tmp_path / "loud.py"
    script.write_text("import sys\nsys.stderr.write('noise\\n' * 3_000_000)\nsys.stderr.write('fatal: no config\\n')\n")
    r = process("tools", "-s", f"{PY} {script}")
    assert r.code == 4 and "fatal: no config" in r.err
    assert r.err.count("noise") <= 8


@pytest.mark.parametrize(("status", "said"), [(502, "(HTTP 502 Bad Gateway)"), (404, "HTTP 404 Not Found")])
def test_an_http_error_status_is_named_where_the_sdk_says_only_error_response(
    process: Any, status: int, said: str
) -> None:
    import http.server
    import threading

    class Gateway(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = process("tools", "-s", f"http://127.0.0.1:{server.server_address[1]}/mcp")
    finally:
        server.shutdown()
    assert r.code == 4 and said in r.err.splitlines()[0], r.err
