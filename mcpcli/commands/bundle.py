"""``mcpcli sessions export | import``: a session to a bundle file and back (the format: ``mcpcli.state.bundle``).

Asks for the passphrase that encrypts the answers (``MCPCLI_PASSPHRASE``, else hidden at a terminal), writes
the bundle 0600, and says what resuming an imported session would run.
"""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mcpcli.errors import SessionError, StoreError, UsageError
from mcpcli.settings.config import write_private
from mcpcli.state.bundle import (
    MAX_BUNDLE_CHARS,
    PASSPHRASE_ENV,
    answers_to_export,
    build_bundle,
    canonical,
    open_box,
    parse_bundle,
    seal_for_store,
)
from mcpcli.state.inbox import lease_holder

if TYPE_CHECKING:
    from mcpcli.commands.runtime import Runtime


# --- passphrases -----------------------------------------------------------------------------------------------------


def read_passphrase(*, confirm: bool) -> str:
    """``MCPCLI_PASSPHRASE``, else asked (hidden) at a terminal — twice when it is a new one — else exit 2."""
    if value := os.environ.get(PASSPHRASE_ENV):
        return value
    if not sys.stdin.isatty():
        raise UsageError(
            "The answers are encrypted with a passphrase, and there is no terminal to ask for it.",
            hint=f"Set {PASSPHRASE_ENV}, or run it at a terminal.",
        )
    try:
        first = getpass.getpass("Passphrase for the answers: ", stream=sys.stderr)
        if confirm and getpass.getpass("Same passphrase again: ", stream=sys.stderr) != first:
            raise UsageError("The two passphrases differ; nothing was exported.", hint="Try again.")
    except EOFError:
        raise UsageError("No passphrase given.", hint=f"Type one, or set {PASSPHRASE_ENV}.") from None
    if not first:
        raise UsageError("An empty passphrase protects nothing.", hint=f"Type one, or set {PASSPHRASE_ENV}.")
    return first


# --- the commands ----------------------------------------------------------------------------------------------------


def export_session(rt: Runtime, id_or_prefix: str, output: Path | None, *, include_answers: bool) -> int:
    """``mcpcli sessions export``: the bundle to ``output`` (0600) or stdout."""
    from mcpcli.display import json_text

    record = rt.store.get(id_or_prefix)
    rounds = rt.store.rounds(record.id)
    box = None
    if include_answers:
        from mcpcli.state.vault import encrypt_with_passphrase, load_store_key

        passphrase = read_passphrase(confirm=True)
        plain = answers_to_export(rounds, load_store_key(rt.paths.store_key_file, create=False))
        box = encrypt_with_passphrase(canonical(plain), passphrase, record.id.encode())
    bundle = build_bundle(record, rounds, answers_box=box)
    what = "answers included, encrypted" if include_answers else "answers left out"
    if output is None:
        rt.out.json(bundle)
        rt.out.note(f"Exported session {record.id} ({_rounds(len(rounds))}, {what}).")
    else:
        _write_private(output, json_text(bundle) + "\n")
        rt.out.note(f"Exported session {record.id} ({_rounds(len(rounds))}, {what}) to {output}.")
    if (lease := lease_holder(record)) and lease["active"]:
        rt.out.note(f"It is being driven by {lease['holder']} right now: the bundle is where it stood at this moment.")
    return 0


def _rounds(n: int) -> str:
    return f"{n} round{'' if n == 1 else 's'}"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a 0600 file, atomically: a reader never sees half a bundle."""
    path = path.expanduser()
    try:
        write_private(path, text, private_parent=False)  # the user chose the directory: its mode stays theirs
    except OSError as exc:
        raise UsageError(f"Cannot write {path}: {exc.strerror or exc}.") from None


def _read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read(MAX_BUNDLE_CHARS + 1)
    try:
        with Path(source).expanduser().open(encoding="utf-8") as f:
            return f.read(MAX_BUNDLE_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise UsageError(f"Cannot read the bundle {source}: {detail}.") from None


def import_session(rt: Runtime, source: str, *, as_new: bool = False) -> int:
    """``mcpcli sessions import``: verify, decrypt, re-seal with this machine's key, store; the store is
    changed only at the very end, by one ``import_session`` call. ``as_new``: under a new id (a copy of a session
    this store has already)."""
    bundle = parse_bundle(_read_source(source))
    session = bundle.session
    rounds = bundle.rounds
    if as_new:
        from mcpcli.state.store.base import new_session_id

        session = session.model_copy(update={"id": new_session_id()})
        rounds = [r.model_copy(update={"session_id": session.id}) for r in rounds]
    else:
        _refuse_existing(rt, session.id, source)
    if bundle.answers_box is not None:
        from mcpcli.state.vault import load_store_key

        answers = open_box(bundle.answers_box, read_passphrase(confirm=False), bundle)
        rounds = seal_for_store(session.id, rounds, answers, load_store_key(rt.paths.store_key_file))
    try:
        rt.store.import_session(session, rounds)
    except StoreError:
        _refuse_existing(rt, session.id, source)  # another import won the race
        raise
    if rt.json:
        rt.out.json({"session_id": session.id, "status": session.status, "rounds": len(rounds)})
    copy = f", a copy of {bundle.session.id}" if as_new else ""
    rt.out.note(f"Imported session {session.id} ({session.status}, {_rounds(len(rounds))}{copy}).")
    if _runs_a_command(rt, session.server):
        from rich.text import Text

        from mcpcli.display import safe

        # A bundle is data from elsewhere; its server target is a command line that resume would run here.
        rt.out.err.print(
            Text.assemble(
                ("Careful: ", "bold yellow"),
                "resuming it runs this command on this machine: ",
                safe(session.server),
            )
        )
        rt.out.note(
            f"mcpcli resume {session.id} asks before running it (--trust-server runs it without asking);"
            " or resume against another server: -s TARGET"
        )
    else:
        rt.out.note(f"Resume it with: mcpcli resume {session.id}")
    return 0


def _runs_a_command(rt: Runtime, server: str) -> bool:
    """Whether ``server`` is a stdio command line (not a URL, the demo, or a server named in this machine's config)."""
    return not (server.startswith(("http://", "https://")) or server == "demo" or server in rt.settings.mcp_servers)


class AlreadyImported(UsageError):
    """The bundle's session id is in this store already: not a busy or missing session (exit 6), a bundle to import
    as a copy or after removing the stored one (exit 2, nothing changed)."""

    default_title = "Already in this store"


def _refuse_existing(rt: Runtime, session_id: str, source: str) -> None:
    import shlex

    try:
        stored = rt.store.get(session_id)
    except SessionError:
        return
    raise AlreadyImported(
        f"Session {session_id} is already in this store ({stored.status}); nothing was imported.",
        hint=f"Import a copy under a new id: mcpcli sessions import {shlex.quote(source)} --as-new"
        f" — or replace it: mcpcli sessions rm {session_id}, then import again",
    )
