"""``mcpcli watch``: the events a server sends, in order, on both eras and both transports — what ``--read``
reads, what is not honoured, what was not asked for, a server that restarts or floods, and the signals."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PY, ROOT, HttpServer, Result, free_port, wait_until
from test_worker import mcpcli, warm  # noqa: F401  (warm: a fixture)

from mcpcli.engine.watching import Backlog, Backoff, Change, Stats

pytestmark = pytest.mark.slow

WATCH_SERVERS = Path(__file__).resolve().parent / "watch_servers.py"
ERAS = ["2026-07-28", "legacy"]


def server(kind: str, *extra: str) -> str:
    return shlex.join([PY, str(WATCH_SERVERS), kind, *extra])


def watch(*args: str, timeout: float = 90) -> Result:
    """``mcpcli watch ARGS`` as its own process (a watch runs until its count, its time or a signal)."""
    proc = subprocess.run(
        [PY, "-m", "mcpcli", "watch", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def events(result: Result) -> list[dict[str, Any]]:
    """The JSON documents on stdout: one a line, and an error document (indented) at the end, if any."""
    found, text, at = [], result.out, 0
    decoder = json.JSONDecoder()
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        doc, at = decoder.raw_decode(text, at)
        found.append(doc)
    return found


@pytest.fixture
def http_ticker(tmp_path: Path) -> Iterator[Any]:
    """``tests/watch_servers.py ticker`` over HTTP on 127.0.0.1 (restartable on the same port)."""
    started: list[HttpServer] = []

    def start(*extra: str) -> HttpServer:
        port = free_port()
        argv = [PY, str(WATCH_SERVERS), "ticker", "--http", f"127.0.0.1:{port}", *extra]
        one = HttpServer(argv, port, tmp_path / f"ticker-{port}.log")
        started.append(one)
        return one.start()

    yield start
    for one in started:
        one.stop()


def _check_cycle(seen: list[dict[str, Any]]) -> None:
    """The ticker's changes, in its order, each with what --read found (see tests/watch_servers.py)."""
    kinds = ["resource_updated:note://a", "resource_updated:note://b", "tools_list_changed", "resources_list_changed"]
    kinds.append("resource_updated:blob://c")
    first = None
    for event in seen:
        key = event["event"] + (f":{event['uri']}" if "uri" in event else "")
        step = _step(event)
        first = step if first is None else first
        assert key == kinds[(step - 1) % 5], seen
        assert step == first + seen.index(event), f"out of order or missing: {seen}"


def _step(event: dict[str, Any]) -> int:
    if event["event"] == "tools_list_changed":
        assert event["removed"] == [], event
        return int(event["added"][-1].removeprefix("extra"))
    if event["event"] == "resources_list_changed":
        return int(event["added"][-1].removeprefix("note://r"))
    content = event["result"]["contents"][0]
    if "blob" in content:
        assert content["mimeType"] == "application/octet-stream"
        return len(content["blob"]) * 3 // 4 - content["blob"][-2:].count("=")
    return int(content["text"].split(" v")[1])


# --- the events ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_stdio_events_arrive_in_order_with_what_read_reads(era: str) -> None:
    uris = ["note://a", "note://b", "blob://c"]
    result = watch(*uris, "--tools", "--resources", "--read", "--json", "--count", "6", "--protocol", era,
                   "-s", server("ticker"))  # fmt: skip
    assert result.code == 0, result.err
    seen = events(result)
    assert len(seen) == 6
    _check_cycle(seen)
    how = "subscriptions/listen" if era != "legacy" else "resources/subscribe"
    assert how in result.err


@pytest.mark.parametrize("era", ERAS)
def test_http_events_arrive_in_order_with_what_read_reads(era: str, http_ticker: Any) -> None:
    url = http_ticker().url
    result = watch("note://a", "note://b", "blob://c", "--tools", "--resources", "--read", "--json", "--count", "5",
                   "--protocol", era, "-s", url)  # fmt: skip
    assert result.code == 0, result.err
    _check_cycle(events(result))


