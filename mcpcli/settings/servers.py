"""Named servers: the places mcpcli finds them, and reading the files other MCP clients keep them in.

Three places, in precedence order — the first wins on a name clash, and ``servers list`` shows which entry
shadows which:

1. ``config.toml``'s own ``mcpServers`` table (``Settings.mcp_servers``);
2. ``servers.json`` in the config dir — mcpcli's, written only by ``servers add|import|remove``
   (``{"mcpServers": {NAME: entry}}``, 0600, replaced atomically, never overwritten when it does not parse);
3. ``./.mcp.json`` in the current directory — a project's file, in Claude Code's shape.

Entries are stored as written: a ``${env:NAME}`` reference stays a reference in every file and is expanded
only when a target is built (``targets.resolve_target``), so a secret kept in the environment is never copied.
No ``mcp`` import here: ``servers list`` must start as fast as ``--help``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from mcpcli.errors import ConfigError
from mcpcli.platform import SYSTEM
from mcpcli.settings.config import Paths, ServerEntry, Settings, write_private

Source = Literal["config", "servers.json", "project"]
SOURCES: tuple[Source, ...] = ("config", "servers.json", "project")
"""The places, first wins."""
SOURCE_LABELS: dict[str, str] = {
    "config": "config.toml",
    "servers.json": "servers.json",
    "project": "./.mcp.json",
    "built-in": "built-in",
}
PROJECT_FILE = ".mcp.json"

App = Literal["claude", "vscode", "cursor"]
APPS: tuple[App, ...] = ("claude", "vscode", "cursor")


@dataclass(frozen=True)
class Found:
    """One named entry in one place: usable (``entry``), or not (``problem`` says why)."""

    name: str
    source: Source
    file: Path
    entry: ServerEntry | None
    problem: str | None = None
    """Why the entry cannot be used (neither ``command`` nor ``url``, a wrong type...)."""
    dropped: tuple[str, ...] = ()
    """Keys of another client's entry that mcpcli does not understand (``disabled``, ``autoApprove``...)."""


# --- one entry from another client ------------------------------------------------------------------------------------


CORE_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers"})
"""The keys every client means the same by; any other key that does not fit mcpcli's model is dropped on import."""


def _known_keys() -> frozenset[str]:
    """What a ``ServerEntry`` holds (read from the model, so fields added to it are kept on import too)."""
    return frozenset(
        key for name, info in ServerEntry.model_fields.items() for key in (name, info.alias) if key is not None
    )


def _text(value: Any) -> Any:
    """A JSON number or boolean where a string belongs (``"args": ["--port", 8080]``) as the text it stands for."""
    return value if isinstance(value, str) or value is None or isinstance(value, list | dict) else json.dumps(value)


def convert(raw: Any) -> tuple[ServerEntry | None, tuple[str, ...], str | None]:
    """Another client's entry → ``(entry, dropped keys, problem)``: keep what mcpcli understands, drop the rest."""
    if not isinstance(raw, Mapping):
        return None, (), "not a JSON object"
    known = _known_keys()
    kept = {key: value for key, value in raw.items() if key in known}
    dropped = tuple(sorted(str(key) for key in raw if key not in known))
    if isinstance(kept.get("args"), list):
        kept["args"] = [_text(arg) for arg in kept["args"]]
    for table in ("env", "headers"):
        if isinstance(kept.get(table), Mapping):
            kept[table] = {str(k): _text(v) for k, v in kept[table].items()}
    while True:
        try:
            return ServerEntry.model_validate(kept), dropped, None
        except ValidationError as exc:
            # Another client's own meaning of a key mcpcli also has (Claude Code's ``oauth``) is dropped, not
            # fatal; a bad command, url, args, env or headers makes the entry unusable.
            key = next((str(e["loc"][0]) for e in exc.errors() if e["loc"]), None)
            if key is None or key in CORE_KEYS or key not in kept:
                return None, dropped, first_error(exc)
            del kept[key]
            dropped = tuple(sorted((*dropped, key)))


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


INPUT_REFERENCE = re.compile(r"\$\{input:([^}]*)\}")


