"""HTTP proxies from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``): a user behind
one reaches remote servers, cold and through the worker's relay.

The servers are "remote" by name only: ``mcp.example`` does not resolve here, so a call that reaches the demo
server went through the proxy, which sends every request to it whatever host it names (as a corporate proxy
reaches what the user cannot)."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, free_port

from mcpcli.net.proxies import bypassed

pytestmark = pytest.mark.slow

REMOTE = "mcp.example"


class ForwardProxy:
    """An HTTP proxy on 127.0.0.1: ``CONNECT`` tunnels and absolute-form requests, each sent to ``upstream``
    whatever host it names. ``seen``: each request line (``CONNECT mcp.example:443``, ``POST http://…``)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.seen: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ForwardProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            line, *headers = head.decode("latin-1").split("\r\n")
            method, target, version = line.split(" ")
            self.seen.append(f"{method} {target}")
            upstream = socket.create_connection(self.upstream)
            with upstream:
                if method == "CONNECT":
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:  # absolute-form: the server gets origin-form, its own Host, and one request per connection
                    path = "/" + target.split("://", 1)[1].partition("/")[2]
                    kept = [h for h in headers if h.split(":")[0].lower() not in ("host", "connection")]
                    host = f"Host: {self.upstream[0]}:{self.upstream[1]}"
                    new_head = "\r\n".join([f"{method} {path} {version}", host, *kept, "Connection: close"])
                    upstream.sendall(new_head.encode("latin-1") + b"\r\n\r\n" + rest)
                _splice(client, upstream)


def _splice(a: socket.socket, b: socket.socket) -> None:
    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join(timeout=30)


def mcpcli(*args: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    base.pop("NO_PROXY", None)
    base.pop("no_proxy", None)
    return subprocess.run(
        [PY, "-m", "mcpcli", *args], capture_output=True, text=True, env={**base, **env}, cwd=cwd, timeout=60
    )


@dataclass
class Server:
    port: int
    url: str


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """The demo server over HTTP on 127.0.0.2 — loopback, but not an address the SDK guards against DNS rebinding,
    so it answers requests that name ``mcp.example`` as their host (as a server behind a proxy does)."""
    port = free_port()
    argv = [PY, "-m", "mcpcli.demo", "--http", f"127.0.0.2:{port}", "--key-file", str(tmp_path / "demo.key")]
    with (tmp_path / "server.log").open("w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.2", port), timeout=0.2):
                break
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            time.sleep(0.05)
        yield Server(port, f"http://127.0.0.2:{port}/mcp")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def proxy(server: Any) -> Iterator[ForwardProxy]:
    with ForwardProxy(("127.0.0.2", server.port)) as running:
        yield running


def remote(server: Any) -> str:
    return f"http://{REMOTE}:{server.port}/mcp"


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_server_only_the_proxy_reaches_is_called_through_it(server: Any, proxy: ForwardProxy, variable: str) -> None:
    r = mcpcli("--no-worker", "call", "echo", "-a", "text=via", "-s", remote(server), env={variable: proxy.url})
    assert (r.returncode, r.stdout) == (0, "via\n"), r.stderr
    assert proxy.seen and all(line.startswith(("POST", "GET", "DELETE")) for line in proxy.seen)
    assert all(f"http://{REMOTE}:{server.port}/mcp" in line for line in proxy.seen)


def test_no_proxy_sends_a_host_direct(server: Any, proxy: ForwardProxy) -> None:
    env = {"HTTP_PROXY": proxy.url, "NO_PROXY": f"localhost,.{REMOTE.split('.')[-1]}"}
    r = mcpcli("--no-worker", "call", "echo", "-a", "text=x", "-s", remote(server), env=env)
    assert r.returncode == 4 and "through the proxy" not in r.stderr, r.stderr  # direct: the name does not resolve
    assert proxy.seen == []


def test_a_server_on_this_machine_is_never_sent_to_the_proxy(server: Any, proxy: ForwardProxy) -> None:
    r = mcpcli("--no-worker", "call", "echo", "-a", "text=here", "-s", server.url, env={"HTTP_PROXY": proxy.url})
    assert (r.returncode, r.stdout) == (0, "here\n"), r.stderr
    assert proxy.seen == []


def test_https_goes_through_a_connect_tunnel(server: Any, tmp_path: Path) -> None:
    from test_relay import CountingProxy

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={REMOTE}"),
            *("-addext", f"subjectAltName=DNS:{REMOTE}", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    with (
        CountingProxy(server.port, tls=tls, host="127.0.0.2") as terminator,
        ForwardProxy(("127.0.0.1", terminator.port)) as proxy,
    ):
        env = {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": str(cert)}
        r = mcpcli("--no-worker", "call", "echo", "-a", "text=tunnel", "-s", f"https://{REMOTE}/mcp", env=env)
        assert (r.returncode, r.stdout) == (0, "tunnel\n"), r.stderr
        assert proxy.seen and set(proxy.seen) == {f"CONNECT {REMOTE}:443"}


def test_through_the_worker_each_command_uses_its_own_proxy(server: Any, home: Path) -> None:
    """The worker's relay keeps the connections; the proxy is the calling shell's, per command."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    warm = {"MCPCLI_WORKER": "1", "CI": ""}
    assert mcpcli("worker", "start", env=warm).returncode == 0
    try:
        with ForwardProxy(("127.0.0.2", server.port)) as first, ForwardProxy(("127.0.0.2", server.port)) as second:
            for proxy, text in ((first, "one"), (second, "two"), (first, "three")):
                r = mcpcli(
                    "call", "echo", "-a", f"text={text}", "-s", remote(server), env={**warm, "HTTP_PROXY": proxy.url}
                )
                assert (r.returncode, r.stdout) == (0, f"{text}\n"), r.stderr
            assert first.seen and second.seen
            served = mcpcli("worker", "status", "--json", env=warm)
            assert '"relay"' in served.stdout
    finally:
        mcpcli("worker", "stop", env=warm)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("socks5://127.0.0.1:1080", "HTTPS_PROXY names a SOCKS proxy, which needs the socksio package."),
        ("ftp://proxy.example", "HTTPS_PROXY is not a proxy mcpcli can use"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_one_line_and_exit_2(value: str, words: str) -> None:
    r = mcpcli("--no-worker", "tools", "-s", "https://mcp.example/mcp", env={"HTTPS_PROXY": value})
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 2  # the line and its hint


def test_a_proxy_that_is_down_is_named_without_its_password() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    env = {"HTTPS_PROXY": f"http://me:pa55word@127.0.0.1:{port}"}
    r = mcpcli("--no-worker", "tools", "-s", "https://mcp.example/mcp", env=env)
    assert r.returncode == 4
    assert f"through the proxy http://127.0.0.1:{port}" in r.stderr and "pa55word" not in r.stderr


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "direct"),
    [
        ("api.example.com", 443, "", False),
        ("127.0.0.1", 80, "", True),
        ("127.5.0.1", 80, "", True),
        ("::1", 80, "", True),
        ("app.localhost", 80, "", True),
        ("api.example.com", 443, "*", True),
        ("api.example.com", 443, "example.com", True),
        ("api.example.com", 443, ".example.com", True),
        ("example.com", 443, ".example.com", True),
        ("badexample.com", 443, "example.com", False),
        ("api.example.com", 443, "api.example.com:8443", False),
        ("api.example.com", 8443, "api.example.com:8443", True),
        ("10.1.2.3", 80, "10.0.0.0/8", True),
        ("11.1.2.3", 80, "10.0.0.0/8", False),
        ("fd00::1", 80, "fd00::/8", True),
        ("fd00::1", 80, "[fd00::1]:80", True),
        ("API.Example.COM", 443, "example.com", True),
    ],
)
def test_which_hosts_go_direct(host: str, port: int, no_proxy: str, direct: bool) -> None:
    assert bypassed(host, port, [e.strip().lower() for e in no_proxy.split(",") if e.strip()]) is direct
