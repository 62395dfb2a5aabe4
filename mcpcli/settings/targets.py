"""Server targets: the rule that turns what the user typed after ``-s`` (a URL, a configured name, ``demo`` or a
command line) into a ``Target``, with the config's ``${env:NAME}`` references expanded at connect time; and how a
flow connected, as its session keeps it. Pure: no network, no ``mcp`` import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from mcpcli.errors import ConfigError, UsageError
from mcpcli.platform import split_command
from mcpcli.settings.config import OAuthEntry, ProtocolChoice, ServerEntry, Settings

TargetKind = Literal["http", "stdio", "demo"]


@dataclass(frozen=True)
class Target:
    """A resolved server target: what to connect to and how."""

    label: str
    """What the user gave (URL, config name, ``demo`` or the command line); stored with sessions."""
    kind: TargetKind
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    bearer_token_env: str | None = None
    """HTTP: the environment variable holding a static bearer token (from the config entry)."""
    oauth: OAuthEntry | None = None
    """HTTP: the config entry's OAuth client (pre-registered, or its own metadata document URL), if any."""
    client_metadata_url: str | None = None
    """HTTP: the Client ID Metadata Document URL to sign in with where the authorization server accepts one
    (the entry's, else the config's top-level one)."""
    keep_alive: bool = False
    """stdio: the server's process outlives the command, kept by the background worker (``keep_alive`` in the
    config, ``--keep-alive`` on the command line)."""
    source: Literal["url", "name", "demo", "command"] = "command"
    """Where the target came from: a URL, a named server of the user's config files, the demo, or a command line
    taken as given (a command line that came from a stored session runs only once trusted:
    ``mcpcli.settings.trust``)."""
    protocol: ProtocolChoice | None = None
    """The config entry's ``protocol`` (``--protocol`` wins over it); None: not set."""


