"""The sanitizer: no server or model string can drive the terminal or inject Rich markup."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from mcpcli.display import has_invisible, reveal_invisible, safe, safe_json, sanitize

OSC8_LINK = "\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\"


def render(renderable: object) -> str:
    """What a real (colour) terminal would receive."""
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=200)
    console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        (OSC8_LINK, "\\x1b]8;;https://evil.example\\x1b\\click me\\x1b]8;;\\x1b\\"),
        ("\x9b2J", "\\x9b2J"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("\u2066x\u2069 \u061c \u200e\u200f", "\\u2066x\\u2069 \\u061c \\u200e\\u200f"),
        ("progress 10%\rdone", "progress 10%\\x0ddone"),
        ("bell\x07 nul\x00 del\x7f", "bell\\x07 nul\\x00 del\\x7f"),
    ],
)
def test_control_characters_become_visible_escapes(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


def test_newlines_tabs_and_ordinary_unicode_are_kept() -> None:
    text = "line one\n\tindented — café ✓ 日本語 \\x1b already-literal"
    assert sanitize(text) == text


def test_every_c0_c1_and_del_character_is_escaped() -> None:
    controls = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n\t"]
    assert all(sanitize(ch) == f"\\x{ord(ch):02x}" for ch in controls)


def test_safe_returns_text_that_keeps_rich_markup_literal() -> None:
    text = safe("[bold red]alert[/bold red] :warning:")
    assert isinstance(text, Text)
    assert text.plain == "[bold red]alert[/bold red] :warning:"
    assert "[bold red]alert[/bold red]" in render(text)


def test_safe_accepts_any_object() -> None:
    assert safe(42).plain == "42"


@pytest.mark.parametrize("payload", [OSC8_LINK, "\x1b[2J\x1b[H", "\x9b31m", "\x1b[31m[red]x[/red]\x1b[0m"])
def test_no_escape_sequence_from_the_input_reaches_the_terminal(payload: str) -> None:
    output = render(safe(f"tool says: {payload}"))
    for sequence in ("\x1b]8;;", "\x1b[2J", "\x1b[H", "\x9b", "\x1b[31m"):
        if sequence in payload:
            assert sequence not in output
    assert sanitize(payload) in output


def test_markup_in_server_text_is_printed_literally() -> None:
    output = render(safe("[red]x[/red]"))
    assert "[red]x[/red]" in output
    assert "\x1b[31m" not in output  # Rich did not turn it into red


def test_safe_json_pretty_prints_and_sanitizes() -> None:
    value = {"name": "caf\u00e9 \u202eevil", "note": "\x9b2J", "esc": "\x1b[31m", "n": [1, 2]}
    dumped = safe_json(value)
    assert '"name": "café \\u202eevil"' in dumped
    assert '"note": "\\x9b2J"' in dumped
    assert '"esc": "\\u001b[31m"' in dumped  # json.dumps escaped it first
    assert "\x9b" not in dumped and "\u202e" not in dumped and "\x1b" not in dumped
    assert dumped.startswith("{\n  ")


def test_reveal_invisible_escapes_what_hides_in_a_host_name() -> None:
    assert reveal_invisible("exa\u200bmple.com") == "exa\\u200bmple.com"
    assert reveal_invisible("e\u00adx\ufeffa\u2060m\u00a0ple \u202e") == "e\\xadx\\ufeffa\\u2060m\\xa0ple \\u202e"
    assert reveal_invisible("café.example 日本") == "café.example 日本"
    assert has_invisible("a\u200db") and has_invisible("a\x1bb") and not has_invisible("café")


@pytest.mark.parametrize(
    ("url", "warning"),
    [
        ("https://exa\u200bmple.com/x", "invisible or direction-changing characters (exa\\u200bmple.com)"),
        ("https://ex\u202eample.com/", "invisible or direction-changing characters (ex\\u202eample.com)"),
        ("https://Exämple.com/", "punycode xn--exmple-cua.com"),
        ("http://[::1", "not a valid link"),
    ],
)
def test_a_url_with_a_hostile_host_is_warned_about_and_never_crashes(url: str, warning: str) -> None:
    from mcpcli.terminal.asking import check_url, url_text

    check = check_url(url)
    assert any(warning in w for w in check.warnings), check.warnings
    shown = url_text(url).plain
    assert "\u200b" not in shown and "\u202e" not in shown


def test_the_host_is_emphasised_with_its_hidden_characters_escaped() -> None:
    from mcpcli.terminal.asking import url_text

    text = url_text("https://user@EXA\u200bmple.com:8443/p\u202e")
    assert text.plain == "https://user@EXA\\u200bmple.com:8443/p\\u202e"
    host = [span for span in text.spans if "reverse" in str(span.style)]
    assert [text.plain[s.start : s.end] for s in host] == ["EXA\\u200bmple.com"]
