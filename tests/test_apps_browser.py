"""``mcpcli call TOOL --app`` in a real browser (Debian's Chromium, driven by Playwright): mcpcli runs as a real
process with ``--no-browser --json``; the test opens the URL it prints, as a user would, and reads the test view
(tests/app_view.py) inside the host page's sandbox proxy. The view renders on the tool's input and result; its
``tools/call`` reaches the server through mcpcli's own loop (a multi-round one answered by ``--answer``, the view
seeing only the final result, ``requestState`` echoed exactly); the visibility guard sends nothing; teardown reaches
the view within 3 s of Ctrl-C; ``resume --app`` reopens a waiting flow's view."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, wait_until

pytest_plugins = ["browser"]

APPS = shlex.join([PY, str(ROOT / "tests" / "app_servers.py"), "apps"])


class AppRun:
    """One ``mcpcli … --app --no-browser --json`` process: its JSON Lines as they come, its stderr at the end."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "mcpcli", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        self.lines: list[dict[str, Any]] = []
        self.err = ""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.lines.append(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err += line

    def url(self) -> str:
        assert wait_until(lambda: self.lines or self.proc.poll() is not None, 30), "no app-url line"
        assert self.lines, f"mcpcli ended ({self.proc.returncode}) without a URL: {self.err}"
        first = self.lines[0]
        assert first["event"] == "app-url", first
        return str(first["url"])

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("event") == name]

    def wait(self, timeout: float = 30) -> int:
        return self.proc.wait(timeout)


@contextmanager
def app_run(*args: str, env: dict[str, str] | None = None) -> Iterator[AppRun]:
    run = AppRun([*args, "--no-input", "--app", "--no-browser", "--json", "-s", APPS], env or {})
    try:
        yield run
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait(10)


def _view(page: Any) -> Any:
    return page.frame_locator("section.view iframe").frame_locator("iframe")


def _json_of(view: Any, selector: str) -> Any:
    element = view.locator(selector)
    element.wait_for(state="attached")
    assert wait_until(lambda: element.inner_text().strip() != "", 15), f"{selector} stayed empty"
    return json.loads(element.inner_text())


