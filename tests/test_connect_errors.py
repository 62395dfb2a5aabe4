"""A connection that cannot start says what is wrong — nothing listening, a name that does not resolve, a TLS
handshake or certificate that failed, a web server that is not an MCP endpoint — and a hint that leads somewhere:
never ``mcpcli info``, which fails the same way. Through the CLI, against real sockets."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """``python3 -m http.server``'s handler: GET serves files, POST is 501 Not Implemented."""

    def log_message(self, *_args: Any) -> None:
        pass


@contextmanager
def web_server(tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """A plain web server (no MCP) on 127.0.0.1; its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def said(err: str) -> tuple[str, str]:
    """The error's line and its hint's line."""
    lines = err.strip().splitlines()
    return lines[0], next((line for line in lines if line.startswith("hint: ")), "")


@pytest.mark.parametrize("command", ["tools", "info"])
def test_a_port_where_nothing_listens_is_named_and_the_hint_is_not_info(process: Any, command: str) -> None:
    port = free_port()
    r = process(command, "-s", f"http://127.0.0.1:{port}/mcp")
    assert r.code == 4, r.err
    line, hint = said(r.err)
    assert line.endswith(f"nothing is listening on 127.0.0.1:{port}."), r.err
    assert hint == "hint: Start the server, or check the host and port in the URL.", r.err
    assert "All connection attempts failed" not in r.err and "mcpcli info" not in r.err


@pytest.mark.parametrize(
    ("path", "hint"),
    [
        ("/mcp", "Check the port: this is another web server, not the MCP server."),
        ("/", "Check the URL's path: MCP servers usually answer at /mcp (-s http://127.0.0.1:{port}/mcp)."),
    ],
)
def test_a_web_server_that_is_not_mcp_is_named_as_such(process: Any, path: str, hint: str) -> None:
    with web_server() as port:
        r = process("tools", "-s", f"http://127.0.0.1:{port}{path}")
    assert r.code == 4, r.err
    line, said_hint = said(r.err)
    assert line.endswith(
        f"the web server there answered the MCP request (a POST to {path}) with HTTP 501 Not Implemented: "
        "not an MCP endpoint."
    ), r.err
    assert said_hint == "hint: " + hint.format(port=port)


def test_a_host_name_that_does_not_resolve_is_named(process: Any) -> None:
    r = process("tools", "-s", "http://no-such-host.invalid/mcp")
    assert r.code == 4, r.err
    line, hint = said(r.err)
    assert "the host name no-such-host.invalid does not resolve" in line, r.err
    assert hint.startswith("hint: Check the host name in the URL"), r.err


def test_https_to_a_plain_http_port_says_it_does_not_speak_tls_and_offers_http(process: Any) -> None:
    with web_server() as port:
        r = process("tools", "-s", f"https://127.0.0.1:{port}/mcp")
    assert r.code == 4, r.err
    line, hint = said(r.err)
    assert line.endswith(f"the TLS handshake with 127.0.0.1:{port} failed: it does not speak TLS."), r.err
    assert hint == f"hint: If it is plain HTTP: -s http://127.0.0.1:{port}/mcp"


def test_an_untrusted_certificate_is_named_and_the_hint_that_trusts_it_works(process: Any, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    with web_server(tls) as port:
        r = process("tools", "-s", f"https://127.0.0.1:{port}/mcp")
        trusted = process("tools", "-s", f"https://127.0.0.1:{port}/mcp", env={"SSL_CERT_FILE": str(cert)})
    assert r.code == 4, r.err
    line, hint = said(r.err)
    assert f"the TLS certificate of 127.0.0.1:{port} is not trusted (self-signed certificate)" in line, r.err
    assert "SSL_CERT_FILE=ca.pem" in hint
    assert trusted.code == 4 and "not an MCP endpoint" in said(trusted.err)[0], trusted.err  # past TLS now
