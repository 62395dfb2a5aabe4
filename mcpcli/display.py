"""Display safety: the one sanitizer for text that came from a server or a model.

Server names, messages, titles, enum labels, URLs, results and errors are
untrusted. Printed raw, they could move the cursor, rewrite earlier lines,
plant hyperlinks (OSC 8), reorder what the user reads (bidi overrides) or
inject Rich markup. Everything shown to the user goes through ``sanitize`` (or
``safe`` / ``safe_json``, which call it), so there is exactly one place that
decides what may reach the terminal.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.text import Text

_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (
    *(c for c in range(0x00, 0x20) if c not in (0x09, 0x0A)),  # C0, keeping tab and newline (\r is escaped)
    0x7F,  # DEL
    *range(0x80, 0xA0),  # C1, e.g. \x9b is a one-byte CSI on some terminals
    *_BIDI_CONTROLS,
)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in _CONTROLS}


TERMINAL_TEXT_MAX = 4000
"""Characters of one server text (a result, an error message) shown on a terminal before it is cut."""


def clip(text: str, how_to_see_all: str, limit: int = TERMINAL_TEXT_MAX) -> str:
    """``text``, or its first ``limit`` characters and a line saying how much was cut and how to see it all."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…\n[cut: {limit:,} of {len(text):,} characters shown; {how_to_see_all}]"


def sanitize(text: str) -> str:
    """Return ``text`` with every control character the terminal would act on made visible.

    ``"\\x1b[31m"`` becomes the six characters ``\\x1b[31m``; bidi controls
    become ``\\u202e`` and the like. Newlines and tabs are kept because
    multi-line messages are legitimate; everything else is unchanged.
    """
    return text.translate(_TABLE)


def reveal_invisible(text: str) -> str:
    """``sanitize``, and also every character that is invisible or changes nothing but how text looks.

    For host names, where one invisible character makes another site look like the expected one: zero-width
    spaces and joiners, soft hyphens, byte-order marks (Unicode's format characters) and spaces other than the
    plain one become ``\\uXXXX`` escapes too. Elsewhere they are kept (emoji sequences need the zero-width joiner).
    """
    return "".join(_escape(ord(ch)) if _invisible(ch) else ch for ch in sanitize(text))


def _invisible(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in ("Cf", "Zl", "Zp") or (category == "Zs" and ch != " ")


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds a control, bidi, zero-width or other invisible character (see ``reveal_invisible``)."""
    return any(ord(ch) in _TABLE or _invisible(ch) for ch in text)


def safe(text: object) -> Text:
    """Sanitized untrusted text as a Rich ``Text``, which Rich never parses as markup.

    Use this (never an f-string inside markup) whenever server text is printed:
    ``[bold red]`` in a tool name must stay those eleven characters.
    """
    from rich.text import Text  # deferred: plain results print without Rich

    return Text(sanitize(str(text)))


def safe_json(value: Any) -> str:
    """Pretty JSON of an untrusted value, sanitized for display.

    ``json.dumps`` already escapes C0 controls inside strings, but it passes C1
    and bidi controls through (``ensure_ascii=False`` keeps non-ASCII readable),
    so the result still goes through ``sanitize``.
    """
    return sanitize(json.dumps(value, indent=2, ensure_ascii=False))


# The same characters ``sanitize`` escapes, less C0 (json.dumps escapes those itself), plus the line and
# paragraph separators, which some JSON readers take for line breaks.
_JSON_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in (*_CONTROLS, 0x2028, 0x2029) if c > 0x1F) + "]")


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """JSON that is safe on a terminal: readable Unicode, but DEL, C1 and bidi controls as ``\\uXXXX`` escapes.

    ``json.dumps`` already escapes C0 controls; these can only occur inside strings, so escaping them keeps
    the document valid and equal.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False, separators=None if indent else (",", ":"))
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


ID_SHOWN = 64
"""Characters of a server's identifier (a task id) shown in a status line before it is cut: real ids are 16 to 36."""


def short_id(text: str, limit: int = ID_SHOWN) -> str:
    """A server's identifier for a status line: sanitized and, past ``limit`` characters, cut with how many more
    there are (a server may send a 10 KB task id in every poll; ``--json`` and ``sessions show`` keep it whole)."""
    shown = sanitize(text)
    rest = len(shown) - limit
    return shown if rest <= 0 else f"{shown[:limit]}…(+{rest:,} characters)"


def some_of(items: Sequence[str], shown: int) -> str:
    """``a, b, c and 7 more``: the first ``shown`` of ``items`` and how many others (a server may send thousands)."""
    rest = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {rest:,} more" if rest > 0 else "")


def is_web_link(url: str) -> bool:
    """Whether a server's URL is an http(s) link with a host: the only kind mcpcli opens or lets be accepted.

    ``javascript:``, ``file:``, ``data:`` and the like are refused everywhere a URL-mode request is answered (the
    terminal, the app, ``--accept``), and so is anything ``urlsplit`` cannot read.
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def progress_numbers(progress: float, total: float | None) -> tuple[float, float | None]:
    """A server's progress notification made drawable: a total that is missing (optional in MCP), zero or negative
    is unknown (a count without a bar's end); a negative count is 0."""
    return max(progress, 0.0), (total if total is not None and total > 0 else None)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 question``, ``2 questions``, ``0 flows`` — a count with its noun in the right number (``plural`` when the
    noun does not just take an s: ``counted(n, "entry", "entries")``)."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"