def test_text_lines_show_time_kind_uri_contents_and_what_a_list_gained() -> None:
    result = watch("note://a", "blob://c", "--tools", "--read", "--count", "3", "-s", server("ticker"))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split("  ")[1:] == ["resource updated", "note://a"]
    assert lines[1].startswith("  a v")
    assert lines[2].split("  ")[1:] == ["tools changed"]
    assert lines[3].startswith("  added extra")
    assert lines[4].split("  ")[1:] == ["resource updated", "blob://c"]
    assert lines[5].startswith("  [binary: ") and lines[5].endswith(" B, application/octet-stream]")


def test_for_seconds_ends_with_exit_0() -> None:
    began = time.monotonic()
    result = watch("note://a", "--for", "8", "--json", "-s", server("ticker"))
    assert result.code == 0, result.err
    assert 8 <= time.monotonic() - began < 60
    assert {e["event"] for e in events(result)} == {"resource_updated"}
    assert all(e["uri"] == "note://a" for e in events(result))


def test_a_list_that_loses_an_item_says_which() -> None:
    result = watch("--resources", "--read", "--json", "--count", "2", "-s", server("ticker"))
    assert result.code == 0, result.err
    first, second = events(result)
    assert second["removed"] == first["added"] and second["added"] != first["added"]


# --- what is honoured, and what was not asked for -----------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_what_is_not_honoured_is_one_line_and_the_rest_is_watched(era: str) -> None:
    rogue = server("rogue", "--honour", "tools,note://a")
    result = watch("note://a", "note://b", "--tools", "--json", "--count", "4", "--protocol", era, "-s", rogue)
    assert result.code == 0, result.err
    unhonoured = [line for line in result.err.splitlines() if "does not honour" in line]
    assert len(unhonoured) == 1 and "note://b" in unhonoured[0], result.err
    assert {(e["event"], e.get("uri")) for e in events(result)} == {("resource_updated", "note://a"),
                                                                     ("tools_list_changed", None)}  # fmt: skip


@pytest.mark.parametrize("era", ERAS)
def test_a_server_that_honours_nothing_exits_4_with_the_reason(era: str) -> None:
    result = watch("note://a", "--json", "--protocol", era, "-s", server("rogue", "--honour", ""))
    assert result.code == 4
    assert "honours none of what was asked (note://a)" in result.err
    assert json.loads(result.out)["error"]["exit_code"] == 4


@pytest.mark.parametrize("era", ERAS)
def test_an_update_nobody_asked_for_is_ignored_with_one_warning(era: str) -> None:
    rogue = server("rogue", "--honour", "note://a,tools")
    result = watch("note://a", "--json", "--count", "3", "--protocol", era, "-s", rogue)
    assert result.code == 0, result.err
    assert "note://unasked" not in result.out
    assert [e["uri"] for e in events(result)] == ["note://a"] * 3
    assert len([line for line in result.err.splitlines() if "note://unasked" in line]) == 1, result.err
    assert "ignored (not asked for)" in result.err


# --- a server that goes away ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_stdio_server_that_dies_is_started_and_listened_to_again(era: str) -> None:
    result = watch("note://a", "note://b", "--read", "--json", "--count", "4", "--protocol", era,
                   "-s", server("ticker", "--die-after", "2"))  # fmt: skip
    assert result.code == 0, result.err
    assert "listening again in" in result.err
    seen = events(result)
    fresh = [e for e in seen if "reason" not in e]
    assert [e["uri"] for e in fresh] == ["note://a", "note://b", "note://a", "note://b"]
    # After the restart the new process starts again from v1, and what may have been missed was read again.
    assert [e["result"]["contents"][0]["text"] for e in fresh] == ["a v1", "b v2", "a v1", "b v2"]
    again = [e for e in seen if e.get("reason") == "reconnected"]
    assert {e["uri"] for e in again} == {"note://a", "note://b"}


@pytest.mark.parametrize("era", ERAS)
def test_an_http_server_restarted_mid_watch_is_listened_to_again(era: str, http_ticker: Any) -> None:
    ticker = http_ticker()
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "mcpcli",
            "watch",
            "note://a",
            "--read",
            "--json",
            "--count",
            "30",
            "--protocol",
            era,
            "-s",
            ticker.url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        before = json.loads(proc.stdout.readline())
        assert ticker.proc is not None
        ticker.proc.kill()  # a crash: no goodbye on any stream
        ticker.proc.wait()
        ticker.start()
        after = []
        for _ in range(20):  # the new process counts from v1 again: an event of it is one after the restart
            after.append(json.loads(proc.stdout.readline()))
            if after[-1].get("result", {}).get("contents", [{}])[0].get("text") == "a v1" and "reason" not in after[-1]:
                break
        proc.terminate()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert before["result"]["contents"][0]["text"] == "a v1"
    assert after[-1]["result"]["contents"][0]["text"] == "a v1" and after[-1]["uri"] == "note://a", after
    assert "listening again in" in (proc.stderr.read() if proc.stderr else "")


