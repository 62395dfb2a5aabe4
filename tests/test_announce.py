"""Announcements reach real receivers, once each, and carry nothing of the flow's answers or the environment.

Every receiver is real: HTTP servers on 127.0.0.1 (one that counts, one that fails first, one that hangs, one that
redirects), a D-Bus session bus of the test's own (``dbus-daemon``) with a notification service written here, a
command hook that appends its stdin to a file, and a pseudo-terminal whose bytes are read back.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

import pytest
from conftest import PY, ROOT, cannot_run_here, wait_until

from mcpcli.announce import Announcer, channels
from mcpcli.announce.channels import terminal_kind, webhook_body, webhook_target
from mcpcli.announce.message import BODY_MAX, TEXT_MAX, bounded
from mcpcli.settings.config import InboxConfig

SID = "3f2a9c1b7e10"
SECRET_ANSWER = "hunter2"
SECRET_ENV = "s3cr3t-from-the-environment"
KINDS = ("waiting", "answered", "done", "failed")


def flow_event(kind: str, title: str = "Deploy to production?") -> dict[str, Any]:
    """An event as the inbox builds it from a flow: the asks' titles, never the answers (``SECRET_ANSWER`` is the
    flow's answer to this very ask, and stays out)."""
    answers = {"confirm": {"password": SECRET_ANSWER}}  # what the flow holds; the caller leaves it out
    asks = [{"key": key, "kind": "form", "title": title} for key in answers]
    return {
        "event": kind,
        "session_id": SID,
        "server": "prod",
        "call": "tools/call deploy",
        "owner": "alice@host-a",
        "ask": ["ops"],
        "asks": asks,
        "answered_by": "bob@host-b" if kind == "answered" else None,
        "waiting_since": "2026-05-01T10:00:00+00:00",
        "time": "2026-05-01T10:05:00+00:00",
        "command": f"mcpcli answer {SID}",
        "text": f"{SID} waits for ops: tools/call deploy on prod asks: {title} — mcpcli answer {SID}",
    }


# --- receivers --------------------------------------------------------------------------------------------------


@dataclass
class Post:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records each POST and answers the next of ``statuses`` (then 200);
    ``hang`` makes it answer nothing until the test ends."""

    statuses: list[int] = field(default_factory=list)
    hang: bool = False
    location: str = ""
    posts: list[Post] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def serve(self) -> ThreadingHTTPServer:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.posts.append(Post(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if receiver.hang:
                    receiver.release.wait(30)
                    return
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        return server


@pytest.fixture
def receiver() -> Iterator[Any]:
    """``receiver(**options)`` starts a ``Receiver``; all are stopped at the end."""
    servers: list[tuple[Receiver, ThreadingHTTPServer]] = []

    def start(**options: Any) -> Receiver:
        made = Receiver(**options)
        servers.append((made, made.serve()))
        return made

    yield start
    for made, server in servers:
        made.release.set()
        server.shutdown()
        server.server_close()


@dataclass
class Bus:
    address: str
    notifications: list[tuple[Any, ...]]


@pytest.fixture
def session_bus() -> Iterator[Bus]:
    """A D-Bus session bus of this test's own, and on it a notification service that records each ``Notify``."""
    if shutil.which("dbus-daemon") is None:
        cannot_run_here("the desktop announcement tests", "no dbus-daemon")
    from jeepney import HeaderFields, MessageType, new_method_return
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    directory = tempfile.mkdtemp(prefix="mcpcli-bus-")  # short: a socket's path is at most ~100 bytes
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1", f"--address=unix:path={directory}/bus"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert daemon.stdout is not None
    address = daemon.stdout.readline().strip()
    bus = Bus(address, [])
    stop = threading.Event()
    service = open_dbus_connection(bus=address)
    assert service.send_and_get_reply(message_bus.RequestName("org.freedesktop.Notifications")).body == (1,)

    def answer() -> None:
        while not stop.is_set():
            try:
                message = service.receive(timeout=0.1)
            except TimeoutError:
                continue
            if message.header.message_type != MessageType.method_call:
                continue
            member = message.header.fields.get(HeaderFields.member)
            if member == "GetCapabilities":
                service.send(new_method_return(message, "as", (["body", "body-markup"],)))
            elif member == "Notify":
                bus.notifications.append(message.body)
                service.send(new_method_return(message, "u", (len(bus.notifications),)))

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield bus
    stop.set()
    thread.join(5)
    service.close()
    daemon.terminate()
    daemon.wait(10)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def pty() -> Iterator[tuple[TextIO, int]]:
    """A pseudo-terminal: the stream the announcer writes to (its terminal side) and the fd the test reads."""
    reader, terminal_fd = os.openpty()
    stream = os.fdopen(terminal_fd, "w", encoding="utf-8")
    yield stream, reader
    stream.close()
    os.close(reader)


