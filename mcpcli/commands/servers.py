"""The bodies of ``mcpcli servers list|import|add|remove``: read the places, change ``servers.json``, report.

The list and the import report are results (stdout); notes go to stderr. Env and header *values* are never
shown, only their names: they often hold tokens. Nothing here connects to a server or imports ``mcp``.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.errors import ConfigError, UsageError
from mcpcli.settings.config import ServerEntry
from mcpcli.settings.servers import (
    APPS,
    SOURCE_LABELS,
    Found,
    ServerTable,
    app_files,
    convert,
    entries_of,
    load_managed,
    read_json,
    save_managed,
    warnings,
)
from mcpcli.settings.targets import parse_headers

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime

SERVER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
"""A name usable as ``-s NAME``: nothing a shell quotes, nothing that reads as a URL or an option."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --- list ------------------------------------------------------------------------------------------------------------


def list_servers(rt: Runtime) -> int:
    """``mcpcli servers list``: every named server of every place, the shadowed ones too (and the demo)."""
    table = ServerTable(rt.paths, rt.settings)
    rows = [describe(found, winner) for found, winner in table.everything()]
    shadow = table.find("demo")
    demo = {**_row("demo", "built-in", None, shadow), "kind": "demo", "target": "the bundled demo server"}
    rows.append(demo)
    if rt.json:
        rt.out.json(rows)
        return 0
    cells = [(r["name"], r["kind"] or "?", _target_cell(r), SOURCE_LABELS[r["source"]], _note_cell(r)) for r in rows]
    rt.out.table("Servers", ("name", "kind", "target", "source", "note"), cells, "")
    if len(rows) == 1:
        rt.out.note("No named servers yet. Add one: mcpcli servers add NAME URL|'COMMAND', or: mcpcli servers import")
    return 0


def _row(name: str, source: str, file: Path | None, winner: Found | None) -> dict[str, Any]:
    """A ``servers list --json`` row: every key always present, values ``null`` or empty where they do not apply."""
    return {
        "name": name,
        "kind": None,
        "target": None,
        "source": source,
        "file": None if file is None else str(file),
        "shadowed_by": None if winner is None else winner.source,
        "command": None,
        "args": [],
        "env": [],
        "cwd": None,
        "url": None,
        "headers": [],
        "problem": None,
        "dropped": [],
        "notes": [],
    }


def describe(found: Found, winner: Found | None) -> dict[str, Any]:
    """One ``servers list --json`` row. ``env`` and ``headers`` are the names only: their values are secrets."""
    row = _row(found.name, found.source, found.file, winner)
    row.update(problem=found.problem, dropped=list(found.dropped))
    entry = found.entry
    if entry is None:
        return row
    row["notes"] = warnings(found.name, entry)
    if entry.url is not None:
        row.update(kind="http", target=entry.url, url=entry.url, headers=sorted(entry.headers))
    else:
        assert entry.command is not None
        row.update(kind="stdio", target=shlex.join([entry.command, *entry.args]), command=entry.command)
        row.update(args=list(entry.args), env=sorted(entry.env), cwd=entry.cwd)
    return row


def _target_cell(row: dict[str, Any]) -> str:
    lines = [row["target"] or ""]
    for key in ("env", "headers"):
        if row.get(key):
            lines.append(f"{key}: {', '.join(row[key])}")
    if row.get("cwd"):
        lines.append(f"cwd: {row['cwd']}")
    return "\n".join(lines)


def _note_cell(row: dict[str, Any]) -> str:
    notes = [f"shadowed by {SOURCE_LABELS[row['shadowed_by']]}"] if row["shadowed_by"] else []
    if row.get("problem"):
        notes.append(f"unusable: {row['problem']}")
    if row.get("dropped"):
        notes.append(f"ignored keys: {', '.join(row['dropped'])}")
    return "\n".join([*notes, *row["notes"]])


# --- import ----------------------------------------------------------------------------------------------------------


