"""Rendering: the only writer of stdout (results), plus the stderr pieces every command shares.

Every server-provided string passes ``display.safe`` and is printed with
markup off. ``--json`` prints the MCP result object as JSON, nothing else.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from mcpcli.display import TERMINAL_TEXT_MAX, clip, json_text, progress_numbers, reveal_invisible, safe, sanitize

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


def _console(stream: IO[str]) -> Console:
    from rich.console import Console  # deferred: a plain result is written without building a console

    return Console(file=stream, highlight=False, soft_wrap=True)


@dataclass
class Output:
    """Two consoles: stdout for results, stderr for everything else. Injectable for tests."""

    out_console: Console | None = None
    """stdout; built on first use."""
    err_console: Console | None = None
    """stderr; built on first use."""
    verbose: bool = False
    """``-v``: say what happens round by round."""
    _progress: Progress | None = None
    _task: TaskID | None = None

    @property
    def out(self) -> Console:
        if self.out_console is None:
            self.out_console = _console(sys.stdout)
        return self.out_console

    @property
    def err(self) -> Console:
        if self.err_console is None:
            self.err_console = _console(sys.stderr)
        return self.err_console

    def _stdout(self) -> IO[str]:
        return self.out_console.file if self.out_console is not None else sys.stdout

    # -- results (stdout) --

    def json(self, value: Any) -> None:
        """Machine output: plain JSON on stdout (no colour, no wrapping)."""
        stream = self._stdout()
        write(stream, _json_for(stream, json_text(value)) + "\n")

    def json_line(self, value: Any) -> None:
        """One JSON document on one line of stdout (JSON Lines), flushed at once: a reader sees it as it comes."""
        stream = self._stdout()
        write(stream, _json_for(stream, json_text(value, indent=None)) + "\n")

    def line(self, text: str) -> None:
        """One bare line on stdout, sanitized: a value a script reads (``call --detach`` prints the session id)."""
        write(self._stdout(), sanitize(text) + "\n")

    def result(self, method: str, result: Mapping[str, Any]) -> None:
        """A flow's result for people: its text content, each block once."""
        lines = list(_result_lines(method, result))
        text = "".join(sanitize(line) + "\n" for line in lines)
        stream = self._stdout()
        if getattr(stream, "isatty", lambda: False)():  # cut for a person; --json, a pipe or a file gets it whole
            from mcpcli.display import clip

            text = clip(text, "all of it: --json, or send stdout to a file (> FILE)")
            text = text if text.endswith("\n") else text + "\n"
        write(stream, text)

    def table(self, title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], empty: str) -> None:
        """A table on stdout (server text made safe), or ``empty`` dimmed on stderr when there are no rows. The first
        column (what a user copies into the next command) keeps to one line when it fits in half the width."""
        from rich.table import Table  # deferred: most commands print no table
        from rich.text import Text

        rows = list(rows)
        if not rows:
            self.err.print(Text(empty, style="dim"))
            return
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, header_style="bold")
        cells = [
            [cell if isinstance(cell, Text) else safe("" if cell is None else cell) for cell in row] for row in rows
        ]
        # The first column is what a user copies into the next command (a session id, a tool name, a URI): kept on
        # one line when it fits in half the width, the other columns wrapping around it.
        first = max((row[0].cell_len for row in cells if row), default=0)
        for index, column in enumerate(columns):
            keep = min(first, max(self.out.width // 2, 12)) if index == 0 and first else None
            table.add_column(column, overflow="fold", width=keep)
        for row in cells:
            table.add_row(*row)
        self.out.print(table)

    # -- diagnostics (stderr) --

    def note(self, text: str) -> None:
        """A line on stderr, sanitized: notes quote server text (request keys, names, errors, log messages)."""
        from rich.text import Text

        # Printed above a running progress bar (Rich keeps the bar at the bottom), never through it.
        self.err.print(Text(self._diagnostic(text), style="dim"))

    def warning(self, text: str) -> None:
        """Something the user got wrong but that stopped nothing (e.g. a preset that matched no question)."""
        from rich.text import Text

        self.err.print(Text.assemble(("warning: ", "bold yellow"), self._diagnostic(text)))

    def _diagnostic(self, text: str) -> str:
        """A stderr line, sanitized; on a terminal cut like any long server text (``-v``'s round line names every
        key of a round, and a server may send thousands, or one of a megabyte)."""
        shown = sanitize(text)
        if not self.err.is_terminal:
            return shown
        from mcpcli.display import clip

        return clip(shown, "all of it: send stderr to a file (2> FILE)")

    def detail(self, text: str) -> None:
        if self.verbose:
            self.note(text)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A server progress notification, as a bar on stderr (``display.progress_numbers``: the server chose
        the numbers)."""
        progress, total = progress_numbers(progress, total)
        description = sanitize(message or "")
        if len(description) > PROGRESS_TEXT_MAX:
            description = description[: PROGRESS_TEXT_MAX - 1] + "…"
        if self._progress is None:
            from rich.progress import BarColumn, Progress, TextColumn  # deferred: most servers send no progress

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), _count_column(), console=self.err, transient=True
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=total)
        assert self._task is not None
        self._progress.update(self._task, completed=progress, total=total, description=description)

    def stop_progress(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._task = None


PROGRESS_TEXT_MAX = 200
"""Characters of a progress message shown beside the bar."""


def _count_column() -> Any:
    """``3/10`` — or ``3`` while the server gives no total."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class Count(ProgressColumn):
        def render(self, task: Task) -> Text:
            done = f"{task.completed:g}"
            return Text(done if task.total is None else f"{done}/{task.total:g}")

    return Count()


def lenient_stdout() -> None:
    """Text stdout cannot encode (an ASCII or Latin-1 locale, a server's emoji) is written as escapes, as Python
    writes it on stderr, instead of failing the command after its work is done. (``--json`` escapes it itself.)"""
    import io

    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        sys.stdout.reconfigure(errors="backslashreplace")


def write(stream: IO[str], text: str) -> None:
    stream.write(text)
    stream.flush()


def _json_for(stream: IO[str], text: str) -> str:
    """JSON the stream's encoding can carry: a character it cannot (an ASCII or Latin-1 stdout) as a ``\\uXXXX``
    escape, which keeps the document valid and equal — where the stream's own error handler would not."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return "".join(char if _fits(char, encoding) else _escaped(char) for char in text)
    except LookupError:
        pass
    return text


def _fits(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _escaped(char: str) -> str:
    """``char`` as JSON string escapes (a pair of surrogates beyond the Basic Multilingual Plane). Outside strings
    JSON has only ASCII, so every character that needs this is inside one."""
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _result_lines(method: str, result: Mapping[str, Any]) -> Iterable[str]:
    """A result as plain lines: a prompt's description and messages, a resource's texts (binary parts described), a
    tool's content blocks — or its structured content as JSON when it has no blocks."""
    if method == "prompts/get":
        if result.get("description"):
            yield str(result["description"])
        for message in result.get("messages") or []:
            yield f"{message.get('role', '?')}: {_block_text(message.get('content') or {})}"
        return
    if method == "resources/read":
        for item in result.get("contents") or []:
            if "text" in item:
                yield str(item["text"])
            else:
                size = len(item.get("blob", ""))
                yield f"[binary {item.get('mimeType') or 'data'} at {item.get('uri')}, {size} base64 chars]"
        return
    blocks = result.get("content") or []
    for block in blocks:
        yield _block_text(block)
    if not blocks and result.get("structuredContent") is not None:
        yield json.dumps(result["structuredContent"], indent=2, ensure_ascii=False)


def _block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType', '')}, {len(block.get('data', ''))} base64 chars]"
    if kind == "resource_link":
        return f"[link {block.get('name', '')}: {block.get('uri', '')}]"
    if kind == "resource":
        res = block.get("resource") or {}
        return str(res.get("text", f"[resource {res.get('uri', '')}]"))
    return json.dumps(block, ensure_ascii=False)


def describe_pending(err: Console, session_id: str, pending: Mapping[str, Mapping[str, Any]]) -> None:
    """The human form of exit 3: what is needed, and the command that answers it (stderr).

    The example command names only keys and fields that can be typed as shown: one holding a control or an
    invisible character is shown escaped, and a pasted escape would not be that key, so then the example is an
    answers file (``--json``'s template has the keys exact). On a terminal, each server string is cut at
    ``display.TERMINAL_TEXT_MAX``, each key or field name at ``NAME_MAX``, and the requests and each form's fields
    after ``LISTED_MAX`` (``--json`` has them all).
    """
    from rich.text import Text

    lines = _PendingLines(err, pending, terminal=err.is_terminal)  # asked once: Rich looks at the environment each time
    err.print(Text.assemble(("Input required", "bold yellow"), f" — session {session_id} saved."))
    for index, (raw_key, wire) in enumerate(pending.items()):
        if lines.terminal and index == LISTED_MAX:
            err.print(Text(f"  … and {len(pending) - index:,} more requests (all of them: --json)", style="dim"))
            break
        lines.request(str(raw_key), wire)
    err.print(Text(f"Answer with: mcpcli resume {session_id} {lines.how(session_id) or ''}".rstrip(), style="bold"))


@dataclass
class _PendingLines:
    """The exit-3 text's lines for each kind of request, and what they gather for the command that answers them."""

    err: Console
    pending: Mapping[str, Mapping[str, Any]]
    terminal: bool
    """Whether stderr is a terminal: server text and lists are cut there (``--json`` has them whole)."""
    example: str | None = None
    """The first option that answers a request as shown (``--answer FIELD=VALUE``, ``--accept KEY``)."""
    refusal: str | None = None
    """``--decline KEY`` for the first request that can only be refused: suggested when nothing answers one."""
    hidden: bool = False
    """Whether a key or a field cannot be typed as shown: then an answers file is the way to name it."""

    def text(self, value: Any, limit: int = TERMINAL_TEXT_MAX) -> str:
        shown = sanitize(str(value))
        return clip(shown, "all of it: --json", limit) if self.terminal else shown

    def name_of(self, value: Any) -> str:
        return self.text(value, NAME_MAX).replace("\n", " ")

    def request(self, raw_key: str, wire: Mapping[str, Any]) -> None:
        """One request's lines, by its kind."""
        from rich.text import Text

        key = self.name_of(raw_key)  # the server chose the key: it is as untrusted as the message
        typable = _typable(raw_key)
        self.hidden = self.hidden or not typable
        params = wire.get("params") or {}
        method = wire.get("method")
        if method == "elicitation/create" and params.get("mode", "form") == "form":
            self.form(raw_key, key, typable, params)
        elif method == "elicitation/create":
            self.link(raw_key, key, typable, params)
        elif method == "sampling/createMessage":
            self.err.print(Text(f"  {key}: an LLM completion (sampling)"))
        else:
            self.err.print(Text(f"  {key}: {self.name_of(method)}"))

    def form(self, raw_key: str, key: str, typable: bool, params: Mapping[str, Any]) -> None:
        """A form: its message and fields; the example is ``--answer`` on its first typable field (qualified by the
        key when another request has a field of that name), or ``--decline`` when the form cannot be filled in."""
        from rich.text import Text

        from mcpcli import forms

        self.err.print(Text.assemble(f"  {key}: ", self.text(params.get("message", ""))))
        schema = params.get("requestedSchema") or {}
        required = set(schema.get("required") or [])
        properties = schema.get("properties") or {}
        for number, (name, prop) in enumerate(properties.items()):
            if self.terminal and number == LISTED_MAX:
                self.err.print(Text(f"    … and {len(properties) - number:,} more fields", style="dim"))
                break
            kind = prop.get("type", "?") if isinstance(prop, Mapping) else "?"
            flag = "required" if name in required else "optional"
            self.err.print(Text(f"    {self.name_of(name)}  {self.name_of(kind)}, {flag}", style="dim"))
        try:
            fields = forms.parse_schema(schema)
        except forms.SchemaError as exc:  # nothing can fill it in: it can only be declined or cancelled
            self.err.print(Text.assemble(("    cannot be filled in: ", "yellow"), self.text(exc)))
            self.refusal = self.refusal or (f"--decline {shell_word(raw_key)}" if typable else None)
            return
        field = next((f for f in fields if _typable(f.name)), None)
        self.hidden = self.hidden or any(not _typable(f.name) for f in fields)
        if field is not None and self.example is None:
            shared = sum(field.name in _field_names(other) for other in self.pending.values())
            if shared <= 1:
                self.example = f"--answer {shell_word(field.name)}=VALUE"
            elif typable:
                self.example = f"--answer {shell_word(f'{raw_key}.{field.name}')}=VALUE"

    def link(self, raw_key: str, key: str, typable: bool, params: Mapping[str, Any]) -> None:
        """A URL request: its message and link with the warnings a terminal would show; the example is ``--accept``
        (the user visits it), or ``--decline`` for a link a terminal would refuse."""
        from rich.text import Text

        from mcpcli.terminal.asking import check_url  # deferred: URL requests are rare

        url = str(params.get("url"))
        checked = check_url(url)
        link = reveal_invisible(url)
        link = clip(link, "all of it: --json", TERMINAL_TEXT_MAX) if self.terminal else link
        self.err.print(Text.assemble(f"  {key}: ", self.text(params.get("message", "")), " — visit ", link))
        for warning in checked.warnings:  # the same warnings as at a terminal: nobody is there to see them
            self.err.print(Text(f"    {warning}", style="yellow"))
        if checked.refused:  # a link refused at a terminal is not one to say you have visited: decline it
            self.refusal = self.refusal or (f"--decline {shell_word(raw_key)}" if typable else None)
            return
        self.example = self.example or (f"--accept {shell_word(raw_key)}" if typable else None)

    def how(self, session_id: str) -> str | None:
        """The options to suggest: the example, else the refusal, else an answers file when names are hidden."""
        how = self.example or self.refusal
        if how is None and self.hidden:
            how = (
                "--answers FILE  (its keys or fields hold what a command line cannot show; a template:"
                f" mcpcli resume {session_id} --no-input --json)"
            )
        return how


NAME_MAX = 200
"""Characters of a request key or a field name shown on a terminal (the exit-3 text) before it is cut."""
LISTED_MAX = 20
"""Requests of a round, and fields of a form, listed on a terminal (the exit-3 text) before the rest are counted."""


def _typable(text: str) -> bool:
    """Whether ``text`` reads on a terminal as what it is, so that pasting what is shown gives it back."""
    from mcpcli.display import has_invisible

    return bool(text) and not has_invisible(text) and len(text) <= NAME_MAX


def _field_names(wire: Mapping[str, Any]) -> list[str]:
    """The fields of a form request (none when it is no form, or one that cannot be filled in)."""
    from mcpcli import forms

    params = wire.get("params")
    schema = params.get("requestedSchema") if isinstance(params, Mapping) else None
    try:
        return [field.name for field in forms.parse_schema(schema if isinstance(schema, Mapping) else {})]
    except forms.SchemaError:
        return []


def shell_word(text: str) -> str:
    """``text`` quoted for a command line the user may paste (a server-chosen key may hold spaces or quotes)."""
    import shlex

    return shlex.quote(text)


def pending_document(session_id: str, pending: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "status": "input_required",
        "session_id": session_id,
        "pending": dict(pending),
        "answers_template": dict(template),
    }
