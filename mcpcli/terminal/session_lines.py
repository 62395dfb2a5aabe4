"""``sessions list`` for people: one line per session at any width, as ``gh pr list`` shows pull requests.

The id first (what the next command takes), its status and what it waits for, then the server as its host or
config name, ``call``/``prompt``/``read`` and the name, and how long ago it last changed; the long columns are cut
with an ellipsis to fit the terminal (``--json`` and ``sessions show`` have everything). Plain text and a few ANSI
colours on a terminal, no Rich: this runs on the fast path of the most frequent command (``commands.listing``).
Every string a server or a user chose passes ``display.sanitize`` and is made one line.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any

from mcpcli.display import reveal_invisible, sanitize

VERBS = {"tools/call": "call", "prompts/get": "prompt", "resources/read": "read"}
"""The MCP method as the command a user typed."""

HEADERS = ("ID", "STATUS", "WAITING FOR", "SERVER", "CALL", "UPDATED")
FLEXIBLE = (2, 3, 4)
"""The columns cut to fit (by index): what it waits for, the server, the call; the others are short already."""
GAP = "  "

EMPTY = "No sessions yet. Flows that need input are saved here."
NOTHING_WAITS = "Nothing is waiting for input."

_STYLES = {
    "waiting": "33",
    "interrupted": "33",
    "running": "36",
    "done": "32",
    "failed": "31",
    "expired": "31",
}


def show(
    docs: Sequence[Mapping[str, Any]],
    pending: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    waiting: bool = False,
    limit: int | None = None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> None:
    """Print the lines on stdout (the width of the terminal, or ``COLUMNS``, else 80) and the notes on stderr."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if not docs:
        _note(err, NOTHING_WAITS if waiting else EMPTY)
        return
    import shutil

    width = shutil.get_terminal_size((80, 24)).columns
    lines = render(docs, pending, width=width, now=datetime.now(UTC), color=_colour(out))
    out.write("".join(line + "\n" for line in lines))
    out.flush()
    if waiting:
        _note(err, "Pick one up with: mcpcli resume ID")
    elif limit is not None and len(docs) >= limit:
        _note(err, f"Showing the {limit} most recently updated; more with --limit N.")


def render(
    docs: Sequence[Mapping[str, Any]],
    pending: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    width: int,
    now: datetime,
    color: bool = False,
) -> list[str]:
    """The header and one line per session, each at most ``width`` cells (unless even the short columns are
    wider; then the cut columns keep their headers' width)."""
    rows = [_cells(doc, pending.get(str(doc["id"]), {}), now) for doc in docs]
    shown = [i for i in range(len(HEADERS)) if i != 2 or any(row[2] for row in rows)]
    table = [[HEADERS[i] for i in shown], *([row[i] for i in shown] for row in rows)]
    widths = [max(cells(line[c]) for line in table) for c in range(len(shown))]
    flexible = [c for c, i in enumerate(shown) if i in FLEXIBLE]
    _fit(widths, flexible, [cells(table[0][c]) for c in range(len(shown))], width - len(GAP) * (len(shown) - 1))
    status = shown.index(1)
    lines = []
    for n, line in enumerate(table):
        parts = []
        for c, text in enumerate(line):
            text = cut(text, widths[c])
            padded = text + " " * (widths[c] - cells(text)) if c < len(line) - 1 else text
            if color and n == 0:
                padded = f"\x1b[1m{padded}\x1b[0m"
            elif color and c == status and (code := _STYLES.get(text)):
                padded = f"\x1b[{code}m{padded}\x1b[0m"
            parts.append(padded)
        lines.append(GAP.join(parts).rstrip())
    return lines


def _fit(widths: list[int], flexible: Sequence[int], least: Sequence[int], room: int) -> None:
    """Narrow the ``flexible`` columns until all fit in ``room``: the widest gives first, none below ``least``."""
    excess = sum(widths) - room
    while excess > 0:
        candidates = [c for c in flexible if widths[c] > least[c]]
        if not candidates:
            return
        widest = max(candidates, key=lambda c: widths[c])
        others = [widths[c] for c in candidates if c != widest]
        step = max(1, min(excess, widths[widest] - max([*others, least[widest]])))
        widths[widest] -= step
        excess -= step