def _record(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_the_view_renders_on_the_tools_input_and_gets_its_result(browser_context: Any, tmp_path: Path) -> None:
    with app_run("call", "dashboard", "-a", "name=Ada") as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        context = _json_of(view, "#init")
        assert context["toolInfo"]["tool"]["name"] == "dashboard"
        assert context["displayMode"] == "inline"
        assert _json_of(view, "#tool-input") == {"arguments": {"name": "Ada"}}
        result = _json_of(view, "#tool-result")
        assert result["structuredContent"]["greeting"] == "Hello, Ada!"
        received = [json.loads(line) for line in view.locator("#log").inner_text().splitlines() if line.strip()]
        assert "result" in received[0] and "hostContext" in received[0]["result"]  # nothing before its answer
        methods = [m.get("method") for m in received]
        assert methods.index("ui/notifications/tool-input") < methods.index("ui/notifications/tool-result")
        init = _json_of(view, "#init-result")
        assert init["protocolVersion"] == "2026-01-26"
        assert init["hostInfo"]["name"] == "mcpcli"
        # the result is printed too, once, and the process lasts while the page is open
        assert any(line.get("structuredContent", {}).get("greeting") == "Hello, Ada!" for line in run.lines)
        assert run.proc.poll() is None
        page.close()
        assert run.wait(15) == 0, run.err
        assert run.events("app-note")  # "The app's page was closed."


def test_a_multi_round_call_from_the_view_is_answered_by_answer_and_the_view_sees_only_the_result(
    browser_context: Any, tmp_path: Path
) -> None:
    record = tmp_path / "record.ndjson"
    env = {"MCPCLI_TEST_APP_RECORD": str(record)}
    with app_run(
        "call", "dashboard", "-a", "name=x", "--answer", "region=eu-west", "--answer", "confirm=true", env=env
    ) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        view.locator("#call-provision").click()
        result = _json_of(view, "#provision-result")
        assert result["structuredContent"]["region"] == "eu-west"
        assert result["structuredContent"]["echoedExactly"] is True
        received = [json.loads(line) for line in view.locator("#log").inner_text().splitlines() if line.strip()]
        assert not any("inputRequests" in json.dumps(m) for m in received)  # no round reached the view
        calls = [r for r in _record(record) if r["method"] == "tools/call" and r["name"] == "provision_app"]
        assert len(calls) == 2  # the first leg and the retry with the answers: one round, sent once
        assert calls[1]["requestState"] is not None
        tool_calls = run.events("app-tool-call")
        assert tool_calls and tool_calls[0]["tool"] == "provision_app"
        page.close()
        assert run.wait(15) == 0, run.err


def test_the_visibility_guard_refuses_a_model_only_tool_before_any_server_traffic(
    browser_context: Any, tmp_path: Path
) -> None:
    record = tmp_path / "record.ndjson"
    with app_run("call", "dashboard", "-a", "name=x", env={"MCPCLI_TEST_APP_RECORD": str(record)}) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        view.locator("#call-model-only").click()
        error = _json_of(view, "#model-only-error")
        assert "not available to apps" in error["message"]
        assert view.locator("#model-only-result").inner_text().strip() == ""
        assert not [r for r in _record(record) if r.get("name") == "model_only"]  # nothing sent
        assert wait_until(lambda: run.events("app-refused"), 10)
        page.close()
        run.wait(15)


def test_the_view_reads_resources_and_its_messages_context_and_logs_reach_the_reader(browser_context: Any) -> None:
    with app_run("call", "dashboard", "-a", "name=x") as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        view.locator("#read").click()
        assert "readme of the apps server" in json.dumps(_json_of(view, "#read-result"))
        view.locator("#message").click()
        assert _json_of(view, "#message-result") == {"result": {}}
        view.locator("#context").click()
        assert _json_of(view, "#context-result") == {"result": {}}
        view.locator("#log-msg").click()
        view.locator("#open-link").click()
        assert "denied" in json.dumps(_json_of(view, "#open-link-result")).lower()  # nobody at the terminal to ask
        view.locator("#fullscreen").click()
        assert wait_until(lambda: view.locator("#mode").inner_text().strip() == "fullscreen", 10)
        assert wait_until(lambda: run.events("app-log"), 10)
        message = run.events("app-message")[0]
        assert message["content"]["text"] == "hello from the view"
        assert run.events("app-model-context")[0]["structuredContent"] == {"picked": 42}
        assert run.events("app-open-link")[0]["opened"] is False
        page.close()
        run.wait(15)


def test_teardown_reaches_the_view_within_3_s_of_ctrl_c_and_the_exit_is_130(browser_context: Any) -> None:
    with app_run("call", "dashboard", "-a", "name=x") as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        started = time.monotonic()
        run.proc.send_signal(signal.SIGINT)
        assert run.wait(10) == 130
        assert time.monotonic() - started < 3.0
        teardown = run.events("app-teardown")
        assert teardown and teardown[0]["answered"] is True  # the view got it, and answered before mcpcli left
        assert wait_until(lambda: "mcpcli stopped" in page.inner_text("body"), 5)  # the page says so


def test_for_seconds_ends_the_run_with_teardown_and_exit_0(browser_context: Any) -> None:
    with app_run("call", "dashboard", "-a", "name=x", "--for", "4") as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        assert run.wait(15) == 0, run.err
        assert run.events("app-teardown")[0]["answered"] is True


def test_a_declined_launching_call_reaches_the_view_as_cancelled(browser_context: Any) -> None:
    with app_run("call", "declinable", "-a", "name=x", "--decline", "go", "--for", "6") as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        cancelled = _json_of(view, "#tool-cancelled")
        assert cancelled["reason"]
        assert view.locator("#tool-result").inner_text().strip() == ""
        assert run.wait(15) != 0


def test_resume_app_reopens_the_view_of_a_waiting_flow(browser_context: Any, tmp_path: Path) -> None:
    key = {"MCPCLI_TEST_APP_KEY": "k" * 32}  # the server seals its state with it: a new process accepts it
    parked = subprocess.run(
        [PY, "-m", "mcpcli", "call", "needs_input_first", "-a", "name=x", "--no-input", "--json", "-s", APPS],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **key},
    )
    assert parked.returncode == 3, parked.stderr
    session = json.loads(parked.stdout)["session_id"]
    run = AppRun(["resume", session, "--answer", "color=green", "--app", "--no-browser", "--json"], key)
    try:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        assert _json_of(view, "#tool-input") == {"arguments": {"name": "x"}}
        assert _json_of(view, "#tool-result")["structuredContent"] == {"name": "x", "color": "green"}
        page.close()
        assert run.wait(15) == 0, run.err
    finally:
        if run.proc.poll() is None:
            run.proc.kill()