def import_servers(rt: Runtime, source: str | None, names: list[str], *, force: bool, dry_run: bool) -> int:
    """``mcpcli servers import``: copy entries from other clients' files into servers.json, one line each."""
    if source in APPS:
        files, explicit = app_files(source), False
    elif source is not None:
        files, explicit = [Path(source).expanduser()], True
    else:
        files, explicit = [path for app in APPS for path in app_files(app)], False
    managed = load_managed(rt.paths)
    before = dict(managed)
    taken: dict[str, Path] = {}
    report: list[str] = []
    seen: set[str] = set()
    read_any = False
    for path in files:
        if not path.is_file():
            if explicit:
                raise UsageError(f"{path} is not a file.", hint="Give --from claude|vscode|cursor, or a JSON file.")
            continue
        try:
            table = entries_of(read_json(path))
        except ConfigError as exc:
            if explicit:
                raise
            rt.out.note(f"Skipped {exc.message}")
            continue
        read_any = True
        rt.out.note(f"Found {_count(len(table))} in {path}.")
        for original, raw in table.items():
            name = slug(str(original))
            if names and original not in names and name not in names:
                continue
            seen.update((original, name))
            status, notes = _import_one(rt, managed, taken, name, raw, path, force=force)
            if name != original:
                notes.insert(0, f"renamed from {original!r}")
            report.append(f"{status}: {name} from {path}" + (f" ({'; '.join(notes)})" if notes else ""))
    if missing := [n for n in names if n not in seen]:
        raise UsageError(
            f"No server named {', '.join(missing)} in {_where(files)}.", hint="Nothing was imported; check the names."
        )
    if not read_any:
        where = f"No {source} config found" if source else "No MCP client config found"
        if source:
            raise UsageError(f"{where} (looked in {_where(files)}).", hint="Give the file: servers import --from FILE")
        rt.out.note(f"{where} (looked in {_where(files)}).")
        return 0
    if dry_run:
        report = [f"(dry run) {line}" for line in report]
    from mcpcli.display import sanitize
    from mcpcli.terminal.output import write

    write(sys.stdout, "".join(sanitize(line) + "\n" for line in report))
    if managed != before and not dry_run:
        rt.out.note(f"Wrote {save_managed(rt.paths, managed)}.")
    elif dry_run:
        rt.out.note(f"Dry run: {rt.paths.servers_file} was not changed.")
    return 0


def _import_one(
    rt: Runtime,
    managed: dict[str, ServerEntry],
    taken: dict[str, Path],
    name: str,
    raw: Any,
    path: Path,
    *,
    force: bool,
) -> tuple[str, list[str]]:
    """Import one entry into ``managed``; the status word and what the user should know."""
    entry, dropped, problem = convert(raw)
    notes = [f"dropped {', '.join(dropped)}"] if dropped else []
    if entry is None:
        return "skipped", [*notes, str(problem)]
    if not SERVER_NAME.fullmatch(name) or name == "demo":
        return "skipped", [*notes, "not a usable name; add it by hand: mcpcli servers add NAME ..."]
    if name in taken:
        return "skipped", [*notes, f"already taken from {taken[name]}"]
    old = managed.get(name)
    if old == entry:
        taken[name] = path
        return "unchanged", notes
    if old is not None and not force:
        return "skipped", [*notes, "servers.json has a different entry of that name; --force replaces it"]
    managed[name] = entry
    taken[name] = path
    if name in rt.settings.mcp_servers:
        notes.append(f"config.toml's own {name!r} is the one used")
    return ("imported" if old is None else "replaced"), [*notes, *warnings(name, entry)]


