"""The warm worker: the same command, the same terminal, the same output and exit codes — only faster; and a
worker that is missing, stale, of another version, hung or killed never loses or doubles a command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import PY, ROOT, cannot_run_here, gone, stdio_server, wait_until
from test_durability import wait_for_legs
from test_flows import only_session, store

from mcpcli.framing import receive, send
from mcpcli.userdirs import socket_path

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def worker_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A worker directory of this test's own (a fresh stamp, no socket left by another test's fake worker);
    removed afterwards — a worker still listening there sees its socket gone and exits."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="mcpcli-wt-"))
    monkeypatch.setenv("MCPCLI_WORKER_DIR", str(directory))
    yield directory
    if socket_path().exists():
        mcpcli("worker", "stop")
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def warm(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The worker on (the other tests run cold), started and answering; stopped afterwards."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    started = mcpcli("worker", "start")
    assert started.returncode == 0, started.stderr
    yield socket_path()
    mcpcli("worker", "stop")


def mcpcli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "mcpcli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=60,
        **kw,
    )


def served(path: Path) -> int:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(path))
    with sock:
        send(sock, {"op": "status"})
        return int(receive(sock)[0]["served"])


def test_a_warm_command_prints_and_exits_exactly_as_the_cold_one(warm: Path, tmp_path: Path) -> None:
    cases = [
        ("call", "echo", "-a", "text=hi"),
        ("call", "provision", "-a", "name=w", "--answer", "region=eu-west-1"),
        ("call", "provision", "-a", "name=w", "--no-input", "--json"),
        ("call", "no_such_tool"),
        ("--json", "tools"),
    ]
    for args in cases:
        before = served(warm)
        hot = mcpcli(*args)
        cold = mcpcli(*args, env={"MCPCLI_WORKER": "0"})
        assert served(warm) == before + 1, args  # the warm one really went through the worker
        assert hot.returncode == cold.returncode, (args, hot.stderr, cold.stderr)
        strip = (lambda text: text.replace(json.loads(text)["session_id"], "ID")) if "--no-input" in args else str
        assert strip(hot.stdout) == strip(cold.stdout), args
        assert _no_ids(hot.stderr) == _no_ids(cold.stderr), args


def _no_ids(text: str) -> str:
    import re

    return re.sub(r"\b[0-9a-f]{12}\b", "ID", text)


def test_the_callers_environment_and_directory_apply_to_each_call(warm: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"region": "sa-east-1"}))
    record = tmp_path / "legs.jsonl"
    env = {"MCPCLI_SERVER": stdio_server("recorder", "--record", "legs.jsonl")}
    r = mcpcli("call", "two_rounds", "-a", "item=here", "--answers", "answers.json", env=env, cwd=tmp_path)
    assert r.returncode == 3  # the recorder asks `sure`, not `region`: exit 3 and a session
    assert record.exists()  # the server ran in the caller's directory (its relative --record path)
    r = mcpcli("call", "provision", "-a", "name=p", "--answers", "answers.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Provisioned 'p' in sa-east-1.\n"  # the relative answers file, from the caller's cwd


def test_prompts_are_asked_at_the_callers_terminal_and_ctrl_c_stops_that_flow_only(warm: Path) -> None:
    env = {**os.environ}
    child = pexpect.spawn(
        PY,
        ["-m", "mcpcli", "call", "provision", "-a", "name=tty"],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=30,
    )
    child.expect("region")
    child.sendline("ap-south-1")
    child.expect(r"Send\?")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Provisioned 'tty' in ap-south-1." in (child.before or "")
    other = pexpect.spawn(
        PY, ["-m", "mcpcli", "call", "provision", "-a", "name=c"], env=env, cwd=str(ROOT), encoding="utf-8", timeout=30
    )
    other.expect("› ")  # at the prompt (as a person would be)
    other.sendintr()
    other.expect(pexpect.EOF)
    other.close()
    assert other.exitstatus == 130
    assert "Interrupted; session" in (other.before or "")
    (stopped,) = [s for s in store().list() if s.arguments == {"name": "c"}]
    assert stopped.status == "waiting"
    assert mcpcli("worker", "status").returncode == 0  # the worker lives on


def retry_in_flight(tmp_path: Path, item: str) -> tuple[subprocess.Popen[str], Path]:
    """A warm call whose answered retry the (slow) stdio server is still working on, and the server's leg log."""
    record = tmp_path / "legs.jsonl"
    target = stdio_server("recorder", "--record", str(record), "--slow", "60")
    front = subprocess.Popen(
        [PY, "-m", "mcpcli", "-s", target, "call", "two_rounds", "-a", f"item={item}", "--answer", "sure=true"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_legs(record, 2)
    return front, record


def test_a_killed_front_end_hangs_up_its_flow_and_the_session_is_kept(warm: Path, tmp_path: Path) -> None:
    front, _record = retry_in_flight(tmp_path, "x")
    front.send_signal(signal.SIGKILL)
    front.wait()
    assert wait_until(lambda: not (store().list() and store().list()[0].status == "running"), 10)
    assert only_session().status == "waiting"  # SIGHUP'd like a closed terminal: saved, resumable


def test_a_stale_socket_is_cleaned_up_and_a_missing_worker_starts_on_first_use(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    path = socket_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # a socket file nobody listens on: a worker that crashed
    try:
        first = mcpcli("call", "echo", "-a", "text=one", env={"MCPCLI_WORKER_WINDOW": "0"})
        assert (first.returncode, first.stdout) == (0, "one\n")  # run in-process, the worker starting meanwhile
        deadline = time.monotonic() + 20
        while mcpcli("worker", "status", "--json").stdout.find('"running": true') < 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        second = mcpcli("call", "echo", "-a", "text=two")
        assert (second.returncode, second.stdout) == (0, "two\n")
        assert served(path) == 1
    finally:
        mcpcli("worker", "stop")


def test_a_worker_of_another_version_is_replaced_not_used(warm: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(warm))
    with sock:
        send(sock, {"op": "hello", "version": "0.0.0-other", "package": "/elsewhere"})
        reply, _ = receive(sock)
    assert reply["ok"] is False and reply["why"] == "version"
    assert wait_until(lambda: not warm.exists(), 10), "it did not step aside for the other install"
    r = mcpcli("call", "echo", "-a", "text=after")
    assert (r.returncode, r.stdout) == (0, "after\n")


def test_a_hung_worker_does_not_hang_the_front_end(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    path = socket_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(str(path))
    mute.listen(8)  # accepts (the kernel does) but never answers
    try:
        start = time.monotonic()
        r = mcpcli("call", "echo", "-a", "text=anyway")
        took = time.monotonic() - start
        assert (r.returncode, r.stdout) == (0, "anyway\n")
        assert "did not answer; running without it" in r.stderr
        assert took < 15
    finally:
        mute.close()


BUSY_WORKER = """
import json, os, socket, struct, sys, time

def send(sock, message):
    body = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(body)) + body)

listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(8)
print("listening", flush=True)
conn, _ = listener.accept()
until = time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:  # busy, not hung: its CPU time grows
    pass
send(conn, {"ok": True})
send(conn, {"started": os.getpid()})
conn.recv(65536)  # the greeting, the request and "go"
send(conn, {"exit": 0})
time.sleep(1)
"""


def test_a_busy_worker_is_waited_for_where_a_silent_one_is_given_up(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hundred commands at once load the machine: a worker slower than the front end's answer timeout but busy
    must not send each command to run in-process too (each fallback loads the machine more)."""
    from mcpcli.warm import ANSWER_TIMEOUT

    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    path = socket_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    busy = subprocess.Popen([PY, "-c", BUSY_WORKER, str(path), str(ANSWER_TIMEOUT + 1.5)], stdout=subprocess.PIPE)
    try:
        assert busy.stdout is not None and busy.stdout.readline() == b"listening\n"
        start = time.monotonic()
        r = mcpcli("call", "echo", "-a", "text=never-run-here")
        took = time.monotonic() - start
        assert "did not answer" not in r.stderr
        assert (r.returncode, r.stdout) == (0, "")  # the (fake) worker ran it: nothing ran in this process
        assert took > ANSWER_TIMEOUT
    finally:
        busy.kill()
        busy.wait()


def test_many_commands_at_once_are_all_served_by_the_worker(warm: Path) -> None:
    """Forty commands at once, each answered in its own words, none run in-process for want of an answer."""
    procs = [
        subprocess.Popen(
            [PY, "-m", "mcpcli", "call", "echo", "-a", f"text=call-{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(40)
    ]
    outcomes = [(p.communicate(timeout=120), p.returncode) for p in procs]
    for n, ((out, err), code) in enumerate(outcomes):
        assert (code, out) == (0, f"call-{n}\n"), err
        assert "did not answer" not in err
    assert served(warm) >= 40


def test_a_preloaded_worker_child_imports_nothing_to_run_a_call(tmp_path: Path) -> None:
    """What keeps a warm call fast: everything a command needs is imported before the fork (a module imported
    in each child cost it up to 0.15 s — jsonschema alone 0.1 s). A batch too."""
    batch = tmp_path / "flows.jsonl"
    batch.write_text('{"tool": "provision", "arguments": {"name": "b"}}\n')
    script = (
        "import sys\n"
        "from mcpcli.worker import server\n"
        "server.preload()\n"
        "before = set(sys.modules)\n"
        "code = server._run(['call', 'provision', '-a', 'name=x', '--answer', 'region=r'])\n"
        "code += server._run(['tools'])\n"
        f"code += server._run(['batch', {str(batch)!r}, '--answer', 'region=r'])\n"
        "print(sorted(set(sys.modules) - before), code, file=sys.stderr)\n"
    )
    r = subprocess.run([PY, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stdout.startswith("Provisioned 'x' in r.\n")
    assert '"text":"Provisioned \'b\' in r."' in r.stdout
    assert r.stderr.splitlines()[-1] == "[] 0", r.stderr


def test_a_worker_child_killed_mid_flow_is_one_line_and_the_session_resumes(warm: Path, tmp_path: Path) -> None:
    front, record = retry_in_flight(tmp_path, "k")
    worker_pid = json.loads(mcpcli("worker", "status", "--json").stdout)["pid"]
    children = subprocess.run(["pgrep", "-P", str(worker_pid)], capture_output=True, text=True).stdout.split()
    assert children
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    _out, err = front.communicate(timeout=30)
    assert front.returncode == 4
    assert "died before it finished" in err and "sessions list --waiting" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1
    done = mcpcli("resume", only_session().id, "-s", stdio_server("recorder", "--record", str(record)))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "recorded k\n"


def test_the_socket_is_private_and_other_users_are_refused(warm: Path) -> None:
    assert warm.stat().st_mode & 0o777 == 0o600
    assert warm.parent.stat().st_mode & 0o777 == 0o700
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        cannot_run_here("the refusal of another user's connection", "it needs root and setpriv to be another user")
    # A worker of its own in a place another user can reach, its socket opened up: SO_PEERCRED still refuses.
    home = Path(f"/tmp/mcpcli-peer-{os.getpid()}")
    home.mkdir(mode=0o711)
    env = {**os.environ, "MCPCLI_HOME": str(home), "MCPCLI_WORKER_DIR": str(home / "w")}
    server = subprocess.Popen([PY, "-m", "mcpcli.worker.server", str(home)], cwd=ROOT, env=env)
    path = socket_path(env)
    try:
        assert wait_until(lambda: path.exists(), 20)
        path.parent.chmod(0o711)
        path.chmod(0o666)
        probe = (
            "import socket,struct,json,sys\n"
            "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "b=json.dumps({'op':'status'}).encode(); s.sendall(struct.pack('>I',len(b))+b)\n"
            "try:\n    print('answered' if s.recv(100) else 'refused')\n"
            "except ConnectionResetError:\n    print('refused')\n"
        )
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", probe, str(path)],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert out.stdout.strip() == "refused", out  # closed without a word
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)


def test_an_idle_worker_exits_by_itself(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.setenv("MCPCLI_WORKER_IDLE", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    assert mcpcli("worker", "start").returncode == 0
    path = socket_path()
    assert wait_until(lambda: not path.exists(), 40)  # a loaded machine takes its time to import; idle is 1 s after


def test_no_worker_and_ci_run_in_process(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPCLI_WORKER", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = socket_path()
    assert mcpcli("call", "echo", "-a", "text=x", "--no-worker", env={"CI": ""}).stdout == "x\n"
    assert mcpcli("call", "echo", "-a", "text=x", env={"CI": "true"}).stdout == "x\n"
    time.sleep(0.5)
    assert not path.exists()  # neither started a worker


def test_the_warm_front_end_imports_neither_the_sdk_nor_the_cli_layers(warm: Path) -> None:
    r = subprocess.run(
        [PY, "-X", "importtime", "-m", "mcpcli", "call", "echo", "-a", "text=light"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=60,
    )
    assert r.stdout == "light\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    for heavy in ("mcp", "mcp_types", "textual", "typer", "rich", "pydantic", "mcpcli.cli"):
        assert heavy not in imported, heavy
    # 1-4 ms each, on every warm command (socket and signal: their Python layers; the C modules beneath do); zlib and
    # the ascii codec ~0.2 ms each
    costly = ("pathlib", "typing", "platformdirs", "json", "socket", "signal", "selectors", "enum", "re", "zlib")
    for name in (*costly, "encodings.ascii"):
        assert name not in imported, name
    assert "mcpcli.warm" in imported


@pytest.mark.parametrize(
    "env",
    [
        {"HOME": "/home/ann"},
        {"HOME": "/home/ann/", "XDG_STATE_HOME": "/var/state/ann", "XDG_CONFIG_HOME": "/etc/ann"},
        {"HOME": "/home/ann", "XDG_STATE_HOME": "relative/state", "XDG_CONFIG_HOME": ""},
    ],
)
def test_the_front_end_finds_the_worker_where_platformdirs_says(env: dict[str, str]) -> None:
    """The warm path computes the user dirs itself (platformdirs costs it ~18 ms); both must name one place."""
    script = (
        "import json, platformdirs\n"
        "from mcpcli.userdirs import user_dir\n"
        "print(json.dumps([user_dir('state'), platformdirs.user_state_dir('mcpcli'),"
        " user_dir('config'), platformdirs.user_config_dir('mcpcli')]))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "HOME"}
    r = subprocess.run([PY, "-c", script], capture_output=True, text=True, env={**clean, **env}, timeout=60)
    ours_state, theirs_state, ours_config, theirs_config = json.loads(r.stdout)
    assert (ours_state, ours_config) == (theirs_state, theirs_config)


def test_resume_through_the_worker_keeps_one_driver(warm: Path, tmp_path: Path) -> None:
    started = mcpcli("call", "provision", "-a", "name=r", "--no-input", "--json")
    session_id = json.loads(started.stdout)["session_id"]
    racers = [
        subprocess.Popen(
            [PY, "-m", "mcpcli", "resume", session_id, "--answer", "region=x"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [
        (p.wait(timeout=60), p.stdout.read() if p.stdout else "", p.stderr.read() if p.stderr else "") for p in racers
    ]
    assert sorted(code for code, _, _ in results) in ([0, 0], [0, 6]), results
    assert [out for _, out, _ in results].count("Provisioned 'r' in x.\n") >= 1


# --- kept-alive stdio servers ----------------------------------------------------------------------------------------


def test_a_kept_alive_server_remembers_between_commands_and_is_restarted_after_a_crash(warm: Path) -> None:
    target = stdio_server("counter")
    first = mcpcli("-s", target, "--keep-alive", "call", "count")
    second = mcpcli("-s", target, "call", "count", "--keep-alive")
    assert first.returncode == second.returncode == 0, (first.stderr, second.stderr)
    pid = first.stdout.split()[-1]
    assert first.stdout == f"call 1 of pid {pid}\n" and second.stdout == f"call 2 of pid {pid}\n"
    listed = json.loads(mcpcli("worker", "ps", "--json").stdout)
    assert [(s["pid"], s["calls"], s["alive"]) for s in listed] == [(int(pid), 2, True)]
    os.kill(int(pid), signal.SIGKILL)
    assert wait_until(lambda: gone(int(pid)))
    third = mcpcli("-s", target, "--keep-alive", "call", "count")
    assert third.returncode == 0, third.stderr
    assert third.stdout.startswith("call 1 of pid ") and not third.stdout.endswith(f" {pid}\n")
    assert "had stopped; started it again" in third.stderr
    assert len(third.stderr.strip().splitlines()) == 1
    cold = mcpcli("-s", target, "--keep-alive", "call", "count", env={"MCPCLI_WORKER": "0"})
    assert cold.stdout.startswith("call 1 of pid ")  # the cold path starts its own; the kept one is not touched
    assert "needs the background worker" in cold.stderr


def test_a_kept_alive_server_runs_under_the_umask_of_the_command_that_started_it_not_the_workers(warm: Path) -> None:
    target = stdio_server("counter")
    mask = os.umask(0o022)  # the worker was started under this test's umask
    os.umask(mask)
    tight = subprocess.run(
        [PY, "-m", "mcpcli", "-s", target, "--keep-alive", "call", "umask"],
        capture_output=True,
        text=True,
        timeout=60,
        umask=0o077,
    )
    assert (tight.returncode, tight.stdout) == (0, "umask 077\n"), tight.stderr
    assert mask != 0o077
    cold = mcpcli("-s", target, "call", "umask", env={"MCPCLI_WORKER": "0"})  # a cold one, for comparison
    assert cold.stdout == f"umask {mask:03o}\n"


def test_a_named_server_with_keep_alive_and_a_legacy_server_keep_their_process(warm: Path, home: Path) -> None:
    args = json.dumps([str(ROOT / "tests" / "servers.py"), "counter"])
    config = f"[mcpServers.tally]\ncommand = {json.dumps(PY)}\nargs = {args}\nkeep_alive = true\n"
    (home / "config.toml").write_text(config, encoding="utf-8")
    outs = [mcpcli("-s", "tally", "call", "count").stdout for _ in range(2)]
    assert outs[0].startswith("call 1 ") and outs[1].startswith("call 2 ")
    legacy = stdio_server("legacy_only")
    for _ in range(2):  # its initialize is sent once; the second command's is answered from the first reply
        r = mcpcli("-s", legacy, "--keep-alive", "call", "provision", "-a", "name=l", "--answer", "region=r")
        assert (r.returncode, r.stdout) == (0, "Provisioned 'l' in r.\n"), r.stderr
    names = {s["name"] for s in json.loads(mcpcli("worker", "ps", "--json").stdout)}
    assert names == {"tally", legacy}
    assert mcpcli("worker", "restart", "tally").returncode == 0
    again = mcpcli("-s", "tally", "call", "count")
    assert again.stdout.startswith("call 1 ")
    assert mcpcli("worker", "restart", "nope").returncode == 6


def test_a_command_that_exits_with_a_message_says_it_through_the_worker() -> None:
    """``sys.exit("message")`` prints the message and exits 1 in a process of its own; a worker's child must not
    swallow the message (a command then failed with exit 1 and not a word)."""
    script = (
        "from mcpcli.worker import server\n"
        "class Command:\n"
        "    def main(self, **_kw):\n"
        "        raise SystemExit('demo server: it broke')\n"
        "server._COMMAND = Command()\n"
        "print(server._run(['call', 'echo']))\n"
    )
    r = subprocess.run([PY, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (r.stdout, r.stderr) == ("1\n", "demo server: it broke\n")


def test_a_worker_started_beside_an_mcpcli_directory_runs_the_installed_mcpcli(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A user in a checkout of anything with an ``mcpcli/`` package in it (mcpcli's own, or a hostile repository)
    starts the worker from there: ``python -m`` would import that directory's code instead of the installed one."""
    monkeypatch.setenv("MCPCLI_WORKER", "1")
    monkeypatch.delenv("CI", raising=False)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    checkout = tmp_path / "checkout"
    (checkout / "mcpcli" / "worker").mkdir(parents=True)
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('the directory ran')\n"
    for module in ("__init__.py", "worker/__init__.py", "worker/server.py", "__main__.py"):
        (checkout / "mcpcli" / module).write_text(code)
    executable = Path(PY).with_name("mcpcli")  # the installed command, as a user runs it
    started = subprocess.run(
        [str(executable), "worker", "start"], capture_output=True, text=True, cwd=checkout, timeout=60
    )
    assert started.returncode == 0, started.stderr
    assert socket_path().exists()
    assert not marker.exists()


@pytest.mark.parametrize("whose", ["open to others", "another user's"])
def test_worker_status_and_start_in_a_directory_others_control_say_why_and_how_to_choose_another(
    worker_dir: Path, whose: str
) -> None:
    """Nothing is started or written in a worker directory that someone else controls; ``worker status`` must not
    promise that a worker starts with the next command, nor name a log inside that directory."""
    if whose == "another user's":
        if os.getuid() != 0:
            pytest.skip("needs root to give the directory to another user")
        os.chown(worker_dir, 65534, 65534)
        worker_dir.chmod(0o700)
        expected = "it belongs to another user (uid 65534)"
    else:
        worker_dir.chmod(0o777)
        expected = "other users can enter it (mode 0777)"
    status = mcpcli("worker", "status")
    assert status.returncode == 0, status.stderr
    assert f"No worker can run in {worker_dir}: {expected}" in status.stderr
    assert "MCPCLI_WORKER_DIR=" in status.stderr
    assert "next server command" not in status.stderr and ".log" not in status.stderr
    assert expected in json.loads(mcpcli("worker", "status", "--json").stdout)["unusable"]
    started = mcpcli("worker", "start")
    assert started.returncode == 4
    assert started.stderr.strip().splitlines() == status.stderr.strip().splitlines()
    assert sorted(p.name for p in worker_dir.iterdir()) == []
