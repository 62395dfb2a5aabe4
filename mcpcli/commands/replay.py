"""``mcpcli replay FILE``: run a recording again against a server and say whether it still answers the same.

The body reads the recording (bounded, checked: exit 2 naming the line, before anything is sent), gathers the
answers the recording hides (``--answer``, else asked at the terminal without echo, else exit 3), picks the
server (``-s``, else the recorded one: a recorded command line runs only with consent, as a bundle's does),
connects and hands the exchanges to ``mcpcli.engine.replay.Replayer``. Exit 0 when every round is equal, 1 with the
first difference, 4 when the server cannot be reached.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mcpcli.display import counted, sanitize
from mcpcli.errors import ExitCode, McpcliError, UsageError
from mcpcli.settings import trust
from mcpcli.state.recording import MIB, Recording, hidden_answers, read_recording

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.targets import Target
    from mcpcli.terminal.inline import Terminal

SHOWN = 400
"""Characters of an expected or received value a diff shows (``--json`` has them whole)."""


class SecretNeeded(McpcliError):
    """A recorded answer is hidden (``[secret]``) and nobody gave it: nothing was sent."""

    exit_code = ExitCode.INPUT_REQUIRED
    default_title = "Answer needed"


@dataclass
class ReplayOptions:
    path: str
    answers: list[str]
    ignore: list[str]
    trust_server: bool = False
    max_mb: float | None = None
    no_input: bool = False


def parse_ignores(values: list[str]) -> list[tuple[str, ...]]:
    from mcpcli.engine.replay import parse_pointer

    parsed = []
    for value in values:
        try:
            parsed.append(parse_pointer(value))
        except ValueError:
            raise UsageError(
                f"--ignore {sanitize(value)!r} is not a JSON pointer.", hint="Write it as /result/content/0/text."
            ) from None
    return parsed


def load(path: str, max_mb: float | None) -> Recording:
    from mcpcli.state.recording import MAX_BYTES

    limit = int(max_mb * MIB) if max_mb else MAX_BYTES
    return read_recording(path, max_bytes=limit)


def hidden_values(
    recording: Recording, given: list[str], terminal: Terminal | None
) -> tuple[dict[tuple[str, str], str], list[str]]:
    """The values for every hidden answer (``--answer KEY.FIELD=VALUE`` or ``FIELD=VALUE``, else asked); and the
    values themselves (secrets the live tap must redact as the recording did)."""
    by_field: dict[str, str] = {}
    by_key: dict[tuple[str, str], str] = {}
    for item in given:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--answer {sanitize(item)!r} is not FIELD=VALUE.", hint="Write --answer FIELD=VALUE.")
        key, dot, field = name.rpartition(".")
        if dot:
            by_key[(key, field)] = text
        else:
            by_field[field] = text
    values: dict[tuple[str, str], str] = {}
    for key, field in hidden_answers(recording):
        value: str | None = by_key.get((key, field), by_field.get(field))
        if value is None and terminal is not None:
            value = terminal.read_secret(f"{sanitize(key)}.{sanitize(field)} (hidden in the recording): ")
        if value is None:
            raise SecretNeeded(
                f"The recording hides the answer {sanitize(key)}.{sanitize(field)} ([secret]); nothing was sent.",
                hint=f"Give it: --answer {shlex.quote(f'{key}.{field}')}=VALUE (or run at a terminal to be asked).",
            )
        values[(key, field)] = value
    return values, list(values.values())


def recorded_target(rt: Runtime, recording: Recording, options: ReplayOptions, terminal: Terminal | None) -> Target:
    """``-s`` when given; else the server the recording names — a command line only with the user's consent."""
    from mcpcli.settings.servers import ServerTable
    from mcpcli.settings.targets import Target, parse_headers, resolve_target

    if rt.g.server:
        return rt.target()
    headers = parse_headers(rt.g.headers)
    described = recording.target
    if described is None and recording.sessions:
        described = _session_target(rt, recording.sessions)
    if described is None:
        raise UsageError(
            f"{sanitize(recording.path)} does not say which server it was recorded against.",
            hint="Give the server with -s TARGET.",
        )
    kind, label = described.get("kind"), str(described.get("label", ""))
    if kind == "demo" or label == "demo":
        return resolve_target("demo", rt.settings)[0]
    if kind == "http" and isinstance(described.get("url"), str):
        url = described["url"]
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"The recorded server URL {sanitize(url)!r} is not http(s).", hint="Give -s TARGET.")
        if described.get("header_names") and not headers:
            names = ", ".join(sanitize(str(n)) for n in described["header_names"])
            header = "header" if len(described["header_names"]) == 1 else "headers"
            rt.out.note(f"The recording was made with the {header} {names}; add them with -H 'Name: value'.")
        return Target(label=url, kind="http", url=url, headers=headers, source="url")
    command = described.get("command")
    if kind == "stdio" and isinstance(command, list) and command:
        found = _users_own(rt, label, command, described.get("cwd"))
        if found is not None:
            return found
        cwd = described.get("cwd") if isinstance(described.get("cwd"), str) else None
        target = Target(label=shlex.join(command), kind="stdio", command=command[0], args=tuple(command[1:]), cwd=cwd)
        if not trust.is_trusted(rt.paths, target):
            _consent(rt, target, options, terminal)
        return target
    if label:  # a session's trace: its stored server, as resume would reach it
        target = resolve_target(label, rt.settings, headers=headers, servers=ServerTable(rt.paths, rt.settings))[0]
        if not trust.is_trusted(rt.paths, target):
            _consent(rt, target, options, terminal)
        return target
    raise UsageError(f"{sanitize(recording.path)} names no server this mcpcli can reach.", hint="Give -s TARGET.")