def slug(name: str) -> str:
    """Another client's server name as an mcpcli name: ``My Server`` → ``My-Server``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:64]


def _count(n: int) -> str:
    return f"{n} server{'' if n == 1 else 's'}"


def _where(files: list[Path]) -> str:
    return ", ".join(str(f) for f in files)


# --- add and remove --------------------------------------------------------------------------------------------------


def add_server(
    rt: Runtime,
    name: str,
    target: list[str],
    *,
    env: list[str],
    headers: list[str],
    cwd: str | None,
    force: bool,
    protocol: str | None = None,
) -> int:
    """``mcpcli servers add NAME TARGET``: a new entry in servers.json (``--force`` replaces one)."""
    if not SERVER_NAME.fullmatch(name) or name == "demo":
        raise UsageError(
            f"{name!r} cannot name a server.",
            hint="Use letters, digits, '.', '_' and '-' (not starting with '.' or '-'); 'demo' is the built-in one.",
        )
    entry = build_entry(target, env=env, headers=headers, cwd=cwd)
    if protocol is not None:
        if protocol not in ("auto", "legacy", "2026-07-28"):
            raise UsageError(f"Unknown protocol {protocol!r}.", hint="Use --protocol auto, legacy or 2026-07-28.")
        entry = entry.model_copy(update={"protocol": protocol})
    managed = load_managed(rt.paths)
    old = managed.get(name)
    if old == entry:
        rt.out.note(f"{name} is already in {rt.paths.servers_file}, unchanged.")
        return 0
    if old is not None and not force:
        raise UsageError(
            f"{rt.paths.servers_file} already has a server named {name!r}.",
            hint=f"Add --force to replace it, or remove it first: mcpcli servers remove {name}",
        )
    managed[name] = entry
    path = save_managed(rt.paths, managed)
    rt.out.note(f"{'Added' if old is None else 'Replaced'} {name} in {path}.")
    if name in rt.settings.mcp_servers:
        rt.out.note(f"config.toml also defines {name!r}, and that entry is the one used.")
    for note in warnings(name, entry):
        rt.out.note(f"Note: {note}.")
    return 0


def build_entry(target: list[str], *, env: list[str], headers: list[str], cwd: str | None) -> ServerEntry:
    """``TARGET`` (a URL, one command line, or the words after ``--``) and the flags → an entry."""
    if len(target) == 1 and target[0].startswith(("http://", "https://")):
        if env or cwd:
            raise UsageError("--env and --cwd are for stdio servers.", hint="Give an HTTP server --header 'N: V'.")
        return ServerEntry(url=target[0], headers=parse_headers(headers))
    if headers:
        raise UsageError("--header is for HTTP servers.", hint="Give a stdio server --env K=V instead.")
    try:
        argv = shlex.split(target[0]) if len(target) == 1 else list(target)
    except ValueError as exc:
        raise UsageError(f"Cannot parse the command {target[0]!r}: {exc}.") from None
    if not argv or not argv[0].strip():
        raise UsageError("The command is empty.", hint="mcpcli servers add NAME 'command args' (or: -- command args)")
    variables: dict[str, str] = {}
    for pair in env:
        key, sep, value = pair.partition("=")
        if not sep or not _ENV_NAME.fullmatch(key):
            raise UsageError(f"Bad --env {pair!r}.", hint="Write --env NAME=VALUE, e.g. --env TOKEN='${env:TOKEN}'.")
        variables[key] = value
    if cwd is not None and "${" not in cwd:
        cwd = str(Path(cwd).expanduser().resolve())  # the entry is used from other directories later
    return ServerEntry(command=argv[0], args=argv[1:], env=variables, cwd=cwd)


def remove_server(rt: Runtime, name: str) -> int:
    """``mcpcli servers remove NAME``: only servers.json's entries; the others live in files the user edits."""
    managed = load_managed(rt.paths)
    table = ServerTable(rt.paths, rt.settings)
    if name not in managed:
        elsewhere = table.layer("config").get(name) or table.layer("project").get(name)
        if elsewhere is not None:
            raise UsageError(
                f"{name!r} is defined in {elsewhere.file}, not in servers.json.",
                hint=f"Edit {elsewhere.file} to remove it.",
            )
        raise UsageError(f"No server named {name!r}.", hint="'mcpcli servers list' shows the servers mcpcli knows.")
    del managed[name]
    rt.out.note(f"Removed {name} from {save_managed(rt.paths, managed)}.")
    try:
        still = table.layer("config").get(name) or table.layer("project").get(name)
    except ConfigError:
        still = None
    if still is not None:
        rt.out.note(f"{name!r} is still defined in {still.file}.")
    return 0
