"""The MCP Apps web host (mcpcli/apphost/host.py) in a real browser: a view renders and talks, and is kept apart.

Each test runs an ``AppHost`` on an asyncio loop in a thread (``browser.running``) and drives the system's Chromium
with Playwright's sync API. The views are small HTML documents written here that speak JSON-RPC over postMessage;
what they find out comes back as their own messages. The refusals are plain HTTP requests (http.client), which can
send what a browser never would: a foreign ``Host``, a replayed token, a 4 MiB body.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, ClassVar, TypeVar

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcpcli.apphost.csp import allow_attribute, content_security_policy, refused
from mcpcli.apphost.host import AppHost, View, ViewClosed, ViewSpec

pytestmark = pytest.mark.slow
pytest_plugins = ["browser"]  # the chromium and browser_context fixtures

DEFAULT = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "media-src 'self' data:; connect-src 'none'"
)
"""SEP-1865's restrictive default, verbatim."""
SANDBOX_RULES = "frame-src 'none'; base-uri 'self'; object-src 'none'; form-action 'self'"
"""What the spec's sandbox rules add (and form-action, which default-src does not cover)."""

ECHO = """<!DOCTYPE html><html><body><p id="hello">hello from the view</p><script>
window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  window.parent.postMessage({jsonrpc: "2.0", method: "test/echo", params: {got: event.data}}, "*");
});
const initialize = {jsonrpc: "2.0", id: 1, method: "ui/initialize", params: {protocolVersion: "2026-01-26"}};
window.parent.postMessage(initialize, "*");
</script></body></html>"""


T = TypeVar("T")


@contextmanager
def running(manager: AbstractAsyncContextManager[T]) -> Iterator[tuple[T, BlockingPortal]]:
    """Enters ``manager`` (an AppHost) on an asyncio loop in a thread, for plain code and Playwright's sync API alike;
    yields what it gave and the portal that runs anything on that loop."""
    with start_blocking_portal(backend="asyncio") as portal, portal.wrap_async_context_manager(manager) as entered:
        yield entered, portal


def probe(script: str) -> str:
    """A view that runs ``script`` (an async body whose ``return`` value it reports as ``test/probe``)."""
    return (
        "<!DOCTYPE html><html><body><script>(async () => {"
        + script
        + '})().then((found) => window.parent.postMessage({jsonrpc: "2.0", method: "test/probe", params: found}, "*"));'
        "</script></body></html>"
    )


async def _receive(view: View, timeout: float) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        return await view.receive()


def receive(portal: Any, view: View, timeout: float = 10.0) -> dict[str, Any]:
    return portal.call(_receive, view, timeout)  # type: ignore[no-any-return]


def receive_method(portal: Any, view: View, method: str) -> dict[str, Any]:
    """The view's next message with ``method`` (CSP reports and others in between are skipped)."""
    while (message := receive(portal, view)).get("method") != method:
        pass
    return message


async def _wait(event: anyio.Event, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        await event.wait()
        return True
    return False


def attach(host: AppHost, portal: Any, context: Any) -> Any:
    """A browser page on the host's one-time link, once it has traded the token for a session."""
    page = context.new_page()
    page.goto(portal.call(host.page_url))
    assert portal.call(_wait, host.attached, 10.0)
    return page


@pytest.fixture
def hosted() -> Iterator[tuple[AppHost, Any]]:
    with running(AppHost()) as (host, portal):
        yield host, portal


def request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    host: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request to 127.0.0.1:port, with exactly the ``Host`` given (default: the right one)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if (body or method == "POST") and "Content-Length" not in (headers or {}):
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body or None)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def attach_raw(host: AppHost, token_url: str, origin: str | None = None) -> tuple[int, bytes]:
    token = token_url.split("#", 1)[1]
    headers = {"Content-Type": "application/json", "Origin": origin or host.origin}
    status, _, body = request(host.port, "POST", "/attach", headers, json.dumps({"token": token}).encode())
    return status, body


# --- a view renders, and its messages go both ways ---


