"""Shell completion: what TAB offers after ``-s``, ``call``, ``prompt``, ``--arg`` and a session id.

Completion runs in a fresh process on every TAB, so this module is light at import (stdlib and Typer; config,
store and the list cache are imported inside the functions) and never imports ``mcp`` while the cache is warm:
a test checks ``sys.modules``. Every callback is wrapped by ``_quiet``: it prints nothing, swallows every
exception and answers ``[]`` rather than break the user's shell.

Tool and prompt names and ``--arg`` keys come from ``mcpcli.net.listcache``. A fresh list is used as it is; a stale
one is used too, while a background ``mcpcli _refresh-cache`` rewrites it for next time; a missing one is
fetched by that same process while completion waits ``COLD_WAIT`` seconds at most. Completion never starts a
stdio command line typed after ``-s`` (the line is not run yet, and may not be meant): only configured names,
URLs and the demo are contacted; a command line's lists come from the cache alone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import typer  # the callbacks' annotations are read at run time, by Typer

if TYPE_CHECKING:
    from mcpcli.net.listcache import Kind
    from mcpcli.settings.config import Paths, Settings
    from mcpcli.settings.targets import Target

Item = tuple[str, str]
"""A completion and its help text (zsh and fish show it; bash shows only the value)."""

COLD_WAIT = 3.0
"""Seconds completion waits for a missing list (``MCPCLI_COMPLETION_WAIT`` overrides it)."""
SESSION_LIMIT = 200

_WORD = re.compile(r"[\w.@%+,:/~-]+")
"""What a server-provided name must look like to be offered: nothing the shell would act on."""

F = TypeVar("F", bound=Callable[..., list[Item]])


def _quiet(callback: F) -> F:
    """Run a completion callback with nothing reaching the terminal and no exception reaching the shell."""

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> list[Item]:
        """The callback's items, or none: logging off, warnings ignored and stderr swallowed while it runs, any failure
        an empty list."""
        import io
        import logging
        import warnings

        disabled = logging.root.manager.disable
        logging.disable(logging.CRITICAL)  # no log handler (nor Python's last resort) may write to the terminal
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                return callback(*args, **kwargs)
        except Exception:  # boundary: a broken config, store or cache must not break the shell
            return []
        finally:
            logging.disable(disabled)

    return wrapper  # type: ignore[return-value]


def _help(text: object, width: int = 72) -> str:
    """One sanitized line of untrusted text, short enough for a completion menu."""
    from mcpcli.display import sanitize

    line = " ".join(sanitize(str(text or "")).split("\n", 1)[0].split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _given(ctx: Any, name: str) -> Any:
    """An option's value on the command line so far: after the subcommand wins over before it."""
    while ctx is not None:
        value = ctx.params.get(name)
        if value not in (None, [], ()):
            return value
        ctx = ctx.parent
    return None


# --- servers ---------------------------------------------------------------------------------------------------------


def _settings(paths: Paths) -> Settings:
    from mcpcli.errors import McpcliError
    from mcpcli.settings.config import Settings, load_settings

    try:
        return load_settings(paths)
    except McpcliError:  # a broken config.toml still leaves the other places' names
        return Settings()


def _servers_table(paths: Paths, settings: Settings) -> Any:
    """The named servers of every place mcpcli reads (config.toml, servers.json, ./.mcp.json), merged."""
    from mcpcli.settings.servers import ServerTable

    return ServerTable(paths, settings)


def known_servers(paths: Paths) -> dict[str, str]:
    """Names usable as ``-s NAME``, each with a short description, then ``demo``. A place that does not parse is
    skipped: its names are missing, the others' are still offered."""
    from mcpcli.settings.servers import SOURCES

    table = _servers_table(paths, _settings(paths))
    found: dict[str, str] = {}
    for source in SOURCES:
        try:
            layer = table.layer(source)
        except Exception:  # boundary: one unreadable file must not hide the others' names
            continue
        for name, where in layer.items():
            found.setdefault(name, _describe_entry(where.entry) if where.entry else f"unusable: {where.problem}")
    found.setdefault("demo", "the built-in demo server")
    return found


def server_names(paths: Paths) -> list[str]:
    """The one lookup of configured server names (``known_servers`` without the descriptions)."""
    return list(known_servers(paths))


def _describe_entry(entry: Any) -> str:
    if entry.url:
        return _help(entry.url)
    return _help(" ".join([entry.command or "", *entry.args]))