def warnings(name: str, entry: ServerEntry) -> list[str]:
    """What a user should know before relying on an entry: inputs it needs, a transport mcpcli does not speak."""
    notes: list[str] = []
    if (entry.type or "").lower() == "sse" or (entry.url or "").rstrip("/").endswith("/sse"):
        notes.append("SSE server: mcpcli speaks streamable HTTP, which it may not")
    values = [entry.command, *entry.args, *entry.env.values(), entry.cwd, entry.url, *entry.headers.values()]
    inputs = sorted({m for value in values if value for m in INPUT_REFERENCE.findall(value)})
    if inputs:
        # VS Code asks for these when it starts the server; mcpcli has no such prompt, so the value must be given.
        keys = [key for key, value in entry.env.items() if INPUT_REFERENCE.search(value)]
        flags = " ".join(f"--env {key}=VALUE" for key in keys) or "--env NAME=VALUE"
        where = "--header 'NAME: VALUE'" if entry.url is not None else flags
        named = ", ".join("${input:" + i + "}" for i in inputs)
        notes.append(f"needs a value for {named}: mcpcli servers add {name} ... {where} --force")
    return notes


# --- reading files ---------------------------------------------------------------------------------------------------


def strip_jsonc(text: str) -> str:
    """JSON with comments (VS Code's ``settings.json`` and ``mcp.json``) → JSON.

    Removes ``//`` and ``/* */`` comments and trailing commas before ``}`` or ``]``, never touching what is
    inside a string. A block comment becomes the newlines it spanned, so JSON errors keep their line numbers.
    """
    out: list[str] = []
    comma: int | None = None  # where in ``out`` a comma stands that only blanks and comments have followed
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            comma, i = None, j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end) or " ")
            i = end
        else:
            if c in "}]" and comma is not None:
                out[comma] = ""
            if not c.isspace():
                comma = None
            out.append(c)
            if c == ",":
                comma = len(out) - 1
            i += 1
    return "".join(out)


