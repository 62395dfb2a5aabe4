"""``mcpcli sessions list | show | rm | prune | export | import`` through the CLI, on sessions made by real flows."""

from __future__ import annotations

import json
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import Result, stdio_server
from test_flows import ONBOARD_ANSWERS, store

from mcpcli.settings.config import Paths
from mcpcli.state.bundle import checksum

PASSPHRASE = "correct horse battery"
"""The onboard form's secret field value (ONBOARD_ANSWERS["details.passphrase"])."""

RESTART_NOTE = "no longer accepts this flow's state"


# --- helpers ---------------------------------------------------------------------------------------------------------


def waiting_provision(cli: Any, name: str = "orders", *extra: str) -> str:
    r = cli("call", "provision", "-a", f"name={name}", "--json", *extra)
    assert r.code == 3, r.err
    return str(r.json()["session_id"])


def done_provision(cli: Any, name: str = "orders") -> str:
    assert cli("call", "provision", "-a", f"name={name}", "--answer", "region=eu-west-1").code == 0
    return store().list(status="done")[0].id


def onboard_waiting_for_confirm(cli: Any, tmp_path: Path) -> str:
    """An onboard flow whose first round (with the secret passphrase) is answered; it waits for 'confirm'."""
    answers = tmp_path / "onboard.json"
    answers.write_text(json.dumps(ONBOARD_ANSWERS))
    r = cli("call", "onboard", "-a", "team=data", "--answers", str(answers), "--json")
    assert r.code == 3, r.err
    assert list(r.json()["pending"]) == ["confirm"]
    return str(r.json()["session_id"])


def snapshot() -> list[Any]:
    """Everything the current home's store holds, to compare before and after."""
    s = store()
    return [(x.model_dump(), [r.model_dump() for r in s.rounds(x.id)]) for x in s.list()]


def set_updated(session_id: str, when: datetime) -> None:
    """Age a session, through a separate connection as another process would."""
    with closing(sqlite3.connect(Paths.from_env().store_file)) as conn, conn:
        stamp = when.astimezone(UTC).isoformat(timespec="microseconds")
        conn.execute("UPDATE sessions SET updated = ? WHERE id = ?", (stamp, session_id))


@pytest.fixture
def second_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("machine-b")
    base.chmod(0o700)
    return base / "mcpcli"


def export_to(cli: Any, session_id: str, path: Path, *extra: str) -> Result:
    r = cli("sessions", "export", session_id, "-o", str(path), *extra)
    assert r.code == 0, r.err
    return r


# --- list ------------------------------------------------------------------------------------------------------------


def test_list_filters_by_status_and_server_newest_first(cli: Any) -> None:
    first = waiting_provision(cli, "a")
    second = done_provision(cli, "b")
    third = waiting_provision(cli, "c")
    everything = cli("sessions", "list", "--json").json()
    assert [s["id"] for s in everything] == [third, second, first]
    assert [s["id"] for s in cli("sessions", "list", "--status", "waiting", "--json").json()] == [third, first]
    assert [s["id"] for s in cli("sessions", "list", "--status", "done", "--json").json()] == [second]
    assert cli("sessions", "list", "--server", "elsewhere", "--json").json() == []
    assert len(cli("sessions", "list", "--server", "demo", "--json").json()) == 3
    assert [s["id"] for s in cli("sessions", "list", "--limit", "1", "--json").json()] == [third]
    table = cli("sessions", "list")
    assert table.code == 0
    assert table.out.index(third) < table.out.index(second) < table.out.index(first)


def test_list_of_an_unknown_status_is_a_usage_error(cli: Any) -> None:
    r = cli("sessions", "list", "--status", "sleeping")
    assert r.code == 2
    assert "sleeping" in r.err


