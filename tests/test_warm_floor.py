"""A call asks the server only for the call (issue 36): the discover result and the tool listing remembered between
commands (``mcpcli.net.warmcache``), keyed by what can change them, and dropped when they may be stale. End to end
through the CLI against real SDK servers; in the warm pass (``MCPCLI_TEST_WARM=1``) every command goes through the
worker, and the same holds."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from conftest import PY, SERVERS, HttpServer

from mcpcli.net import warmcache


def _methods(out: str) -> list[str]:
    """The methods of the requests a ``--trace -`` run sent, in order."""
    sent = []
    for line in out.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("dir") == "send" and entry.get("kind") == "request":
                sent.append(entry["method"])
    return sent


def _call(
    cli: Any,
    url: str,
    *extra: str,
    tool: str = "echo",
    args: tuple[str, ...] = ("text=hi",),
    after: tuple[str, ...] = (),
) -> Any:
    words = [word for arg in args for word in ("--arg", arg)]
    return cli("-s", url, "--trace", "-", *extra, "call", tool, *words, *after)


def _warm_files(home: Path) -> list[Path]:
    return sorted((home / "cache" / "warm").glob("*.json"))


def test_a_second_call_asks_the_server_only_for_the_call(cli: Any, http_demo: Any) -> None:
    server = http_demo()
    first = _call(cli, server.url)
    assert first.code == 0, first.err
    assert _methods(first.out) == ["server/discover", "tools/list", "tools/call"]
    second = _call(cli, server.url)
    assert second.code == 0, second.err
    assert _methods(second.out) == ["tools/call"]
    assert "hi" in second.err  # with --trace -, the result goes to stderr


def test_what_is_remembered_is_private_and_holds_no_secret_and_another_token_is_asked_afresh(
    cli: Any, http_demo: Any, home: Path
) -> None:
    server = http_demo()
    secret = "s3cret-token-value-0123456789"
    assert _call(cli, server.url, "--bearer", secret).code == 0
    (entry,) = _warm_files(home)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert secret not in entry.read_text() and secret not in entry.name
    again = _call(cli, server.url, "--bearer", secret)
    assert _methods(again.out) == ["tools/call"]
    other = _call(cli, server.url, "--bearer", "another-token-0123456789")
    assert _methods(other.out) == ["server/discover", "tools/list", "tools/call"]  # who asks is part of the key


def _replaced(first: HttpServer, tmp_path: Path) -> HttpServer:
    """Another server (the recorder) at ``first``'s address: its tools are not the ones remembered."""
    first.stop()
    argv = [PY, str(SERVERS), "recorder", "--record", str(tmp_path / "record.ndjson")]
    return HttpServer([*argv, "--http", f"127.0.0.1:{first.port}"], first.port, tmp_path / "recorder.log").start()


def test_a_tool_the_remembered_listing_does_not_name_is_listed_afresh_before_it_is_called_unknown(
    cli: Any, http_server: Any, tmp_path: Path
) -> None:
    first = http_server("counter")
    assert _call(cli, first.url, tool="count", args=()).code == 0
    second = _replaced(first, tmp_path)
    try:
        nap = _call(cli, second.url, tool="sleepy", args=("seconds=0",))
        assert nap.code == 0, nap.err
        assert _methods(nap.out) == ["tools/list", "tools/call"]  # the discover result still stands
        gone = _call(cli, second.url, tool="count", args=())
        assert gone.code == 2 and "has no tool 'count'" in gone.err  # asked afresh, still unknown: nothing sent
        assert _methods(gone.out) == ["tools/list"]
    finally:
        second.stop()


def test_a_tool_error_from_a_call_typed_by_a_remembered_listing_makes_the_next_call_list_afresh(
    cli: Any, http_server: Any, tmp_path: Path
) -> None:
    first = http_server("counter")
    assert _call(cli, first.url, tool="count", args=()).code == 0
    second = _replaced(first, tmp_path)
    try:
        stale = _call(cli, second.url, tool="count", args=())
        assert stale.code == 1 and "Unknown tool: count" in stale.err  # the server's own answer
        assert _methods(stale.out) == ["tools/call"]
        again = _call(cli, second.url, tool="count", args=())
        assert again.code == 2 and "has no tool 'count'" in again.err
        assert _methods(again.out) == ["server/discover", "tools/list"]
    finally:
        second.stop()


def test_a_server_that_refuses_a_call_as_a_protocol_error_is_asked_afresh_next_time(
    cli: Any, http_server: Any, home: Path
) -> None:
    server = http_server("recorder", "--record", str(home.parent / "record.ndjson"))
    assert _call(cli, server.url, tool="sleepy", args=("seconds=0",)).code == 0
    assert _warm_files(home)
    # Arguments of the wrong type: the server refuses the request itself (-32602), which may mean the schema
    # remembered is out of date.
    refused = cli("-s", server.url, "call", "sleepy", "--args", '{"seconds": "x", "extra": []}')
    assert refused.code != 0
    assert not _warm_files(home)
    again = _call(cli, server.url, tool="sleepy", args=("seconds=0",))
    assert _methods(again.out) == ["server/discover", "tools/list", "tools/call"]


