"""Sampling end to end: a real SDK server that samples, mcpcli, and fake providers on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import stdio_server
from fake_llm import serve
from test_flows import only_session, store

from mcpcli.settings.config import Paths

KEY = "sk-test-0123456789"


def toml(value: Any) -> str:
    """A TOML value (inline tables for dicts); JSON spells strings, numbers, bools and arrays the same way."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return json.dumps(value)


def configure(provider: dict[str, Any], **sampling: Any) -> None:
    """Write config.toml with one provider ``fake`` and the given [sampling] settings."""
    paths = Paths.from_env()
    paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = ["[providers.fake]"]
    for key, value in {**provider, "api_key_env": "FAKE_LLM_KEY"}.items():
        lines.append(f"{key} = {toml(value)}")
    lines.append("[sampling]")
    lines += [f"{key} = {toml(value)}" for key, value in {"provider": "fake", **sampling}.items()]
    paths.config_file.write_text("\n".join(lines) + "\n")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", KEY)


@pytest.mark.parametrize("api", ["openai-chat", "anthropic"])
def test_a_tool_that_samples_completes_with_the_configured_provider(cli: Any, api: str) -> None:
    with serve(api) as fake:
        configure(fake.provider(models=["big-model", "small-model"], max_tokens_cap=256), policy="always")
        fake.reply("MCP retries until done.", model="small-model-2026")
        r = cli("call", "summarize", "-s", stdio_server("sampler"))
        assert r.code == 0, r.err
        assert r.out == "summary by small-model-2026 (endTurn): MCP retries until done.\n"
        body = fake.last
        assert body["model"] == "small-model"  # the hint 'small' chose among the allowed models
        assert "metadata" not in body
        if api == "anthropic":
            assert body["system"] == "You are terse." and body["max_tokens"] == 256
            assert body["stop_sequences"] == ["END"]
        else:
            assert body["messages"][0] == {"role": "system", "content": "You are terse."}
            assert body["max_tokens"] == 256 and body["stop"] == ["END"]


def test_without_a_person_the_ask_policy_waits_and_sends_nothing(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="ask")
        r = cli("call", "summarize", "-s", stdio_server("sampler"), "--json")
        assert r.code == 3, r.err
        assert r.json()["pending"]["llm"]["method"] == "sampling/createMessage"
        assert fake.requests == []
        allowed = cli("resume", only_session().id, "--approve-sampling", "always")
        assert allowed.code == 0, allowed.err
        assert allowed.out.startswith("summary by ")


def test_the_never_policy_pauses_the_flow_with_the_reason_kept(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="never")
        r = cli("call", "summarize", "-s", stdio_server("sampler"))
        assert r.code == 3
        assert "not allowed" in r.err
        assert fake.requests == []
        session = only_session()
        assert session.status == "waiting" and "not allowed" in (session.error or "")


def test_the_session_budget_pauses_a_request_that_would_pass_it(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(max_tokens_cap=4096), policy="always", max_tokens=100)
        r = cli("call", "summarize", "-s", stdio_server("sampler"))
        assert r.code == 3
        assert "budget" in r.err
        assert fake.requests == []


@pytest.mark.cold_only
def test_a_stored_reply_is_reused_after_a_crash_instead_of_asking_the_llm_again(process: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="always")
        fake.reply("first and only")
        target = stdio_server("sampler")
        # Killed after the answered retry went out, before its result was saved: the round is in doubt.
        crashed = process("call", "summarize", "-s", target, env={"MCPCLI_FAULT": "after_send:2"})
        assert crashed.code == -9, crashed.err
        stored = store().rounds(only_session().id)[0].answers
        assert stored is not None and stored["llm"]["_meta"]["io.mcpcli/usage"] == {"input": 12, "output": 5}
        # A fresh stdio server has a fresh key: the resend is refused as stale, the flow restarts and the
        # identical sampling question is answered from the stored reply.
        done = process("resume", only_session().id)
        assert done.code == 0, done.err
        assert done.out.endswith("first and only\n")
        assert len(fake.requests) == 1


def test_a_pre_2026_server_samples_over_the_back_channel(cli: Any) -> None:
    with serve("anthropic") as fake:
        configure(fake.provider(), policy="always")
        fake.reply("legacy works")
        r = cli("call", "summarize", "-s", stdio_server("sampler"), "--protocol", "legacy")
        assert r.code == 0, r.err
        assert "legacy works" in r.out


def test_provider_errors_pause_the_flow_in_one_line(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="always")
        fake.error(401, "bad key")
        r = cli("call", "summarize", "-s", stdio_server("sampler"))
        assert r.code == 4
        assert "mcpcli keys set fake" in r.err
        assert KEY not in r.err + r.out
        assert only_session().status == "waiting"


def test_the_key_never_reaches_the_store_or_the_logs(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="always")
        assert cli("call", "summarize", "-s", stdio_server("sampler"), "--debug").code == 0
    home = Paths.from_env().state_dir
    for path in Path(home).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


