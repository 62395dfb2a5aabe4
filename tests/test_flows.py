"""Flows end to end through the CLI against the demo server (in-process) and purpose-built SDK servers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, Result, stdio_server

from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store

ONBOARD_ANSWERS = {
    "details.display_name": "Data team",
    "details.email": "data@example.com",
    "details.homepage": "https://data.example.com",
    "details.start": "2026-12-01",
    "details.kickoff": "2026-12-01T09:30:00Z",
    "details.seats": "12",
    "details.budget": 2500.5,
    "details.remote": "no",
    "details.size": "medium",
    "details.region": "Europe (Ireland)",
    "details.tier": "g",
    "details.languages": "python, go",
    "details.channels": ["email", "chat"],
    "details.passphrase": "correct horse battery",
}


def store() -> Any:
    paths = Paths.from_env()
    return open_store(None, paths.store_file)


def only_session() -> Any:
    sessions = store().list()
    assert len(sessions) == 1
    return sessions[0]


def test_provision_with_a_preset_answer_prints_the_result_and_exits_0(cli: Any) -> None:
    r: Result = cli("call", "provision", "--arg", "name=orders", "--answer", "region=eu-west-1")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"
    assert only_session().status == "done"


def test_without_an_answer_and_a_terminal_the_flow_is_saved_and_exits_3(cli: Any) -> None:
    r = cli("call", "provision", "--arg", "name=orders")
    assert r.code == 3
    assert r.out == ""
    session = only_session()
    assert session.status == "waiting"
    assert f"mcpcli resume {session.id}" in r.err
    assert "region" in r.err


def test_exit_3_json_has_the_session_the_pending_requests_and_an_answers_template(cli: Any) -> None:
    r = cli("call", "provision", "--arg", "name=orders", "--no-input", "--json")
    assert r.code == 3
    doc = r.json()
    assert doc["status"] == "input_required"
    assert doc["session_id"] == only_session().id
    assert doc["pending"]["region"]["method"] == "elicitation/create"
    assert doc["pending"]["region"]["params"]["requestedSchema"]["required"] == ["region"]
    assert doc["answers_template"] == {"region.region": None}


def test_the_answers_template_filled_in_resumes_the_flow(cli: Any, tmp_path: Path) -> None:
    doc = cli("call", "provision", "--arg", "name=orders", "--json").json()
    template = doc["answers_template"]
    template["region.region"] = "ap-south-1"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(template))
    r = cli("resume", doc["session_id"], "--answers", str(answers))
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in ap-south-1.\n"


def test_resume_from_a_second_process_finishes_the_flow(cli: Any, process: Any) -> None:
    first = process("call", "provision", "--arg", "name=orders")
    assert first.code == 3, first.err
    session = only_session()
    second = process("resume", session.id[:6], "--answer", "region=eu-west-1")
    assert second.code == 0, second.err
    assert second.out == "Provisioned 'orders' in eu-west-1.\n"
    assert store().get(session.id).status == "done"


def test_resume_of_a_finished_session_prints_its_result_again(cli: Any) -> None:
    cli("call", "provision", "--arg", "name=orders", "--answer", "region=eu-west-1")
    again = cli("resume", only_session().id)
    assert again.code == 0
    assert again.out == "Provisioned 'orders' in eu-west-1.\n"
    assert "already finished" in again.err


def test_answers_from_stdin(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--answers", "-", stdin='{"region": "us-east-1"}')
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in us-east-1.\n"


@pytest.mark.parametrize(("flag", "word"), [("--decline", "declined"), ("--cancel", "cancelled")])
def test_declining_or_cancelling_sends_it_and_the_tool_error_exits_1(cli: Any, flag: str, word: str) -> None:
    r = cli("call", "provision", "--arg", "name=orders", flag, "region")
    assert r.code == 1
    assert r.out == f"Provisioning of 'orders' was {word}.\n"
    rounds = store().rounds(only_session().id)
    assert rounds[0].answers == {"region": {"action": flag.removeprefix("--")}}


def test_an_answers_file_with_an_action_declines(cli: Any, tmp_path: Path) -> None:
    answers = tmp_path / "a.json"
    answers.write_text('{"region": {"action": "decline"}}')
    r = cli("call", "provision", "--arg", "name=orders", "--answers", str(answers))
    assert r.code == 1
    assert "declined" in r.out


def test_every_field_kind_through_presets_over_three_rounds_with_roots(cli: Any, tmp_path: Path) -> None:
    answers = tmp_path / "onboard.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    r = cli(
        "call",
        "onboard",
        "--arg",
        "team=data",
        "--answers",
        str(answers),
        "--accept",
        "confirm",
        "--root",
        str(tmp_path),
    )
    assert r.code == 0, r.err
    assert f"1 workspace root: {tmp_path.resolve().as_uri()}" in r.out
    sent = store().rounds(only_session().id)
    assert [list(x.requests) for x in sent] == [["details"], ["confirm"], ["roots"]]
    content = dict(sent[0].answers["details"]["content"])
    assert set(content.pop("passphrase")) == {"$sealed"}  # secrets are stored sealed, never as sent
    assert content == {
        "display_name": "Data team",
        "email": "data@example.com",
        "homepage": "https://data.example.com",
        "start": "2026-12-01",
        "kickoff": "2026-12-01T09:30:00Z",
        "seats": 12,
        "budget": 2500.5,
        "remote": False,
        "size": "medium",
        "region": "eu-west-1",
        "tier": "g",
        "languages": ["python", "go"],
        "channels": ["email", "chat"],
    }
    assert sent[1].answers == {"confirm": {"action": "accept", "content": {"confirm": True}}}
    assert "correct horse" not in r.out


def test_roots_default_to_the_current_directory(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    answers = tmp_path / "onboard.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    r = cli("call", "onboard", "-a", "team=data", "--answers", str(answers), "--accept-defaults")
    assert r.code == 0, r.err
    assert tmp_path.resolve().as_uri() in r.out


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("details.seats=99", "seats"),
        ("details.email=not-an-email", "email"),
        ("details.start=12/01/2026", "start"),
        ("details.region=mars-1", "region"),
        ("details.languages=python,cobol", "languages"),
        ("details.display_name=x", "display_name"),
    ],
)
def test_an_invalid_answer_exits_2_and_sends_nothing(cli: Any, answer: str, message: str) -> None:
    r = cli("call", "onboard", "-a", "team=data", "--answer", answer)
    assert r.code == 2, r.err
    assert message in r.err
    session = only_session()
    assert session.status == "waiting"
    rounds = store().rounds(session.id)
    assert len(rounds) == 1 and rounds[0].answers is None


def test_an_ambiguous_bare_field_is_a_usage_error_naming_the_candidates(cli: Any) -> None:
    # One round of two forms that both ask 'region' (tests/hostile.py many_requests): which one is meant?
    hostile = shlex.join([PY, str(Path(__file__).resolve().parent / "hostile.py"), "many_requests", "--size", "2"])
    r = cli("call", "work", "--answer", "region=eu", "-s", hostile)
    assert (r.code, r.out) == (2, ""), r.err
    assert "--answer region is ambiguous: it matches q0.region, q1.region." in r.err
    assert "--answer q0.region=VALUE" in r.err and "matched no question" not in r.err


def test_a_bare_field_that_matches_no_question_is_a_warning_and_the_question_stays_open(cli: Any) -> None:
    r = cli("call", "onboard", "-a", "team=data", "--answer", "nosuchfield=1", "--no-input")
    assert r.code == 3  # not an error by itself: the round's questions are still to be answered
    assert "--answer nosuchfield matched no question (the server asked: display_name," in r.err


def test_state_only_rounds_back_off_and_finish(cli: Any) -> None:
    r = cli("call", "wait_for_build", "-a", "build=42")
    assert r.code == 0, r.err
    assert r.out == "Build 42 finished after 3 checks.\n"
    rounds = store().rounds(only_session().id)
    assert [x.requests for x in rounds] == [{}, {}, {}]


def test_a_prompt_that_asks(cli: Any) -> None:
    r = cli("prompt", "note", "-a", "topic=release", "--answer", "tone=pirate")
    assert r.code == 0, r.err
    assert "Write a pirate note about release." in r.out


def test_a_resource_template_that_asks(cli: Any) -> None:
    r = cli("read", "demo://report/apollo", "--answer", "private=yes")
    assert r.code == 0, r.err
    assert r.out == "Report for apollo (with private details): all systems nominal.\n"


def test_a_uri_the_server_does_not_have_says_where_to_look(cli: Any) -> None:
    r = cli("read", "demo://nope", "--json")
    assert r.code == 4
    error = r.json()["error"]
    assert "Unknown resource: demo://nope" in error["message"]
    assert error["hint"] == "Check the URI against what the server lists: mcpcli resources"


def test_an_answer_its_question_refuses_leaves_the_session_waiting_for_a_right_one(cli: Any) -> None:
    r = cli("call", "onboard", "-a", "team=x", "--answer", "seats=many", "--json")
    assert r.code == 2, r.err
    error = r.json()["error"]
    assert (
        error["hint"] == f"Answer it with: mcpcli resume {error['session_id']} --answer FIELD=VALUE (or at a terminal)"
    )
    assert only_session().status == "waiting"


def test_json_output_is_the_mcp_result(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", "--json")
    doc = r.json()
    assert doc["content"] == [{"type": "text", "text": "Provisioned 'orders' in eu-west-1."}]
    assert doc["isError"] is False


def test_a_pre_2026_server_is_answered_over_the_back_channel(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", "--protocol", "legacy")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"
    session = only_session()
    assert session.protocol_version < "2026-07-28"
    assert store().rounds(session.id)[0].requests["elicitation-1"]["method"] == "elicitation/create"


def test_a_pre_2026_question_nobody_answers_exits_3_and_resume_replays_nothing_new(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--protocol", "legacy")
    assert r.code == 3
    assert "cannot be deferred" in r.err
    again = cli("resume", only_session().id, "--answer", "region=eu-west-1", "--protocol", "legacy")
    assert again.code == 0, again.err
    assert again.out == "Provisioned 'orders' in eu-west-1.\n"


def test_a_server_that_never_stops_asking_stops_at_max_rounds_and_keeps_the_session(cli: Any) -> None:
    r = cli("call", "forever", "-s", stdio_server("never_stops"), "--answer", "x=1", "--max-rounds", "3")
    assert r.code == 4
    assert "after 3 rounds" in r.err
    session = only_session()
    assert session.status == "waiting"
    assert len(store().rounds(session.id)) == 4


def test_a_wall_clock_timeout_exits_4_and_keeps_the_session(cli: Any) -> None:
    r = cli("call", "wait_for_build", "-a", "build=1", "--timeout", "0.06")
    assert r.code == 4
    assert "did not finish within" in r.err
    assert only_session().status == "waiting"


def test_an_unknown_tool_is_a_usage_error(cli: Any) -> None:
    r = cli("call", "nope")
    assert r.code == 2
    assert "no tool 'nope'" in r.err
    assert "provision" in r.err


def test_a_missing_required_argument_exits_2(cli: Any) -> None:
    r = cli("call", "provision")
    assert r.code == 2
    assert "Missing required argument 'name'" in r.err
    assert store().list() == []


def test_an_unknown_session_exits_6(cli: Any) -> None:
    r = cli("resume", "abcdef")
    assert r.code == 6
    assert "No session matches" in r.err


def test_sessions_list_json_has_the_documented_fields(cli: Any) -> None:
    cli("call", "provision", "-a", "name=orders")
    rows = cli("sessions", "list", "--json").json()
    assert len(rows) == 1
    assert {"id", "status", "server", "method", "name", "round", "created", "updated"} <= set(rows[0])
    assert rows[0]["status"] == "waiting"


def test_a_complete_result_without_result_type_counts_as_complete(cli: Any) -> None:
    r = cli("call", "plain", "-s", stdio_server("no_result_type"))
    assert r.code == 0, r.err
    assert r.out == "complete without resultType\n"


def test_a_stdio_server_that_fails_to_start_shows_its_last_lines(cli: Any) -> None:
    r = cli("tools", "-s", stdio_server("crash"))
    assert r.code == 4
    assert "fatal: missing DATABASE_URL" in r.err
    assert "servers.log" in r.err


def test_a_round_answered_but_never_sent_is_sent_again_with_the_same_answers(cli: Any) -> None:
    assert cli("call", "provision", "-a", "name=orders").code == 3
    session = only_session()
    # As if a crash struck after the answers were committed but before the retry reached the server.
    store().record_answers(session.id, 1, {"region": {"action": "accept", "content": {"region": "sa-east-1"}}})
    r = cli("resume", session.id)
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in sa-east-1.\n"
    assert "sending it again with the same answers" in r.err


# --- presets that match nothing --------------------------------------------------------------------------------------


def test_a_misspelt_answer_is_named_with_what_was_asked_and_a_close_match(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--answer", "regoin=eu-west-1", "--no-input")
    assert r.code == 3
    assert "warning: --answer regoin matched no question (the server asked: region). Did you mean region?" in r.err
    assert r.err.index("warning:") < r.err.index("Answer with:")  # said before the exit-3 text's last line


def test_presets_left_over_by_a_finished_flow_are_named_too(tmp_path: Path, cli: Any) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"region": "eu-west-1", "regin.region": "x", "confirm": {"action": "accept"}}))
    r = cli("call", "provision", "-a", "name=orders", "--answers", str(answers), "--decline", "regon")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in eu-west-1.\n"
    where = str(answers)
    assert f"warning: {where}: regin.region matched no question (the server asked: region). " in r.err
    assert "Did you mean region.region?" in r.err
    assert f"warning: {where}: confirm matched no question" in r.err
    assert "warning: --decline regon matched no question (the server asked: region). Did you mean region?" in r.err


def test_presets_that_all_met_their_question_say_nothing(cli: Any) -> None:
    r = cli("call", "provision", "-a", "name=orders", "--answer", "region.region=eu-west-1")
    assert r.code == 0, r.err
    assert "warning" not in r.err


# --- --json before the subcommand, and errors as data ----------------------------------------------------------------


def test_json_before_the_subcommand_is_the_same_as_after_it(cli: Any) -> None:
    before = cli("--json", "-s", "demo", "call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1")
    after = cli("-s", "demo", "call", "provision", "-a", "name=orders", "--answer", "region=eu-west-1", "--json")
    assert before.code == after.code == 0, before.err
    assert before.json()["content"] == after.json()["content"]
    listed = cli("--json", "sessions", "list")
    assert listed.code == 0 and isinstance(listed.json(), list)


def test_with_json_an_error_is_a_json_object_on_stdout_as_well_as_a_line_on_stderr(cli: Any) -> None:
    bad = cli("--json", "-s", "demo", "call", "provision", "-a", "nmae=orders")
    assert bad.code == 2
    assert bad.json() == {
        "error": {
            "message": "The tool has no argument 'nmae'.",
            "hint": "Did you mean --arg name=…? Its arguments: name",
            "exit_code": 2,
        }
    }
    assert "Usage error: The tool has no argument 'nmae'." in bad.err
    missing = cli("sessions", "show", "zzzz", "--json")
    assert missing.code == 6 and missing.json()["error"]["exit_code"] == 6
    assert "session_id" not in missing.json()["error"]


def test_an_error_that_leaves_a_session_names_it_in_the_json_error(cli: Any) -> None:
    r = cli("call", "forever", "-s", stdio_server("never_stops"), "--answer", "x=1", "--max-rounds", "2", "--json")
    assert r.code == 4
    error = r.json()["error"]
    assert error["session_id"] == only_session().id
    assert error["exit_code"] == 4 and "after 2 rounds" in error["message"]
    assert f"mcpcli resume {only_session().id}" in error["hint"]


@pytest.mark.slow
@pytest.mark.parametrize("args", [("call", "provision", "-a", "name=orders", "--tui"), ("tui",)])
def test_the_full_screen_app_without_a_terminal_exits_2_at_once(process: Any, args: tuple[str, ...]) -> None:
    r = process(*args, timeout=30)  # it used to draw into the pipe and wait for keys forever
    assert r.code == 2
    assert r.out == ""
    assert "\x1b" not in r.err
    assert "needs a terminal" in r.err
    assert store().list() == []


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stdout_that_cannot_encode_the_result_gets_escapes_not_an_internal_error(encoding: str) -> None:
    """An ASCII locale (or PYTHONIOENCODING) and a result in any script: text with Python's escapes, JSON with
    JSON's, which keeps the document valid and equal."""
    text = "héllo ✓ 日本 😀"

    def run(*args: str) -> bytes:
        env = {**os.environ, "PYTHONIOENCODING": encoding}
        done = subprocess.run(
            [PY, "-m", "mcpcli", "call", "echo", "-a", f"text={text}", *args], capture_output=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr.decode(encoding, "replace")
        return done.stdout

    assert run().decode(encoding).strip() == text.encode(encoding, "backslashreplace").decode(encoding)
    assert json.loads(run("--json").decode(encoding))["content"][0]["text"] == text


@pytest.mark.parametrize(
    ("args", "message", "where"),
    [
        (("call", "echo", "--max-rounds", "0"), "Invalid value for '--max-rounds'", "mcpcli call"),
        (("call", "echo", "--bogus"), "No such option: --bogus", "mcpcli call"),
        (("sessions", "show"), "Missing argument 'ID'.", "mcpcli sessions show"),
    ],
)
def test_with_json_a_command_line_that_cannot_be_parsed_is_an_error_document_too(
    process: Any, args: tuple[str, ...], message: str, where: str
) -> None:
    """Agents read stdout: Click's own usage errors are errors as data like any other (README: errors as data)."""
    r = process("--json", *args)
    assert r.code == 2
    error = r.json()["error"]
    assert message in error["message"] and error["exit_code"] == 2 and error["hint"] == f"See: {where} --help"
    assert "Usage: " in r.err  # the person still gets Click's usage lines
    plain = process(*args)
    assert plain.code == 2 and plain.out == ""


# --- a pre-2026 server's question nobody could answer, mid-call (issue 32) -------------------------------------------
# Through real processes, so that the warm pass runs them through the worker. fastmcp 4.x (tests/data/fastmcp_shop.py)
# and the SDK's own server (tests/servers.py calls_back), both forced to 2025-11-25.

SHOP = Path(__file__).resolve().parent / "data" / "fastmcp_shop.py"


def shop() -> str:
    import shlex

    return shlex.join([PY, str(SHOP)])


def test_a_pre_2026_tool_that_fails_without_its_answer_is_parked_and_resume_runs_it_again_with_the_answer(
    process: Any,
) -> None:
    """fastmcp ends the call with its own isError result ("Error calling tool 'order': The user is not available to
    answer."): what the call waits on is the question, not that result."""
    r = process("-s", shop(), "--protocol", "legacy", "call", "order", "-a", "item=mug", "--no-input", "--json")
    assert r.code == 3, r.err
    doc = r.json()
    assert doc["status"] == "input_required" and list(doc["pending"]) == ["elicitation-1"]
    assert doc["answers_template"] == {"elicitation-1.quantity": None}
    assert "Error calling tool" not in r.out + r.err and "warning:" not in r.err
    session = only_session()
    assert (session.id, session.status) == (doc["session_id"], "waiting")
    again = process("resume", session.id, "--answer", "quantity=2")
    assert (again.code, again.out) == (0, "ordered 2 x mug\n"), again.err
    assert "warning:" not in again.err
    assert only_session().status == "done"
    last = store().rounds(session.id)[-1]  # the call asked again, answered over the back-channel this time
    assert (last.attempt, last.requests["elicitation-1"]["method"]) == (2, "elicitation/create")
    assert last.answers == {"elicitation-1": {"action": "accept", "content": {"quantity": 2}}}


@pytest.mark.parametrize(
    ("target", "flow", "answer", "printed"),
    [
        (stdio_server("calls_back"), ("call", "ask"), "n=4", "got accept 4\n"),
        (shop(), ("read", "shop://order/cup"), "quantity=3", "ordered 3 x cup\n"),
    ],
    ids=["sdk-tool", "fastmcp-resource"],
)
def test_a_pre_2026_leg_that_fails_with_a_json_rpc_error_without_its_answer_is_parked_too(
    process: Any, target: str, flow: tuple[str, ...], answer: str, printed: str
) -> None:
    r = process("-s", target, "--protocol", "legacy", *flow, "--no-input", "--json")
    assert r.code == 3, r.err
    doc = r.json()
    assert doc["status"] == "input_required" and list(doc["pending"]) == ["elicitation-1"]
    assert only_session().status == "waiting"
    again = process("resume", doc["session_id"], "--answer", answer)
    assert (again.code, again.out) == (0, printed), again.err
    assert only_session().status == "done"


def test_a_pre_2026_result_that_is_no_error_after_the_refusal_stands_with_one_warning(process: Any) -> None:
    r = process("-s", shop(), "--protocol", "legacy", "call", "order_one", "-a", "item=mug", "--no-input")
    assert r.code == 0, r.err
    assert r.out == "ordered 1 x mug (nobody said how many: The user is not available to answer.)\n"
    said = [line for line in r.err.splitlines() if line.startswith("warning:")]
    assert len(said) == 1 and "elicitation-1 (nobody could answer)" in said[0], r.err
    assert only_session().status == "done"  # resume prints this result again, never calls again


def test_a_bad_answer_to_a_pre_2026_question_the_tool_then_fails_on_exits_2_and_keeps_the_question_waiting(
    process: Any,
) -> None:
    r = process("-s", shop(), "--protocol", "legacy", "call", "order", "-a", "item=mug", "--answer", "quantity=abc")
    assert r.code == 2, r.err
    assert "must be an integer" in r.err and "Error calling tool" not in r.out + r.err
    assert only_session().status == "waiting"
