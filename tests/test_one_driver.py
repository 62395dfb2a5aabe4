"""Exactly one driver, nothing lost: racing resumes, transport deaths, protocol eras, broken stores, bundles from
elsewhere, and signals — each against real servers (HTTP on 127.0.0.1 or stdio) and real processes."""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, run_inprocess, stdio_server, wait_until
from test_durability import legs, spawn, wait_for_legs
from test_flows import only_session, store

from mcpcli.settings.config import Paths
from mcpcli.state.bundle import checksum
from mcpcli.state.store import open_store

pytestmark = pytest.mark.slow

# --- 1. two resumes at the same moment: exactly one sends ------------------------------------------------------------


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=90)
    return proc.returncode, out, err


def race_pairs(url: str, record: Path, pairs: int, *, delays: bool, seed: int, env: dict[str, str]) -> Counter[str]:
    """Start ``pairs`` flows (exit 3), resume each twice at once; return what the racers did, counted."""
    rng = random.Random(seed)
    batch = f"s{seed}-"
    outcomes: Counter[str] = Counter()
    ids = []
    for n in range(pairs):
        r = run_inprocess("call", "two_rounds", "-a", f"item={batch}{n}", "-s", url, "--no-input", "--json")
        assert r.code == 3, r.err
        ids.append(r.json()["session_id"])
    for n, session_id in enumerate(ids):
        first = spawn("resume", session_id, "--answer", "sure=true", env=env)
        if delays:
            time.sleep(rng.uniform(0, 0.25))
        second = spawn("resume", session_id, "--answer", "sure=true", env=env)
        results = [_finish(first), _finish(second)]
        winners = [
            r for r in results if r[0] == 0 and r[1] == f"recorded {batch}{n}\n" and "here is its result" not in r[2]
        ]
        assert len(winners) == 1, results
        (loser,) = [r for r in results if r is not winners[0]]
        code, out, err = loser
        assert "sending it again" not in err, results  # nobody re-sent a round somebody else had just sent
        if code == 6:
            assert "is being driven by" in err and "since" in err, results
            outcomes["busy"] += 1
        else:
            assert code == 0 and out == f"recorded {batch}{n}\n", results
            assert "finished by another run meanwhile" in err or "already finished" in err, results
            outcomes["replayed"] += 1
    retries = Counter(leg["item"] for leg in legs(record) if leg["state"] == "asked")
    outcomes["double sends"] = sum(1 for item, count in retries.items() if item.startswith(batch) and count > 1)
    outcomes["lost rounds"] = sum(1 for n in range(pairs) if retries[f"{batch}{n}"] == 0)
    return outcomes


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_fifty_racing_resume_pairs_send_each_round_exactly_once(
    engine: str, http_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    env: dict[str, str] = {}
    if engine == "postgres":
        env["MCPCLI_STORE"] = request.getfixturevalue("pg_url")
        monkeypatch.setenv("MCPCLI_STORE", env["MCPCLI_STORE"])
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record))
    plain = race_pairs(server.url, record, 25, delays=False, seed=1, env=env)
    jittered = race_pairs(server.url, record, 25, delays=True, seed=2, env=env)
    for outcome in (plain, jittered):
        assert outcome["double sends"] == 0 and outcome["lost rounds"] == 0, outcome
        assert outcome["busy"] + outcome["replayed"] == 25, outcome


def test_a_claim_made_from_a_stale_read_is_refused(tmp_path: Path) -> None:
    """The store level of the race: a process that read the session before another claimed (and finished) it
    cannot claim it on the strength of that old read."""
    from mcpcli.state.store import SessionChanged, SessionRecord

    s = open_store(None, tmp_path / "s.db")
    record = SessionRecord(
        server="demo", method="tools/call", name="t", arguments={}, protocol_version=None, status="waiting"
    )
    s.create(record)
    read_by_loser = s.get(record.id)
    lease = s.claim(record.id, host="h", pid=1, ttl=30, seen=s.get(record.id))
    s.update(record.id, status="done", result={"content": []}, exit_code=0, lease=lease, release=True)
    with pytest.raises(SessionChanged) as changed:
        s.claim(record.id, host="h", pid=2, ttl=30, seen=read_by_loser)
    assert changed.value.session.status == "done"
    assert s.get(record.id).version == lease.version  # nothing written