@pytest.mark.parametrize("era", ERAS)
def test_no_reconnect_exits_4_when_the_stream_ends(era: str) -> None:
    result = watch(
        "note://a", "--json", "--no-reconnect", "--protocol", era, "-s", server("ticker", "--die-after", "1")
    )
    assert result.code == 4, result.err
    assert "The watch ended:" in result.err
    assert [e["uri"] for e in events(result)[:-1]] == ["note://a"]
    assert events(result)[-1]["error"]["exit_code"] == 4


# --- a flood, and the signals ------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with Path(f"/proc/{pid}/stat").open() as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _rss_kb(pid: int) -> int:
    with Path(f"/proc/{pid}/status").open() as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _cpu_seconds(pid: int) -> float:
    with Path(f"/proc/{pid}/stat").open() as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.cold_only
@pytest.mark.parametrize(("era", "sig", "code"), [("2026-07-28", signal.SIGINT, 130), ("legacy", signal.SIGTERM, 143)])
def test_a_flood_is_coalesced_bounded_and_stopped_at_once(tmp_path: Path, era: str, sig: int, code: int) -> None:
    pid_file = tmp_path / "flood.pid"
    out = (tmp_path / "out").open("w")
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "mcpcli",
            "watch",
            "note://a",
            "--protocol",
            era,
            "-s",
            server("flood", "--pid-file", str(pid_file)),
        ],
        stdout=out,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCPCLI_WORKER": "0"},
    )
    try:
        deadline = time.monotonic() + 60
        while (not pid_file.exists() or (tmp_path / "out").stat().st_size < 10_000) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "out").stat().st_size >= 10_000, "no flood arrived"
        cpu0, wall0 = _cpu_seconds(proc.pid), time.monotonic()
        peak = 0
        for _ in range(30):  # three seconds of flood: memory stays bounded
            peak = max(peak, _rss_kb(proc.pid))
            time.sleep(0.1)
        cpu = (_cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - wall0)
        sent = time.monotonic()
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == code
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
    err = proc.stderr.read() if proc.stderr else ""
    assert took < 5, f"took {took:.1f} s to stop"
    assert peak < 250_000, f"{peak} KB"
    assert cpu <= 1.1, cpu  # one core at most: the flood is read as fast as it parses, and no faster
    received, coalesced = _coalesced(err)
    assert coalesced > received / 2, err  # note://a again and again: folded into the one waiting
    lines = (tmp_path / "out").read_text().splitlines()
    assert len(lines) < received - coalesced + 10
    server_pid = int(pid_file.read_text())
    assert wait_until(lambda: not _alive(server_pid), 10), "the stdio server was left running"


@pytest.mark.parametrize("era", ERAS)
def test_count_counts_every_change_received_so_a_flood_that_falls_silent_still_ends(era: str) -> None:
    # 20,000 changes, then silence: folded, they make a few dozen lines; --count 1000 counts the changes.
    flood = server("flood", "--total", "20000", "--long", "10000")
    result = watch("note://a", "--json", "--count", "1000", "--protocol", era, "-s", flood, timeout=60)
    assert result.code == 0, result.err
    seen = events(result)
    assert sum(1 + e.get("coalesced", 0) for e in seen) == 1000
    assert len(seen) < 1000


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("json_out", [False, True])
def test_an_update_of_a_ten_kilobyte_part_of_a_watched_uri_prints_only_the_uri_asked_for(
    era: str, json_out: bool
) -> None:
    flood = server("flood", "--total", "3000", "--long", "10000")
    result = watch("note://a", *(["--json"] if json_out else []), "--count", "3000", "--protocol", era, "-s", flood,
                   timeout=60)  # fmt: skip
    assert result.code == 0, result.err
    assert "xxxxxxxx" not in result.out
    lines = result.out.splitlines()
    assert lines and max(map(len, lines)) <= 1000
    if json_out:
        assert {e["uri"] for e in events(result)} == {"note://a"}
    else:
        assert all(line.split()[3] == "note://a" for line in lines), lines