def test_the_cache_is_off_with_a_warm_ttl_of_zero(cli: Any, http_demo: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv(warmcache.TTL_ENV, "0")
    server = http_demo()
    assert _call(cli, server.url).code == 0
    assert _methods(_call(cli, server.url).out) == ["server/discover", "tools/list", "tools/call"]


def test_a_remembered_answer_expires_by_the_servers_ttl_or_the_default_bound() -> None:
    assert warmcache.expires({"ttlMs": 5000}, 100.0) == 105.0
    assert warmcache.expires({"ttlMs": 0}, 100.0) == 100.0 + warmcache.DEFAULT_TTL  # the SDK's default: no hint
    assert warmcache.expires({}, 100.0) == 100.0 + warmcache.DEFAULT_TTL
    assert warmcache.expires({"ttlMs": 10**12}, 0.0) == warmcache.MAX_TTL


def test_the_key_changes_with_everything_that_can_change_the_answer() -> None:
    from mcpcli.settings.targets import Target

    target = Target(label="x", kind="http", url="http://127.0.0.1:1/mcp")
    base: dict[str, Any] = {
        "protocol": "auto",
        "who": None,
        "headers": {},
        "declared": {"extensions": {}},
        "environment": None,
    }
    keys = {
        warmcache.key(target, **base),
        warmcache.key(Target(label="x", kind="http", url="http://127.0.0.1:2/mcp"), **base),
        warmcache.key(target, **(base | {"protocol": "2026-07-28"})),
        warmcache.key(target, **(base | {"who": "bearer token sha256:1234"})),
        warmcache.key(target, **(base | {"headers": {"X-Api-Key": "k"}})),
        warmcache.key(target, **(base | {"declared": {"extensions": {"io.modelcontextprotocol/ui": {}}}})),
    }
    assert len(keys) == 6


def test_a_kept_servers_generation_changes_with_each_list_change_it_announces() -> None:
    from mcpcli.worker.kept import Kept, KeptServer

    kept = Kept(lambda *_: None, lambda *_: None)
    server = KeptServer("s", {"command": "x", "env": {}, "home": ""})
    before = server.generation
    kept._from_server_line(server, b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')
    assert server.generation != before


def test_a_server_that_asked_for_the_roots_on_connecting_is_remembered_so_until_its_entry_is_dropped(
    tmp_path: Path,
) -> None:
    """What ``engine.roots`` waits by on a connection that skips the listing (the filesystem server's case)."""
    from mcpcli.settings.config import Paths
    from mcpcli.settings.targets import Target

    paths = Paths(state_dir=tmp_path / "state", config_dir=tmp_path / "config")
    target = Target(label="fs", kind="stdio", command="server-filesystem")
    first = warmcache.slot(paths, target, "k")
    assert first is not None
    first.keep("discover", {"supportedVersions": ["2026-07-28"]}, {})

    class Connection:
        warm_slot = first

    assert not warmcache.asks_roots(Connection())
    warmcache.learned_asks_roots(Connection())
    again = warmcache.slot(paths, target, "k")  # the next command's connection, reading the file
    assert again is not None and again.doc.get("asks_roots") is True and again.fresh("discover") is not None
    Connection.warm_slot = again
    assert warmcache.asks_roots(Connection())
    again.drop()  # a list change, a protocol error...: relearnt on the next cold connection
    assert not warmcache.asks_roots(Connection())
    dropped = warmcache.slot(paths, target, "k")
    assert dropped is not None and dropped.doc == {}


def test_a_call_and_completion_share_one_listing_on_disk_and_a_tools_run_between_two_calls_keeps_it_warm(
    cli: Any, http_demo: Any, home: Path
) -> None:
    server = http_demo()
    assert _call(cli, server.url).code == 0
    (listing,) = (home / "cache" / "tools").glob("*.json")  # the one file completion reads
    assert "echo" in [tool["name"] for tool in json.loads(listing.read_text())["tools"]["items"]]
    assert all("tools" not in json.loads(entry.read_text()) for entry in _warm_files(home))  # not kept twice
    assert cli("-s", server.url, "tools").code == 0  # lists the same tools, on a connection that declares more
    again = _call(cli, server.url)
    assert _methods(again.out) == ["tools/call"]


def test_a_listing_is_adopted_only_by_the_keys_that_listed_it_and_a_dropped_entry_takes_its_key_off(
    tmp_path: Path,
) -> None:
    import mcp_types as t

    from mcpcli.net import listcache

    def page(name: str) -> t.ListToolsResult:
        return t.ListToolsResult.model_validate({"tools": [{"name": name, "inputSchema": {"type": "object"}}]})

    path = tmp_path / "tools.json"
    listcache.remember_at(path, "s", "tools", [page("echo")], None, ("a", None))
    assert listcache.vouched_tools(path, "a", None) is not None
    assert listcache.vouched_tools(path, "b", None) is None  # another asker lists for itself
    assert listcache.vouched_tools(path, "a", "generation-2") is None  # a kept server that restarted
    listcache.remember_at(path, "s", "tools", [page("echo")], None, ("b", None))  # the same tools, listed again
    assert listcache.vouched_tools(path, "a", None) is not None and listcache.vouched_tools(path, "b", None)
    listcache.remember_at(path, "s", "tools", [page("other")], None, ("b", None))  # the server changed
    assert listcache.vouched_tools(path, "a", None) is None
    listcache.unvouch(path, "b")  # its warm entry was dropped as stale
    assert listcache.vouched_tools(path, "b", None) is None
    found = listcache.cached(listcache.read_cache(path), "tools")
    assert found is not None and [item["name"] for item in found[0]] == ["other"]  # completion still offers it