def read_all(fd: int, quiet: float = 0.3) -> bytes:
    """What the terminal was sent, until it has been quiet for ``quiet`` seconds."""
    data = b""
    while select.select([fd], [], [], quiet)[0]:
        data += os.read(fd, 65536)
    return data


def hook(tmp_path: Path) -> tuple[str, Path]:
    """A command line whose program appends its stdin to a file, and that file."""
    script = tmp_path / "hook.py"
    script.write_text(
        "import sys\nwith open(sys.argv[1], 'a', encoding='utf-8') as f:\n    f.write(sys.stdin.read())\n"
    )
    out = tmp_path / "hook.out"
    return shlex.join([PY, str(script), str(out)]), out


# --- every channel, once each -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_each_receiver_sees_each_event_exactly_once_and_nothing_secret(
    receiver: Any, session_bus: Bus, pty: tuple[TextIO, int], tmp_path: Path
) -> None:
    web = receiver()
    command, out = hook(tmp_path)
    config = InboxConfig(
        notify=["terminal", "desktop", "webhook", "command"], webhook=f"{web.url}/hooks/mcpcli", notify_command=command
    )
    environ = {
        "DBUS_SESSION_BUS_ADDRESS": session_bus.address,
        "TERM_PROGRAM": "WezTerm",
        "MCPCLI_TOKEN": SECRET_ENV,
        "PATH": os.environ.get("PATH", ""),
    }
    warnings: list[str] = []
    stream, reader = pty
    with Announcer(config, terminal=stream, warn=warnings.append, environ=environ) as announcer:
        for kind in KINDS:
            announcer.announce(flow_event(kind))
    terminal = read_all(reader)

    assert warnings == []
    assert [json.loads(post.body)["mcpcli"]["event"] for post in web.posts] == list(KINDS)
    assert {post.path for post in web.posts} == {"/hooks/mcpcli"}
    assert [json.loads(line)["event"] for line in out.read_text().splitlines()] == list(KINDS)
    assert len(session_bus.notifications) == len(KINDS)
    assert terminal.count(b"\x1b]777;notify;") == len(KINDS)
    assert terminal.count(b"\a") == 2 * len(KINDS)  # a bell, and the end of the OSC

    # Nothing the announcer adds carries the environment, its own headers or the flow's answers.
    everything = [terminal, out.read_bytes(), *(p.body for p in web.posts)]
    everything += [json.dumps(p.headers).encode() for p in web.posts]
    everything += [json.dumps(n, default=str).encode() for n in session_bus.notifications]
    for data in everything:
        assert SECRET_ANSWER.encode() not in data
        assert SECRET_ENV.encode() not in data
    library = {"host", "content-length", "accept", "accept-encoding", "connection", "user-agent"}
    assert {name for post in web.posts for name in post.headers} == library | {"content-type"}
    assert {post.headers["content-type"] for post in web.posts} == {"application/json"}


# --- webhook ------------------------------------------------------------------------------------------------------