def read_json(path: Path, *, comments: bool = True) -> Any:
    """Parse ``path`` (JSONC unless ``comments=False``); a broken file is a one-line error naming it."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.", hint=f"Fix or move {path}.") from None
    try:
        return json.loads(strip_jsonc(text) if comments else text)
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to read.", hint=f"Fix or move {path}.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).",
            hint=f"Fix or move {path}.",
        ) from None


def entries_of(doc: Any) -> dict[str, Any]:
    """The server table of a parsed file, whichever client wrote it.

    ``mcpServers`` (Claude Desktop, Claude Code, Cursor, ``.mcp.json``), ``servers`` (VS Code's ``mcp.json``),
    ``mcp.servers`` (VS Code's user ``settings.json``, nested or as a dotted key). Claude Code's per-project
    tables in ``~/.claude.json`` are not read: only its top-level ``mcpServers``.
    """
    if not isinstance(doc, dict):
        return {}
    nested = doc.get("mcp")
    for table in (
        doc.get("mcpServers"),
        doc.get("servers"),
        nested.get("servers") if isinstance(nested, dict) else None,
        doc.get("mcp.servers"),
    ):
        if isinstance(table, dict):
            return table
    return {}


# --- mcpcli's own servers.json ---------------------------------------------------------------------------------------


def load_managed(paths: Paths) -> dict[str, ServerEntry]:
    """``servers.json``: missing means empty; anything wrong is a one-line error (and the file is left alone)."""
    path = paths.servers_file
    if not path.exists():
        return {}
    doc = read_json(path, comments=False)
    table = doc.get("mcpServers") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f'{path} has no "mcpServers" object.', hint=f"Fix or move {path}.")
    entries: dict[str, ServerEntry] = {}
    for name, raw in table.items():
        try:
            entries[name] = ServerEntry.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"{path}: server {name!r}: {first_error(exc)}.", hint=f"Fix or move {path}.") from None
    return entries


def stored(entry: ServerEntry) -> dict[str, Any]:
    """An entry as written to ``servers.json``: only what was set, references unexpanded."""
    return entry.model_dump(mode="json", exclude_defaults=True, by_alias=True)


def save_managed(paths: Paths, entries: Mapping[str, ServerEntry]) -> Path:
    """Write ``servers.json`` whole: a 0600 temporary file in the 0700 config dir, then renamed over the old one."""
    path = paths.servers_file
    text = json.dumps({"mcpServers": {name: stored(e) for name, e in entries.items()}}, indent=2, ensure_ascii=False)
    try:
        write_private(path, text + "\n")
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    return path


# --- all three places ------------------------------------------------------------------------------------------------


def project_file(cwd: Path | None = None) -> Path:
    return (Path.cwd() if cwd is None else cwd) / PROJECT_FILE


class ServerTable(Mapping[str, ServerEntry]):
    """The named servers of the three places, merged (first wins), each file read only when a lookup needs it.

    ``resolve_target`` takes it as its ``servers``: ``-s URL`` reads nothing, ``-s NAME`` reads the places up
    to the one that has NAME. A name whose entry is unusable is an error naming the file, not a miss (a miss
    would run NAME as a command).
    """

    def __init__(self, paths: Paths, settings: Settings, cwd: Path | None = None) -> None:
        self.paths = paths
        self.settings = settings
        self.cwd = cwd
        self._layers: dict[Source, dict[str, Found]] = {}

    def layer(self, source: Source) -> dict[str, Found]:
        if source not in self._layers:
            self._layers[source] = self._read(source)
        return self._layers[source]

    def _read(self, source: Source) -> dict[str, Found]:
        """The server entries one source defines: ``config.toml``'s ``[mcp_servers]``, ``servers.json``, or the
        project's file (converted from its client's format, what was dropped and why kept with each entry); none when
        the project has no file."""
        if source == "config":
            file = self.paths.config_file
            return {n: Found(n, source, file, e) for n, e in self.settings.mcp_servers.items()}
        if source == "servers.json":
            file = self.paths.servers_file
            return {n: Found(n, source, file, e) for n, e in load_managed(self.paths).items()}
        file = project_file(self.cwd)
        if not file.is_file():
            return {}
        found: dict[str, Found] = {}
        for name, raw in entries_of(read_json(file)).items():
            entry, dropped, problem = convert(raw)
            found[name] = Found(name, source, file, entry, problem, dropped)
        return found

    def find(self, name: str) -> Found | None:
        """Where ``name`` is defined, by precedence."""
        for source in SOURCES:
            if (found := self.layer(source).get(name)) is not None:
                return found
        return None

    def everything(self) -> Iterator[tuple[Found, Found | None]]:
        """Every entry of every place, in precedence order, with the entry that shadows it (or ``None``)."""
        first: dict[str, Found] = {}
        for source in SOURCES:
            for name, found in self.layer(source).items():
                yield found, first.get(name)
                first.setdefault(name, found)

    def __getitem__(self, name: str) -> ServerEntry:
        found = self.find(name)
        if found is None:
            raise KeyError(name)
        if found.entry is None:
            raise ConfigError(f"{found.file}: server {name!r}: {found.problem}.", hint=f"Fix it in {found.file}.")
        return found.entry

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(found.name for found, _ in self.everything()))

    def __len__(self) -> int:
        return sum(1 for _ in self)


# --- where other clients keep their servers --------------------------------------------------------------------------


def app_files(
    app: App, *, environ: Mapping[str, str] | None = None, platform: str | None = None, cwd: Path | None = None
) -> list[Path]:
    """The files ``servers import --from APP`` reads, in order (user files, then the current project's).

    - claude: Claude Desktop's ``claude_desktop_config.json`` (in its ``Claude`` app-data dir) and Claude Code's
      ``~/.claude.json`` (its top-level ``mcpServers``; the project's ``./.mcp.json`` is read directly anyway);
    - vscode: ``Code/User/mcp.json`` and ``Code/User/settings.json`` (``mcp.servers``), and ``./.vscode/mcp.json``;
    - cursor: ``~/.cursor/mcp.json`` and ``./.cursor/mcp.json``.

    App data is ``%APPDATA%`` on Windows, ``~/Library/Application Support`` on macOS, ``$XDG_CONFIG_HOME`` or
    ``~/.config`` elsewhere; ``~`` is ``$HOME`` when set.
    """
    env = os.environ if environ is None else environ
    system = SYSTEM if platform is None else platform
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if system.startswith("win"):
        data = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    elif system == "darwin":
        data = home / "Library" / "Application Support"
    else:
        data = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    here = Path.cwd() if cwd is None else cwd
    files: dict[App, list[Path]] = {
        "claude": [data / "Claude" / "claude_desktop_config.json", home / ".claude.json"],
        "vscode": [data / "Code" / "User" / "mcp.json", data / "Code" / "User" / "settings.json"],
        "cursor": [home / ".cursor" / "mcp.json", here / ".cursor" / "mcp.json"],
    }
    files["vscode"].append(here / ".vscode" / "mcp.json")
    return files[app]
