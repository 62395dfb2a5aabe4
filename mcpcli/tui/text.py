"""Server text for Textual widgets: sanitized, and never parsed as markup.

Textual parses a ``str`` given to most widgets as content markup (``[b]``, ``[@click=...]``); server
text must not be. ``plain`` is the one way server text enters a widget: ``display.sanitize`` first, then a
``Content`` that Textual renders verbatim.
"""

from __future__ import annotations

import json
from typing import Any

from textual.content import Content

from mcpcli.display import json_text, sanitize


def plain(text: object, style: str = "") -> Content:
    """Untrusted text as literal content (controls made visible, no markup)."""
    content = Content(sanitize(str(text)))
    return content.stylize(style) if style else content


def compact_json(value: Any, limit: int = 200) -> str:
    """One line of JSON for a header (arguments), cut at ``limit`` characters."""
    text = sanitize(json.dumps(value, ensure_ascii=False))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pretty_json(value: Any) -> Content:
    """Indented JSON, terminal-safe, as literal content."""
    return Content(json_text(value))