def test_a_view_renders_and_a_message_round_trips_view_to_python_to_view(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    page = attach(host, portal, browser_context)
    view = portal.call(host.open_view, ViewSpec(html=ECHO, title="Weather", server="weather-server"))
    initialize = receive(portal, view)
    assert initialize == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "ui/initialize",
        "params": {"protocolVersion": "2026-01-26"},
    }
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2026-01-26", "hostInfo": {"name": "mcpcli"}}}
    portal.call(view.send, answer)
    assert receive_method(portal, view, "test/echo")["params"]["got"] == answer
    inner = page.frame_locator("section.view iframe").frame_locator("iframe")
    assert inner.locator("#hello").inner_text() == "hello from the view"
    assert page.locator("#status").inner_text() == "connected to mcpcli"
    assert page.locator(".boundary .title").inner_text() == "Weather"
    assert page.locator(".boundary .from").inner_text() == "sandboxed view from weather-server"


def test_a_size_change_resizes_the_view_within_bounds_and_reaches_python(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    page = attach(host, portal, browser_context)
    html = probe(
        'window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/size-changed",'
        " params: {width: 300, height: 99999999}}, '*'); return {};"
    )
    view = portal.call(host.open_view, ViewSpec(html=html))
    assert receive(portal, view)["params"] == {"width": 300, "height": 99999999}
    frame = page.locator("section.view iframe")
    assert frame.evaluate("f => [f.style.width, f.style.height]") == ["300px", "20000px"]


def test_stopping_tells_the_page_and_closing_a_view_removes_it(browser_context: Any) -> None:
    with running(AppHost()) as (host, portal):
        page = attach(host, portal, browser_context)
        view = portal.call(host.open_view, ViewSpec(html=ECHO))
        receive(portal, view)
        portal.call(view.close)
        page.locator("section.view").wait_for(state="detached")
        with pytest.raises(ViewClosed):
            receive(portal, view)
        portal.call(host.open_view, ViewSpec(html=ECHO))
        page.locator("section.view").wait_for()
    page.get_by_text("mcpcli stopped — you can close this tab").wait_for()
    assert page.locator("section.view").count() == 0


def test_a_host_stopped_by_cancellation_still_tells_the_page(browser_context: Any) -> None:
    """Ctrl-C cancels the command's task: the page still hears that mcpcli stopped."""

    async def hold(*, task_status: Any) -> None:
        async with AppHost() as host:
            task_status.started(host)
            await anyio.sleep_forever()

    with start_blocking_portal(backend="asyncio") as portal:
        future, host = portal.start_task(hold)
        page = attach(host, portal, browser_context)
        page.get_by_text("connected to mcpcli").wait_for()
        future.cancel()
        page.get_by_text("mcpcli stopped — you can close this tab").wait_for(timeout=3000)


def test_closing_the_page_sets_closed_within_3_seconds(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    page = attach(host, portal, browser_context)
    view = portal.call(host.open_view, ViewSpec(html=ECHO))
    receive(portal, view)
    page.close()
    assert portal.call(_wait, host.closed, 3.0)
    with pytest.raises(ViewClosed):
        receive(portal, view)
    with pytest.raises(ViewClosed):
        portal.call(view.send, {"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled", "params": {}})
    portal.call(view.close)  # closing what is already gone is no error


# --- only the page with the one-time link gets in ---


def test_attach_without_a_token_or_with_a_wrong_one_is_refused_and_so_is_everything_without_the_session(
    hosted: Any,
) -> None:
    host, portal = hosted
    portal.call(host.page_url)
    origin = {"Origin": host.origin, "Content-Type": "application/json"}
    assert request(host.port, "POST", "/attach", origin, b"{}")[0] == 403
    assert request(host.port, "POST", "/attach", origin, json.dumps({"token": "x" * 43}).encode())[0] == 403
    assert request(host.port, "GET", "/events")[0] == 403
    assert request(host.port, "GET", "/events", {"X-Mcpcli-Session": "guess"})[0] == 403
    assert request(host.port, "POST", "/messages", origin, b'{"messages": []}')[0] == 403
    assert request(host.port, "POST", "/detach", origin, b"guess")[0] == 403
    assert not host.attached.is_set() and not host.closed.is_set()


def test_a_token_works_once_and_a_replayed_token_is_refused(hosted: Any) -> None:
    host, portal = hosted
    url = portal.call(host.page_url)
    status, body = attach_raw(host, url)
    assert status == 200 and len(json.loads(body)["session"]) >= 43
    assert attach_raw(host, url)[0] == 403
    assert attach_raw(host, portal.call(host.page_url))[0] == 409  # a fresh token, but a page is already attached


def test_a_link_opened_twice_in_the_browser_works_only_the_first_time(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    url = portal.call(host.page_url)
    first = browser_context.new_page()
    first.goto(url)
    first.get_by_text("connected to mcpcli").wait_for()
    assert first.evaluate("location.hash") == ""  # the token left the address bar
    second = browser_context.new_page()
    second.goto(url)
    second.get_by_text("This link was already used or has expired: run the mcpcli command again.").wait_for()


def test_an_expired_token_is_refused() -> None:
    with running(AppHost(token_ttl=0.0)) as (host, portal):
        assert attach_raw(host, portal.call(host.page_url))[0] == 403
        assert not host.attached.is_set()


def test_a_foreign_origin_is_refused_and_leaves_the_token_unused(hosted: Any) -> None:
    host, portal = hosted
    url = portal.call(host.page_url)
    assert attach_raw(host, url, origin="http://evil.example")[0] == 403
    assert attach_raw(host, url, origin=f"http://127.0.0.1:{host.port + 1}")[0] == 403
    assert attach_raw(host, url, origin="null")[0] == 403
    assert not host.attached.is_set()
    assert attach_raw(host, url)[0] == 200


def test_a_foreign_host_is_refused_by_the_host_page_and_by_a_views_servers(hosted: Any) -> None:
    """DNS rebinding: a page of evil.example whose name now points to 127.0.0.1 sends ``Host: evil.example:PORT``."""
    host, portal = hosted
    for foreign in (f"evil.example:{host.port}", f"localhost:{host.port}", "127.0.0.1", f"127.0.0.1:{host.port + 1}"):
        assert request(host.port, "GET", "/", host=foreign)[0] == 403
    assert request(host.port, "GET", "/")[0] == 200
    view = portal.call(host.open_view, ViewSpec(html=ECHO))
    for origin in (view.origin, view.proxy_origin):
        port = int(origin.rsplit(":", 1)[1])
        assert request(port, "GET", "/static/sandbox.js", host=f"evil.example:{port}")[0] == 403
        assert request(port, "GET", "/nothing")[0] == 404


def test_a_body_over_4_mib_is_refused_with_413_before_it_is_read(hosted: Any) -> None:
    host, _ = hosted
    status, _, _ = request(host.port, "POST", "/messages", {"Content-Length": str(4 * 1024 * 1024 + 1)}, b"")
    assert status == 413
    status, _, _ = request(host.port, "GET", "/", {"X-Padding": "x" * 17_000})
    assert status == 431


def test_every_answer_is_no_store_nosniff_no_referrer_and_never_cors(hosted: Any) -> None:
    host, _ = hosted
    headers = {"Origin": host.origin}
    for method, path in (("GET", "/"), ("GET", "/static/host.js"), ("POST", "/attach"), ("GET", "/nothing")):
        _, answer, _ = request(host.port, method, path, headers)
        assert answer["cache-control"] == "no-store"
        assert answer["x-content-type-options"] == "nosniff"
        assert answer["referrer-policy"] == "no-referrer"
        assert not [name for name in answer if name.startswith("access-control-")]
    _, page, _ = request(host.port, "GET", "/")
    assert "script-src 'self';" in page["content-security-policy"]
    assert "frame-ancestors 'none'" in page["content-security-policy"]


def test_a_title_from_the_server_cannot_inject_html_into_the_host_page(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    page = attach(host, portal, browser_context)
    title = '<img src=x onerror="document.title=\'pwned\'"><b id="injected">bold</b>'
    portal.call(host.open_view, ViewSpec(html=ECHO, title=title, server="<i id='also'>srv</i>"))
    page.locator(".boundary .title").wait_for()
    assert page.locator(".boundary .title").inner_text() == title
    assert page.locator("#injected, #also, .boundary img").count() == 0
    assert page.title() == "mcpcli apps"


# --- the view is kept apart: from the host page, from its proxy, from other views, from undeclared sites ---


def test_the_view_cannot_read_the_host_page_nor_its_proxy_nor_fetch_the_host(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    attach(host, portal, browser_context)
    script = """
      const tries = {};
      for (const [name, reach] of [["parent", () => parent.document.body], ["top", () => top.document.body],
                                   ["hostPage", () => parent.parent.document.title]]) {
        try { reach(); tries[name] = "readable"; } catch (error) { tries[name] = "blocked"; }
      }
      try { await fetch(HOST + "/"); tries.fetch = "fetched"; } catch (error) { tries.fetch = "blocked"; }
      return tries;
    """.replace("HOST", json.dumps(host.origin))
    view = portal.call(host.open_view, ViewSpec(html=probe(script)))
    found = receive_method(portal, view, "test/probe")["params"]
    assert found == {"parent": "blocked", "top": "blocked", "hostPage": "blocked", "fetch": "blocked"}
    assert len({host.origin, view.proxy_origin, view.origin}) == 3


def test_a_view_cannot_see_a_second_views_local_storage(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    attach(host, portal, browser_context)
    writer = portal.call(
        host.open_view,
        ViewSpec(
            html=probe('localStorage.setItem("secret", "s3cret"); return {mine: localStorage.getItem("secret")};')
        ),
    )
    assert receive(portal, writer)["params"] == {"mine": "s3cret"}
    reader = portal.call(
        host.open_view,
        ViewSpec(html=probe('const seen = localStorage.getItem("secret"); return {seen, keys: localStorage.length};')),
    )
    assert receive(portal, reader)["params"] == {"seen": None, "keys": 0}
    assert reader.origin != writer.origin


class _Domain(http.server.BaseHTTPRequestHandler):
    """ "The domain" a view may or may not reach: a JSON answer anyone may read, and a 1×1 GIF."""

    hits: ClassVar[list[str]] = []
    GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body, kind = (
            (self.GIF, "image/gif") if self.path.startswith("/pixel") else (b'{"ok": true}', "application/json")
        )
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def domain() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Domain)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Domain.hits = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


REACH = """
  const found = {};
  try { found.fetch = (await (await fetch(DOMAIN + "/data")).json()).ok ? "fetched" : "odd"; }
  catch (error) { found.fetch = "blocked"; }
  found.image = await new Promise((done) => {
    const image = new Image();
    image.onload = () => done("loaded");
    image.onerror = () => done("blocked");
    image.src = DOMAIN + "/pixel.gif";
  });
  return found;
"""


def test_an_undeclared_domain_is_blocked_and_reported_and_a_declared_one_is_allowed(
    hosted: Any, browser_context: Any, domain: str
) -> None:
    host, portal = hosted
    attach(host, portal, browser_context)
    script = REACH.replace("DOMAIN", json.dumps(domain))
    closed = portal.call(host.open_view, ViewSpec(html=probe(script)))
    items = [receive(portal, closed)]
    while items[-1].get("method") != "test/probe":
        items.append(receive(portal, closed))
    assert items[-1]["params"] == {"fetch": "blocked", "image": "blocked"}
    assert _Domain.hits == []
    reports = [item["mcpcli/csp-violation"] for item in items if "mcpcli/csp-violation" in item]
    while len(reports) < 2:  # the browser may report after the probe's answer
        reports.append(receive(portal, closed)["mcpcli/csp-violation"])
    assert {(report["directive"], report["blocked"]) for report in reports} == {
        ("connect-src", f"{domain}/data"),
        ("img-src", f"{domain}/pixel.gif"),
    }
    declared = {"connectDomains": [domain], "resourceDomains": [domain]}
    opened = portal.call(host.open_view, ViewSpec(html=probe(script), csp=declared))
    assert f"connect-src {domain};" in opened.csp
    assert receive_method(portal, opened, "test/probe")["params"] == {"fetch": "fetched", "image": "loaded"}
    assert sorted(_Domain.hits) == ["/data", "/pixel.gif"]


def test_the_view_is_served_with_exactly_the_spec_default_policy_when_nothing_is_declared(
    hosted: Any, browser_context: Any
) -> None:
    host, portal = hosted
    served: list[Any] = []
    browser_context.on("response", lambda answer: "/view/" in answer.url and served.append(answer))
    page = attach(host, portal, browser_context)
    view = portal.call(host.open_view, ViewSpec(html=ECHO))
    receive(portal, view)
    page.frame_locator("section.view iframe").frame_locator("iframe").locator("#hello").wait_for()
    assert view.csp == f"{DEFAULT}; {SANDBOX_RULES}; report-uri {view.origin}/csp/{view._report_key}"
    assert [answer.all_headers()["content-security-policy"] for answer in served] == [view.csp]
    assert content_security_policy({}) == f"{DEFAULT}; {SANDBOX_RULES}"


def test_the_views_document_is_served_once(hosted: Any, browser_context: Any) -> None:
    host, portal = hosted
    attach(host, portal, browser_context)
    view = portal.call(host.open_view, ViewSpec(html=ECHO))
    receive(portal, view)
    port = int(view.origin.rsplit(":", 1)[1])
    assert request(port, "GET", f"/view/{view._view_key}")[0] == 404
    assert view._view_key == "" and view._proxy_key == ""


# --- the policy, from declarations (pure) ---


def test_a_hostile_declaration_is_not_let_through() -> None:
    hostile = {
        "connectDomains": [
            "'unsafe-eval'",
            "https://a.com; script-src *",
            "*",
            "https://*",
            "https://a.com,https://b.com",
        ],
        "resourceDomains": [
            "https://ok.example",
            "https://x.com/path",
            "data:",
            "https://user@x.com",
            " https://*.com ",
        ],
        "frameDomains": "https://not-a-list.example",
        "baseUriDomains": ["javascript:alert(1)", "https://base.example/"],
    }
    policy = content_security_policy(hostile)
    directives = dict(part.split(" ", 1) for part in policy.split("; "))
    assert directives["connect-src"] == "'none'"
    assert directives["script-src"] == "'self' 'unsafe-inline' https://ok.example"
    assert directives["frame-src"] == "'none'"
    assert directives["base-uri"] == "https://base.example"
    for bad in ("unsafe-eval", "*;", " * ", "a.com", "b.com", "x.com", "javascript", "not-a-list"):
        assert bad not in policy
    assert len(refused(hostile)) == 11


def test_declared_origins_widen_only_their_directives() -> None:
    policy = content_security_policy(
        {
            "connectDomains": ["https://api.example.com", "wss://live.example.com"],
            "resourceDomains": ["https://*.cdn.example"],
            "frameDomains": ["https://www.youtube.com"],
        }
    )
    assert policy == (
        "default-src 'none'; script-src 'self' 'unsafe-inline' https://*.cdn.example; "
        "style-src 'self' 'unsafe-inline' https://*.cdn.example; img-src 'self' data: https://*.cdn.example; "
        "font-src 'self' https://*.cdn.example; media-src 'self' data: https://*.cdn.example; "
        "connect-src https://api.example.com wss://live.example.com; frame-src https://www.youtube.com; "
        "base-uri 'self'; object-src 'none'; form-action 'self'"
    )


def test_permissions_become_the_allow_attribute_only_as_declared() -> None:
    assert allow_attribute({}) == ""
    assert allow_attribute({"camera": {}, "clipboardWrite": {}, "microphone": False, "usb": {}}) == (
        "camera; clipboard-write"
    )
