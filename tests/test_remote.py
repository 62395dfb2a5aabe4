"""Flows over real transports: streamable HTTP on 127.0.0.1 and stdio subprocesses, resumed across processes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from conftest import demo_stdio, stdio_server
from test_flows import ONBOARD_ANSWERS, only_session, store

RESTART_NOTE = "no longer accepts this flow's state"


def test_http_call_with_a_preset_answer(process: Any, http_demo: Any) -> None:
    server = http_demo()
    r = process("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", "-s", server.url)
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"


def test_http_flow_resumes_in_another_process_after_the_server_restarted_with_a_new_key(
    process: Any, http_demo: Any, tmp_path: Path
) -> None:
    server = http_demo(key_file=tmp_path / "first.key")
    first = process("call", "provision", "-a", "name=orders", "-s", server.url)
    assert first.code == 3, first.err
    session = only_session()
    server.stop()
    server.argv[server.argv.index("--key-file") + 1] = str(tmp_path / "second.key")
    server.start()
    second = process("resume", session.id, "--answer", "region=eu-west-1")
    assert second.code == 0, second.err
    assert second.out == "Provisioned 'orders' in eu-west-1.\n"
    assert RESTART_NOTE in second.err
    rounds = store().rounds(session.id)
    assert [(x.index, x.attempt) for x in rounds] == [(1, 1), (2, 2)]


def test_http_flow_resumes_without_restarting_when_the_server_kept_its_key(process: Any, http_demo: Any) -> None:
    server = http_demo()
    assert process("call", "provision", "-a", "name=orders", "-s", server.url).code == 3
    server.stop()
    server.start()
    r = process("resume", only_session().id, "--answer", "region=eu-west-1")
    assert r.code == 0, r.err
    assert RESTART_NOTE not in r.err


def test_after_a_restart_stored_answers_are_replayed_and_only_new_questions_are_asked(
    process: Any, http_demo: Any, tmp_path: Path
) -> None:
    server = http_demo(key_file=tmp_path / "a.key")
    answers = tmp_path / "details.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    first = process("call", "onboard", "-a", "team=data", "--answers", str(answers), "-s", server.url, "--json")
    assert first.code == 3, first.err
    assert list(first.json()["pending"]) == ["confirm"]
    server.stop()
    server.argv[server.argv.index("--key-file") + 1] = str(tmp_path / "b.key")
    server.start()
    # Only the confirmation is answered now: the details form is asked again, unchanged, and replayed.
    second = process("resume", first.json()["session_id"], "--accept", "confirm", "--root", str(tmp_path))
    assert second.code == 0, second.err
    assert "Onboarded team 'data'" in second.out
    assert RESTART_NOTE in second.err
    rounds = store().rounds(only_session().id)
    replayed = [x for x in rounds if x.attempt == 2 and "details" in x.requests]

    def plain(answers: Any) -> dict[str, Any]:  # sealed secrets differ by nonce; the rest must be identical
        content = dict(answers["details"]["content"])
        assert set(content.pop("passphrase")) == {"$sealed"}
        return content

    assert replayed and plain(replayed[0].answers) == plain(rounds[0].answers)


def test_a_state_past_its_ttl_restarts_the_flow(process: Any, http_demo: Any) -> None:
    server = http_demo(ttl=1)
    assert process("call", "provision", "-a", "name=orders", "-s", server.url).code == 3
    time.sleep(1.3)
    r = process("resume", only_session().id, "--answer", "region=us-east-1")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in us-east-1.\n"
    assert RESTART_NOTE in r.err


def test_every_leg_gets_a_fresh_json_rpc_id_also_from_another_process(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record))
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    r = process("resume", only_session().id, "--answer", "sure=true")
    assert r.code == 0, r.err
    legs = [json.loads(line) for line in record.read_text().splitlines()]
    assert [leg["state"] for leg in legs] == [None, "asked"]
    ids = [leg["id"] for leg in legs]
    assert len(set(ids)) == len(ids) == 2
    assert all(str(i).startswith("mcpcli-") for i in ids)


def test_stdio_demo_resumes_in_a_fresh_server_process_with_the_kept_key(process: Any, tmp_path: Path) -> None:
    target = demo_stdio(tmp_path / "k.key")
    assert process("call", "provision", "-a", "name=orders", "-s", target).code == 3
    r = process("resume", only_session().id, "--answer", "region=eu-west-1")
    assert r.code == 0, r.err
    assert RESTART_NOTE not in r.err
    assert (tmp_path / "k.key").stat().st_mode & 0o777 == 0o600


def test_http_headers_are_sent(process: Any, http_demo: Any) -> None:
    server = http_demo()
    r = process("-H", "X-Trace: 1", "call", "echo", "-a", "text=hi", "-s", server.url, "-H", "X-Other: 2")
    assert r.code == 0, r.err
    assert r.out == "hi\n"


def test_server_text_is_escaped_and_markup_stays_literal(cli: Any) -> None:
    target = stdio_server("hostile")
    r = cli("call", "trap", "-s", target, "--json")
    assert r.code == 3
    for raw in ("\x1b", "\u202e", "\x9b"):
        assert raw not in r.out
    assert r.json()["pending"]["q"]["params"]["message"].startswith("Message \x1b[31mRED")  # exact as data
    human = cli("resume", only_session().id, "--no-input")
    for raw in ("\x1b]8;;", "\x1b[31m", "\u202e", "\x9b"):
        assert raw not in human.err
    assert "[bold red]markup[/bold red]" in human.err
    done = cli("resume", only_session().id, "--answer", "choice=b")
    assert done.code == 0, done.err
    assert "\x1b" not in done.out and "\\x1b[31mRED" in done.out
    err = cli("call", "fail", "-s", target)
    assert err.code == 1
    assert "\x1b" not in err.out + err.err


def test_resume_when_the_server_is_down_exits_4_and_keeps_the_session(process: Any, http_demo: Any) -> None:
    server = http_demo()
    assert process("call", "provision", "-a", "name=orders", "-s", server.url).code == 3
    server.stop()
    r = process("resume", only_session().id, "--answer", "region=eu-west-1")
    assert r.code == 4
    assert "Traceback" not in r.err
    assert "Cannot connect" in r.err
    assert only_session().status == "waiting"
    server.start()
    assert process("resume", only_session().id, "--answer", "region=eu-west-1").code == 0