@pytest.mark.parametrize("json_out", [False, True])
def test_a_read_of_a_two_megabyte_line_is_cut_at_the_line_bound(json_out: bool) -> None:
    # docs/watch.md: a line is cut at 1,000 characters, a --json line at 1 MiB (the result left out, "cut" its length).
    ticker = server("ticker", "--big", "2000000")
    result = watch("note://a", "--read", "--count", "1", *(["--json"] if json_out else []), "-s", ticker)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    if json_out:
        (doc,) = events(result)
        assert len(lines[0]) <= 1024 * 1024 and doc["cut"] > 2_000_000 and "result" not in doc
        assert doc["uri"] == "note://a"
    else:
        assert max(map(len, lines)) <= 1000 and "… [cut: of 4,003 characters; all of it: --json]" in lines[1]


def _coalesced(err: str) -> tuple[int, int]:
    line = next(line for line in err.splitlines() if "events coalesced" in line)
    words = line.replace(",", "").split()
    at = words.index("of")
    return int(words[at + 1]), int(words[at - 1])


# --- the parts -----------------------------------------------------------------------------------------------------


def test_the_backlog_folds_repeats_drops_past_its_limit_and_counts_both() -> None:
    async def main() -> None:
        stats = Stats()
        backlog = Backlog(stats, limit=3, window=0.0)
        for uri in ["a", "b", "a", "a", "c", "d", "b"]:
            backlog.put(Change("resource_updated", uri))
        got = [await backlog.get() for _ in range(3)]
        assert [(c.uri, c.folded) for c in got] == [("a", 2), ("b", 1), ("c", 0)]
        assert (stats.folded, stats.dropped) == (3, 1)

    anyio.run(main)


def test_the_same_change_is_shown_at_most_once_per_window() -> None:
    async def main() -> None:
        backlog = Backlog(Stats(), window=0.5)
        backlog.put(Change("resource_updated", "a"))
        await backlog.get()
        backlog.put(Change("resource_updated", "a"))
        backlog.put(Change("resource_updated", "b"))
        began = anyio.current_time()
        assert (await backlog.get()).uri == "b"  # not held up behind a's window
        assert (await backlog.get()).uri == "a"
        assert anyio.current_time() - began >= 0.4

    anyio.run(main)


def test_backoff_doubles_from_one_second_to_thirty_jittered() -> None:
    middle = Backoff(rng=lambda: 0.5)
    assert [middle.next() for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    low, high = Backoff(rng=lambda: 0.0), Backoff(rng=lambda: 0.999)
    assert low.next() == 0.75 and 1.24 < high.next() < 1.25
    middle.reset()
    assert middle.next() == 1


def test_help_teaches_with_an_example(cli: Any) -> None:
    result = cli("watch", "--help")
    assert result.code == 0
    assert "mcpcli watch note://build-status --read" in result.out
    assert "--no-reconnect" in result.out


# --- through the worker, sharing a kept-alive server -------------------------------------------------------------


@pytest.mark.usefixtures("warm")
@pytest.mark.parametrize("era", ERAS)
def test_a_watch_shares_its_kept_alive_server_and_gets_the_events_alone(era: str) -> None:
    ticker = server("ticker")
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "mcpcli",
            "watch",
            "note://a",
            "--tools",
            "--json",
            "--count",
            "6",
            "--keep-alive",
            "--protocol",
            era,
            "-s",
            ticker,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        # While the watch holds the kept server, another command uses it (it does not wait for the watch to end)
        # and sees none of the watch's events.
        began = time.monotonic()
        call = mcpcli("call", "noop", "--keep-alive", "--protocol", era, "-s", ticker)
        assert call.returncode == 0, call.stderr
        assert call.stdout.startswith("step "), call.stdout
        assert proc.poll() is None, "the watch ended before the other command ran"
        assert time.monotonic() - began < 30
        rest = [json.loads(line) for line in proc.stdout]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert len([first, *rest]) == 6
    assert {e["event"] for e in [first, *rest]} == {"resource_updated", "tools_list_changed"}
    ps = mcpcli("worker", "ps")
    assert "watch_servers.py ticker" in ps.stdout  # still kept, for the next command
