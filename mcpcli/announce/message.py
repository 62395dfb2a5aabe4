"""What an announcement says: its event made small enough for every channel, and the only words mcpcli adds.

The event comes from the inbox (``state.inbox.announcement``) and holds no answers or secrets; its texts came from a
server. Here it is bounded — plain JSON values, strings cut, lists and tables shortened, nesting flattened, within
half a webhook body — and given a title made of its kind and session id alone. Sanitizing for each reader (a
terminal, a notification daemon, Slack) is each channel's (``announce.channels``). Pure: standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Event = Mapping[str, Any]

TEXT_MAX = 200
"""Characters of an announcement's text on a terminal or a desktop notification: a glance, not a page."""
BODY_MAX = 8000
"""Bytes of a webhook body: ntfy reads at most twice its 4 KiB message limit of JSON."""

_TITLES = {"waiting": "waits for an answer", "answered": "was answered", "done": "finished", "failed": "failed"}


def bounded(event: Event) -> dict[str, Any]:
    """``event`` as plain JSON values in half a webhook body: strings cut, lists and tables shortened, nesting
    flattened; what still does not fit leaves only the event's kind, session, server, call, command, time and text."""
    for text_max in (500, 120):
        tidy = _tidy_table(event, 3, text_max)
        if len(json_bytes(tidy)) <= BODY_MAX // 2:
            return tidy
    keep = ("event", "session_id", "server", "call", "command", "time", "text")
    return {key: _tidy(event[key], 0, 200) for key in keep if key in event} | {"cut": True}


def _tidy(value: Any, depth: int, text_max: int) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping) and depth > 0:
        return _tidy_table(value, depth, text_max)
    if isinstance(value, list | tuple) and depth > 0:
        return [_tidy(v, depth - 1, text_max) for v in value[:20]]
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= text_max else text[: text_max - 1] + "…"


def _tidy_table(table: Mapping[Any, Any], depth: int, text_max: int) -> dict[str, Any]:
    return {str(key)[:64]: _tidy(value, depth - 1, text_max) for key, value in list(table.items())[:30]}


def json_bytes(value: Any) -> bytes:
    """``value`` as the compact UTF-8 JSON a webhook sends: what ``BODY_MAX`` is measured against."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def title_of(event: Event) -> str:
    """A one-line title from the event's kind and session id: the only words the announcer adds."""
    what = _TITLES.get(str(event.get("event")), "changed")
    return f"mcpcli: {event.get('session_id', '?')} {what}"


def one_line(text: str, limit: int = TEXT_MAX) -> str:
    """``text`` on one line (whitespace runs become one space), at most ``limit`` characters."""
    joined = " ".join(text.split())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"
