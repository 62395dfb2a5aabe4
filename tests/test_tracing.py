"""OpenTelemetry flow traces, end to end: mcpcli as real processes, a real OTLP/HTTP receiver (tests/otlp.py, decoding
with opentelemetry-proto), a server built with the SDK and traced itself (tests/traced_server.py), a fake LLM provider
over HTTP. Every command runs in its own process: a process has one tracer provider."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, HttpServer, Result, cannot_run_here, free_port, run_process
from fake_llm import serve as serve_llm
from otlp import Receiver, Span
from otlp import serve as serve_otlp
from test_fleet import _can_unshare, make_hosts
from test_sampling import configure
from traced_server import RESULT_MARKER, STATE_MARKER

from mcpcli.settings.config import Paths

LLM_KEY = "sk-test-0123456789"
PASSWORD = "hunter2-Zq9-never-in-a-span"
USER = "alice-7c1-never-in-a-span"
TOKEN = "tok-3e77-never-in-a-span"
LLM_TEXT = "yes-from-the-llm-never-in-a-span"
TRACED = Path(__file__).with_name("traced_server.py")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve_otlp()


@pytest.fixture
def traced_http(tmp_path: Path, receiver: Receiver) -> Iterator[HttpServer]:
    """The three-round server over HTTP, exporting its own spans to the same receiver."""
    port = free_port()
    argv = [PY, str(TRACED), "--http", f"127.0.0.1:{port}", "--otlp", receiver.endpoint]
    server = HttpServer(argv, port, tmp_path / "traced.log").start()
    yield server
    server.stop()


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("FAKE_LLM_KEY", LLM_KEY)
    with serve_llm("openai-chat") as fake:
        configure(fake.provider(models=["fake-model"]), policy="always")
        yield fake


def traced(receiver: Receiver, **more: str) -> dict[str, str]:
    """The standard environment that turns tracing on (and the worker off: a process of its own)."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "MCPCLI_WORKER": "0", **more}


def run(*args: str, env: dict[str, str], timeout: float = 60) -> Result:
    return run_process(*args, env=env, timeout=timeout)


def ours(receiver: Receiver) -> list[Span]:
    return [s for s in receiver.spans if s.service == "mcpcli"]


