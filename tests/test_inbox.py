"""The team inbox: answers given apart from driving (``mcpcli answer``), who may give them, a driver that waits for
them (``--wait-for-answer``), the inbox listed and watched, and the announcements — on SQLite and PostgreSQL.

Races are counted in bounded loops: answerers racing for one round (exactly one wins, the others are told whom),
double sends at the server (a recorder server writes every leg), answers lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, wait_until
from test_announce import Bus
from test_announce import session_bus as session_bus  # the fixture: a D-Bus session bus with a listener

from mcpcli.state.store import SqliteStore, open_store
from mcpcli.state.store.base import AlreadyAnswered, NotWaiting, SessionRecord

pytestmark = pytest.mark.slow

FORM = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Deploy to production?",
        "requestedSchema": {"type": "object", "properties": {"sure": {"type": "boolean"}}},
    },
}
SAMPLING = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 10}}


def _waiting(store: Any, *, requests: dict[str, Any] | None = None, **fields: Any) -> str:
    session = SessionRecord(
        server="http://127.0.0.1:1/mcp", method="tools/call", name="deploy", arguments={}, protocol_version=None,
        status="running", **fields,
    )  # fmt: skip
    store.add_round(
        session.id, attempt=1, requests=requests or {"confirm": FORM}, request_state="s", new_session=session
    )
    return session.id


def _stores(kind: str, tmp_path: Path, pg_url: str | None) -> tuple[Any, Any]:
    """A store and a factory of other connections to it (another process, another machine)."""
    if kind == "sqlite":
        path = tmp_path / "store" / "sessions.db"
        path.parent.mkdir(mode=0o700)
        return SqliteStore(path), lambda: SqliteStore(path)
    assert pg_url is not None
    return open_store(pg_url, tmp_path), lambda: open_store(pg_url, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    store, other = _stores(request.param, tmp_path, pg_url)
    yield store, other
    store.close()


# --- the store: one answer wins a round -------------------------------------------------------------------------------


def test_one_answer_wins_a_round_and_the_others_are_told_whose(stores: Any) -> None:
    store, other = stores
    racers = [other() for _ in range(4)]
    wins: Counter[str] = Counter()
    mixed = lost = told = 0
    try:
        for _ in range(50):
            sid = _waiting(store)
            barrier = threading.Barrier(len(racers))

            def answer(n: int, sid: str = sid, barrier: threading.Barrier = barrier) -> str | None:
                barrier.wait()
                try:
                    racers[n].answer_round(sid, 1, {"confirm": {"action": "accept", "content": {"sure": n % 2 == 0}}},
                                           by=f"person{n}", complete=True)  # fmt: skip
                except AlreadyAnswered as exc:
                    return exc.by
                return None

            with ThreadPoolExecutor(len(racers)) as pool:
                told_by = list(pool.map(answer, range(len(racers))))
            winners = [f"person{n}" for n, by in enumerate(told_by) if by is None]
            assert len(winners) == 1, told_by
            wins[winners[0]] += 1
            told += sum(by == winners[0] for by in told_by if by is not None)
            last = store.last_round(sid)
            expected = {"confirm": {"action": "accept", "content": {"sure": int(winners[0][-1]) % 2 == 0}}}
            mixed += last.answers != expected or last.answered_by != winners[0]
            lost += last.answered is None or store.get(sid).answered_by != winners[0]
    finally:
        for racer in racers:
            racer.close()
    assert (mixed, lost, told) == (0, 0, 50 * (len(racers) - 1))


def test_only_the_open_round_of_a_waiting_session_takes_answers(stores: Any) -> None:
    store, _ = stores
    sid = _waiting(store)
    store.record_answers(sid, 1, {"confirm": {"action": "decline"}})  # its owner's run answered it meanwhile
    with pytest.raises(NotWaiting):
        store.answer_round(sid, 1, {"confirm": {"action": "accept"}}, by="bob", complete=True)
    partly = _waiting(store, requests={"confirm": FORM, "llm": SAMPLING})
    got = store.answer_round(partly, 1, {"confirm": {"action": "accept"}}, by="bob", complete=False)
    assert got.answered is None and got.answered_by == "bob" and store.get(partly).answered_by == "bob"
    assert store.last_round(partly).still_open() == {"llm": SAMPLING}  # left to the owner's driver


def test_the_store_watch_sees_another_connection_answer(stores: Any) -> None:
    store, other = stores
    sid = _waiting(store)
    watch = store.watch()
    writer = other()
    try:
        assert watch.wait(0.2) == set() or True  # whatever came before the watch started
        started = time.monotonic()
        writer.answer_round(sid, 1, {"confirm": {"action": "accept"}}, by="bob", complete=True)
        seen = watch.wait(5.0)
        assert seen is None or sid in seen
        assert time.monotonic() - started < 1.0
    finally:
        watch.close()
        writer.close()


# --- who may answer ---------------------------------------------------------------------------------------------------


def _run(
    home: Path, *args: str, user: str, env: dict[str, str] | None = None, timeout: float = 60, stdin: str = ""
) -> Any:
    return subprocess.run(
        [PY, "-m", "mcpcli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_USER": user, **(env or {})},
    )


def _config(home: Path, text: str) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_routes_groups_and_self_answers(home: Path) -> None:
    _config(home, '[inbox.groups]\nops = ["bob", "dana@build-1"]\n')
    parked = _run(home, "call", "provision", "-a", "name=orders", "--no-input", "--json", "--ask", "ops",
                  "--no-self-answer", user="alice")  # fmt: skip
    assert parked.returncode == 3, parked.stderr
    sid = json.loads(parked.stdout)["session_id"]
    mine = json.loads(_run(home, "inbox", "--json", user="bob").stdout)
    assert [d["session_id"] for d in mine] == [sid]
    assert mine[0]["owner"] == "alice" and mine[0]["ask"] == ["ops"] and mine[0]["asks"][0]["key"] == "region"
    assert json.loads(_run(home, "inbox", "--json", user="carol").stdout) == []
    assert [d["session_id"] for d in json.loads(_run(home, "inbox", "--all", "--json", user="carol").stdout)] == [sid]
    own = _run(home, "answer", sid, "--answer", "region=eu", user="alice")
    assert own.returncode == 2 and "must be answered by someone else (ops)" in own.stderr, own.stderr
    stranger = _run(home, "answer", sid, "--answer", "region=eu", user="carol")
    assert stranger.returncode == 2 and "This flow asks ops; you are carol." in stranger.stderr
    bad = _run(home, "answer", sid, "--answer", "nosuch=1", user="dana")
    assert bad.returncode == 2, bad.stderr  # checked against the round's schema: nothing stored
    good = _run(home, "answer", sid, "--answer", "region=eu-west-1", "--json", user="dana")
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["answered_by"] == "dana"
    again = _run(home, "answer", sid, "--answer", "region=us", user="bob")
    assert again.returncode == 6 and "already answered by dana" in again.stderr
    listed = json.loads(_run(home, "sessions", "list", "--json", user="bob").stdout)
    assert listed[0]["answered_by"] == "dana" and listed[0]["owner"] == "alice"
    done = _run(home, "resume", sid, "--no-input", user="alice")
    assert done.returncode == 0 and "Provisioned 'orders' in eu-west-1." in done.stdout, done.stderr
    assert "answered by dana" in done.stderr
    shown = json.loads(_run(home, "sessions", "show", sid, "--json", user="bob").stdout)
    assert shown["rounds"][0]["answered_by"] == "dana" and shown["session"]["routing"]["no_self_answer"] is True


def test_a_route_in_config_asks_a_group_and_forbids_self_answers(home: Path) -> None:
    _config(home, '[[inbox.routes]]\nserver = "demo"\ntool = "provision"\nask = ["ops"]\nno_self_answer = true\n')
    parked = _run(home, "call", "provision", "-a", "name=x", "--no-input", "--json", user="alice")
    sid = json.loads(parked.stdout)["session_id"]
    refused = _run(home, "answer", sid, "--answer", "region=eu", user="alice")
    assert refused.returncode == 2 and "someone else" in refused.stderr
    other = _run(home, "call", "provision", "-a", "name=y", "--no-input", "--json", "-s", "demo", user="alice")
    assert json.loads(_run(home, "sessions", "show", json.loads(other.stdout)["session_id"], "--json", user="x")
                      .stdout)["session"]["routing"]["ask"] == ["ops"]  # fmt: skip


# --- a driver that waits for an answer --------------------------------------------------------------------------------


def _spawn(home: Path, *args: str, user: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "mcpcli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_USER": user, **(env or {})},
    )


def _asks(home: Path) -> list[str]:
    docs = json.loads(_run(home, "inbox", "--all", "--json", user="x").stdout or "[]")
    return [ask["key"] for ask in docs[0]["asks"]] if docs else []


def _session_of(home: Path, user: str = "x") -> str | None:
    docs = json.loads(_run(home, "inbox", "--all", "--json", user=user).stdout or "[]")
    return docs[0]["session_id"] if docs else None


def test_a_waiting_driver_sends_the_answer_once_it_lands(home: Path, http_server: Any, tmp_path: Path) -> None:
    record = tmp_path / "legs.ndjson"
    url = http_server("recorder", "--record", str(record)).url
    driver = _spawn(home, "call", "two_rounds", "-a", "item=a", "-s", url, "--wait-for-answer=60", user="alice")
    assert wait_until(lambda: _session_of(home) is not None, 30)
    sid = _session_of(home)
    assert sid is not None
    answered = _run(home, "answer", sid, "--answer", "sure=true", user="bob")
    assert answered.returncode == 0, answered.stderr
    out, err = driver.communicate(timeout=60)
    assert driver.returncode == 0, err
    assert out.strip() == "recorded a"
    assert "waits for an answer" in err and "was answered by bob" in err
    legs = [json.loads(line) for line in record.read_text().splitlines()]
    assert [leg["state"] for leg in legs] == [None, "asked"]  # one question, one answered leg: no double send


def test_a_waiting_driver_gives_up_at_its_bound_with_the_usual_document(home: Path) -> None:
    started = time.monotonic()
    parked = _run(home, "call", "provision", "-a", "name=x", "--wait-for-answer=1.5", "--json", user="alice")
    assert parked.returncode == 3, parked.stderr
    assert 1.5 <= time.monotonic() - started < 30
    doc = json.loads(parked.stdout)
    assert doc["status"] == "input_required" and "region.region" in doc["answers_template"]


def test_ctrl_c_stops_a_waiting_driver_and_keeps_its_session(home: Path) -> None:
    driver = _spawn(home, "call", "provision", "-a", "name=x", "--wait-for-answer", user="alice")
    assert wait_until(lambda: _session_of(home) is not None, 30)
    time.sleep(0.3)
    driver.send_signal(signal.SIGINT)
    _out, err = driver.communicate(timeout=30)
    assert driver.returncode == 130, err
    assert "Traceback" not in err
    sid = _session_of(home)
    assert sid is not None  # still waiting: a later answer and resume finish it
    assert _run(home, "answer", sid, "--answer", "region=eu", user="bob").returncode == 0
    assert _run(home, "resume", sid, user="alice").returncode == 0


def test_a_bare_wait_for_answer_and_a_bad_one(home: Path) -> None:
    bad = _run(home, "call", "provision", "-a", "name=x", "--wait-for-answer=0", user="alice")
    assert bad.returncode == 2 and "positive number of seconds" in bad.stderr


# --- announcements ----------------------------------------------------------------------------------------------------


class _Receiver(BaseHTTPRequestHandler):
    got: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).got.append({"body": json.loads(body), "headers": dict(self.headers)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_each_channel_hears_park_answer_and_finish_exactly_once_and_no_secret(
    home: Path,
    tmp_path: Path,
    session_bus: Bus,
) -> None:
    got: list[dict[str, Any]] = []
    handler = type("Receiver", (_Receiver,), {"got": got})
    web = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    hooked = tmp_path / "hook.ndjson"
    hook = tmp_path / "hook.py"
    hook.write_text(f"import sys\nopen({str(hooked)!r}, 'a').write(sys.stdin.read())\n")
    _config(
        home,
        f'[inbox]\nnotify = ["webhook", "command", "desktop"]\nwebhook = "http://127.0.0.1:{web.server_port}/hook/"\n'
        f"notify_command = {json.dumps(f'{sys.executable} {hook}')}\n",
    )
    secret_env = {
        "MCPCLI_STORE_KEY": "k" * 40,
        "API_TOKEN": "tok-SECRET-123",
        "DBUS_SESSION_BUS_ADDRESS": session_bus.address,
    }
    driver = _spawn(home, "call", "unlock", "-a", "door=front", "-s", f"{PY} tests/servers.py vault",
                    "--wait-for-answer=60", user="alice", env=secret_env)  # fmt: skip
    try:
        assert wait_until(lambda: _session_of(home) is not None, 30)
        sid = _session_of(home)
        assert sid is not None
        first = _run(home, "answer", sid, "--answer", "user=al", "--answer", "password=hunter2", user="bob",
                     env=secret_env)  # fmt: skip
        assert first.returncode == 0, first.stderr
        assert wait_until(lambda: _asks(home) == ["sure"], 30)  # the next question (its server may start over)
        second = _run(home, "answer", sid, "--answer", "yes=true", user="bob", env=secret_env)
        assert second.returncode == 0, second.stderr
        out, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
        web.shutdown()
    assert driver.returncode == 0, err
    assert "unlocked front for al with hunter2" in out
    assert wait_until(lambda: len(got) >= 5, 10)
    events = [g["body"]["mcpcli"]["event"] for g in got]
    hooked_events = [json.loads(line)["event"] for line in hooked.read_text().splitlines()]
    assert Counter(events) == Counter(hooked_events) == Counter({"waiting": 2, "answered": 2, "done": 1})
    assert wait_until(lambda: len(session_bus.notifications) >= 5, 10)
    time.sleep(0.3)
    assert len(session_bus.notifications) == 5  # each park, answer and finish once on the desktop too
    everything = json.dumps(got) + hooked.read_text() + repr(session_bus.notifications)
    for secret in ("hunter2", "tok-SECRET-123", "k" * 40, "requestState", "request_state", "Authorization"):
        assert secret not in everything
    assert f"mcpcli answer {sid}" in everything


# --- the inbox, live --------------------------------------------------------------------------------------------------


def test_inbox_watch_follows_two_hundred_flows_with_bounded_memory(home: Path, tmp_path: Path) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    store = SqliteStore(home / "sessions.db")
    ids = [_waiting(store, owner="alice") for _ in range(200)]
    watcher = _spawn(home, "inbox", "--all", "--watch", "--json", "--count", "400", "--for", "120", user="bob")
    try:
        lines: list[dict[str, Any]] = []
        assert watcher.stdout is not None
        while len(lines) < 200:
            lines.append(json.loads(watcher.stdout.readline()))
        for sid in ids:
            store.answer_round(sid, 1, {"confirm": {"action": "accept", "content": {"sure": True}}}, by="bob",
                               complete=True)  # fmt: skip
        while len(lines) < 400:
            lines.append(json.loads(watcher.stdout.readline()))
        rss = _rss_mib(watcher.pid)
        watcher.wait(timeout=30)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        store.close()
    assert watcher.returncode == 0
    assert Counter(d["status"] for d in lines) == Counter({"waiting": 200, "answered": 200})
    assert {d["session_id"] for d in lines if d["status"] == "answered"} == set(ids)
    assert rss < 200, rss


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_a_batch_waits_for_the_answers_of_its_lines(home: Path, http_server: Any, tmp_path: Path) -> None:
    record = tmp_path / "legs.ndjson"
    url = http_server("recorder", "--record", str(record)).url
    lines = "".join(json.dumps({"tool": "two_rounds", "arguments": {"item": f"b{n}"}}) + "\n" for n in range(3))
    flows = tmp_path / "flows.jsonl"
    flows.write_text(lines)
    batch = _spawn(home, "batch", str(flows), "-s", url, "--wait-for-answer=60", user="alice")

    def waiting() -> list[str]:
        docs = json.loads(_run(home, "inbox", "--all", "--json", user="x").stdout or "[]")
        return [d["session_id"] for d in docs if d["status"] == "waiting"]

    assert wait_until(lambda: len(waiting()) == 3, 60)
    for sid in waiting():
        assert _run(home, "answer", sid, "--answer", "sure=true", user="bob").returncode == 0
    out, err = batch.communicate(timeout=60)
    assert batch.returncode == 0, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert sorted(d["status"] for d in docs) == ["done"] * 3, docs
    answered = Counter(leg["item"] for leg in map(json.loads, record.read_text().splitlines()) if leg["state"])
    assert answered == Counter({"b0": 1, "b1": 1, "b2": 1})  # each answered round sent once


def test_a_route_can_ask_the_owner_to_confirm_anothers_answers(home: Path) -> None:
    _config(home, '[[inbox.routes]]\ntool = "provision"\nconfirm = true\n')

    def parked_and_answered() -> str:
        parked = _run(home, "call", "provision", "-a", "name=orders", "--no-input", "--json", user="alice")
        sid = json.loads(parked.stdout)["session_id"]
        assert _run(home, "answer", sid, "--answer", "region=eu-west-1", user="bob").returncode == 0
        return sid

    sid = parked_and_answered()
    nobody = _run(home, "resume", sid, "--no-input", user="alice")
    assert nobody.returncode == 3 and "asks you to confirm" in nobody.stderr, nobody.stderr
    yes = _run(home, "resume", sid, user="alice", env={"MCPCLI_ASSUME_TTY": "1"}, stdin="y\n")
    assert yes.returncode == 0 and "Provisioned 'orders' in eu-west-1." in yes.stdout, yes.stderr
    assert "bob answered this round" in yes.stderr and "region = eu-west-1" in yes.stderr
    sid = parked_and_answered()
    no = _run(home, "resume", sid, user="alice", env={"MCPCLI_ASSUME_TTY": "1"}, stdin="n\n")
    assert "answers were not sent" in no.stderr, no.stderr
    assert no.returncode != 0  # then asked here, and nobody typed a region
    assert json.loads(_run(home, "sessions", "list", "--json", user="x").stdout)[0]["answered_by"] is None


def test_the_skill_is_an_agent_skill_naming_only_real_commands(home: Path) -> None:
    import re

    shown = _run(home, "skill", user="x")
    assert shown.returncode == 0
    text = shown.stdout
    assert text == (ROOT / "mcpcli" / "SKILL.md").read_text()
    head = text.split("---")[1]
    assert re.search(r"^name: mcpcli$", head, re.M) and re.search(r"^description: .{40,1024}$", head, re.M)
    commands = set(re.findall(r"`mcpcli ([a-z]+)\b", text)) | set(re.findall(r"^mcpcli ([a-z]+)\b", text, re.M))
    assert {"call", "answer", "resume", "inbox"} <= commands
    for command in commands:
        helped = _run(home, command, "--help", user="x")
        assert helped.returncode == 0, (command, helped.stderr)
    helps = _run(home, "call", "--help", user="x").stdout + _run(home, "resume", "--help", user="x").stdout
    for option in set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", text)) - {"--help"}:
        assert option in helps, option
