"""``mcpcli batch``: many flows in one process — against real servers (the demo in-process, over HTTP and over
stdio; tests/servers.py's recorder and pre-2026 ``legacy_only``), a real store and, once, the warm worker."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, Result, demo_stdio, run_inprocess, run_process, stdio_server

from mcpcli.commands.batch import MAX_FLOWS, MAX_LINE_BYTES
from mcpcli.settings.config import Paths
from mcpcli.state.store import open_store

REGION = "eu-west-1"


def jsonl(*flows: dict[str, Any]) -> str:
    return "".join(json.dumps(flow) + "\n" for flow in flows)


def provisions(n: int, **extra: Any) -> str:
    return jsonl(
        *({"tool": "provision", "arguments": {"name": f"svc{i}"}, "id": f"job-{i}", **extra} for i in range(n))
    )


def lines_of(r: Result) -> list[dict[str, Any]]:
    """Every stdout line, each a JSON object."""
    return [json.loads(line) for line in r.out.splitlines()]


def by_line(r: Result) -> dict[int, dict[str, Any]]:
    return {doc["line"]: doc for doc in lines_of(r)}


def text_of(doc: dict[str, Any]) -> str:
    return str(doc["result"]["content"][0]["text"])


def assert_all_provisioned(r: Result, n: int, region: str = REGION) -> None:
    assert r.code == 0, r.err
    docs = by_line(r)
    assert sorted(docs) == list(range(1, n + 1))
    for number, doc in docs.items():
        i = number - 1
        assert (doc["exit"], doc["status"], doc["id"]) == (0, "done", f"job-{i}")
        assert text_of(doc) == f"Provisioned 'svc{i}' in {region}."
        assert isinstance(doc["session_id"], str)  # the demo asks: every flow met a question, so has a session
    assert r.err.strip().splitlines()[-1] == f"{n} flows: {n} done."


# --- many flows, one process -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_twenty_flows_against_the_http_demo_all_finish_with_their_ids_echoed(http_demo: Any) -> None:
    server = http_demo()
    r = run_inprocess("batch", "-s", server.url, "--answer", f"region={REGION}", stdin=provisions(20))
    assert_all_provisioned(r, 20)


def test_twenty_flows_against_the_in_process_demo(cli: Any) -> None:
    r = cli("batch", "-s", "demo", "--answer", f"region={REGION}", "--jobs", "5", stdin=provisions(20))
    assert_all_provisioned(r, 20)
    sessions = open_store(None, Paths.from_env().store_file).list()
    assert len(sessions) == 20 and {s.status for s in sessions} == {"done"}
    assert all(s.lease_owner is None for s in sessions)  # every flow gave its lease back


@pytest.mark.slow
def test_twenty_flows_over_stdio_from_a_file(tmp_path: Path) -> None:
    batch = tmp_path / "flows.jsonl"
    batch.write_text("# provisioning\n\n" + provisions(20))
    r = run_process("batch", str(batch), "-s", demo_stdio(tmp_path / "demo.key"), "-A", f"region={REGION}")
    assert r.code == 0, r.err
    docs = lines_of(r)
    assert len(docs) == 20 and {d["status"] for d in docs} == {"done"}
    assert sorted(d["line"] for d in docs) == list(range(3, 23))  # the comment and the blank line are counted
    assert {text_of(d) for d in docs} == {f"Provisioned 'svc{i}' in {REGION}." for i in range(20)}


def test_flows_nobody_answers_wait_with_their_sessions_and_resume_finishes_one(cli: Any) -> None:
    r = cli("batch", "-s", "demo", stdin=provisions(3))
    assert r.code == 3, r.err
    docs = lines_of(r)
    assert {(d["exit"], d["status"]) for d in docs} == {(3, "input_required")}
    for doc in docs:
        assert set(doc["needs"]) == {"pending", "answers_template"}
        assert list(doc["needs"]["pending"]) == ["region"]
        assert doc["needs"]["answers_template"] == {"region.region": None}
    assert "3 flows: 0 done, 3 need input." in r.err
    assert "mcpcli sessions list --waiting" in r.err
    first = by_line(r)[1]
    waiting = {s.id: s.status for s in open_store(None, Paths.from_env().store_file).list()}
    assert set(waiting.values()) == {"waiting"} and set(waiting) == {d["session_id"] for d in docs}
    done = cli("resume", first["session_id"], "--answer", "region=x")
    assert (done.code, done.out) == (0, "Provisioned 'svc0' in x.\n"), done.err


def test_a_lines_own_answers_win_over_the_command_lines(cli: Any) -> None:
    stdin = jsonl(
        {"tool": "provision", "arguments": {"name": "a"}},
        {"tool": "provision", "arguments": {"name": "b"}, "answers": {"region": "us-east-2"}},
        {"tool": "provision", "arguments": {"name": "c"}, "answers": {"region.region": "ap-south-1"}},
        {"tool": "provision", "arguments": {"name": "d"}, "answers": {"region": {"action": "decline"}}},
    )
    r = cli("batch", "-s", "demo", "--answer", f"region={REGION}", stdin=stdin)
    docs = by_line(r)
    assert text_of(docs[1]) == f"Provisioned 'a' in {REGION}."
    assert text_of(docs[2]) == "Provisioned 'b' in us-east-2."
    assert text_of(docs[3]) == "Provisioned 'c' in ap-south-1."
    assert docs[4]["status"] in ("done", "tool_error") and "declin" in text_of(docs[4]).lower()


def test_an_unknown_tool_fails_its_own_line_and_the_others_go_on(cli: Any) -> None:
    stdin = jsonl({"tool": "provision", "arguments": {"name": "a"}, "id": 7}, {"tool": "nope", "id": [1, 2]})
    r = cli("batch", "-s", "demo", "-A", f"region={REGION}", stdin=stdin)
    assert r.code == 2
    docs = by_line(r)
    assert (docs[1]["exit"], docs[1]["id"]) == (0, 7)
    assert (docs[2]["exit"], docs[2]["status"], docs[2]["id"], docs[2]["session_id"]) == (2, "failed", [1, 2], None)
    assert "no tool 'nope'" in docs[2]["error"] and "provision" in docs[2]["error"]
    assert r.err.strip().splitlines()[-1] == "2 flows: 1 done, 1 failed."


def test_a_flow_whose_server_errors_exits_4_and_the_others_are_fine(tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    stdin = jsonl(
        {"tool": "sleepy", "arguments": {"seconds": 0}},
        {"tool": "refuse"},
        {"tool": "sleepy", "arguments": {"seconds": 0}},
    )
    r = run_inprocess("batch", "-s", stdio_server("recorder", "--record", str(record)), stdin=stdin)
    assert r.code == 4, r.err
    docs = by_line(r)
    assert [docs[n]["exit"] for n in (1, 2, 3)] == [0, 4, 0]
    assert docs[2]["status"] == "failed" and "refused on purpose" in docs[2]["error"]
    assert "\n" not in docs[2]["error"]
    assert r.err.strip().splitlines()[-1] == "3 flows: 2 done, 1 failed."


def test_no_flows_is_nothing_to_do(cli: Any) -> None:
    r = cli("batch", "-s", "demo", stdin="\n# nothing here\n")
    assert (r.code, r.out) == (0, "")
    assert "No flows in the input" in r.err


# --- checked before anything is sent ---------------------------------------------------------------------------------

GOOD = '{"tool": "two_rounds", "arguments": {"item": "x"}}\n'


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ('{"tool": "two_rounds", "arguments": {"item": "x"}\n', "not valid JSON"),
        ('["two_rounds"]\n', "a JSON array, not an object"),
        ('{"arguments": {"item": "x"}}\n', 'no "tool"'),
        ('{"tool": ""}\n', '"tool" must be a non-empty string'),
        ('{"tool": 3}\n', '"tool" must be a non-empty string'),
        ('{"tool": "two_rounds", "arguments": ["x"]}\n', '"arguments" must be an object'),
        ('{"tool": "two_rounds", "answers": "sure=true"}\n', '"answers" must be an object'),
        ('{"tool": "two_rounds", "answers": {"ok": {"action": "maybe"}}}\n', "action must be accept, decline"),
        ('{"tool": "two_rounds", "args": {}}\n', "unknown key 'args'"),
    ],
)
def test_a_malformed_line_exits_2_naming_it_and_nothing_is_sent(tmp_path: Path, bad: str, says: str) -> None:
    record = tmp_path / "legs.jsonl"
    target = stdio_server("recorder", "--record", str(record))
    r = run_inprocess("batch", "-s", target, "-A", "sure=true", stdin=GOOD + "# fine so far\n" + bad + GOOD)
    assert r.code == 2, (r.out, r.err)
    first = r.err.strip().splitlines()[0]
    assert first.startswith("Usage error: Batch input (stdin), line 3: ") and says in first, r.err
    assert "nothing was sent" in first
    assert json.loads(r.out)["error"]["exit_code"] == 2  # the error as data on stdout, as every --json command
    assert not record.exists()  # the recorder never saw a leg (it records each one)


def test_a_line_over_one_mib_exits_2_and_nothing_is_sent(tmp_path: Path) -> None:
    record = tmp_path / "legs.jsonl"
    huge = json.dumps({"tool": "two_rounds", "arguments": {"item": "x" * MAX_LINE_BYTES}})
    r = run_inprocess("batch", "-s", stdio_server("recorder", "--record", str(record)), stdin=GOOD + huge + "\n")
    assert r.code == 2
    assert "line 2: longer than 1 MiB" in r.err
    assert not record.exists()


def test_more_flows_than_the_bound_exit_2(cli: Any) -> None:
    r = cli("batch", "-s", "demo", stdin='{"tool": "echo"}\n' * (MAX_FLOWS + 1))
    assert r.code == 2 and f"more than {MAX_FLOWS} flows" in r.err
    assert open_store(None, Paths.from_env().store_file).list() == []


@pytest.mark.parametrize("jobs", ["0", "257", "many"])
def test_a_bad_jobs_value_is_a_usage_error(cli: Any, jobs: str) -> None:
    assert cli("batch", "-s", "demo", "--jobs", jobs, stdin=GOOD).code == 2


def test_answers_cannot_come_from_stdin_when_the_batch_does(cli: Any) -> None:
    r = cli("batch", "-s", "demo", "--answers", "-", stdin=GOOD)
    assert r.code == 2 and "--answers cannot be read from it too" in r.err


def test_help_teaches_the_input_format_and_the_exit_code(cli: Any) -> None:
    r = cli("batch", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert '{"tool": "provision", "arguments": {"name": "a"}, "answers": {"region": "eu-west-1"}, "id": 1}' in text
    assert "the highest exit code of a flow" in text
    assert "--jobs" in text and "--answer" in text and "--max-rounds" in text


# --- connections -----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_pre_2026_server_answers_every_flow_over_its_own_connection() -> None:
    stdin = jsonl(*({"tool": "provision", "arguments": {"name": f"l{i}"}, "id": i} for i in range(6)))
    r = run_inprocess("batch", "-s", stdio_server("legacy_only"), "-A", f"region={REGION}", "-j", "3", stdin=stdin)
    assert r.code == 0, r.err
    docs = lines_of(r)
    assert sorted(d["id"] for d in docs) == list(range(6))
    assert {text_of(d) for d in docs} == {f"Provisioned 'l{i}' in {REGION}." for i in range(6)}
    assert "each flow gets a connection of its own, 3 at a time" in r.err
    unanswered = run_inprocess("batch", "-s", stdio_server("legacy_only"), stdin=jsonl(*[{"tool": "provision"}]))
    (doc,) = lines_of(unanswered)
    assert (unanswered.code, doc["status"], list(doc["needs"]["pending"])) == (3, "input_required", ["elicitation-1"])


def test_a_pre_2026_flow_that_fails_without_its_answer_needs_input_in_its_line_and_resume_finishes_it() -> None:
    """fastmcp 4.x (tests/data/fastmcp_shop.py): ``order`` fails its call with an isError result when its question is
    refused, ``order_one`` finishes anyway. Through a real process, so the warm pass runs it through the worker."""
    shop = shlex.join([PY, str(Path(__file__).resolve().parent / "data" / "fastmcp_shop.py")])
    stdin = jsonl(
        {"tool": "order", "arguments": {"item": "mug"}, "id": "a"},
        {"tool": "order_one", "arguments": {"item": "cup"}, "id": "b"},
    )
    r = run_process("-s", shop, "--protocol", "legacy", "batch", "-", stdin=stdin)
    assert r.code == 3, r.err
    docs = {doc["id"]: doc for doc in lines_of(r)}
    parked, done = docs["a"], docs["b"]
    assert (parked["exit"], parked["status"], "result" in parked) == (3, "input_required", False), parked
    assert parked["needs"]["answers_template"] == {"elicitation-1.quantity": None}
    assert (done["exit"], done["status"]) == (0, "done"), done
    assert text_of(done).startswith("ordered 1 x cup") and "elicitation-1" in done["warning"]
    again = run_process("resume", parked["session_id"], "--answer", "quantity=5")
    assert (again.code, again.out) == (0, "ordered 5 x mug\n"), again.err


@pytest.mark.slow
def test_a_server_that_wants_to_call_back_gets_a_connection_per_flow() -> None:
    stdin = jsonl(*({"tool": "ask", "id": i} for i in range(3)))
    r = run_inprocess("batch", "-s", stdio_server("calls_back"), "-A", "n=7", stdin=stdin)
    assert r.code == 0, r.err
    assert {text_of(d) for d in lines_of(r)} == {"got accept 7"}
    assert len(lines_of(r)) == 3


def max_in_flight(record: Path) -> int:
    """The most ``nap`` calls the server was inside at one moment (from their enter/exit times)."""
    events = [json.loads(line) for line in record.read_text().splitlines()]
    marks = sorted((e["t"], 1 if e["at"] == "enter" else -1) for e in events if e["item"] == "nap")
    assert len(marks) == 20
    most = now = 0
    for _t, step in marks:
        now += step
        most = max(most, now)
    return most


@pytest.mark.slow
@pytest.mark.parametrize(("jobs", "expected"), [("10", 10), ("1", 1)])
def test_jobs_flows_are_in_flight_at_the_server_at_once(tmp_path: Path, jobs: str, expected: int) -> None:
    record = tmp_path / "legs.jsonl"
    stdin = jsonl(*({"tool": "nap", "arguments": {"seconds": 0.5}} for _ in range(10)))
    r = run_inprocess("batch", "-s", stdio_server("recorder", "--record", str(record)), "--jobs", jobs, stdin=stdin)
    assert r.code == 0, r.err
    assert max_in_flight(record) == expected


# --- warm ------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_batch_runs_warm_in_one_worker_child_and_prints_what_the_cold_one_does(home: Path, http_demo: Any) -> None:
    from test_worker import mcpcli, served

    from mcpcli.userdirs import socket_path

    server = http_demo()
    stdin = provisions(20)
    env = {"MCPCLI_WORKER": "1", "CI": ""}
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    assert mcpcli("worker", "start", env=env).returncode == 0
    try:
        before = served(socket_path())
        hot = mcpcli("batch", "-s", server.url, "-A", f"region={REGION}", input=stdin, env=env)
        assert served(socket_path()) == before + 1  # the whole batch was one command of the worker
        cold = mcpcli("batch", "-s", server.url, "-A", f"region={REGION}", input=stdin, env={"MCPCLI_WORKER": "0"})
    finally:
        mcpcli("worker", "stop", env=env)
    assert hot.returncode == cold.returncode == 0, (hot.stderr, cold.stderr)

    def results(out: str) -> list[tuple[int, str, str]]:
        docs = [json.loads(line) for line in out.splitlines()]
        return sorted((d["line"], d["id"], text_of(d)) for d in docs)

    assert results(hot.stdout) == results(cold.stdout)
    assert len(results(hot.stdout)) == 20
    assert hot.stderr.strip().splitlines()[-1] == cold.stderr.strip().splitlines()[-1] == "20 flows: 20 done."


# --- Ctrl-C ----------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_stops_every_running_flow_keeps_their_sessions_and_exits_130(tmp_path: Path) -> None:
    import signal
    import subprocess

    from conftest import PY, ROOT
    from test_durability import wait_for_legs

    record = tmp_path / "legs.jsonl"
    target = stdio_server("recorder", "--record", str(record), "--slow", "60")
    flows = tmp_path / "flows.jsonl"
    flows.write_text(jsonl(*({"tool": "two_rounds", "arguments": {"item": f"i{n}"}} for n in range(3))))
    proc = subprocess.Popen(
        [PY, "-m", "mcpcli", "batch", str(flows), "-s", target, "-A", "sure=true"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    wait_for_legs(record, 6)  # every flow's answered retry is at the (slow) server
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out == ""  # no flow finished
    assert "3 running flows stopped, 3 kept their sessions" in err
    sessions = open_store(None, Paths.from_env().store_file).list()
    assert len(sessions) == 3 and {s.status for s in sessions} == {"waiting"}
    assert all(s.lease_owner is None for s in sessions)


def test_an_input_over_64_mib_exits_2(cli: Any) -> None:
    comment = "#" + "x" * (MAX_LINE_BYTES - 1) + "\n"  # skipped lines count toward the bound too
    r = cli("batch", "-s", "demo", stdin=GOOD + comment * 64 + GOOD)
    assert r.code == 2 and "larger than 64 MiB" in r.err
    assert open_store(None, Paths.from_env().store_file).list() == []
