"""OAuth sign-in and static tokens, against a real authorization server and a protected MCP server on 127.0.0.1
(``tests/oauth_server.py``), with a ``$BROWSER`` script that follows the redirects like a browser would."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import PY, ROOT, HttpServer, free_port

OAUTH_SERVER = Path(__file__).resolve().parent / "oauth_server.py"

BROWSER_SCRIPT = """#!{py}
import sys, urllib.request
from pathlib import Path
log = Path({log!r})
with log.open("a") as f:
    f.write(sys.argv[1] + "\\n")
page = urllib.request.urlopen(sys.argv[1], timeout=20)   # follows the redirects, to mcpcli's listener
with log.open("a") as f:
    text = page.read().decode()[:400].replace("\\n", " ")
    f.write("landed " + page.geturl() + " " + str(page.status) + " " + text + "\\n")
"""


@dataclass
class OAuthServer:
    process: HttpServer
    as_port: int
    mcp_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.mcp_port}/mcp"

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.as_port}"

    def events(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.issuer}/_test/events", timeout=5) as r:
            events: list[dict[str, Any]] = json.load(r)
        return events

    def kinds(self) -> list[str]:
        return [e["event"] + (f":{e['grant']}" if "grant" in e else "") for e in self.events()]

    def post(self, path: str) -> None:
        urllib.request.urlopen(urllib.request.Request(f"{self.issuer}{path}", method="POST"), timeout=5).read()


@pytest.fixture
def oauth(tmp_path: Path) -> Iterator[Any]:
    """Start the protected server and its authorization server: ``oauth(*extra_args)``."""
    started: list[HttpServer] = []

    def start(*extra: str) -> OAuthServer:
        as_port, mcp_port = free_port(), free_port()
        argv = [PY, str(OAUTH_SERVER), "--as-port", str(as_port), "--mcp-port", str(mcp_port), *extra]
        process = HttpServer(argv, mcp_port, tmp_path / f"oauth-{mcp_port}.log").start()
        started.append(process)
        _wait_port(as_port)
        return OAuthServer(process, as_port, mcp_port)

    yield start
    for process in started:
        process.stop()


def _wait_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Set ``$BROWSER`` to a script that visits the URL and follows redirects; returns its log (visited URLs)."""
    log = tmp_path / "browser.log"
    script = tmp_path / "browser.py"
    script.write_text(BROWSER_SCRIPT.format(py=sys.executable, log=str(log)))
    script.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(script))
    return log