def test_the_waiting_inbox_says_what_each_flow_waits_for(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one table row per line
    provision = waiting_provision(cli)
    onboard = onboard_waiting_for_confirm(cli, tmp_path)
    done_provision(cli, "finished")
    r = cli("sessions", "list", "--waiting")
    assert r.code == 0, r.err
    assert provision in r.out and onboard in r.out
    assert "finished" not in r.out
    assert "region: Which region should 'orders' be provisioned in? (region)" in r.out
    assert "confirm: Create Data team <data@example.com>, 12 seats? (confirm)" in r.out
    assert "mcpcli resume" in r.err
    docs = {d["id"]: d for d in cli("sessions", "list", "--waiting", "--json").json()}
    assert set(docs) == {provision, onboard}
    assert docs[provision]["pending"] == {
        "region": {"kind": "form", "message": "Which region should 'orders' be provisioned in?", "fields": ["region"]}
    }
    assert docs[onboard]["pending"]["confirm"]["fields"] == ["confirm"]
    assert docs[onboard]["status"] == "waiting"


def test_the_inbox_is_empty_when_nothing_waits(cli: Any) -> None:
    done_provision(cli)
    r = cli("sessions", "list", "--waiting")
    assert r.code == 0
    assert r.out == ""
    assert "Nothing is waiting" in r.err


def test_waiting_with_another_status_is_a_usage_error(cli: Any) -> None:
    r = cli("sessions", "list", "--waiting", "--status", "done")
    assert r.code == 2
    assert "--waiting" in r.err


# --- show ------------------------------------------------------------------------------------------------------------


def test_show_masks_the_passphrase_and_never_prints_the_request_state(cli: Any, tmp_path: Path) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    states = [r.request_state for r in store().rounds(session_id)]
    assert all(states)
    human = cli("sessions", "show", session_id[:6])
    assert human.code == 0, human.err
    assert "Round 1 · attempt 1" in human.out and "Round 2 · attempt 1" in human.out
    assert "Tell us about team 'data'." in human.out
    assert "passphrase (secret)" in human.out
    assert "passphrase = ••••••" in human.out
    assert 'display_name = "Data team"' in human.out
    assert "not answered yet" in human.out  # the confirmation
    assert PASSPHRASE not in human.out + human.err
    for state in states:
        assert state not in human.out
        assert state[:40] not in human.out
    import hashlib

    assert f"sha256 {hashlib.sha256(states[0].encode()).hexdigest()[:12]}" in human.out
    doc = cli("sessions", "show", session_id, "--json").json()
    assert doc["session"]["id"] == session_id
    assert doc["session"]["arguments"] == {"team": "data"}
    first = doc["rounds"][0]
    assert first["answers"]["details"]["content"]["passphrase"] == "••••••"
    assert first["answers"]["details"]["content"]["seats"] == 12
    assert first["state"] == {
        "bytes": len(states[0].encode()),
        "sha256": hashlib.sha256(states[0].encode()).hexdigest(),
    }
    assert "request_state" not in json.dumps(doc)
    assert PASSPHRASE not in json.dumps(doc)
    assert doc["rounds"][1]["answers"] is None


def test_show_reveal_shows_the_passphrase(cli: Any, tmp_path: Path) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    human = cli("sessions", "show", session_id, "--reveal")
    assert human.code == 0, human.err
    assert f'passphrase = "{PASSPHRASE}"' in human.out
    doc = cli("sessions", "show", session_id, "--reveal", "--json").json()
    assert doc["rounds"][0]["answers"]["details"]["content"]["passphrase"] == PASSPHRASE


def test_show_of_a_finished_session_prints_its_result(cli: Any) -> None:
    session_id = done_provision(cli)
    r = cli("sessions", "show", session_id)
    assert r.code == 0
    assert "· done" in r.out
    assert 'region = "eu-west-1"' in r.out
    assert r.out.endswith("Provisioned 'orders' in eu-west-1.\n")


def test_show_of_an_unknown_session_exits_6(cli: Any) -> None:
    r = cli("sessions", "show", "abcdef")
    assert r.code == 6
    assert "No session matches 'abcdef'" in r.err


def test_hostile_server_text_is_escaped_in_sessions_show(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # one table row per line
    r = cli("call", "trap", "-s", stdio_server("hostile"), "--json")
    assert r.code == 3
    session_id = r.json()["session_id"]
    for args in (("sessions", "show", session_id), ("sessions", "list", "--waiting")):
        shown = cli(*args)
        assert shown.code == 0, shown.err
        for raw in ("\x1b", "\u202e", "\x9b"):
            assert raw not in shown.out + shown.err
        assert "\\x1b[31mRED" in shown.out
        assert "[bold red]markup[/bold red]" in shown.out
    doc = cli("sessions", "show", session_id, "--json")
    assert "\x1b" not in doc.out and "\u202e" not in doc.out
    assert doc.json()["rounds"][0]["requests"]["q"]["params"]["message"].startswith("Message \x1b[31mRED")


def test_a_flow_someone_is_driving_shows_its_holder_and_cannot_be_removed(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    session_id = waiting_provision(cli)
    store().claim(session_id, host="laptop-b", pid=4242, ttl=600)
    inbox = cli("sessions", "list", "--waiting")
    assert "held by" in inbox.out and "pid 4242 on laptop-b" in inbox.out
    assert cli("sessions", "list", "--waiting", "--json").json()[0]["lease"]["holder"] == "pid 4242 on laptop-b"
    shown = cli("sessions", "show", session_id)
    assert "lease      held by pid 4242 on laptop-b, since" in shown.out
    before = snapshot()
    r = cli("sessions", "rm", session_id)
    assert r.code == 6
    assert "being driven by pid 4242 on laptop-b" in r.err
    assert cli("sessions", "prune", "--older-than", "0s", "--status", "waiting").code == 0
    assert snapshot() == before


# --- rm and prune ----------------------------------------------------------------------------------------------------


def test_rm_deletes_sessions_by_prefix(cli: Any) -> None:
    keep = waiting_provision(cli, "keep")
    gone = [waiting_provision(cli, "a"), done_provision(cli, "b")]
    r = cli("sessions", "rm", gone[0][:5], gone[1])
    assert r.code == 0, r.err
    assert "Removed 2 sessions" in r.out
    assert [s.id for s in store().list()] == [keep]


def test_rm_with_an_unknown_id_exits_6_and_deletes_nothing(cli: Any) -> None:
    session_id = waiting_provision(cli)
    before = snapshot()
    r = cli("sessions", "rm", session_id, "ffffffff")
    assert r.code == 6
    assert "ffffffff" in r.err
    assert snapshot() == before


def test_prune_removes_old_finished_sessions_and_keeps_waiting_ones(cli: Any) -> None:
    old_waiting = waiting_provision(cli, "old-waiting")
    old_done = done_provision(cli, "old-done")
    recent_done = done_provision(cli, "recent-done")
    long_ago = datetime.now(UTC) - timedelta(days=40)
    set_updated(old_waiting, long_ago)
    set_updated(old_done, long_ago)
    r = cli("sessions", "prune")
    assert r.code == 0, r.err
    assert "Removed 1 session" in r.out
    assert {s.id for s in store().list()} == {old_waiting, recent_done}


def test_prune_takes_an_age_and_statuses_and_waiting_only_when_asked(cli: Any) -> None:
    waiting = waiting_provision(cli)
    done = done_provision(cli)
    set_updated(waiting, datetime.now(UTC) - timedelta(hours=13))
    set_updated(done, datetime.now(UTC) - timedelta(hours=13))
    assert cli("sessions", "prune", "--older-than", "1d").code == 0
    assert len(store().list()) == 2
    r = cli("sessions", "prune", "--older-than", "12h", "--status", "waiting", "--json")
    assert r.code == 0, r.err
    assert r.json()["removed"] == 1
    assert [s.id for s in store().list()] == [done]


@pytest.mark.parametrize("age", ["soon", "30", "d", "-3d", "3x"])
def test_prune_with_a_bad_duration_is_a_usage_error(cli: Any, age: str) -> None:
    r = cli("sessions", "prune", "--older-than", age)
    assert r.code == 2
    assert "duration" in r.err


# --- export and import -----------------------------------------------------------------------------------------------


def test_an_exported_flow_finishes_on_a_second_machine(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    export_to(cli, session_id, bundle)
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    imported = cli("sessions", "import", str(bundle))
    assert imported.code == 0, imported.err
    assert session_id in imported.err
    assert f"mcpcli resume {session_id}" in imported.err
    assert [s.status for s in store().list()] == ["waiting"]
    # The demo's state key lives in each home's state dir: machine B's demo restarts the flow.
    r = cli("resume", session_id, "--answer", "region=ap-south-1")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in ap-south-1.\n"
    assert RESTART_NOTE in r.err
    assert store().get(session_id).status == "done"


def test_export_to_stdout_and_import_from_stdin(cli: Any, second_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = waiting_provision(cli)
    exported = cli("sessions", "export", session_id[:6])
    assert exported.code == 0, exported.err
    doc = exported.json()
    assert doc["format"] == "mcpcli-session-bundle" and doc["version"] == 3
    assert doc["checksum"] == checksum(doc)
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    r = cli("sessions", "import", "-", "--json", stdin=exported.out)
    assert r.code == 0, r.err
    assert r.json()["session_id"] == session_id


def test_without_include_answers_no_answer_leaves_the_machine(cli: Any, tmp_path: Path) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    bundle = tmp_path / "flow.json"
    export_to(cli, session_id, bundle)
    text = bundle.read_text()
    doc = json.loads(text)
    assert doc["answers"] is None
    assert all(r["answers"] is None and r["answered"] is None for r in doc["rounds"])
    assert "lease_host" not in doc["session"] and "version" not in doc["session"]
    for value in ("Data team", "data@example.com", PASSPHRASE, "2500.5"):
        assert value not in text.replace("Create Data team <data@example.com>", "")  # the server's own question


def test_answers_travel_encrypted_and_are_restored_on_the_second_machine(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    bundle = tmp_path / "flow.json"
    monkeypatch.setenv("MCPCLI_PASSPHRASE", "a long shared passphrase")
    export_to(cli, session_id, bundle, "--include-answers")
    text = bundle.read_text()
    assert PASSPHRASE not in text and 'Data team"' not in text
    assert json.loads(text)["answers"]["kdf"] == "scrypt"
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    imported = cli("sessions", "import", str(bundle))
    assert imported.code == 0, imported.err
    masked = cli("sessions", "show", session_id)
    assert "passphrase = ••••••" in masked.out and PASSPHRASE not in masked.out
    revealed = cli("sessions", "show", session_id, "--reveal")
    assert f'passphrase = "{PASSPHRASE}"' in revealed.out
    # At rest on machine B the secret is sealed with B's own key, like any answer B stored itself.
    details = store().rounds(session_id)[0].answers["details"]["content"]
    assert details["passphrase"] != PASSPHRASE
    assert details["display_name"] == "Data team"
    # The flow restarts on B (stale state) and replays the imported answers: only the confirmation is asked.
    r = cli("resume", session_id, "--accept", "confirm", "--root", str(tmp_path))
    assert r.code == 0, r.err
    assert "Onboarded team 'data'" in r.out
    assert RESTART_NOTE in r.err


def test_the_bundle_file_is_private(cli: Any, tmp_path: Path) -> None:
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    bundle.write_text("old")
    bundle.chmod(0o644)
    export_to(cli, session_id, bundle)
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    assert json.loads(bundle.read_text())["session"]["id"] == session_id


def test_include_answers_without_a_passphrase_or_a_terminal_exits_2(cli: Any, tmp_path: Path) -> None:
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    r = cli("sessions", "export", session_id, "-o", str(bundle), "--include-answers")
    assert r.code == 2
    assert "MCPCLI_PASSPHRASE" in r.err
    assert not bundle.exists()


def test_importing_a_session_that_exists_says_so_exits_2_and_names_the_ways_on(cli: Any, tmp_path: Path) -> None:
    """Not exit 6 ("busy or not found"): the session is there and free; the bundle is the user's to place."""
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    export_to(cli, session_id, bundle)
    before = snapshot()
    r = cli("sessions", "import", str(bundle))
    assert r.code == 2, r.err
    first = r.err.splitlines()[0]
    assert (
        first
        == f"Already in this store: Session {session_id} is already in this store (waiting); nothing was imported."
    )
    assert f"mcpcli sessions import {bundle} --as-new" in r.err and f"mcpcli sessions rm {session_id}" in r.err
    assert snapshot() == before
    error = cli("sessions", "import", str(bundle), "--json").json()["error"]
    assert error["exit_code"] == 2 and "--as-new" in error["hint"]


def test_import_as_new_adds_a_copy_under_a_new_id_that_finishes_on_its_own(cli: Any, tmp_path: Path) -> None:
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    export_to(cli, session_id, bundle)
    r = cli("sessions", "import", str(bundle), "--as-new", "--json")
    assert r.code == 0, r.err
    copy = r.json()["session_id"]
    assert copy != session_id and f"a copy of {session_id}" in r.err
    assert sorted(s.id for s in store().list()) == sorted([session_id, copy])
    done = cli("resume", copy, "--answer", "region=eu-west-1")
    assert done.code == 0, done.err
    assert store().get(copy).status == "done" and store().get(session_id).status == "waiting"


def test_import_as_new_keeps_encrypted_answers_readable_under_the_new_id(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    bundle = tmp_path / "flow.json"
    monkeypatch.setenv("MCPCLI_PASSPHRASE", "a long shared passphrase")
    export_to(cli, session_id, bundle, "--include-answers")
    copy = cli("sessions", "import", str(bundle), "--as-new", "--json").json()["session_id"]
    revealed = cli("sessions", "show", copy, "--reveal")
    assert f'passphrase = "{PASSPHRASE}"' in revealed.out, revealed.err


def test_a_tampered_bundle_is_refused_and_the_store_is_unchanged(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = waiting_provision(cli)
    bundle = tmp_path / "flow.json"
    export_to(cli, session_id, bundle)
    doc = json.loads(bundle.read_text())
    state = doc["rounds"][0]["request_state"]
    doc["rounds"][0]["request_state"] = state[:-1] + ("A" if state[-1] != "A" else "B")
    bundle.write_text(json.dumps(doc))
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    before = snapshot()
    r = cli("sessions", "import", str(bundle))
    assert r.code == 2
    assert "The bundle was changed or damaged" in r.err
    assert "Traceback" not in r.err
    assert snapshot() == before == []


def test_a_wrong_passphrase_is_refused_and_the_store_is_unchanged(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    bundle = tmp_path / "flow.json"
    monkeypatch.setenv("MCPCLI_PASSPHRASE", "the right one")
    export_to(cli, session_id, bundle, "--include-answers")
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    monkeypatch.setenv("MCPCLI_PASSPHRASE", "the wrong one")
    r = cli("sessions", "import", str(bundle))
    assert r.code == 2
    assert "wrong passphrase" in r.err
    assert snapshot() == []
    monkeypatch.delenv("MCPCLI_PASSPHRASE")
    r = cli("sessions", "import", str(bundle))  # no passphrase and no terminal to ask at
    assert r.code == 2
    assert "MCPCLI_PASSPHRASE" in r.err
    assert snapshot() == []


def _resealed(doc: dict[str, Any]) -> str:
    """A hand-made bundle with a valid checksum: what an attacker (not a damaged disk) would send."""
    doc["checksum"] = checksum(doc)
    return json.dumps(doc)


def _hostile(kind: str, valid: dict[str, Any]) -> str:
    if kind == "not json":
        return "{not json"
    if kind == "a list":
        return "[1, 2, 3]"
    if kind == "not a bundle":
        return json.dumps({"hello": "world"})
    if kind == "nan":
        return json.dumps(valid).replace('"version": 3', '"version": NaN')
    if kind == "deep nesting":
        return "[" * 100_000 + "]" * 100_000
    if kind == "wrong types":
        return _resealed(valid | {"session": {**valid["session"], "round": "many", "arguments": [1]}})
    if kind == "rounds not a list":
        return _resealed(valid | {"rounds": {"0": 1}})
    if kind == "a round of another session":
        return _resealed(valid | {"rounds": [{**valid["rounds"][0], "session_id": "0123456789ab"}]})
    if kind == "an exit code no process has":
        done = {"status": "done", "exit_code": 10**30, "result": {"content": []}}
        return _resealed(valid | {"session": {**valid["session"], **done}})
    if kind == "a task of the wrong shape":
        return _resealed(valid | {"session": {**valid["session"], "task": {"id": 5, "status": []}}})
    if kind == "answers in the clear":
        return _resealed(valid | {"rounds": [{**valid["rounds"][0], "answers": {"region": {"action": "accept"}}}]})
    box = {"kdf": "scrypt", "n": 2**20, "r": 32, "p": 16, "salt": "AA==", "cipher": "aes-256-gcm"}
    box |= {"nonce": "AAAAAAAAAAAAAAAA", "ciphertext": "AA=="}
    if kind == "huge scrypt cost":
        return _resealed(valid | {"answers": box})
    if kind == "scrypt cost of the wrong type":
        return _resealed(valid | {"answers": box | {"n": "1e9", "r": True}})
    if kind == "answers box not an object":
        return _resealed(valid | {"answers": "secret"})
    assert kind == "newer version"
    return _resealed(valid | {"version": 4})


HOSTILE = [
    "not json",
    "a list",
    "not a bundle",
    "nan",
    "deep nesting",
    "wrong types",
    "rounds not a list",
    "a round of another session",
    "an exit code no process has",
    "a task of the wrong shape",
    "answers in the clear",
    "huge scrypt cost",
    "scrypt cost of the wrong type",
    "answers box not an object",
    "newer version",
]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_bundle_gets_one_line_and_changes_nothing(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    export = cli("sessions", "export", waiting_provision(cli))
    bundle = tmp_path / "hostile.json"
    bundle.write_text(_hostile(kind, export.json()))
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    monkeypatch.setenv("MCPCLI_PASSPHRASE", "anything")
    r = cli("sessions", "import", str(bundle))
    assert r.code == 2, r.err
    assert "Traceback" not in r.err and "Internal error" not in r.err
    assert len([line for line in r.err.splitlines() if not line.startswith("hint:")]) == 1
    assert snapshot() == []


def test_importing_a_missing_file_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    r = cli("sessions", "import", str(tmp_path / "nope.json"))
    assert r.code == 2
    assert "Cannot read the bundle" in r.err


# --- a shared PostgreSQL store ---------------------------------------------------------------------------------------


def test_the_inbox_on_a_shared_postgresql_store_shows_every_machines_flows(
    cli: Any, pg_url: str, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPCLI_STORE", pg_url)
    session_id = waiting_provision(cli)
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))  # machine B, same store
    inbox = cli("sessions", "list", "--waiting", "--json")
    assert inbox.code == 0, inbox.err
    assert [(d["id"], list(d["pending"])) for d in inbox.json()] == [(session_id, ["region"])]
    shown = cli("sessions", "show", session_id[:5])
    assert shown.code == 0, shown.err
    assert "Which region should 'orders' be provisioned in?" in shown.out
    r = cli("resume", session_id, "--answer", "region=sa-east-1")
    assert r.code == 0, r.err
    assert r.out == "Provisioned 'orders' in sa-east-1.\n"
    assert cli("sessions", "list", "--waiting", "--json").json() == []
    assert cli("sessions", "prune", "--older-than", "0s", "--json").json()["removed"] == 1
    assert cli("sessions", "list", "--json").json() == []


# --- passphrases at a terminal ---------------------------------------------------------------------------------------


@pytest.fixture
def term() -> Iterator[Any]:
    """Spawn ``mcpcli`` on a pseudo-terminal (``test_terminal.Term``); any left running is killed at the end."""
    from test_terminal import Term

    spawned: list[Any] = []

    def spawn(*args: str) -> Any:
        spawned.append(Term(*args))
        return spawned[-1]

    yield spawn
    for t in spawned:
        if t.child.isalive():
            t.child.terminate(force=True)


@pytest.mark.slow
def test_at_a_terminal_the_passphrase_is_asked_hidden_twice_on_export_and_once_on_import(
    cli: Any, term: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = onboard_waiting_for_confirm(cli, tmp_path)
    bundle = tmp_path / "flow.json"
    mismatch = term("sessions", "export", session_id, "-o", str(bundle), "--include-answers")
    mismatch.answer("Passphrase for the answers: ", "one passphrase")
    mismatch.answer("Same passphrase again: ", "another one")
    assert mismatch.finish() == 2
    assert "differ" in mismatch.seen
    assert not bundle.exists()
    export = term("sessions", "export", session_id, "-o", str(bundle), "--include-answers")
    export.answer("Passphrase for the answers: ", "typed at the terminal")
    export.answer("Same passphrase again: ", "typed at the terminal")
    assert export.finish() == 0, export.seen
    assert "typed at the terminal" not in export.seen  # not echoed
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    imported = term("sessions", "import", str(bundle))
    imported.answer("Passphrase for the answers: ", "typed at the terminal")
    assert imported.finish() == 0, imported.seen
    assert f'passphrase = "{PASSPHRASE}"' in cli("sessions", "show", session_id, "--reveal").out


def test_importing_a_flow_whose_server_is_a_command_line_says_what_resume_would_run(
    cli: Any, tmp_path: Path, second_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    valid = cli("sessions", "export", waiting_provision(cli)).json()
    valid["session"]["server"] = "sh -c 'touch \x1b[31mpwned'"
    bundle = tmp_path / "crafted.json"
    bundle.write_text(_resealed(valid))
    monkeypatch.setenv("MCPCLI_HOME", str(second_home))
    r = cli("sessions", "import", str(bundle))
    assert r.code == 0, r.err
    assert "runs this command on this machine: sh -c 'touch \\x1b[31mpwned'" in r.err
    assert "-s TARGET" in r.err