def test_a_webhook_that_answers_500_then_200_gets_the_event_exactly_once(receiver: Any) -> None:
    web = receiver(statuses=[500])
    warnings: list[str] = []
    config = InboxConfig(notify=["webhook"], webhook=f"{web.url}/a/b", webhook_retries=2)
    with Announcer(config, warn=warnings.append, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
    assert len(web.posts) == 2  # the 500, and the retry that was taken
    assert warnings == []


def test_a_webhook_that_keeps_failing_is_said_once_without_its_url(receiver: Any) -> None:
    web = receiver(statuses=[503] * 10)
    warnings: list[str] = []
    config = InboxConfig(notify=["webhook"], webhook=f"{web.url}/services/T0/B0/tokentoken", webhook_retries=1)
    with Announcer(config, warn=warnings.append, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
        announcer.announce(flow_event("done"))
    assert len(web.posts) == 4
    assert len(warnings) == 1
    assert "503" in warnings[0] and web.url in warnings[0] and "tokentoken" not in warnings[0]


def test_a_hanging_webhook_blocks_neither_announce_nor_close_past_its_bound(receiver: Any) -> None:
    web = receiver(hang=True)
    config = InboxConfig(notify=["webhook"], webhook=f"{web.url}/x/y", webhook_timeout=30)
    announcer = Announcer(config, warn=lambda line: None, environ={})
    started = time.monotonic()
    for kind in KINDS:
        announcer.announce(flow_event(kind))
    assert time.monotonic() - started < 0.05
    assert wait_until(lambda: len(web.posts) == 1, 10)
    started = time.monotonic()
    announcer.close(timeout=0.5)
    assert time.monotonic() - started < 1.0


def test_a_redirect_is_not_followed_and_is_said_once(receiver: Any) -> None:
    elsewhere = receiver()
    web = receiver(statuses=[307, 307], location=f"{elsewhere.url}/p/q")
    warnings: list[str] = []
    config = InboxConfig(notify=["webhook"], webhook=f"{web.url}/p/q")
    with Announcer(config, warn=warnings.append, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
        announcer.announce(flow_event("done"))
    assert elsewhere.posts == []
    assert len(warnings) == 1 and "307" in warnings[0] and "redirect" in warnings[0]


def test_an_ntfy_topic_url_is_published_to_the_server_root_with_the_topic_in_the_body(receiver: Any) -> None:
    web = receiver()
    config = InboxConfig(notify=["webhook"], webhook=f"{web.url}/mcpcli-alerts")
    with Announcer(config, warn=lambda line: None, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
    (post,) = web.posts
    body = json.loads(post.body)
    assert post.path == "/"
    assert body["topic"] == "mcpcli-alerts"
    assert body["title"] == f"mcpcli: {SID} waits for an answer"
    assert body["message"] == flow_event("waiting")["text"]
    assert body["text"] == body["message"]  # Slack's key
    assert body["mcpcli"] == flow_event("waiting")


def test_only_a_one_segment_path_is_taken_for_an_ntfy_topic() -> None:
    assert webhook_target("https://ntfy.sh/alerts?auth=x") == ("https://ntfy.sh/?auth=x", "alerts")
    assert webhook_target("https://hooks.slack.com/services/T/B/X") == ("https://hooks.slack.com/services/T/B/X", None)
    assert webhook_target("https://example.com/hook/") == ("https://example.com/hook/", None)
    assert webhook_target("https://example.com/") == ("https://example.com/", None)


def test_the_webhook_body_is_bounded_and_its_slack_text_cannot_mention_or_link() -> None:
    event = flow_event("waiting", title="<!channel> & <https://evil.example|click> " + "x" * 50_000)
    event["asks"] = [{"title": "y" * 10_000}] * 500
    data = webhook_body(bounded(event), None)
    body = json.loads(data)
    assert len(data) <= BODY_MAX
    assert "<" not in body["text"] and "&lt;!channel&gt; &amp; &lt;https" in body["text"]
    assert body["message"].startswith(f"{SID} waits for ops: tools/call deploy on prod asks: <!channel> &")
    assert "topic" not in body


# --- terminal -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "kind"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM_PROGRAM": "ghostty"}, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, "osc777"),
        ({"TERM": "xterm-kitty", "KITTY_WINDOW_ID": "1"}, "osc777"),
        ({"TERM": "foot"}, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, "osc777"),
        ({"TERM": "xterm-256color", "WT_SESSION": "a-b-c"}, "osc777"),
        ({"TERM": "xterm-256color", "VTE_VERSION": "7600"}, "osc777"),
        ({"TERM": "xterm-256color", "VTE_VERSION": "4200"}, None),
        ({"TERM_PROGRAM": "Apple_Terminal"}, None),
        ({"TERM": "alacritty"}, None),
        ({"TERM_PROGRAM": "tmux", "TMUX": "/tmp/tmux-0/default,1,0", "KITTY_WINDOW_ID": "1"}, None),
        ({"TERM": "screen-256color", "TERM_PROGRAM": "iTerm.app"}, None),
        ({}, None),
    ],
)
def test_the_terminal_table(environ: dict[str, str], kind: str | None) -> None:
    assert terminal_kind(environ) == kind


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, f"\a\x1b]9;mcpcli: {SID} waits for ops: tools/call deploy".encode()),
        ({"TERM": "foot"}, f"\a\x1b]777;notify;mcpcli: {SID} waits for an answer;{SID} waits for ops:".encode()),
        ({"TERM": "xterm"}, b"\a"),
    ],
)
def test_the_terminal_gets_a_bell_and_the_escape_its_program_shows(
    pty: tuple[TextIO, int], environ: dict[str, str], expected: bytes
) -> None:
    stream, reader = pty
    with Announcer(InboxConfig(notify=["terminal"]), terminal=stream, environ=environ) as announcer:
        announcer.announce(flow_event("waiting"))
    sent = read_all(reader)
    assert sent.startswith(expected)
    assert sent.endswith(b"\a")
    assert sent == b"\a" or sent.count(b"\x1b") == 1


def test_a_server_title_cannot_end_the_notification_or_start_another_escape(pty: tuple[TextIO, int]) -> None:
    stream, reader = pty
    title = "ok\x07\x1b]52;c;aGk=\x1b\\;\x9c\u202e" + "z" * 1000
    with Announcer(InboxConfig(notify=["terminal"]), terminal=stream, environ={"TERM": "foot"}) as announcer:
        announcer.announce(flow_event("waiting", title=title))
    sent = read_all(reader).decode()
    assert sent.count("\x1b") == 1 and sent.count("\a") == 2 and "\x9c" not in sent and "\u202e" not in sent
    osc = sent.removeprefix("\a\x1b]777;notify;").removesuffix("\a")
    assert osc.count(";") == 1  # title ; body, and nothing else
    assert len(osc) <= 2 * TEXT_MAX + 1


