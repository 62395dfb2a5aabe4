"""The worker's HTTP relay: warm commands to an HTTP server share its connections (one TCP connection for two
commands), and change nothing else — streams, bounds, headers, errors and exit codes are the cold path's; a relay
that is gone or a connection the server closed costs nothing but the reuse; tokens never reach the log."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, free_port, gone, wait_until
from test_worker import mcpcli
from test_worker import warm as _warm  # noqa: F401  # the fixture, used by every test here

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("_warm")]

TOKEN = "relay-s3cret-token-0123456789"


class CountingProxy:
    """A TCP proxy on 127.0.0.1 in front of a server: counts the connections it accepts and keeps what clients
    sent. ``stale_after``: a connection idle that long is dropped when the client next sends on it, unanswered (a
    server that closed it unseen, as a load balancer does); ``close_idle_after``: closed once idle that long (a
    server's keep-alive timeout, seen by the client)."""

    def __init__(
        self,
        port: int,
        *,
        stale_after: float | None = None,
        close_idle_after: float | None = None,
        tls: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.upstream = port
        self.host = host
        self.tls = tls
        self.stale_after = stale_after
        self.close_idle_after = close_idle_after
        self.accepted = 0
        self.dropped = 0
        self.closed_idle = 0
        self.sent: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = False
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> CountingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopped = True
        self.listener.close()

    def requests(self) -> list[bytes]:
        """The request heads clients sent (each up to its blank line)."""
        return re.findall(rb"(?:POST|GET|DELETE) \S+ HTTP/1\.1\r\n.*?\r\n\r\n", b"".join(self.sent), re.DOTALL)

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            upstream = socket.create_connection((self.host, self.upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        last = time.monotonic()
        used = False
        try:
            if self.tls is not None:
                client = self.tls.wrap_socket(client, server_side=True)
            while not self.stopped:
                if isinstance(client, ssl.SSLSocket) and client.pending():
                    ready = [client]  # decrypted bytes select() cannot see
                else:
                    ready, _, _ = select.select([client, upstream], [], [], 0.02)
                now = time.monotonic()
                if not ready:
                    if self.close_idle_after is not None and used and now - last > self.close_idle_after:
                        with self.lock:
                            self.closed_idle += 1
                        return
                    continue
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if self.stale_after is not None and used and now - last > self.stale_after:
                            with self.lock:
                                self.dropped += 1
                            return
                        with self.lock:
                            self.sent.append(data)
                        used = True
                        upstream.sendall(data)
                    else:
                        client.sendall(data)
                    last = now
        except OSError:
            return
        finally:
            client.close()
            upstream.close()


def status(**env: str) -> dict[str, Any]:
    return dict(json.loads(mcpcli("worker", "status", "--json", env=env).stdout))


def relay() -> dict[str, Any]:
    found = status()["relay"]
    assert found, "no relay"
    return dict(found)


def settled() -> dict[str, Any]:
    """The relay's counters once no request is in flight (a cancelled upstream request ends soon after)."""
    deadline = time.monotonic() + 10
    while (now := relay())["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


def test_two_warm_calls_share_one_tcp_connection_where_cold_ones_open_their_own(http_demo: Any) -> None:
    server = http_demo()
    with CountingProxy(server.port) as proxy:
        for text in ("one", "two"):
            r = mcpcli("call", "echo", "-a", f"text={text}", "-s", proxy.url)
            assert (r.returncode, r.stdout) == (0, f"{text}\n"), r.stderr
        assert proxy.accepted == 1
        assert relay()["served"] >= 2
        for text in ("three", "four"):
            r = mcpcli("call", "echo", "-a", f"text={text}", "-s", proxy.url, "--no-worker")
            assert (r.returncode, r.stdout) == (0, f"{text}\n"), r.stderr
        assert proxy.accepted == 3


def test_a_server_on_this_machine_is_reached_direct_unless_all_is_asked(
    http_demo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPCLI_HTTP_RELAY")  # the default: a loopback handshake costs less than relaying requests
    server = http_demo()
    with CountingProxy(server.port) as proxy:
        for _ in range(2):
            r = mcpcli("call", "echo", "-a", "text=d", "-s", proxy.url)
            assert (r.returncode, r.stdout) == (0, "d\n"), r.stderr
        assert proxy.accepted == 2
        assert relay()["served"] == 0
        r = mcpcli("call", "echo", "-a", "text=e", "-s", proxy.url, env={"MCPCLI_HTTP_RELAY": "all"})
        assert (r.returncode, r.stdout) == (0, "e\n"), r.stderr
        assert relay()["served"] >= 1


@pytest.mark.parametrize(
    ("url", "relayed"),
    [
        ("http://127.0.0.1:8000/mcp", False),
        ("http://127.8.9.10/mcp", False),
        ("http://[::1]:8000/mcp", False),
        ("http://localhost:8000/mcp", False),
        ("https://LOCALHOST./mcp", False),
        ("http://api.localhost/mcp", False),
        ("https://mcp.example.com/mcp", True),
        ("http://10.0.0.7:8000/mcp", True),
        ("http://[2001:db8::1]/mcp", True),
        ("http://localhost.example.com/mcp", True),
        ("http://[::1/mcp", True),  # not a URL a connection can be made from: no exception here, the SDK says why
    ],
)
def test_which_servers_go_through_the_relay(url: str, relayed: bool) -> None:
    from mcpcli.net.transports import relay_for

    assert relay_for(url, {"MCPCLI_RELAY_SOCKET": "/r"}) == ("/r" if relayed else None)
    assert relay_for(url, {"MCPCLI_RELAY_SOCKET": "/r", "MCPCLI_HTTP_RELAY": "all"}) == "/r"
    assert relay_for(url, {"MCPCLI_HTTP_RELAY": "all"}) is None  # not in a worker's command: never


def test_mcpcli_http_relay_0_sends_a_warm_commands_requests_direct(http_demo: Any) -> None:
    server = http_demo()
    with CountingProxy(server.port) as proxy:
        for _ in range(2):
            r = mcpcli("call", "echo", "-a", "text=d", "-s", proxy.url, env={"MCPCLI_HTTP_RELAY": "0"})
            assert (r.returncode, r.stdout) == (0, "d\n"), r.stderr
        assert proxy.accepted == 2
    assert relay()["served"] == 0


def test_many_warm_calls_at_once_each_get_their_own_answer_through_the_relay(http_demo: Any) -> None:
    server = http_demo()
    with CountingProxy(server.port) as proxy:
        procs = [
            subprocess.Popen(
                [PY, "-m", "mcpcli", "call", "echo", "-a", f"text=call-{n}", "-s", proxy.url],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(12)
        ]
        for n, proc in enumerate(procs):
            out, err = proc.communicate(timeout=120)
            assert (proc.returncode, out, err) == (0, f"call-{n}\n", "")
        assert proxy.accepted <= 12  # each in flight at once needs its own; none more
    assert settled()["served"] >= 12  # each call's tools/call (discovery and the listing may be remembered)


@pytest.mark.parametrize("how", ["direct", "relayed"])
def test_a_preloaded_worker_child_imports_nothing_for_an_http_call(http_demo: Any, how: str) -> None:
    server = http_demo()
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from mcpcli.net.relayed import relay_status\n"
        "from mcpcli.worker import relay, server\n"
        "server.preload()\n"
        "handle = relay.start(Path(sys.argv[2]), 60.0)\n"
        "if sys.argv[3] == 'relayed':\n"
        "    os.environ['MCPCLI_RELAY_SOCKET'] = str(handle.path)\n"
        "before = set(sys.modules)\n"
        "code = server._run(['call', 'echo', '-a', 'text=' + sys.argv[3], '-s', sys.argv[1]])\n"
        "relayed = relay_status(str(handle.path))['served'] > 0\n"
        "print(sorted(set(sys.modules) - before), code, relayed, file=sys.stderr)\n"
        "handle.stop(5.0)\n"
    )
    where = Path(os.environ["MCPCLI_HOME"]) / "relay.sock"
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    r = subprocess.run([PY, "-c", script, server.url, str(where), how], capture_output=True, text=True, timeout=60)
    assert r.stdout == f"{how}\n", r.stderr
    assert r.stderr.splitlines()[-2] == f"[] 0 {how == 'relayed'}", r.stderr  # the last line: the relay exiting


def test_a_streamed_response_with_progress_arrives_through_the_relay(http_demo: Any) -> None:
    server = http_demo()
    before = relay()["served"]
    args = ("--protocol", "legacy", "call", "wait_for_build", "-a", "build=7", "-s", server.url)
    hot = mcpcli(*args)
    cold = mcpcli(*args, "--no-worker")
    assert (hot.returncode, hot.stdout) == (cold.returncode, cold.stdout) == (0, cold.stdout), hot.stderr
    assert "finished after" in hot.stdout
    assert relay()["served"] > before


def test_a_response_over_the_message_cap_is_still_refused_and_the_upstream_request_ends(
    hostile_http: Any,
) -> None:
    server = hostile_http("huge", "--size", str(3 * 2**20))
    r = mcpcli("call", "work", "-s", server.url, env={"MCPCLI_MAX_MESSAGE_MB": "1"})
    assert r.returncode == 4, r.stderr
    assert "over the 1.0 MiB limit" in r.stderr and "MCPCLI_MAX_MESSAGE_MB" in r.stderr
    assert settled()["in_flight"] == 0


def test_a_server_that_sends_only_keep_alives_still_trips_the_idle_timeout(
    hostile_http: Any,
) -> None:
    server = hostile_http("keepalive")
    start = time.monotonic()
    r = mcpcli("call", "work", "-s", server.url, env={"MCPCLI_IDLE_TIMEOUT": "2"})
    assert r.returncode == 4, r.stderr
    assert "sent nothing for 2 s" in r.stderr
    assert time.monotonic() - start < 30
    assert settled()["in_flight"] == 0  # the hung upstream request was cancelled with the command


def test_a_kept_connection_the_server_closed_between_two_commands_does_not_fail_the_second(http_demo: Any) -> None:
    server = http_demo()
    # Longer than a pause between two requests of one command on a loaded machine, shorter than the sleep.
    with CountingProxy(server.port, close_idle_after=1.5) as proxy:
        first = mcpcli("call", "echo", "-a", "text=before", "-s", proxy.url)
        assert (first.returncode, first.stdout) == (0, "before\n"), first.stderr
        assert wait_until(lambda: proxy.closed_idle == 1)  # the server closed the kept connection
        second = mcpcli("call", "echo", "-a", "text=after", "-s", proxy.url)
        assert (second.returncode, second.stdout) == (0, "after\n"), second.stderr
        assert second.stderr == first.stderr
        assert proxy.accepted == 2


def test_a_request_written_to_a_connection_dropped_unseen_is_never_sent_twice(http_demo: Any) -> None:
    """A connection a middlebox dropped without a word takes the request and answers nothing: the server may or may
    not have acted on it, so the relay does not send it again (a cold run would never send one twice either); the
    command fails as on a dropped connection, and the next one gets a new connection."""
    server = http_demo()
    with CountingProxy(server.port, stale_after=1.5) as proxy:
        first = mcpcli("call", "echo", "-a", "text=before", "-s", proxy.url)
        assert (first.returncode, first.stdout) == (0, "before\n"), first.stderr
        time.sleep(2.5)
        second = mcpcli("call", "echo", "-a", "text=after", "-s", proxy.url)
        assert (second.returncode, second.stdout) == (4, ""), second.stderr
        assert len([line for line in second.stderr.splitlines() if line.strip()]) <= 3  # an error and its hint
        assert proxy.dropped == 1
        assert relay()["retried"] == 0
        third = mcpcli("call", "echo", "-a", "text=again", "-s", proxy.url)
        assert (third.returncode, third.stdout) == (0, "again\n"), third.stderr


def test_https_is_verified_with_the_ca_file_of_each_callers_environment(http_demo: Any, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        ["openssl", *request, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    server = http_demo()
    with CountingProxy(server.port, tls=tls) as proxy:
        args = ("call", "echo", "-a", "text=tls", "-s", proxy.url)
        untrusted, cold = mcpcli(*args), mcpcli(*args, "--no-worker")  # the relay's own CA setting is not used
        assert untrusted.returncode == cold.returncode == 4
        assert untrusted.stderr == cold.stderr and "is not trusted (self-signed certificate)" in untrusted.stderr
        before = proxy.accepted
        for _ in range(2):
            r = mcpcli(*args, env={"SSL_CERT_FILE": cert.name}, cwd=tmp_path)  # relative: the caller's directory
            assert (r.returncode, r.stdout) == (0, "tls\n"), r.stderr
        assert proxy.accepted == before + 1  # one TLS handshake for both
    assert relay()["pools"] == 2  # one per CA setting


def test_a_killed_relay_costs_nothing_and_the_worker_starts_another(http_demo: Any) -> None:
    server = http_demo()
    assert mcpcli("call", "echo", "-a", "text=a", "-s", server.url).stdout == "a\n"
    old = relay()["pid"]
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: gone(old))
    r = mcpcli("call", "echo", "-a", "text=b", "-s", server.url)
    assert (r.returncode, r.stdout, r.stderr) == (0, "b\n", "")
    new = relay()
    assert new["pid"] != old and new["served"] >= 1  # restarted for that command, which it served


def test_a_relay_that_cannot_be_reached_sends_each_request_direct(home: Path, http_demo: Any, tmp_path: Path) -> None:
    server = http_demo()
    dead = tmp_path / "dead.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(dead))
    sock.close()  # a socket file nobody listens on: a relay that died
    for path in (dead, tmp_path / "missing.sock"):
        r = mcpcli(
            "call",
            "echo",
            "-a",
            "text=direct",
            "-s",
            server.url,
            env={"MCPCLI_RELAY_SOCKET": str(path), "MCPCLI_WORKER": "0"},
        )
        assert (r.returncode, r.stdout, r.stderr) == (0, "direct\n", "")


def test_headers_reach_the_server_as_the_cold_path_sends_them(http_demo: Any) -> None:
    server = http_demo()
    args = ("-H", "X-Trace: 1", "--bearer", TOKEN, "call", "echo", "-a", "text=h")
    with CountingProxy(server.port) as proxy:
        heads = []
        for extra in ((), ("--no-worker",)):
            seen = len(proxy.requests())
            r = mcpcli(*args, "-s", proxy.url, *extra, env={"MCPCLI_WARM_TTL": "0"})  # both ask everything
            assert (r.returncode, r.stdout) == (0, "h\n"), r.stderr
            heads.append(proxy.requests()[seen])  # each command's first request
    hot, cold = heads
    assert f"authorization: bearer {TOKEN}".lower().encode() in hot.lower()
    assert b"x-trace: 1" in hot.lower()
    assert hot.replace(b"\r\n", b"\n").splitlines() == cold.replace(b"\r\n", b"\n").splitlines()


def test_a_connection_failure_reads_as_on_the_cold_path_and_no_token_reaches_the_log(home: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens
    args = ("--bearer", TOKEN, "call", "echo", "-a", "text=x", "-s", url)
    hot = mcpcli(*args)
    cold = mcpcli(*args, "--no-worker")
    assert hot.returncode == cold.returncode == 4
    assert hot.stderr == cold.stderr
    from mcpcli.userdirs import worker_file

    log = Path(worker_file(".log")).read_text()
    assert "ConnectError" in log  # the relay said what happened (method, origin, error type)...
    assert TOKEN not in log and "Bearer" not in log  # ...and nothing of the request's headers


def test_status_shows_the_relay_and_stop_stops_it(http_demo: Any) -> None:
    server = http_demo()
    assert mcpcli("call", "echo", "-a", "text=s", "-s", server.url).returncode == 0
    shown = relay()
    assert shown["connections"] == 1 and shown["served"] >= 2
    assert Path(shown["socket"]).stat().st_mode & 0o777 == 0o600  # in the worker's 0700 directory
    text = mcpcli("worker", "status").stdout
    assert f"HTTP relay pid {shown['pid']}" in text and "upstream connections 1" in text
    assert mcpcli("worker", "stop").returncode == 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(shown["pid"], 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the relay outlived the worker")
    assert not Path(shown["socket"]).exists()


def _dead(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie its parent has not reaped yet counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def test_status_says_a_relay_left_off_after_dying_at_start_is_off_not_that_it_starts_with_the_next_command() -> None:
    """Three relays that die right after starting: the worker leaves the relay off for a while (commands connect by
    themselves), and status says so — not "it starts with the next server command", which it would not."""
    for _ in range(3):
        pid = relay()["pid"]
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda pid=pid: _dead(pid), 10)
        assert mcpcli("tools", "-s", "demo").returncode == 0  # the worker sees it died, and starts another (or not)
    shown = status()
    assert shown["relay"] is None and shown["relay_paused"] > 30
    text = mcpcli("worker", "status").stdout
    assert "HTTP relay off for" in text and "died right after starting three times in a row" in text, text
    assert "starts it" not in text and "next server command" not in text


def test_status_says_when_this_environments_commands_do_not_use_the_relay() -> None:
    text = mcpcli("worker", "status", env={"MCPCLI_HTTP_RELAY": "0"}).stdout
    assert "HTTP relay pid" in text  # it runs, for the commands of other environments
    assert "MCPCLI_HTTP_RELAY=0 here: commands run from this environment connect by themselves, never relayed" in text
    local = mcpcli("worker", "status", env={"MCPCLI_HTTP_RELAY": ""}).stdout
    assert "Servers on this machine (localhost, loopback) are reached direct, not relayed" in local


@pytest.fixture(autouse=True)
def _relay_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests' servers are on this machine, which the relay leaves alone unless asked."""
    monkeypatch.setenv("MCPCLI_HTTP_RELAY", "all")


@pytest.fixture(autouse=True)
def _no_stray_relays() -> Iterator[None]:
    yield
    with contextlib.suppress(Exception):
        mcpcli("worker", "stop")