# --- 2. a transport death mid-request --------------------------------------------------------------------------------


def retry_in_flight(process: Any, http_server: Any, tmp_path: Path) -> tuple[Any, Any, subprocess.Popen[str]]:
    """A flow saved waiting, then a resume whose answered retry the (slow) server is still working on."""
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record), "--slow", "30")
    assert process("call", "two_rounds", "-a", "item=x", "-s", server.url).code == 3
    session = only_session()
    holder = spawn("resume", session.id, "--answer", "sure=true")
    wait_for_legs(record, 2)
    return server, session, holder


def test_an_http_server_killed_mid_request_leaves_a_resumable_session_said_in_one_line(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    server, session, holder = retry_in_flight(process, http_server, tmp_path)
    assert server.proc is not None
    server.proc.kill()  # the retry is in flight
    server.proc.wait()
    code, out, err = _finish(holder)
    assert code == 4, err
    assert out == ""
    assert "Internal error" not in err and "Traceback" not in err
    assert "The server closed the connection before answering" in err
    assert f"mcpcli resume {session.id}" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 2  # the line and its hint
    inbox = process("sessions", "list", "--waiting", "--json").json()
    assert [s["id"] for s in inbox] == [session.id]
    server.argv[server.argv.index("--slow") + 1] = "0"
    server.start()
    done = process("resume", session.id)
    assert done.code == 0, done.err
    assert done.out == "recorded x\n"
    assert "sending it again with the same answers" in done.err


@pytest.mark.cold_only
def test_a_driver_killed_mid_request_shows_as_interrupted_and_sits_in_the_inbox(
    process: Any, http_server: Any, tmp_path: Path
) -> None:
    _server, session, holder = retry_in_flight(process, http_server, tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert store().get(session.id).status == "running"  # nothing could be written: the process died
    wide = {"COLUMNS": "200"}
    listed = process("sessions", "list", env=wide)
    assert "interrupted" in listed.out
    as_json = process("sessions", "list", "--json").json()
    assert as_json[0]["status"] == "running" and as_json[0]["interrupted"] is True
    inbox = process("sessions", "list", "--waiting", env=wide)
    assert session.id in inbox.out and "interrupted" in inbox.out
    shown = process("sessions", "show", session.id)
    assert f"Session {session.id} · interrupted" in shown.out
    assert "sends the last answered round again" in shown.out


# --- 3. resume keeps the protocol era and the connection -------------------------------------------------------------


def _connected_with(session_id: str) -> list[str]:
    """The methods a session's recorded trace shows, in order."""
    lines = [json.loads(line) for line in store().trace_lines(session_id)]
    return [line["method"] for line in lines if line.get("dir") == "out" and "method" in line]


@pytest.mark.parametrize("how", ["flag", "negotiated"])
def test_a_legacy_era_flow_resumes_as_legacy_from_a_new_process_without_protocol(
    how: str, process: Any, http_demo: Any, tmp_path: Path
) -> None:
    server = http_demo()
    flag = ["--protocol", "legacy"] if how == "flag" else []
    target = server.url if how == "flag" else stdio_server("legacy_only")
    started = process("-s", target, *flag, "call", "provision", "-a", "name=old", "--no-input")
    assert started.code == 3, started.err
    session = only_session()
    assert session.protocol_version == "2025-11-25"
    assert session.connection is not None and session.connection["protocol"] == ("legacy" if flag else "auto")
    done = process("resume", session.id, "--answer", "region=eu-west-1", "-v")
    assert done.code == 0, done.err
    assert done.out == "Provisioned 'old' in eu-west-1.\n"
    assert "initialize" in done.err and "server/discover" not in done.err
    assert store().get(session.id).status == "done"


def test_a_failed_resume_never_marks_the_session_done(process: Any, http_demo: Any, tmp_path: Path) -> None:
    server = http_demo()
    assert process("-s", server.url, "--protocol", "legacy", "call", "provision", "-a", "name=a").code == 3
    session = only_session()
    server.stop()
    failed = process("resume", session.id, "--answer", "region=x")
    assert failed.code == 4
    assert store().get(session.id).status == "waiting"
    server.start()
    again = process("resume", session.id, "--answer", "region=x")
    assert again.code == 0, again.err
    assert "Provisioned 'a' in x." in again.out


def test_a_session_records_how_it_connected_and_never_a_header_value(process: Any, http_demo: Any) -> None:
    server = http_demo()
    r = process("-s", server.url, "-H", "X-Tenant: s3cr3t-value", "call", "provision", "-a", "name=h", "--no-input")
    assert r.code == 3, r.err
    session = only_session()
    assert session.connection == {
        "protocol": "auto",
        "kind": "http",
        "source": "url",
        "url": server.url,
        "headers": ["X-Tenant"],
    }
    db = Paths.from_env().store_file
    assert b"s3cr3t-value" not in db.read_bytes() + Path(f"{db}-wal").read_bytes()
    resumed = process("resume", session.id, "--answer", "region=r")
    assert resumed.code == 0, resumed.err
    assert "X-Tenant" in resumed.err and "-H" in resumed.err  # said once: it was sent before and is not now


# --- 4. nothing is sent before the store is known to work ------------------------------------------------------------


def test_a_corrupt_store_fails_before_anything_is_sent(process: Any, http_server: Any, tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record))
    db = Paths.from_env().store_file
    db.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    db.write_bytes(b"this is not a database at all" * 100)
    db.chmod(0o600)
    r = process("call", "two_rounds", "-a", "item=x", "-s", server.url)
    assert r.code == 4
    assert str(db) in r.err and "mv " in r.err
    assert "Internal error" not in r.err
    assert legs(record) == []  # the server saw nothing


def _run_as(home: Path, *args: str) -> tuple[int, str, str]:
    """Run the CLI so that file modes bind it: as root, without the capabilities that override them."""
    wrapper = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.getuid() == 0 else []
    env = {**os.environ, "MCPCLI_HOME": str(home)}
    if wrapper:  # fewer rights than the worker's: such a command runs as itself, in-process, by design
        env["MCPCLI_WORKER_REQUIRED"] = "0"
    proc = subprocess.run(
        [*wrapper, PY, "-m", "mcpcli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("broken", ["read-only file", "unreadable file", "read-only home"])
def test_an_unusable_store_fails_before_anything_is_sent_and_read_only_commands_still_work(
    broken: str, http_server: Any, tmp_path: Path
) -> None:
    home = tmp_path / "mcpcli"
    record = tmp_path / "legs.jsonl"
    server = http_server("recorder", "--record", str(record))
    code, out, err = _run_as(home, "call", "two_rounds", "-a", "item=first", "-s", server.url, "--no-input")
    assert code == 3, err
    sent_before = len(legs(record))
    db = home / "sessions.db"
    if broken == "read-only file":
        db.chmod(0o400)
    elif broken == "unreadable file":
        db.chmod(0o000)
    else:
        for p in [home, *home.rglob("*")]:
            p.chmod(0o500 if p.is_dir() else 0o400)
    try:
        code, out, err = _run_as(home, "call", "two_rounds", "-a", "item=x", "-s", server.url)
        assert code == 4, err
        assert str(db) in err and "Internal error" not in err, err
        assert len(legs(record)) == sent_before  # round 1 was not sent
        if broken == "unreadable file":
            return
        for command in (["sessions", "list"], ["paths"], ["tools", "-s", server.url]):
            code, out, err = _run_as(home, *command)
            assert code == 0, (command, err)
            assert "Internal error" not in err and "OSError" not in err
        code, out, err = _run_as(home, "sessions", "list", "--json")
        session_id = json.loads(out)[0]["id"]
        code, out, err = _run_as(home, "sessions", "show", session_id)
        assert code == 0 and session_id in out, err
        if broken == "read-only home":
            assert err.count("warning: not logging to") == 1
    finally:
        for p in [home, *home.rglob("*")]:
            p.chmod(0o700 if p.is_dir() else 0o600)


# --- 5. a bundle from elsewhere never runs a command unattended -----------------------------------------------------


def _crafted_bundle(tmp_path: Path, marker: Path) -> Path:
    """A real exported bundle whose server was edited into a command line, re-checksummed (a tamperer can)."""
    started = run_inprocess("call", "provision", "-a", "name=b", "--no-input", "--json")
    assert started.code == 3, started.err
    doc = run_inprocess("sessions", "export", started.json()["session_id"]).json()
    demo = shlex.join([PY, "-c", f"import pathlib; pathlib.Path({str(marker)!r}).touch()"])
    doc["session"]["server"] = demo
    doc["checksum"] = checksum(doc)
    bundle = tmp_path / "edited.json"
    bundle.write_text(json.dumps(doc))
    return bundle


def test_an_edited_bundle_with_a_command_line_never_runs_it_unattended(
    process: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    bundle = _crafted_bundle(tmp_path, marker)
    other = tmp_path / "machine-b" / "mcpcli"
    monkeypatch.setenv("MCPCLI_HOME", str(other))
    imported = process("sessions", "import", str(bundle), "--json")
    assert imported.code == 0, imported.err
    assert "asks before running it" in imported.err
    session_id = imported.json()["session_id"]
    refused = process("resume", session_id, "--answer", "region=x")
    assert refused.code == 2
    assert "--trust-server" in refused.err and "did not come from you" in refused.err
    assert not marker.exists()
    trusted = process("resume", session_id, "--answer", "region=x", "--trust-server")
    assert marker.exists()  # it ran (and, not being an MCP server, failed to connect)
    assert trusted.code == 4


def test_a_shared_store_row_from_another_machine_runs_its_command_only_once_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pexpect

    from mcpcli.state.store import SessionRecord

    marker = tmp_path / "ran"
    command = shlex.join([PY, "-c", f"import pathlib; pathlib.Path({str(marker)!r}).touch()"])
    row = SessionRecord(
        server=command, method="tools/call", name="t", arguments={}, protocol_version=None, status="waiting"
    )
    store().create(row)  # as another machine sharing the store would write it
    env = {**os.environ, "MCPCLI_ASSUME_TTY": "1"}
    child = pexpect.spawn(PY, ["-m", "mcpcli", "resume", row.id], env=env, cwd=str(ROOT), encoding="utf-8", timeout=30)
    child.expect("did not come from you")
    child.expect(r"Run it\? \[y/N\]")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 5
    assert not marker.exists()
    child = pexpect.spawn(PY, ["-m", "mcpcli", "resume", row.id], env=env, cwd=str(ROOT), encoding="utf-8", timeout=30)
    child.expect(r"Run it\? \[y/N\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert marker.exists()


def test_a_command_line_the_user_typed_resumes_without_asking(process: Any, tmp_path: Path) -> None:
    target = stdio_server("recorder", "--record", str(tmp_path / "legs.jsonl"))
    assert process("-s", target, "call", "two_rounds", "-a", "item=mine").code == 3
    done = process("resume", only_session().id, "--answer", "sure=true")
    assert done.code == 0, done.err
    assert done.out == "recorded mine\n"


# --- 6. signals ------------------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.cold_only
@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_and_sighup_save_the_session_and_stop_the_stdio_server(
    signum: int, code: int, said: str, tmp_path: Path
) -> None:
    record = tmp_path / "legs.jsonl"
    target = stdio_server("recorder", "--record", str(record), "--slow", "60")
    flow = spawn("-s", target, "call", "two_rounds", "-a", "item=x", "--answer", "sure=true")
    wait_for_legs(record, 2)  # the answered retry is in flight
    children = _children(flow.pid)
    assert children, "the stdio server should be running"
    flow.send_signal(signum)
    exit_code, _out, err = _finish(flow)
    assert exit_code == code, err
    session = only_session()
    assert f"{said}); session {session.id} saved" in err
    assert "may already have reached the server" in err and f"mcpcli resume {session.id}" in err
    assert wait_until(lambda: not any(map(_alive, children)), 10), "the stdio server outlived mcpcli"
    assert store().get(session.id).status == "waiting"


@pytest.mark.cold_only
def test_ctrl_c_before_any_input_request_does_not_claim_a_saved_session(tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    flow = spawn("-s", stdio_server("recorder", "--record", str(record)), "call", "sleepy", "-a", "seconds=60")
    wait_for_legs(record, 1)
    flow.send_signal(signal.SIGINT)
    code, _out, err = _finish(flow)
    assert code == 130, err
    assert "nothing was saved" in err
    assert "resume" not in err
    assert store().list() == []