@_quiet
def complete_servers(ctx: typer.Context, incomplete: str) -> list[Item]:
    """``-s/--server``: the names of configured servers, and ``demo``."""
    from mcpcli.settings.config import Paths

    found = known_servers(Paths.from_env())
    return [(name, text) for name, text in found.items() if name.startswith(incomplete) and _WORD.fullmatch(name)]


# --- getting a list at completion time -------------------------------------------------------------------------------


def _chosen(ctx: Any, paths: Paths) -> tuple[Target, str | None, bool]:
    """The server the command line so far would talk to: the target, the ``-s`` value, and whether completion may
    contact it (a stdio command line typed after ``-s`` is never started)."""
    from mcpcli.settings.targets import resolve_target

    given = _given(ctx, "server")
    settings = _settings(paths)
    table = _servers_table(paths, settings)
    target, _note = resolve_target(given, settings, servers=table)
    adhoc = given is not None and target.kind == "stdio" and given not in table
    return target, given, not adhoc


def listing(ctx: Any, kind: Kind) -> list[dict[str, Any]]:
    """The chosen server's tools or prompts: cached (fresh, or stale while a refresh runs), else fetched now."""
    import subprocess

    from mcpcli.net.listcache import cache_file, cached, read_cache, start_refresh
    from mcpcli.settings.config import Paths

    paths = Paths.from_env()
    target, given, reachable = _chosen(ctx, paths)
    path = cache_file(paths, target)
    found = cached(read_cache(path), kind)
    if found is not None:
        items, fresh = found
        if not fresh and reachable:
            start_refresh(path, given)
        return items
    if not reachable or (proc := start_refresh(path, given)) is None:
        return []
    with contextlib.suppress(subprocess.TimeoutExpired):  # still running: it warms the cache for the next TAB
        proc.wait(timeout=_cold_wait())
    found = cached(read_cache(path), kind)
    return found[0] if found is not None else []


def _cold_wait() -> float:
    try:
        return float(os.environ.get("MCPCLI_COMPLETION_WAIT", COLD_WAIT))
    except ValueError:
        return COLD_WAIT


# --- tools, prompts, arguments ---------------------------------------------------------------------------------------


@_quiet
def complete_tools(ctx: typer.Context, incomplete: str) -> list[Item]:
    """``call TOOL``: the chosen server's tool names."""
    return _names(listing(ctx, "tools"), incomplete)


@_quiet
def complete_prompts(ctx: typer.Context, incomplete: str) -> list[Item]:
    """``prompt NAME``: the chosen server's prompt names."""
    return _names(listing(ctx, "prompts"), incomplete)


def _names(items: list[dict[str, Any]], incomplete: str) -> list[Item]:
    return [
        (item["name"], _help(item.get("description")))
        for item in items
        if item["name"].startswith(incomplete) and _WORD.fullmatch(item["name"])
    ]


@_quiet
def complete_args(ctx: typer.Context, incomplete: str) -> list[Item]:
    """``--arg``: ``KEY=`` for each argument not given yet; after ``KEY=``, the values the schema allows."""
    prompt = ctx.command.name == "prompt"
    # While an option still lacks its value, Click stops parsing before the positionals: the name is in ctx.args.
    name = ctx.params.get("name" if prompt else "tool") or next(iter(ctx.args), None)
    if not name:
        return []
    item = next((i for i in listing(ctx, "prompts" if prompt else "tools") if i["name"] == name), None)
    if item is None:
        return []
    properties = _prompt_properties(item) if prompt else _tool_properties(item)
    key, sep, _ = incomplete.partition("=")
    if sep:
        return [(f"{key}={value}", "") for value in _values(properties.get(key)) if _WORD.fullmatch(value)]
    given = {pair.partition("=")[0] for pair in ctx.params.get("arg") or []}
    return [
        (f"{key}=", _describe_property(prop))
        for key, prop in properties.items()
        if key not in given and key.startswith(incomplete) and _WORD.fullmatch(key)
    ]