def _session_target(rt: Runtime, sessions: list[str]) -> dict[str, Any] | None:
    try:
        record = rt.store.get(sessions[0])
    except McpcliError:
        return None
    return {"label": record.server, "kind": "session"}


def _users_own(rt: Runtime, label: str, command: list[str], cwd: Any) -> Target | None:
    """The user's own named server, when the recording names it and it still runs the recorded command."""
    from mcpcli.settings.servers import ServerTable
    from mcpcli.settings.targets import resolve_target

    servers = ServerTable(rt.paths, rt.settings)
    if not label or label not in servers:
        return None
    target = resolve_target(label, rt.settings, servers=servers)[0]
    same = [target.command, *target.args] == command and (cwd is None or target.cwd == cwd)
    return target if same else None


def _consent(rt: Runtime, target: Target, options: ReplayOptions, terminal: Terminal | None) -> None:
    from mcpcli.commands.targets import confirm_stored_command

    confirm_stored_command(
        rt,
        target,
        trust_server=options.trust_server,
        ask=terminal,
        what="recording",
        named="The recording",
        hint="Check it; run it only if you trust it: add --trust-server (or give the server with -s).",
    )


async def replay(rt: Runtime, options: ReplayOptions) -> int:
    """``mcpcli replay``: every hidden answer gathered and the recording checked before anything is sent, then one
    connection that declares what the recorded client declared and answers the back-channel from the recording;
    exit 0 when every round is equal, 1 at the first difference."""
    from mcpcli.commands.connecting import credentials, declared
    from mcpcli.commands.seat import at_terminal
    from mcpcli.engine.replay import Replayer, live_tracer, replayable
    from mcpcli.net.connection import connect

    recording = load(options.path, options.max_mb)
    ignore = parse_ignores(options.ignore)
    terminal = None
    if not options.no_input and at_terminal():
        from mcpcli.terminal.inline import Terminal

        terminal = Terminal(rt.out.err)
    given, secrets = hidden_values(recording, options.answers, terminal)
    exchanges, skipped = replayable(recording)
    if skipped:
        rt.out.note(
            f"Skipping {counted(skipped, 'flow')} recorded from a retry on (a resume): their first call is not in"
            " the file."
        )
    if not exchanges:
        raise UsageError(
            f"{sanitize(recording.path)} holds no exchange to replay.",
            hint="Record the flow from its first call (--record on call, prompt or read).",
        )
    target = recorded_target(rt, recording, options, terminal)
    protocol = rt.protocol() or ("legacy" if recording.legacy else None)
    tracer, capture = live_tracer(secrets, rt.trace_sinks())
    creds = credentials(rt, interactive=terminal is not None)
    replayer: Replayer | None = None

    async def back_channel(request: Any) -> Any:
        assert replayer is not None
        return await replayer.back_channel(request)

    # Every question the recording answered is answered again from it, so the handshake declares what the recorded
    # client declared (a server lists tools and asks by it), or all three when the file does not say.
    offers = frozenset({"elicitation", "roots", "sampling"})
    if recording.client_capabilities is not None:
        offers = frozenset(offers & set(recording.client_capabilities))
    connecting = replace(
        declared(rt, target),
        protocol=protocol,
        handshake_offers=offers,
        credentials=creds,
        tracer=tracer,
        elicitation=back_channel,
        roots=back_channel,
        sampling=back_channel,
    )
    async with connect(connecting) as client:
        replayer = Replayer(client, capture, given=given, ignore=ignore)
        report = await replayer.run(exchanges)
    return render(rt, recording, target.label, report)


def render(rt: Runtime, recording: Recording, server: str, report: Any) -> int:
    code = ExitCode.OK if report.equal else ExitCode.TOOL_ERROR
    if rt.json:
        rt.out.json({**report.document(), "recording": recording.path, "server": server})
        return int(code)
    rounds = sum(x["rounds"] for x in report.exchanges)
    if report.equal:
        rt.out.line(
            f"Equal: {counted(len(report.exchanges), 'exchange')}, {counted(rounds, 'round')} of {recording.path}"
            " replayed against"
            f" {server}."
        )
        return int(code)
    d = report.difference
    where = f"exchange {d.exchange} ({d.label}), round {d.round}, {d.what}"
    lines = [
        f"Different: {where}, at {d.pointer or '/'}:",
        f"  expected: {_shown(d.expected)}",
        f"  got:      {_shown(d.got)}",
    ]
    for line in lines:
        rt.out.line(line)
    return int(code)


def _shown(value: Any) -> str:
    from mcpcli.engine.replay import ABSENT

    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > SHOWN:
        text = text[:SHOWN] + f"… ({len(text) - SHOWN} more characters; all of it: --json)"
    return sanitize(text)
