"""Which server a stored flow or a recording goes back to, and whether its command line may run.

The threat: a session row or a recording can come from another machine (a shared store, a bundle, a file someone
sent). A stdio server's command line in it did not come from the user, so it runs only once the user confirmed that
exact command at the terminal, or said ``--trust-server``; either is remembered (``settings.trust``). ``-s`` given
on the command line, or a server from the user's own config, is the user's own and runs as any command would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from mcpcli.display import sanitize
from mcpcli.engine.steps import is_legacy
from mcpcli.errors import UsageError, UserStopped
from mcpcli.settings import trust

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime
    from mcpcli.net.connection import Protocol
    from mcpcli.settings.targets import Target
    from mcpcli.state.store import SessionRecord
    from mcpcli.terminal.inline import Terminal


def resume_target(
    rt: Runtime, record: SessionRecord, *, trust_server: bool, ask: Terminal | None, say: Callable[[str], None]
) -> tuple[Target, Protocol | None]:
    """The server a resume connects to, and how: ``-s`` when given, else the session's own, reconnected the way
    the flow was; a command line that came from the session (not from the user) runs only once trusted (``ask``:
    the person who may confirm it; None: ``--trust-server`` or nothing runs). ``say``: where notes go."""
    given = rt.g.server
    target, _note = rt.resolve(record.server)
    if given:
        trust.remember(rt.paths, target)
    elif not trust.is_trusted(rt.paths, target):
        confirm_stored_command(
            rt,
            target,
            trust_server=trust_server,
            ask=ask,
            what="session",
            named=f"Session {record.id}",
            hint=f"Check it; run it only if you trust it: mcpcli resume {record.id} --trust-server",
        )
    stored = (record.connection or {}).get("headers") or []
    sent = {name.lower() for name in target.headers}
    if missing := [name for name in stored if isinstance(name, str) and name.lower() not in sent]:
        say(
            f"This flow was connected with the {'header' if len(missing) == 1 else 'headers'}"
            f" {', '.join(sanitize(m) for m in missing)}, which this run"
            " does not send (their values are never stored); add them with -H 'Name: value' if the server needs them."
        )
    return target, resume_protocol(rt, record)


def resume_protocol(rt: Runtime, record: SessionRecord) -> Protocol | None:
    """``--protocol`` when given; else the era the flow ran in (a 2025-11-25 flow reconnects as legacy), else what
    the flow asked for when it started (``None``: as any connection to that target would)."""
    if rt.g.protocol:
        return cast("Protocol", rt.g.protocol)
    if is_legacy(record.protocol_version):
        return "legacy"
    asked = (record.connection or {}).get("protocol")
    return cast("Protocol", asked) if asked in ("legacy", "2026-07-28") else None


def confirm_stored_command(
    rt: Runtime, target: Target, *, trust_server: bool, ask: Terminal | None, what: str, named: str, hint: str
) -> None:
    """A command line that did not come from the user (a stored session's, a recording's: ``what``, ``named`` so in
    the error) runs only after the user confirms the exact command, or with ``--trust-server``; either is
    remembered. Raises ``UsageError`` with nobody to ask, ``UserStopped`` when the person says no."""
    import shlex

    command = shlex.join([target.command or "", *target.args])
    if trust_server:
        trust.remember(rt.paths, target)
        return
    if ask is None:
        raise UsageError(
            f"{named} starts its server with a command line that did not come from you or your config:"
            f" {sanitize(command)}",
            hint=hint,
        )
    from mcpcli.terminal.inline import confirm_command

    if not confirm_command(ask, sanitize(command), cwd=target.cwd, holder=f"This {what}"):
        raise UserStopped(f"The {what}'s server command was not run; nothing was sent.", hint=None)
    trust.remember(rt.paths, target)
