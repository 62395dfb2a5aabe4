"""How every ``--help`` reads: positional names in one style (``TOOL``, ``[SESSION]``, ``ID...``, as Click writes
them: no ``{tool}``, no ``<list[str]>``), and text wrapped between words only — a line never ends inside a word or
at a word's hyphen (``alert|e`` / ``mergency``, ``--no-`` / ``input``); a word longer than the line stays whole.

``Typer`` here is ``typer.Typer`` whose commands and groups are built with these classes; every group of the app is
one (``test_command_tree`` walks them all)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer._click._compat import term_len
from typer._click.formatting import HelpFormatter, iter_rows, measure_table
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandFunctionType


def wrap(
    text: str, width: int, initial_indent: str = "", subsequent_indent: str = "", preserve_paragraphs: bool = False
) -> str:
    """Click's ``wrap_text`` (paragraphs split at blank lines; a paragraph after a ``\\b`` line kept as written),
    breaking lines only between words."""

    def wrapper(first: str, rest: str) -> textwrap.TextWrapper:
        return textwrap.TextWrapper(
            max(width, 1),
            initial_indent=first,
            subsequent_indent=rest,
            replace_whitespace=False,
            break_long_words=False,
            break_on_hyphens=False,
        )

    text = text.expandtabs()
    if not preserve_paragraphs:
        return wrapper(initial_indent, subsequent_indent).fill(text)
    paragraphs: list[tuple[int, bool, str]] = []
    lines: list[str] = []
    indent: int | None = None

    def flush() -> None:
        if lines:
            raw = lines[0].strip() == "\b"
            paragraphs.append((indent or 0, raw, "\n".join(lines[1:]) if raw else " ".join(lines)))
            lines.clear()

    for line in text.splitlines():
        if not line:
            flush()
            indent = None
            continue
        if indent is None:
            indent = term_len(line) - term_len(line.lstrip())
            line = line.lstrip()
        lines.append(line)
    flush()
    out = []
    for extra, raw, body in paragraphs:
        first, rest = initial_indent + " " * extra, subsequent_indent + " " * extra
        if raw:
            out.append("\n".join((first if n == 0 else rest) + line for n, line in enumerate(body.splitlines())))
        else:
            out.append(wrapper(first, rest).fill(body))
    return "\n\n".join(out)


class Formatter(HelpFormatter):
    """Click's help formatter, wrapping with ``wrap``."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        prefix = "Usage: " if prefix is None else prefix
        usage_prefix = f"{prefix:>{self.current_indent}}{prog} "
        text_width = self.width - self.current_indent
        if text_width >= term_len(usage_prefix) + 20:
            self.write(wrap(args, text_width, usage_prefix, " " * term_len(usage_prefix)))
        else:
            indent = " " * (max(self.current_indent, term_len(prefix)) + 4)
            self.write(usage_prefix + "\n" + wrap(args, text_width, indent, indent))
        self.write("\n")

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        self.write(wrap(text, self.width, indent, indent, preserve_paragraphs=True) + "\n")

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        """A definition list (options, commands) with its second column wrapped to the width; a first column wider than
        ``col_max`` puts its text on the next line."""
        rows = list(rows)
        widths = measure_table(rows)
        first_col = min(widths[0], col_max) + col_spacing
        for first, second in iter_rows(rows, len(widths)):
            self.write(f"{'':>{self.current_indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if term_len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - term_len(first)))
            else:
                self.write("\n" + " " * (first_col + self.current_indent))
            lines = wrap(second, max(self.width - first_col - 2, 10), preserve_paragraphs=True).splitlines() or [""]
            self.write(f"{lines[0]}\n")
            for line in lines[1:]:
                self.write(f"{'':>{first_col + self.current_indent}}{line}\n")


class Context(typer.Context):
    formatter_class = Formatter


def positional(param: Any) -> str:
    """A positional's name as the usage line and the Arguments section show it: ``TOOL``, ``[SESSION]``,
    ``ID...``, ``[URI]...`` — its metavar, or its name in capitals."""
    name = str(param.metavar or param.name).upper().rstrip(".")
    if not param.required:
        name = f"[{name}]"
    return f"{name}..." if param.nargs != 1 else name


class Command(TyperCommand):
    """A Typer command whose help names its positionals as ``positional`` does, without a type."""

    context_class = Context

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(positional(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((positional(param).strip("[]").replace("]", ""), record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(TyperGroup):
    context_class = Context


class Typer(typer.Typer):
    """``typer.Typer`` whose groups are ``Group`` and whose commands are ``Command``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=Group, **kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or Command, **kwargs)