def _trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_message_between_view_and_host_and_the_csp_in_force_are_in_the_trace_and_the_session(
    browser_context: Any, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.ndjson"
    args = ("call", "needs_input_first", "-a", "name=t", "--answer", "color=red", "--trace", str(trace), "--for", "4")
    with app_run(*args) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        view.locator("#message").click()
        _json_of(view, "#message-result")
        assert run.wait(15) == 0, run.err  # --for: the view is told to close, and answers
    lines = _trace(trace)
    shown = next(line for line in lines if line.get("event") == "app-view")
    assert shown["uri"] == "ui://apps/dashboard"
    assert shown["csp"].startswith("default-src 'none'; script-src 'self' 'unsafe-inline';")
    app = [line for line in lines if line.get("event") == "app"]
    said = {(line["direction"], line["message"].get("method")) for line in app}
    assert ("from-view", "ui/initialize") in said
    assert ("from-view", "ui/message") in said
    assert ("to-view", "ui/notifications/tool-result") in said
    assert ("to-view", "ui/resource-teardown") in said
    # the session keeps the same lines (its stored trace), the view's last messages included
    session = next(line["session"] for line in lines if line.get("event") == "round")
    stored = subprocess.run(
        [PY, "-m", "mcpcli", "sessions", "show", session, "--trace", "--json"], capture_output=True, text=True
    )
    kept = json.loads(stored.stdout)
    kept_lines = kept if isinstance(kept, list) else kept.get("trace", [])
    kept_text = json.dumps(kept_lines)
    assert "app-view" in kept_text and "ui/resource-teardown" in kept_text


def test_a_recorded_app_run_is_served_again_by_mock(browser_context: Any, tmp_path: Path) -> None:
    recording = tmp_path / "app.ndjson"
    with app_run("call", "dashboard", "-a", "name=rec", "--record", str(recording)) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        _json_of(_view(page), "#tool-result")
        page.close()
        assert run.wait(15) == 0, run.err
    mock = shlex.join([PY, "-m", "mcpcli", "mock", str(recording)])
    again = AppRun(
        ["call", "dashboard", "-a", "name=rec", "--no-input", "--app", "--no-browser", "--json", "-s", mock], {}
    )
    try:
        page = browser_context.new_page()
        page.goto(again.url())
        result = _json_of(_view(page), "#tool-result")
        assert result["structuredContent"]["greeting"] == "Hello, rec!"  # the view itself came from the recording
        page.close()
        assert again.wait(15) == 0, again.err
    finally:
        if again.proc.poll() is None:
            again.proc.kill()


@pytest.fixture
def elsewhere() -> Iterator[str]:
    """Another origin on this machine: a plain HTTP server the view may or may not reach."""
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def end_headers(self) -> None:
            self.send_header("Access-Control-Allow-Origin", "*")  # the view's origin may read it: only CSP decides
            super().end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.mark.parametrize("declared", [False, True])
def test_a_csp_violation_is_told_with_what_was_blocked_and_a_declared_domain_is_not(
    browser_context: Any, elsewhere: str, declared: bool
) -> None:
    env = {"MCPCLI_TEST_APP_CSP": json.dumps({"connectDomains": [elsewhere]} if declared else {})}
    with app_run("call", "dashboard", "-a", "name=c", "-a", f"fetch_url={elsewhere}/", env=env) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        view = _view(page)
        _json_of(view, "#tool-result")
        view.locator("#probe").click()
        probe = _json_of(view, "#probe-result")
        if declared:
            assert probe["fetch"].startswith("ok"), probe
            assert not [e for e in run.events("app-csp-violation") if "connect-src" in json.dumps(e)]
        else:
            assert probe["fetch"].startswith("blocked"), probe
            assert wait_until(lambda: run.events("app-csp-violation"), 10)
            violation = run.events("app-csp-violation")[0]
            assert elsewhere in violation["blocked"] and "connect-src" in violation["directive"]
        page.close()
        run.wait(15)


def test_a_view_that_never_initializes_is_said_in_one_line(browser_context: Any) -> None:
    with app_run("call", "silent_view", "--for", "6", env={"MCPCLI_APP_INIT_SECONDS": "1.5"}) as run:
        page = browser_context.new_page()
        page.goto(run.url())
        assert wait_until(lambda: run.events("app-warning"), 10), run.err
        assert "did not initialize within 1.5 s" in run.events("app-warning")[0]["text"]
        assert run.wait(15) == 0, run.err  # the call's result stands: the view's failure is not the call's
