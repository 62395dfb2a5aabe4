"""A round that asks a form and an LLM completion together, with no LLM provider configured (issue 32, point 2).

Against ``tests/servers.py mixed``: ``deploy`` asks a region, then ``approve`` (a form: confirm, note) beside
``summary`` (sampling) in one round, and says every answer it got. Nothing here may be a dead end: mcpcli says at
once what is missing, keeps what was answered, asks only what is open, and takes ``--decline`` on every key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import stdio_server
from fake_llm import serve
from test_flows import only_session, store
from test_sampling import configure

MIXED = stdio_server("mixed")
TTY = {"MCPCLI_ASSUME_TTY": "1"}
NO_PROVIDER = "No LLM provider is configured, so sampling requests cannot be answered: summary stays open."
APPROVED = {"approve": {"action": "accept", "content": {"confirm": True, "note": "hello"}}}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-0123456789")


def at_round_two(cli: Any, *more: str) -> str:
    """``deploy`` called with its region answered and nobody to ask: it waits at the mixed round; its session id."""
    r = cli("call", "deploy", "-a", "service=web", "-s", MIXED, "--answer", "region=eu-west-1", "--no-input", *more)
    assert r.code == 3, r.err
    return only_session().id


def test_at_a_terminal_mcpcli_says_there_is_no_provider_before_the_form_and_keeps_the_forms_answer(
    process: Any, cli: Any
) -> None:
    r = process("call", "deploy", "-a", "service=web", "-s", MIXED, stdin="eu-west-1\n\ny\nhello\n\n", env=TTY)
    assert r.code == 3, r.err
    assert NO_PROVIDER in r.err
    assert "Add a [providers.NAME] table to config.toml ('mcpcli paths' shows where)." in r.err
    assert r.err.index(NO_PROVIDER) < r.err.index("Deploy web?")  # said before the form, not after it
    assert r.err.count(NO_PROVIDER) == 1
    session = only_session()
    assert session.status == "waiting"
    last = store().rounds(session.id)[-1]
    assert last.answers == APPROVED and last.answered is None  # kept, though the round is not sent yet
    shown = cli("sessions", "show", session.id)
    assert "answered in part; still open: summary" in shown.out, shown.out
    assert 'note = "hello"' in shown.out and "not answered yet" not in shown.out


def test_a_resume_at_a_terminal_asks_only_what_is_still_open(process: Any, cli: Any) -> None:
    first = process("call", "deploy", "-a", "service=web", "-s", MIXED, stdin="eu-west-1\n\ny\nhello\n\n", env=TTY)
    assert first.code == 3, first.err
    sid = only_session().id
    again = process("resume", sid, env=TTY)  # nothing typed: the form must not be asked again
    assert again.code == 3, again.err
    assert "Deploy web?" not in again.err and NO_PROVIDER in again.err
    assert store().rounds(sid)[-1].answers == APPROVED
    waiting = cli("resume", sid, "--no-input", "--json")
    assert waiting.code == 3
    assert list(waiting.json()["pending"]) == ["summary"]  # the form's answer is not asked for again
    listed = cli("sessions", "list", "--waiting", "--json")
    assert listed.code == 0, listed.err
    (entry,) = listed.json()
    assert list(entry["pending"]) == ["summary"]  # the inbox lists what the session still waits for


def test_the_kept_answer_goes_out_with_the_completion_once_a_provider_is_configured(cli: Any) -> None:
    sid = at_round_two(cli)
    part = cli("resume", sid, "--answer", "confirm=true", "--answer", "note=hello", "--no-input")
    assert part.code == 3, part.err
    assert store().rounds(sid)[-1].answers == APPROVED
    with serve("openai-chat") as fake:
        configure(fake.provider(), policy="always")
        fake.reply("web is ready")
        done = cli("resume", sid, "--no-input")
        assert done.code == 0, done.err
        assert len(fake.requests) == 1
    service, _, got = done.out.partition(": ")
    answers = json.loads(got)
    assert service == "web"
    assert answers["approve"] == APPROVED["approve"]  # the answer kept from the run that could not send it
    assert answers["summary"]["content"]["text"] == "web is ready"
    assert answers["where"]["content"] == {"region": "eu-west-1"}


@pytest.mark.parametrize("how", ["--decline", "--cancel", "answers file"])
def test_declining_the_sampling_request_ends_the_call_and_keeps_the_rest(cli: Any, how: str, tmp_path: Path) -> None:
    sid = at_round_two(cli)
    if how == "answers file":
        answers = tmp_path / "answers.json"
        answers.write_text(json.dumps({"confirm": True, "summary": {"action": "decline"}}))
        flags: tuple[str, ...] = ("--answers", str(answers))
    else:
        flags = ("--answer", "confirm=true", how, "summary")
    r = cli("resume", sid, *flags)
    assert r.code == 5, r.err
    assert "matched no question" not in r.err
    assert "summary asks for an LLM completion (sampling)" in r.err and "the call ends here" in r.err
    assert f"mcpcli resume {sid}" in r.err
    session = only_session()
    assert session.status == "waiting" and "the call ends here" in (session.error or "")
    last = store().rounds(sid)[-1]
    assert last.answers == {"approve": {"action": "accept", "content": {"confirm": True}}} and last.answered is None


def test_accepting_a_sampling_request_is_a_usage_error_naming_what_would_answer_it(cli: Any) -> None:
    sid = at_round_two(cli)
    r = cli("resume", sid, "--answer", "confirm=true", "--accept", "summary")
    assert r.code == 2, r.err
    assert "--accept summary: summary asks for an LLM completion (sampling)" in r.err
    assert "--decline summary" in r.err


def test_a_preset_that_matches_no_question_is_named_with_the_request_keys(cli: Any) -> None:
    sid = at_round_two(cli)
    r = cli("resume", sid, "--decline", "summry", "--no-input")
    assert r.code == 3
    assert "warning: --decline summry matched no question (the server asked: approve, summary). " in r.err
    assert "Did you mean summary?" in r.err
    field = cli("resume", sid, "--answer", "confrm=true", "--no-input")
    assert "--answer confrm matched no question (the server asked: confirm, note, summary)." in field.err


def test_a_pre_2026_server_hears_a_declined_sampling_request_as_the_specs_error(cli: Any) -> None:
    r = cli("call", "summarize", "-s", stdio_server("sampler"), "--protocol", "legacy", "--decline", "sampling-1")
    assert "matched no question" not in r.err
    assert "User rejected sampling request (code -1)" in r.err, r.err  # what the server made of the answer