@pytest.fixture
def no_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``$BROWSER`` that records being opened and fails: a test that must not sign in checks it stayed empty."""
    log = tmp_path / "opened.log"
    script = tmp_path / "refuse.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(log)!r}, 'a').write(sys.argv[1] + '\\n')\nsys.exit(1)\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(script))
    return log


def _token_files(home: Path) -> list[Path]:
    return [p for p in (home / "tokens").glob("*.json") if p.name != "index.json"]


def _stored(home: Path) -> dict[str, Any]:
    (path,) = _token_files(home)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# --- sign in ----------------------------------------------------------------------------------------------------------


def test_auth_login_discovers_registers_and_signs_in_with_pkce_through_the_browser(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    result = cli("auth", "login", server.url)
    assert result.code == 0, result.err
    assert "Signed in to" in result.err and "scope mcp" in result.err
    visited = browser.read_text().splitlines()
    authorize = visited[0]
    assert authorize.startswith(f"{server.issuer}/authorize?")
    assert "code_challenge_method=S256" in authorize and "state=" in authorize
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in authorize
    assert "landed http://127.0.0.1:" in visited[1] and "/callback?code=" in visited[1] and " 200 " in visited[1]
    assert "Signed in" in visited[1] and "close this tab" in visited[1]  # the friendly page
    # Registration, then the code exchange (the server checks the PKCE verifier against the challenge).
    assert server.kinds() == ["register", "authorize", "consent", "token:authorization_code"]
    stored = _stored(home)
    assert stored["server"] == server.url and stored["tokens"]["access_token"].startswith("at-")
    assert stored["client"]["client_id"] == server.events()[0]["client_id"]


def test_stored_tokens_are_private_files_in_a_private_directory(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    (path,) = _token_files(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "tokens").stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "tokens" / "index.json").stat().st_mode) == 0o600


def test_a_call_after_login_uses_the_stored_token_and_opens_no_browser(
    cli: Any, oauth: Any, browser: Path, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    result = cli("call", "whoami", "-s", server.url)
    assert result.code == 0, result.err
    assert "alice via" in result.out
    assert len(browser.read_text().splitlines()) == 2  # the login's visit and landing; nothing for the call
    assert server.kinds().count("authorize") == 1


def test_a_call_at_a_terminal_to_a_server_that_answers_401_signs_in_then_calls(
    oauth: Any, browser: Path, home: Path, process: Any
) -> None:
    server = oauth()
    result = process("call", "whoami", "-s", server.url, env={"MCPCLI_ASSUME_TTY": "1"})
    assert result.code == 0, result.err
    assert "alice via" in result.out
    assert "Opening your browser to sign in" in result.err
    assert "token:authorization_code" in server.kinds()
    assert _stored(home)["tokens"]["access_token"] not in result.err + result.out


def test_without_a_terminal_a_401_exits_4_with_the_login_command(
    cli: Any, oauth: Any, no_browser: Path, home: Path
) -> None:
    server = oauth()
    result = cli("call", "whoami", "-s", server.url, "--no-input")
    assert result.code == 4
    assert "needs you to sign in" in result.err
    assert f"mcpcli auth login {server.url}" in result.err
    assert "Traceback" not in result.err
    assert not no_browser.exists()
    assert "authorize" not in server.kinds()


def _login_waiting(server: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """``auth login --no-browser`` in its own process, once it has printed the sign-in URL (and waits for it)."""
    proc = subprocess.Popen(
        [PY, "-m", "mcpcli", "auth", "login", server.url, "--no-browser"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "BROWSER": str(tmp_path / "never-used")},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.strip().startswith(f"{server.issuer}/authorize?"):
            return proc, line.strip()
    proc.kill()
    pytest.fail("the sign-in URL was not printed")


def test_auth_login_no_browser_prints_the_url_and_waits_for_the_redirect(
    oauth: Any, home: Path, tmp_path: Path
) -> None:
    proc, url = _login_waiting(oauth(), tmp_path)
    page = urllib.request.urlopen(url, timeout=20)  # the user pastes it into a browser
    assert "/callback?code=" in page.geturl()
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Signed in to" in err


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGTERM, 143, "Terminated (SIGTERM)."),
        (signal.SIGHUP, 129, "Hung up (SIGHUP)."),
        (signal.SIGINT, 130, "Interrupted."),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_login_stopped_while_it_waits_for_the_browser_says_so_and_keeps_nothing(
    signum: int, code: int, said: str, oauth: Any, home: Path, tmp_path: Path
) -> None:
    """A supervisor's SIGTERM, a closed terminal or Ctrl-C while the sign-in waits: one line, the shell's exit code
    for the signal, no traceback, no half-stored login."""
    proc, _url = _login_waiting(oauth(), tmp_path)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert said in err and "Traceback" not in err
    assert not _token_files(home) or not _stored(home).get("tokens")


def test_the_callback_timing_out_is_one_clear_line(
    cli: Any, oauth: Any, home: Path, monkeypatch: pytest.MonkeyPatch, no_browser: Path
) -> None:
    server = oauth()
    monkeypatch.setenv("MCPCLI_LOGIN_TIMEOUT", "0.5")
    result = cli("auth", "login", server.url)
    assert result.code == 4
    assert "did not come back within" in result.err and "--no-browser" in result.err
    assert "No browser could be started" in result.err
    assert not _token_files(home) or not _stored(home).get("tokens")


# --- refresh, logout, identities --------------------------------------------------------------------------------------


def test_an_expired_access_token_is_refreshed_before_the_call_without_a_browser(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    before = _stored(home)
    (path,) = _token_files(home)
    path.write_text(json.dumps({**before, "expires_at": time.time() - 5}))  # as if an hour had passed
    server.post("/_test/expire")  # and the server agrees
    result = cli("call", "whoami", "-s", server.url, "--no-input")
    assert result.code == 0, result.err
    assert "alice via" in result.out
    assert server.kinds()[-1] == "token:refresh_token"
    after = _stored(home)
    assert after["tokens"]["access_token"] != before["tokens"]["access_token"]
    assert after["login_id"] == before["login_id"]  # the same sign-in, refreshed
    assert after["refreshed"] is not None
    assert len(browser.read_text().splitlines()) == 2  # the one login's visit and landing, nothing since


def test_auth_status_shows_the_login_but_never_a_token(cli: Any, oauth: Any, browser: Path, home: Path) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    token = _stored(home)["tokens"]
    shown = cli("auth", "status", "--json")
    assert shown.code == 0
    (row,) = shown.json()
    assert row["server"] == server.url and row["state"] == "signed in" and row["scope"] == "mcp"
    assert row["refreshable"] is True and row["stored"] == "file"
    plain = cli("auth", "status")
    assert server.url in plain.out
    for secret in (token["access_token"], token["refresh_token"]):
        assert secret not in shown.out + plain.out + plain.err


def test_auth_logout_forgets_the_login_and_the_next_unattended_call_needs_a_login(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    old = _stored(home)["tokens"]["access_token"]
    result = cli("auth", "logout", server.url)
    assert result.code == 0 and "revoked at the authorization server and deleted here" in result.err
    assert server.kinds().count("revoke") == 2  # the refresh token and the access token (RFC 7009)
    assert cli("call", "whoami", "-s", server.url, "--bearer", old, "--no-input").code == 4  # it is dead there too
    assert _token_files(home) == []
    assert cli("auth", "status", "--json").json() == []
    assert cli("call", "whoami", "-s", server.url, "--no-input").code == 4
    assert "No login stored" in cli("auth", "logout", server.url).err


def test_tokens_never_reach_the_logs_or_the_session_store(cli: Any, oauth: Any, browser: Path, home: Path) -> None:
    server = oauth()
    assert cli("auth", "login", server.url, "--debug").code == 0
    assert cli("call", "provision", "-s", server.url, "--arg", "name=orders", "--no-input").code == 3
    tokens = _stored(home)["tokens"]
    for path in home.rglob("*"):
        if path.is_file() and "tokens" not in path.parts:
            data = path.read_bytes()
            assert tokens["access_token"].encode() not in data, path
            assert tokens["refresh_token"].encode() not in data, path


def test_a_flow_started_signed_in_resumes_with_the_same_login(cli: Any, oauth: Any, browser: Path, home: Path) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    started = cli("call", "provision", "-s", server.url, "--arg", "name=orders", "--no-input", "--json")
    assert started.code == 3, started.err
    session = started.json()["session_id"]
    done = cli("resume", session, "--answer", "region=eu-west-1")
    assert done.code == 0, done.err
    assert "Provisioned 'orders' in eu-west-1." in done.out
    assert "was started as" not in done.err


def test_a_resume_as_somebody_else_says_so_and_starts_the_flow_over(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    started = cli("call", "provision", "-s", server.url, "--arg", "name=orders", "--no-input", "--json")
    session = started.json()["session_id"]
    server.post("/_test/user?name=bob")
    assert cli("auth", "login", server.url).code == 0  # now bob
    done = cli("resume", session, "--answer", "region=eu-west-1")
    assert done.code == 0, done.err
    assert "was started as oauth sign-in" in done.err  # said before anything is sent
    assert "no longer accepts this flow's state" in done.err  # the server bound the state to alice
    assert "Provisioned 'orders' in eu-west-1." in done.out


# --- static tokens and pre-registered clients -------------------------------------------------------------------------


def test_bearer_flag_sends_a_static_token_and_never_starts_oauth(cli: Any, oauth: Any, no_browser: Path) -> None:
    server = oauth("--static-token", "api-token-123")
    result = cli("call", "whoami", "-s", server.url, "--bearer", "api-token-123", "--no-input")
    assert result.code == 0, result.err
    assert "robot via static" in result.out
    assert server.kinds() == []


def test_a_config_entry_takes_its_bearer_token_from_the_environment(
    cli: Any, oauth: Any, home: Path, monkeypatch: pytest.MonkeyPatch, no_browser: Path
) -> None:
    server = oauth("--static-token", "env-token-456")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[mcpServers.api]\nurl = "{server.url}"\nbearer_token_env = "API_TOKEN"\n', encoding="utf-8"
    )
    missing = cli("call", "whoami", "-s", "api", "--no-input")
    assert missing.code == 2 and "$API_TOKEN" in missing.err and "export API_TOKEN" in missing.err
    monkeypatch.setenv("API_TOKEN", "env-token-456")
    result = cli("call", "whoami", "-s", "api", "--no-input")
    assert result.code == 0, result.err
    assert "robot via static" in result.out
    assert not no_browser.exists()


def test_a_wrong_bearer_token_is_refused_with_one_line(cli: Any, oauth: Any, no_browser: Path) -> None:
    server = oauth("--static-token", "right")
    result = cli("call", "whoami", "-s", server.url, "--bearer", "wrong", "--no-input")
    assert result.code == 4
    assert "refused the bearer token (HTTP 401)" in result.err and "--bearer" in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 2
    assert "wrong" not in result.err


def test_a_pre_registered_client_from_the_config_signs_in_without_registering(
    cli: Any, oauth: Any, browser: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    server = oauth("--client-id", "mcpcli-test", "--client-secret", "s3cret", "--redirect", redirect)
    monkeypatch.setenv("OAUTH_SECRET", "s3cret")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[mcpServers.corp]\nurl = "{server.url}"\n'
        '[mcpServers.corp.oauth]\nclient_id = "mcpcli-test"\nclient_secret_env = "OAUTH_SECRET"\n'
        f"redirect_port = {port}\n",
        encoding="utf-8",
    )
    result = cli("auth", "login", "corp")
    assert result.code == 0, result.err
    assert server.kinds() == ["authorize", "consent", "token:authorization_code"]
    assert cli("call", "whoami", "-s", "corp", "--no-input").out.strip().endswith("alice via mcpcli-test")
    assert "s3cret" not in json.dumps(_stored(home))
    assert "revoked at the authorization server" in cli("auth", "logout", "corp").err  # as a confidential client
    assert server.kinds()[-2:] == ["revoke", "revoke"]


def test_login_to_a_server_without_oauth_says_there_was_nothing_to_do(
    cli: Any, http_demo: Any, no_browser: Path
) -> None:
    server = http_demo()
    result = cli("auth", "login", server.url)
    assert result.code == 0
    assert "did not ask to sign in" in result.err


def test_login_to_a_stdio_server_is_a_usage_error(cli: Any) -> None:
    result = cli("auth", "login", "demo")
    assert result.code == 2 and "not an HTTP server" in result.err


def use_keyring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str) -> None:
    """Make ``backend`` (a class's dotted name; tests/ is on its path) the keyring of this process and of every
    mcpcli process the test starts — the warm pass's worker children too — through keyring's own config file."""
    import keyring

    config = tmp_path / "xdg" / "python_keyring"
    config.mkdir(parents=True)
    path = Path(__file__).resolve().parent
    (config / "keyringrc.cfg").write_text(f"[backend]\ndefault-keyring = {backend}\nkeyring-path = {path}\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config.parent))
    monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.core.load_keyring(backend))


def test_a_keyring_that_is_asked_for_but_not_usable_is_a_clear_error(
    cli: Any, oauth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_keyring(monkeypatch, tmp_path, "keyring.backends.fail.Keyring")  # what a headless machine has
    server = oauth()
    monkeypatch.setenv("MCPCLI_TOKEN_STORE", "keyring")
    result = cli("call", "whoami", "-s", server.url, "--no-input")
    assert result.code == 2 and "no usable keyring" in result.err and "MCPCLI_TOKEN_STORE=file" in result.err
    monkeypatch.setenv("MCPCLI_TOKEN_STORE", "auto")  # the default: the file store serves
    assert cli("call", "whoami", "-s", server.url, "--no-input").code == 4


def test_with_a_working_keyring_the_login_lives_there_and_not_in_a_file(
    cli: Any, oauth: Any, browser: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ring = tmp_path / "keyring.json"
    monkeypatch.setenv("TEST_KEYRING_FILE", str(ring))
    use_keyring(monkeypatch, tmp_path, "file_keyring.FileKeyring")
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    assert _token_files(home) == []  # only the index (no secrets) is a file
    stored = json.loads(next(iter(json.loads(ring.read_text()).values())))
    assert stored["server"] == server.url and stored["tokens"]["access_token"].startswith("at-")
    assert stored["tokens"]["access_token"] not in (home / "tokens" / "index.json").read_text()
    (row,) = cli("auth", "status", "--json").json()
    assert row["stored"] == "keyring" and row["state"] == "signed in"
    assert "alice via" in cli("call", "whoami", "-s", server.url, "--no-input").out
    assert cli("auth", "logout", server.url).code == 0
    assert json.loads(ring.read_text()) == {}


# --- the loopback listener --------------------------------------------------------------------------------------------


def _get(url: str) -> tuple[int, str]:
    import urllib.error

    try:
        with urllib.request.urlopen(url, timeout=5) as page:
            return page.status, page.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_listener_passes_code_state_and_iss_through_and_shows_a_friendly_page() -> None:
    from mcpcli.auth.login import _Receiver

    port = free_port()
    receiver = _Receiver(port)
    receiver.start()
    try:
        assert _get(f"http://127.0.0.1:{port}/favicon.ico")[0] == 404  # browsers ask; it is not the redirect
        assert not receiver.done.is_set()
        status, page = _get(f"http://127.0.0.1:{port}/callback?code=c0de&state=st%26te&iss=http%3A%2F%2Fas.example%2F")
    finally:
        receiver.close()
    assert status == 200 and "Signed in" in page and "close this tab" in page
    assert receiver.result is not None
    assert (receiver.result.code, receiver.result.state, receiver.result.iss) == ("c0de", "st&te", "http://as.example/")


def test_a_refusal_in_the_browser_is_shown_escaped_and_reported() -> None:
    from mcpcli.auth.login import _Receiver

    port = free_port()
    receiver = _Receiver(port)
    receiver.start()
    try:
        status, page = _get(
            f"http://127.0.0.1:{port}/callback?error=access_denied&error_description=%3Cscript%3Eno%3C%2Fscript%3E"
        )
    finally:
        receiver.close()
    assert status == 400 and "&lt;script&gt;" in page and "<script>" not in page
    assert receiver.result is None and receiver.error == "<script>no</script>"


def test_a_call_with_a_stored_login_does_not_import_keyring(cli: Any, oauth: Any, browser: Path) -> None:
    """Importing keyring costs ~40 ms (its backends are discovered at import): only a write of a login needs it."""
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    code = (
        "import sys\n"
        "from mcpcli.cli import app\n"
        "try:\n"
        f"    app(['call', 'whoami', '-s', {server.url!r}, '--no-input'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('KEYRING' if any(m == 'keyring' or m.startswith('keyring.') for m in sys.modules) else 'NONE')\n"
    )
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "alice via" in proc.stdout, proc.stderr
    assert proc.stdout.strip().endswith("NONE")


@pytest.mark.parametrize(
    ("advertised", "secret", "method"),
    [
        (None, True, "client_secret_basic"),  # RFC 8414: no list means Basic
        (["client_secret_basic"], True, "client_secret_basic"),
        (["client_secret_post", "client_secret_basic"], True, "client_secret_basic"),  # RFC 6749 prefers Basic
        (["client_secret_post"], True, "client_secret_post"),
        (["private_key_jwt"], True, "client_secret_basic"),  # nothing mcpcli can do: the one every server must take
        (["client_secret_basic"], False, "none"),  # a public client sends no secret
    ],
)
def test_a_confidential_client_authenticates_as_the_authorization_server_advertises(
    advertised: list[str] | None, secret: bool, method: str
) -> None:
    from mcpcli.auth.login import token_auth_method

    assert token_auth_method(advertised, secret=secret) == method


def test_auth_status_without_logins_hints_the_readmes_login_form(cli: Any, home: Path) -> None:
    """The README signs in with ``mcpcli auth login URL``: the hint says the same, not ``-s URL``."""
    shown = cli("auth", "status")
    assert shown.code == 0
    said = shown.out + shown.err
    assert "No OAuth logins. Sign in with: mcpcli auth login URL" in said and "-s URL" not in said
    refused = cli("auth", "status", "demo")
    assert refused.code == 2 and "mcpcli auth status URL" in refused.err and "-s URL" not in refused.err


def test_auth_status_json_names_the_login_command_as_the_readme_writes_it(
    cli: Any, oauth: Any, browser: Path, home: Path
) -> None:
    server = oauth()
    assert cli("auth", "login", server.url).code == 0
    (row,) = cli("auth", "status", "--json").json()
    assert row["login_command"] == f"mcpcli auth login {server.url}"