def _cells(doc: Mapping[str, Any], pending: Mapping[str, Mapping[str, Any]], now: datetime) -> list[str]:
    status = "interrupted" if doc.get("interrupted") else str(doc["status"])
    if status == "waiting" and doc.get("answered_by"):  # answered with mcpcli answer: its owner's run sends it
        status = "answered"
    method = str(doc["method"])
    updated = datetime.fromisoformat(str(doc["updated"]).replace("Z", "+00:00"))
    return [
        one_line(str(doc["id"])),
        status,
        _waits(doc, status, pending),
        server_label(str(doc["server"])),
        one_line(f"{VERBS.get(method, method)} {doc['name']}"),
        ago(updated, now),
    ]


def _waits(doc: Mapping[str, Any], status: str, pending: Mapping[str, Mapping[str, Any]]) -> str:
    """What the session waits for: its first pending question (and how many more), or why nothing is asked."""
    said = []
    lease = doc.get("lease")
    if isinstance(lease, Mapping) and lease.get("active"):
        said.append(f"held by {lease['holder']}")
    if pending:
        key, what = next(iter(pending.items()))
        more = f" (+{len(pending) - 1} more)" if len(pending) > 1 else ""
        said.append(pending_line(key, what) + more)
    elif status == "interrupted":
        said.append("(interrupted; resume sends its answered round again)")
    elif status == "answered":
        said.append(f"(answered by {doc.get('answered_by')}; its owner's resume sends it)")
    elif status == "waiting":
        said.append("(answered; resume sends it)")
    task = doc.get("task")
    if isinstance(task, Mapping) and status in ("waiting", "running", "interrupted"):
        message = f": {task['message']}" if task.get("message") else ""
        said.append(f"task {task.get('status')}{message}")
    return one_line("; ".join(said))


def pending_line(key: str, what: Mapping[str, Any]) -> str:
    """One pending request in a few words: ``key: message (fields)``, or the page a URL request sends to."""
    message = str(what.get("message", ""))
    if what["kind"] == "form" and what.get("fields"):
        return f"{key}: {message} ({', '.join(map(str, what['fields']))})"
    if what["kind"] == "url":
        return f"{key}: {message} — visit {reveal_invisible(str(what.get('url', '')))}"
    return f"{key}: {message}"


def server_label(server: str) -> str:
    """A URL as its host (and port); a config name or ``demo`` as given; a command line with its program's name
    instead of its path (``python server.py``)."""
    if server.startswith(("http://", "https://")):
        authority = server.partition("://")[2]
        for end in "/?#":
            authority = authority.partition(end)[0]
        if host := authority.rpartition("@")[2]:  # never a user or password
            return " ".join(reveal_invisible(host).split())
    program, space, rest = server.partition(" ")
    if space and "/" in program:
        server = f"{program.rpartition('/')[2]} {rest}"
    return one_line(server)


def one_line(text: str) -> str:
    """Sanitized, and on one line: newlines and tabs (which ``sanitize`` keeps) become spaces."""
    return " ".join(sanitize(text).split())


def ago(then: datetime, now: datetime) -> str:
    """``just now``, ``3 min ago``, ``5 hours ago``, ``2 days ago``, ``4 months ago``, ``1 year ago``."""
    seconds = (now - then).total_seconds()
    if seconds < -60:
        return then.strftime("%Y-%m-%d")  # another machine's clock is ahead: the date, not "in 3 min"
    for size, unit in ((365 * 86400, "year"), (30 * 86400, "month"), (86400, "day"), (3600, "hour"), (60, "min")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 and unit != 'min' else ''} ago"
    return "just now"


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide (CJK, most emoji) characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(_width(ch) for ch in text)


def _width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its end replaced by ``…`` when it is longer."""
    if cells(text) <= width:
        return text
    kept, used = [], 0
    for ch in text:
        used += _width(ch)
        if used > width - 1:
            break
        kept.append(ch)
    return "".join(kept) + "…"


def _colour(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _note(err: IO[str], text: str) -> None:
    dim = _colour(err)
    err.write(f"\x1b[2m{text}\x1b[0m\n" if dim else text + "\n")
    err.flush()
