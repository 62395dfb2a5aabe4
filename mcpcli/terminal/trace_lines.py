"""Trace lines for people: one readable line per message or loop event (``-v``, ``sessions show --trace``).

Pure and SDK-free: ``sessions show --trace`` reads stored lines without importing ``mcp``. Everything a
line shows came from a server, so the result goes through the one sanitizer, and stays on one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mcpcli.display import sanitize


def summarize(entry: Mapping[str, Any]) -> str:
    """One line for a trace entry (``-v`` and ``sessions show --trace``), sanitized."""
    text = _event_text(entry) if "event" in entry else _message_text(entry)
    line = sanitize(text).replace("\n", "\\n").replace("\t", " ")
    if len(line) > SUMMARY_MAX:  # a round of thousands of keys, an error of a megabyte: a summary stays one line
        line = f"{line[:SUMMARY_MAX]}… [{len(line) - SUMMARY_MAX:,} more characters: --trace FILE has it all]"
    return line


SUMMARY_MAX = 1000
"""Characters of one summary line (``-v``, ``sessions show --trace``) before it is cut."""


def _message_text(entry: Mapping[str, Any]) -> str:
    """One message line of a trace as a person reads it: direction, kind, method and name or id, with round, cut mark,
    size and time when the line has them."""
    arrow = "→" if entry.get("dir") == "send" else "←"
    kind = entry.get("kind")
    message = _obj(entry.get("message"))
    ident = f" #{entry['id']}" if entry.get("id") is not None else ""
    method = str(entry.get("method") or "")
    if kind == "exception":
        return f"{arrow} transport error: {entry.get('error', '')}"
    if kind == "request":
        params = _obj(message.get("params"))
        what = " ".join(str(x) for x in (method, params.get("name") or params.get("uri") or "") if x)
        text = f"{arrow} {what}{ident}"
    elif kind == "notification":
        text = f"{arrow} {method}{_notification_detail(message)}"
    elif kind == "error":
        error = _obj(message.get("error"))
        text = f"{arrow} error{ident} {error.get('code', '')} {error.get('message', '')}".rstrip()
    else:
        text = f"{arrow} result{ident}{_result_detail(message)}"
    if entry.get("round") is not None:
        text += f" (round {entry['round']})"
    if message.get("truncated"):
        text += " [cut]"
    if entry.get("bytes") is not None:
        text += f"  {entry['bytes']} B"
    if entry.get("ms") is not None:
        text += f"  {float(entry['ms']):.0f} ms"
    return text


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _result_detail(message: Mapping[str, Any]) -> str:
    result = _obj(message.get("result"))
    if result.get("resultType") == "input_required":
        asks = result.get("inputRequests") or {}
        n = len(asks) if isinstance(asks, Mapping) else 0
        return f" input_required ({n} request{'' if n == 1 else 's'})"
    if result.get("isError"):
        return " isError"
    return ""


def _notification_detail(message: Mapping[str, Any]) -> str:
    params = _obj(message.get("params"))
    if "progress" in params:
        total = f"/{params['total']}" if params.get("total") is not None else ""
        return f" {params['progress']}{total}" + (f" {params['message']}" if params.get("message") else "")
    if "level" in params:
        return f" {params['level']}" + (f" {params['logger']}" if params.get("logger") else "")
    return ""


def _event_text(entry: Mapping[str, Any]) -> str:
    """One flow event of a trace (start, round, resume, restart, result, lines dropped) as a ``·`` line; an unknown
    event by its name."""
    name = entry.get("event")
    elapsed = f"  {float(entry['elapsed_ms']):.0f} ms" if entry.get("elapsed_ms") is not None else ""
    if name == "round":
        asks = ", ".join(str(k) for k in entry.get("requests") or []) or "nothing (state only)"
        where = f"session {entry.get('session')}, attempt {entry.get('attempt')}"
        return f"· round {entry.get('round')} ({where}): {asks}{elapsed}"
    if name == "start":
        return f"· flow {entry.get('method', '')} {entry.get('name', '')}".rstrip()
    if name == "resume":
        return f"· resume session {entry.get('session')} after round {entry.get('round')}"
    if name == "restart":
        return f"· restart: attempt {entry.get('attempt')} (the server no longer accepts the state){elapsed}"
    if name == "result":
        return f"· result: exit {entry.get('exit_code')}{elapsed}"
    if name == "dropped":
        return f"· {entry.get('lines')} lines not kept ({entry.get('note', '')})"
    if name == "truncated":
        return f"· {entry.get('note', 'truncated')}"
    return f"· {name}"


def offset(entry: Mapping[str, Any], first: datetime | None) -> str:
    """``+12.3ms`` (``+4.2s`` past ten seconds) from the first line's time."""
    try:
        at = datetime.fromisoformat(str(entry["at"]))
    except (KeyError, ValueError):
        return ""
    if first is None:
        return "+0.0ms"
    ms = (at - first).total_seconds() * 1000
    return f"+{ms:.1f}ms" if ms < 10_000 else f"+{ms / 1000:.1f}s"


def read_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Stored lines as entries; a line that is not a JSON object is kept as ``{"unreadable": line}``."""
    entries: list[dict[str, Any]] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        entries.append(entry if isinstance(entry, dict) else {"unreadable": line})
    return entries