def test_a_stream_that_is_no_terminal_gets_nothing(tmp_path: Path) -> None:
    config = InboxConfig(notify=["terminal"])
    with (tmp_path / "out").open("w") as stream, Announcer(config, terminal=stream, environ={"TERM": "foot"}) as it:
        it.announce(flow_event("waiting"))
    assert (tmp_path / "out").read_text() == ""


# --- desktop ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_desktop_body_is_markup_escaped_and_a_session_replaces_its_notification(session_bus: Bus) -> None:
    warnings: list[str] = []
    environ = {"DBUS_SESSION_BUS_ADDRESS": session_bus.address}
    with Announcer(InboxConfig(notify=["desktop"]), warn=warnings.append, environ=environ) as announcer:
        announcer.announce(flow_event("waiting", title='<a href="https://evil.example">Deploy</a> & go'))
        announcer.announce(flow_event("done"))
    assert warnings == []
    (app, replaces, _icon, summary, body, actions, hints, expire), second = session_bus.notifications
    assert (app, replaces, summary, actions, hints, expire) == (
        "mcpcli",
        0,
        f"mcpcli: {SID} waits for an answer",
        [],
        {},
        -1,
    )
    assert '&lt;a href="https://evil.example"&gt;Deploy&lt;/a&gt; &amp; go' in body
    assert second[1] == 1 and second[3] == f"mcpcli: {SID} finished"  # it replaces the first one


def test_no_session_bus_is_one_warning_saying_so() -> None:
    warnings: list[str] = []
    with Announcer(InboxConfig(notify=["desktop"]), warn=warnings.append, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
        announcer.announce(flow_event("done"))
    assert warnings == ["desktop: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)"]


def test_without_jeepney_the_desktop_channel_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name == "jeepney" or name.startswith("jeepney.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jeepney", None)  # what an install without the extra has: no such module
    warnings: list[str] = []
    environ = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}
    with Announcer(InboxConfig(notify=["desktop"]), warn=warnings.append, environ=environ) as announcer:
        announcer.announce(flow_event("waiting"))
    assert warnings == ["desktop notifications need jeepney: pip install 'mcpcli[notify]'"]


# --- command ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_command_gets_the_event_as_one_json_line(tmp_path: Path) -> None:
    command, out = hook(tmp_path)
    event = flow_event("waiting", title="line\nbreak \u2028 and \u202e")
    with Announcer(InboxConfig(notify=["command"], notify_command=command), environ=dict(os.environ)) as announcer:
        announcer.announce(event)
    (line,) = out.read_text().splitlines()
    assert json.loads(line) == event


def test_a_missing_command_is_one_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    config = InboxConfig(notify=["command"], notify_command=f"{tmp_path}/no-such-notifier --flag")
    with Announcer(config, warn=warnings.append, environ={}) as announcer:
        announcer.announce(flow_event("waiting"))
        announcer.announce(flow_event("done"))
    assert len(warnings) == 1 and "no-such-notifier" in warnings[0] and "cannot be run" in warnings[0]


@pytest.mark.slow
def test_a_command_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channels, "COMMAND_TIMEOUT", 0.5)
    warnings: list[str] = []
    config = InboxConfig(notify=["command"], notify_command=shlex.join([PY, "-c", "import time; time.sleep(60)"]))
    started = time.monotonic()
    with Announcer(config, warn=warnings.append, environ=dict(os.environ)) as announcer:
        announcer.announce(flow_event("waiting"))
    assert time.monotonic() - started < 5
    assert len(warnings) == 1 and "was stopped" in warnings[0]


# --- the module ---------------------------------------------------------------------------------------------------


def test_importing_the_announcer_imports_neither_the_sdk_nor_its_channels_libraries() -> None:
    code = "import sys, mcpcli.announce; print(sorted(m.split('.')[0] for m in sys.modules))"
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True)
    loaded = set(json.loads(proc.stdout.replace("'", '"')))
    assert loaded.isdisjoint({"mcp", "mcp_types", "httpx2", "jeepney", "pydantic", "rich", "typer", "textual"})


def test_announce_never_raises_and_after_close_does_nothing(receiver: Any) -> None:
    web = receiver()
    warnings: list[str] = []
    announcer = Announcer(InboxConfig(notify=["webhook"], webhook=f"{web.url}/a/b"), warn=warnings.append, environ={})
    announcer.announce({"event": object(), "text": object(), "asks": [object()]})  # not what a caller sends
    announcer.close()
    announcer.announce(flow_event("done"))
    announcer.close()
    assert len(web.posts) == 1 and warnings == []