def parse_headers(values: list[str]) -> dict[str, str]:
    """``-H "Name: value"`` flags → a header dict; a malformed one is a usage error."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
            raise UsageError(f"Bad header {value!r}.", hint='Write headers as -H "Name: value".')
        set_header(headers, name.strip(), rest.strip())
    return headers


def set_header(headers: dict[str, str], name: str, value: str) -> None:
    """Set ``name``, replacing any header of the same name in another case (HTTP names are case-insensitive)."""
    for old in [k for k in headers if k.lower() == name.lower()]:
        del headers[old]
    headers[name] = value


_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_REFERENCE = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)


def expand_references(text: str, server: str, environ: Mapping[str, str]) -> str:
    """Expand ``${env:NAME}``, ``${NAME}`` and ``${NAME:-default}`` in one value of server ``server``'s entry.

    Done when a target is built, never when an entry is stored: files keep the reference, so a secret kept in
    the environment stays out of them. Anything else between ``${`` and ``}`` (a VS Code ``${input:ID}``
    prompt) is an error, never a literal sent to the server.
    """

    def one(match: re.Match[str]) -> str:
        """One reference's value: the variable's, or the default when it is unset or empty. A prompt (``${input:…}``) or
        an unset variable without a default is a ``ConfigError`` that says how to give it."""
        prompt = match.group(1).startswith("input:")
        ref = None if prompt else _ENV_REFERENCE.fullmatch(match.group(1))
        if ref is None:
            raise ConfigError(
                f"Server {server!r} needs a value for {match.group(0)}"
                f"{' (a VS Code input prompt)' if prompt else ''}, which mcpcli cannot fill in.",
                hint=f"Set it: mcpcli servers add {server} ... --env NAME=VALUE --force, or write ${{env:NAME}}.",
            )
        name, default = ref.group(1), ref.group(2)
        value = environ.get(name)
        if default is not None and not value:  # as in the shell: unset or empty takes the default
            return default
        if value is None:
            raise ConfigError(
                f"Server {server!r} uses {match.group(0)}, but the environment variable {name} is not set.",
                hint=f"export {name}=VALUE, then run the command again.",
            )
        return value

    return _REFERENCE.sub(one, text)


def expand_entry(name: str, entry: ServerEntry, environ: Mapping[str, str]) -> ServerEntry:
    """A copy of ``entry`` with the references in its command, args, env, cwd, url and headers expanded."""

    def x(text: str | None) -> str | None:
        return None if text is None else expand_references(text, name, environ)

    return entry.model_copy(
        update={
            "command": x(entry.command),
            "args": [expand_references(a, name, environ) for a in entry.args],
            "env": {k: expand_references(v, name, environ) for k, v in entry.env.items()},
            "cwd": x(entry.cwd),
            "url": x(entry.url),
            "headers": {k: expand_references(v, name, environ) for k, v in entry.headers.items()},
        }
    )


def resolve_target(
    given: str | None,
    settings: Settings,
    *,
    headers: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    servers: Mapping[str, ServerEntry] | None = None,
) -> tuple[Target, str | None]:
    """Pick the server: ``-s`` > ``MCPCLI_SERVER`` > config ``default_server`` > the demo.

    A name is looked up in ``servers`` — the merged table of ``mcpcli.settings.servers.ServerTable`` (config.toml,
    servers.json, ./.mcp.json), read only when a name is looked up — or, without it, in the config's own
    ``mcpServers``. Its ``${env:NAME}`` references are expanded from ``environ`` here, at connect time.

    Returns the target and, when falling back to the demo, a note for stderr.
    """
    env = os.environ if environ is None else environ
    note = None
    choice = given or env.get("MCPCLI_SERVER") or settings.default_server
    if not choice:
        choice = "demo"
        note = "No server given (-s, MCPCLI_SERVER or default_server); using the built-in demo server."
    extra = dict(headers or {})
    cimd = settings.client_metadata_url
    if choice.startswith(("http://", "https://")):
        return Target(
            label=choice, kind="http", url=choice, headers=extra, client_metadata_url=cimd, source="url"
        ), note
    table = settings.mcp_servers if servers is None else servers
    if (stored := table.get(choice)) is not None:
        entry = expand_entry(choice, stored, env)
        if entry.url is not None:
            merged = dict(entry.headers)
            for name, value in extra.items():  # -H overrides the config's header of the same name, in any case
                set_header(merged, name, value)
            return Target(
                label=choice,
                kind="http",
                url=entry.url,
                headers=merged,
                bearer_token_env=entry.bearer_token_env,
                oauth=entry.oauth,
                source="name",
                client_metadata_url=(entry.oauth.client_metadata_url if entry.oauth else None) or cimd,
                protocol=entry.protocol,
            ), note
        assert entry.command is not None
        return Target(
            label=choice,
            kind="stdio",
            command=entry.command,
            args=tuple(entry.args),
            env=dict(entry.env),
            cwd=entry.cwd,
            keep_alive=entry.keep_alive,
            source="name",
            protocol=entry.protocol,
        ), note
    if choice == "demo":
        return Target(label="demo", kind="demo", source="demo"), note
    try:
        argv = split_command(choice)
    except ValueError as exc:
        raise UsageError(f"Cannot parse the server command {choice!r}: {exc}.") from None
    if not argv:
        raise UsageError("The server target is empty.", hint="Pass -s URL, -s NAME, -s demo or -s 'command args'.")
    if len(argv) == 1 and "/" not in argv[0]:
        _check_command(argv[0], table)
    return Target(label=choice, kind="stdio", command=argv[0], args=tuple(argv[1:])), note


def connection_settings(target: Target, protocol: str) -> dict[str, Any]:
    """How a flow connected, as its session keeps it so that ``resume`` reconnects the same way.

    Nothing secret: the names of headers and environment variables, never their values; a URL without its
    user part and query. Shown by ``sessions show``; travels in bundles.
    """
    settings: dict[str, Any] = {"protocol": protocol, "kind": target.kind, "source": target.source}
    if target.kind == "http" and target.url is not None:
        parts = urlsplit(target.url)
        host = parts.netloc.rpartition("@")[2]  # no user or password
        settings["url"] = urlunsplit((parts.scheme, host, parts.path, "", ""))  # no query: it may carry a key
        settings["headers"] = sorted(target.headers)
    elif target.kind == "stdio":
        settings["command"] = target.command
        settings["env"] = sorted(target.env)
        if target.cwd:
            settings["cwd"] = target.cwd
    return settings


def _check_command(word: str, table: Mapping[str, Any]) -> None:
    """One word that names no server and no command: a misspelt name, not a command line to run (exit 2).

    Without this, ``-s ev2`` (when ``ev`` is configured) reached the operating system and came back as
    "No such file or directory".
    """
    import difflib
    import shutil

    if shutil.which(word) is not None:
        return
    names = sorted({*table, "demo"})
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.5)
    listed = ", ".join(names[:10]) + (", …" if len(names) > 10 else "")
    hint = f"Did you mean {' or '.join(close)}?" if close else f"Named servers: {listed}."
    raise UsageError(
        f"There is no server named {word!r} (nor a command of that name).",
        hint=f"{hint} See them with: mcpcli servers list; -s also takes a URL or a command line.",
    )