# --- the two gates at a terminal -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_at_a_terminal_the_request_and_the_reply_are_approved_before_anything_is_returned(tmp_path: Path) -> None:
    from test_terminal import Term

    with serve("anthropic") as fake:
        configure(fake.provider(), policy="ask")
        fake.reply("approved text")
        term = Term("call", "summarize", "-s", stdio_server("sampler"))
        term.child.expect_exact("You are terse.")  # the system prompt is shown before anything is sent
        assert fake.requests == []
        term.answer("Send it? [y]es / [e]dit / [n]o: ", "y")
        term.child.expect_exact("approved text")
        term.answer("Return it to the server? [y]es / [e]dit / [n]o: ", "y")
        assert term.finish() == 0
        assert "summary by fake-model-2025-01-01 (endTurn): approved text" in term.seen
        assert len(fake.requests) == 1


@pytest.mark.slow
def test_an_edited_reply_is_what_the_server_gets_and_a_rejected_request_sends_nothing(tmp_path: Path) -> None:
    from test_terminal import Term

    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nprintf 'edited by me' > \"$1\"\n")
    editor.chmod(0o755)
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="ask")
        term = Term("call", "summarize", "-s", stdio_server("sampler"), env={"EDITOR": str(editor)})
        term.answer("Send it? [y]es / [e]dit / [n]o: ", "y")
        term.answer("Return it to the server? [y]es / [e]dit / [n]o: ", "e")
        assert term.finish() == 0
        assert "summary by fake-model (endTurn): edited by me" in term.seen
        rejected = Term("call", "summarize", "-s", stdio_server("sampler"))
        rejected.answer("Send it? [y]es / [e]dit / [n]o: ", "n")
        assert rejected.finish() == 5
        assert "nothing was sent" in rejected.seen
        assert len(fake.requests) == 1


def test_an_image_reaches_a_vision_model_and_stops_the_flow_for_a_text_only_one(cli: Any) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(models=["plain", {"name": "seer", "tags": ["vision"]}]), policy="always")
        refused = cli("call", "look", "-s", stdio_server("sampler"), "--llm", "fake")
        assert refused.code == 4
        assert "cannot take images" in refused.err
        assert fake.requests == []
    with serve("openai-chat") as fake:
        configure(fake.provider(models=[{"name": "seer", "tags": ["vision"]}]), policy="always")
        fake.reply("one white pixel")
        r = cli("call", "look", "-s", stdio_server("sampler"))
        assert r.code == 0, r.err
        assert r.out == "it shows: one white pixel\n"
        parts = fake.last["messages"][0]["content"]
        assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize("api", ["openai-chat", "anthropic"])
def test_tools_offered_by_a_server_reach_a_tools_model_and_its_tool_call_comes_back(cli: Any, api: str) -> None:
    with serve(api) as fake:
        configure(fake.provider(models=[{"name": "doer", "tags": ["tools"]}]), policy="always")
        fake.reply(
            None,
            stop="tool_use" if api == "anthropic" else "tool_calls",
            tool_calls=[("call_1", "get_weather", {"city": "Oslo"})],
        )
        r = cli("call", "plan", "-s", stdio_server("sampler"))
        assert r.code == 0, r.err
        assert r.out == 'toolUse: get_weather({"city": "Oslo"})\n'
        tools = fake.last["tools"]
        assert len(tools) == 1 and "get_weather" in json.dumps(tools)


@pytest.mark.parametrize("protocol", ["2026-07-28", "legacy"])
def test_the_server_gets_the_reply_without_the_users_token_counts_which_stay_in_the_store(
    cli: Any, protocol: str
) -> None:
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="always", max_calls=5)
        fake.reply("counted here, not there")
        r = cli("call", "inspect", "-s", stdio_server("sampler"), "--protocol", protocol)
        assert r.code == 0, r.err
        assert r.out == "meta: null\n"  # nothing the server did not ask for went back to it
    answers = [rnd.answers for rnd in store().rounds(only_session().id) if rnd.answers]
    usage = [a["_meta"]["io.mcpcli/usage"] for answer in answers for a in answer.values() if "_meta" in a]
    assert usage == [{"input": 12, "output": 5}]  # the budget still counts them


def test_only_mcpclis_own_meta_is_held_back() -> None:
    from mcpcli.engine.steps import for_server

    stored = {"llm": {"model": "m", "_meta": {"io.mcpcli/usage": {"output": 5}, "vendor/trace": "t1"}}, "r": {"a": 1}}
    assert for_server(stored) == {"llm": {"model": "m", "_meta": {"vendor/trace": "t1"}}, "r": {"a": 1}}
    assert for_server({"llm": {"model": "m", "_meta": {"io.mcpcli/usage": {}}}}) == {"llm": {"model": "m"}}
    assert stored["llm"]["_meta"]["io.mcpcli/usage"] == {"output": 5}  # the stored answer is left as it was