def _tool_properties(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    from mcpcli.engine.arguments import usable_schema

    schema = usable_schema(item.get("inputSchema"))
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    return {k: {**v, "x-required": k in required} for k, v in properties.items()}


def _prompt_properties(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        a["name"]: {"type": "string", "description": a.get("description"), "x-required": bool(a.get("required"))}
        for a in item.get("arguments") or []
        if isinstance(a.get("name"), str)
    }


def _describe_property(prop: dict[str, Any]) -> str:
    """``string, required — The name of the service``."""
    kind = prop.get("type", "any")
    kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
    head = f"{kind}{', required' if prop.get('x-required') else ''}"
    return _help(f"{head} — {prop['description']}" if prop.get("description") else head)


def _values(prop: dict[str, Any] | None) -> list[str]:
    """The values a property allows, when the schema lists them: ``enum``, ``oneOf``/``anyOf`` constants, booleans."""
    if not prop:
        return []
    if isinstance(prop.get("enum"), list):
        return [_text(v) for v in prop["enum"]]
    options = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
        return [_text(o["const"]) for o in options]
    kinds = prop.get("type")
    if kinds == "boolean" or (isinstance(kinds, list) and "boolean" in kinds):
        return ["true", "false"]
    return []


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


# --- sessions --------------------------------------------------------------------------------------------------------


@_quiet
def complete_sessions(ctx: typer.Context, incomplete: str) -> list[Item]:
    """A session id, with what it is: ``waiting provision (round 2)``. Ids already on the line are left out."""
    given = set(ctx.params.get("sessions") or [])
    return [
        (record.id, _help(f"{record.status} {record.name} (round {record.round})"))
        for record in _sessions()
        if record.id.startswith(incomplete) and record.id not in given
    ]


def _sessions() -> Iterator[Any]:
    from mcpcli.settings.config import Paths
    from mcpcli.state.store import open_store

    paths = Paths.from_env()
    url = os.environ.get("MCPCLI_STORE") or _settings(paths).store
    if (url is None or url.strip() == "sqlite:") and not paths.store_file.exists():
        return  # no store yet: nothing to offer (and no file created by pressing TAB)
    os.environ.setdefault("PGCONNECT_TIMEOUT", "2")  # a shared store that does not answer: give up soon
    store = open_store(url, paths.store_file, source="env" if os.environ.get("MCPCLI_STORE") else "config")
    try:
        yield from store.list(limit=SESSION_LIMIT)
    finally:
        store.close()


# --- the shells ------------------------------------------------------------------------------------------------------


def answer_shell(app: typer.Typer) -> None:
    """Answer the shell's request for completions (Typer's protocol) and exit.

    Registers ``_Bash`` over Typer's bash completer first: bash splits words at ``=`` and ``:`` (they are in
    ``COMP_WORDBREAKS``), so Typer would see ``--arg KEY = VAL`` and ``-s http : //host : 8000/mcp``.
    """
    import warnings

    import typer.main

    # Nothing but completions may reach the terminal, not even a warning at exit about a refresh still running.
    warnings.simplefilter("ignore")
    command = typer.main.get_command(app)  # (re)registers Typer's own completers; ours goes on top
    with contextlib.suppress(Exception):  # a Typer that moved these: its own bash completer still works
        _register_bash()
    command.main(prog_name="mcpcli")


BREAKS = ("=", ":")
"""The characters of bash's default ``COMP_WORDBREAKS`` that occur inside mcpcli's words."""


def glue(words: list[str]) -> tuple[list[str], str]:
    """Bash's words with the ones it split at ``=`` or ``:`` joined again, and the part of the last one that bash
    keeps (it replaces only what follows the last break): ``[..., "env", "=", "st"]`` → ``[..., "env=st"]``,
    ``"env="``."""
    joined: list[str] = []
    pending = False
    for word in words:
        if word in BREAKS and joined:
            joined[-1] += word
            pending = True
        elif pending:
            joined[-1] += word
            pending = False
        else:
            joined.append(word)
    if not joined:
        return [""], ""
    current, last = joined[-1], words[-1]
    return joined, current if last in BREAKS else current[: len(current) - len(last)]


def _register_bash() -> None:
    """Register a bash completer that glues back the words bash split at ``=`` and ``:`` (``--arg name=…``,
    ``server:tool``), and hands bash back only the part after the last break, which is all bash replaces."""
    from typer._click.shell_completion import add_completion_class
    from typer._completion_classes import BashComplete

    class _Bash(BashComplete):
        """Typer's bash completer, with the words bash split at ``=`` and ``:`` put back together."""

        kept = ""

        def get_completion_args(self) -> tuple[list[str], str]:
            args, incomplete = super().get_completion_args()
            joined, self.kept = glue([*args, incomplete])
            return joined[:-1], joined[-1]

        def format_completion(self, item: Any) -> str:
            # bash replaces only what follows the last "=" or ":": hand back just that part.
            return str(item.value).removeprefix(self.kept)

    add_completion_class(_Bash, "bash")