def one(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def ship_answers() -> list[str]:
    return ["--answer", f"creds.user={USER}", "--answer", f"creds.password={PASSWORD}", "--answer", "sure.yes=true"]


def test_a_three_round_flow_is_one_trace_a_span_per_request_and_per_round_and_the_servers_spans_join_it(
    receiver: Receiver, traced_http: HttpServer, llm: Any
) -> None:
    llm.reply(LLM_TEXT, usage=(21, 4))
    r = run("call", "ship", "-a", "item=crate", "-s", traced_http.url, *ship_answers(), env=traced(receiver))
    assert r.code == 0, r.err
    assert "shipped crate" in r.out
    receiver.wait_for(1, "flow ")
    server_calls = receiver.wait_for(4, "tools/call ship")
    spans = ours(receiver)
    flow = one(spans, "flow tools/call ship")
    assert flow.parent_id == "" and flow.scope == "mcpcli"
    assert flow.attributes["mcpcli.flow.outcome"] == "done" and flow.attributes["mcpcli.flow.exit_code"] == 0
    assert flow.attributes["mcpcli.flow.rounds"] == 3 and flow.attributes["gen_ai.tool.name"] == "ship"
    session_id = flow.attributes["mcpcli.session.id"]
    assert {s.trace_id for s in receiver.spans} == {flow.trace_id}  # the server's spans too: one trace

    # The SDK's span per request, named by the MCP conventions and given its facts, under the flow.
    calls = [s for s in spans if s.name == "tools/call ship"]
    assert len(calls) == 4 and all(s.parent_id == flow.span_id for s in calls)
    for call in calls:
        assert call.kind == 3  # CLIENT
        assert call.attributes["mcp.method.name"] == "tools/call"
        assert call.attributes["network.transport"] == "tcp" and call.attributes["server.address"] == "127.0.0.1"
        assert call.attributes["server.port"] == traced_http.port
        assert call.attributes["mcp.protocol.version"] == "2026-07-28"
        assert str(call.attributes["jsonrpc.request.id"]).startswith("mcpcli-")
    assert [c.attributes.get("mcpcli.session.id") for c in calls[1:]] == [session_id] * 3  # once there is one
    assert any(s.name == "server/discover" and s.parent_id == flow.span_id for s in spans)  # the handshake too

    # A child per round: what was asked, how it was answered — keys and kinds only.
    for index, keys, kinds, how in ((1, ["creds"], ["form"], ["flag"]), (2, ["llm"], ["sampling"], ["llm"])):
        round_span = one(spans, f"round {index}")
        assert round_span.parent_id == flow.span_id
        assert round_span.attributes["mcpcli.round.request_keys"] == keys
        assert round_span.attributes["mcpcli.round.request_kinds"] == kinds
        assert round_span.attributes["mcpcli.round.answered_by"] == how
        assert round_span.attributes["mcpcli.round.answer_bytes"] > 0
    assert one(spans, "round 3").attributes["mcpcli.round.answered_by"] == ["flag"]

    # The LLM's completion: a client span by the GenAI conventions, under its round, with the tokens reported.
    chat = one(spans, "chat fake-model")
    assert chat.parent_id == one(spans, "round 2").span_id
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == "fake-model"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 21 and chat.attributes["gen_ai.usage.output_tokens"] == 4

    # The server's spans join through _meta: each is the child of the request span that carried it.
    served = [s for s in server_calls if s.service == "traced-server"]
    assert len(served) == 4
    assert {s.parent_id for s in served} == {c.span_id for c in calls}


def test_nothing_secret_reaches_the_receiver(receiver: Receiver, traced_http: HttpServer, llm: Any) -> None:
    llm.reply(LLM_TEXT)
    env = traced(receiver)
    r = run(
        "call", "ship", "-a", "item=crate", "-s", traced_http.url, "-H", f"Authorization: Bearer {TOKEN}",
        *ship_answers(), "--trace", str(Path(os.environ["MCPCLI_HOME"]) / "t.ndjson"), env=env,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert PASSWORD in r.out and RESULT_MARKER in r.out  # they did go where they belong
    receiver.wait_for(1, "flow ")
    receiver.wait_for(4, "tools/call ship")
    got = receiver.everything()
    for secret in (PASSWORD, USER, TOKEN, "Bearer", LLM_KEY, LLM_TEXT, STATE_MARKER, RESULT_MARKER, "crate"):
        assert secret.encode() not in got, secret
    assert all(set(s.attributes) <= _allowed() for s in ours(receiver))


def _allowed() -> set[str]:
    from mcpcli.telemetry.export import ALLOWED

    return set(ALLOWED)


def test_a_flow_parked_twice_is_one_trace_each_resume_under_its_start_and_linked_to_the_run_that_parked_it(
    receiver: Receiver, traced_http: HttpServer, llm: Any
) -> None:
    env = traced(receiver)
    first = run("call", "ship", "-a", "item=crate", "-s", traced_http.url, "--no-input", "--json", env=env)
    assert first.code == 3, first.err
    session_id = first.json()["session_id"]
    configure(llm.provider(models=["fake-model"]), policy="never")  # the LLM's round waits: parked again
    second = run("resume", session_id, "--answer", f"creds.user={USER}", "--answer", f"creds.password={PASSWORD}",
                 "--no-input", env=env)  # fmt: skip
    assert second.code == 3, second.err
    configure(llm.provider(models=["fake-model"]), policy="always")
    llm.reply(LLM_TEXT)
    third = run("resume", session_id, "--answer", "sure.yes=true", env=env)
    assert third.code == 0, third.err
    receiver.wait_for(2, "resume ")
    spans = ours(receiver)
    start = one(spans, "flow tools/call ship")
    resumes = sorted(receiver.named("resume "), key=lambda s: s.attributes["mcpcli.flow.outcome"] != "waiting")
    assert {s.trace_id for s in spans} == {start.trace_id}
    assert [s.parent_id for s in resumes] == [start.span_id, start.span_id]
    assert resumes[0].links == []  # the run that parked it is its parent already
    assert resumes[1].links == [(start.trace_id, resumes[0].span_id)]
    assert [s.attributes["mcpcli.flow.outcome"] for s in (start, *resumes)] == ["waiting", "waiting", "done"]
    assert all(s.attributes["mcpcli.session.id"] == session_id for s in (start, *resumes))

    shown = run("sessions", "show", session_id, env=env)
    assert f"trace      {start.trace_id}" in shown.out
    assert run("sessions", "show", session_id, "--json", env=env).json()["session"]["trace_id"] == start.trace_id


def test_a_bundle_imported_elsewhere_continues_the_same_trace(
    tmp_path: Path, receiver: Receiver, traced_http: HttpServer
) -> None:
    env = traced(receiver)
    parked = run("call", "ship", "-a", "item=crate", "-s", traced_http.url, "--no-input", "--json", env=env)
    session_id = parked.json()["session_id"]
    bundle = tmp_path / "flow.json"
    assert run("sessions", "export", session_id, "-o", str(bundle), env=env).code == 0
    elsewhere = {**env, "MCPCLI_HOME": str(tmp_path / "other-home")}
    assert run("sessions", "import", str(bundle), env=elsewhere).code == 0
    resumed = run("resume", session_id, "--answer", f"creds.user={USER}", "--answer", f"creds.password={PASSWORD}",
                  "--no-input", env=elsewhere)  # fmt: skip
    assert resumed.code == 3, resumed.err  # the LLM's round: no provider there
    resume = receiver.wait_for(1, "resume ")[0]
    start = one(ours(receiver), "flow tools/call ship")
    assert (resume.trace_id, resume.parent_id) == (start.trace_id, start.span_id)


def test_a_flow_parked_on_one_host_and_resumed_on_another_over_postgresql_is_one_trace(
    tmp_path: Path, pg_url: str, receiver: Receiver, traced_http: HttpServer
) -> None:
    if not _can_unshare():
        cannot_run_here("the two-host trace", "it needs root and unshare --uts (two host names)")
    ci, laptop = make_hosts(tmp_path, pg_url, ["ci-runner", "laptop"], warm=False)
    more = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}

    def on(host: Any, *args: str) -> tuple[int, str, str]:
        proc = subprocess.run(host.argv(*args), capture_output=True, text=True, cwd=ROOT, env={**host.env(), **more},
                              timeout=120)  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr

    code, out, err = on(ci, "call", "ship", "-a", "item=crate", "-s", traced_http.url, "--no-input", "--json")
    assert code == 3, err
    session_id = json.loads(out)["session_id"]
    code, out, err = on(laptop, "resume", session_id, "--answer", f"creds.user={USER}", "--answer",
                        f"creds.password={PASSWORD}", "--no-input")  # fmt: skip
    assert code == 3, err
    resume = receiver.wait_for(1, "resume ")[0]
    start = one(ours(receiver), "flow tools/call ship")
    assert (resume.trace_id, resume.parent_id) == (start.trace_id, start.span_id)
    laptop_calls = [s for s in ours(receiver) if s.name == "tools/call ship" and s.parent_id == resume.span_id]
    assert laptop_calls and all(s.trace_id == start.trace_id for s in laptop_calls)


def test_batch_gives_each_flow_a_trace_of_its_own_linked_to_the_batch_span(
    tmp_path: Path, receiver: Receiver, traced_http: HttpServer
) -> None:
    lines = "\n".join(json.dumps({"tool": "ship", "arguments": {"item": f"crate-{n}"}}) for n in range(3))
    r = run_process("batch", "-s", traced_http.url, "--no-input", stdin=lines + "\n", env=traced(receiver))
    assert r.code == 3, r.err
    flows = receiver.wait_for(3, "flow ")
    batch = receiver.wait_for(1, "batch")[0]
    assert batch.attributes["mcpcli.batch.flows"] == 3
    assert len({f.trace_id for f in flows}) == 3 and batch.trace_id not in {f.trace_id for f in flows}
    assert all(f.parent_id == "" and f.links == [(batch.trace_id, batch.span_id)] for f in flows)


def test_telemetry_in_config_turns_it_on_with_its_service_name(receiver: Receiver, tmp_path: Path) -> None:
    paths = Paths.from_env()
    paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.config_file.write_text(
        f'[telemetry]\nenabled = true\nendpoint = "{receiver.endpoint}"\nservice_name = "ci-bot"\n'
    )
    r = run("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", env={"MCPCLI_WORKER": "0"})
    assert r.code == 0, r.err
    flow = receiver.wait_for(1, "flow tools/call provision")[0]
    assert flow.service == "ci-bot" and flow.attributes["mcpcli.flow.outcome"] == "done"
    off = run("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1",
              env={"MCPCLI_WORKER": "0", "OTEL_SDK_DISABLED": "true"})  # fmt: skip
    assert off.code == 0
    time.sleep(0.3)
    assert len(receiver.named("flow ")) == 1


def test_a_collector_that_is_down_never_fails_the_command_nor_holds_it_long() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    began = time.monotonic()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": dead, "OTEL_EXPORTER_OTLP_TIMEOUT": "1", "MCPCLI_WORKER": "0"}
    r = run("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", env=env)
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n" and "Traceback" not in r.err
    assert time.monotonic() - began < 20  # bounded by the OTLP timeout, never the exporter's retries forever


def test_an_exporter_mcpcli_does_not_speak_is_one_line_and_the_command_runs(receiver: Receiver) -> None:
    r = run("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1",
            env={"OTEL_TRACES_EXPORTER": "console", "MCPCLI_WORKER": "0"})  # fmt: skip
    assert r.code == 0
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"
    assert [line for line in r.err.splitlines() if "OTLP" in line] == [
        "warning: OTEL_TRACES_EXPORTER=console: mcpcli exports traces over OTLP only; tracing is off."
    ]


@pytest.mark.slow
def test_through_the_worker_each_command_exports_with_its_own_settings_never_another_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, traced_http: HttpServer
) -> None:
    monkeypatch.setenv("MCPCLI_WORKER_DIR", str(tmp_path / "w"))
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    Path(os.environ["MCPCLI_HOME"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    assert run_process("worker", "start").code == 0
    try:
        with contextlib.ExitStack() as stack:
            first, second = (stack.enter_context(contextlib.closing(serve_otlp())).__next__() for _ in range(2))
            warm = {"MCPCLI_WORKER_REQUIRED": "1"}  # a command the worker does not run fails instead
            call = ("call", "ship", "-a", "item=crate", "-s", traced_http.url, "--no-input")
            for receiver, name in ((first, "team-a"), (second, "team-b")):
                env = {**warm, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": name}
                assert run_process(*call, env=env).code == 3
            assert run_process(*call, env=warm).code == 3  # tracing off: sent nowhere
            a, b = first.wait_for(1, "flow "), second.wait_for(1, "flow ")
            time.sleep(0.5)
            assert [s.service for s in first.spans if s.name.startswith("flow ")] == ["team-a"]
            assert [s.service for s in second.spans if s.name.startswith("flow ")] == ["team-b"]
            assert {s.service for s in first.spans} <= {"team-a", "traced-server"}
            assert {s.service for s in second.spans} <= {"team-b", "traced-server"}
            assert a[0].trace_id != b[0].trace_id
    finally:
        run_process("worker", "stop")


def test_a_hostile_servers_keys_are_carried_bounded_and_its_words_are_not(receiver: Receiver) -> None:
    from conftest import stdio_server
    from servers import KEY, VECTOR

    r = run("call", "gauntlet", "-s", stdio_server("hostile"), "--no-input", env=traced(receiver))
    assert r.code == 3, r.err
    round_span = receiver.wait_for(1, "round 1")[0]
    assert KEY in round_span.attributes["mcpcli.round.request_keys"]  # the key, as the server chose it (no terminal)
    assert all(len(k) <= 128 for k in round_span.attributes["mcpcli.round.request_keys"])
    flow = receiver.wait_for(1, "flow ")[0]
    assert flow.attributes["mcpcli.flow.outcome"] == "waiting"
    assert VECTOR.encode() not in receiver.everything()  # its messages, titles and texts are values: not sent
