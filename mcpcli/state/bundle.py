"""Session bundles: one flow as a versioned, checksummed JSON file, to finish it on another machine.

The format only — building, checking, opening and re-sealing a bundle; ``commands.bundle`` is the
``sessions export | import`` that reads and writes the files.

A bundle is::

    {"format": "mcpcli-session-bundle", "version": 2, "exported": ISO-8601,
     "session": {…the SessionRecord, without its lease…},
     "rounds": [{…a RoundRecord, "answers": null…}, …],
     "answers": null | {…a passphrase box (vault.encrypt_with_passphrase) of {"<round index>": answers}…},
     "checksum": "sha256:<hex of the canonical JSON of everything else>"}

Answers never leave the machine in the clear: without ``--include-answers`` there are none at all (not
even non-secret ones, and no ``answered`` times); with it they travel only inside the box, sealed
secrets opened first so the other machine can send them, and are sealed again with the importing
machine's store key. The checksum catches a damaged or edited bundle; the box's AES-GCM tag (bound to the
session id) catches a changed box or a wrong passphrase. Whatever a bundle holds, importing it ends in
one line and an exit code, never a traceback.

Versions: 2 added the session's ``identity`` (who the flow ran as); 3 its ``connection`` (how it was
connected: protocol era, target kind, header and environment names). Older bundles still import (their
sessions simply have none).

The checksum protects against damage (a truncated or garbled file), not against tampering: anyone who
edits a bundle can recompute it. So nothing in a bundle is trusted to run: a session whose server is a
command line runs it only after the user confirms the exact command at a terminal, or with
``resume --trust-server`` (``mcpcli.settings.trust``). A session's trace never travels: it describes this machine's
runs, and the other machine records its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mcpcli.errors import UsageError
from mcpcli.state.inbox import LEASE_FIELDS
from mcpcli.state.store import RoundRecord, SessionRecord, utcnow
from mcpcli.state.store.base import task_problem

FORMAT = "mcpcli-session-bundle"
VERSION = 3
"""The version written; ``READABLE`` are the versions imported."""
READABLE = frozenset({1, 2, 3})
PASSPHRASE_ENV = "MCPCLI_PASSPHRASE"

MAX_BUNDLE_CHARS = 64 * 2**20
"""A bundle is a few kilobytes; refuse to parse anything absurd."""

MAX_SCRYPT_MEMORY = 256 * 2**20
"""scrypt needs 128·n·r bytes; a hostile box must not make the importer allocate more than this."""
MAX_SCRYPT_P = 4


class BundleError(UsageError):
    """A bundle that cannot be imported: not a bundle, a newer version, changed, damaged, or undecryptable."""

    default_title = "Bundle error"


DAMAGED = "The bundle was changed or damaged"


def _damaged(detail: str) -> BundleError:
    return BundleError(
        f"{DAMAGED} ({detail}); nothing was imported.",
        hint="Export it again on the other machine: mcpcli sessions export ID -o FILE",
    )


# --- pure functions --------------------------------------------------------------------------------------------------


def canonical(doc: Mapping[str, Any]) -> bytes:
    """The bytes the checksum covers: sorted keys, no spaces, UTF-8."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def checksum(doc: Mapping[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return "sha256:" + hashlib.sha256(canonical(body)).hexdigest()


def build_bundle(
    session: SessionRecord, rounds: Sequence[RoundRecord], *, answers_box: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The bundle document; rounds carry no answers (they travel in ``answers_box``, or not at all)."""
    included = answers_box is not None
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "exported": utcnow().isoformat(),
        "session": session.model_dump(mode="json", exclude=set(LEASE_FIELDS)),
        "rounds": [_round_json(r, with_answer_times=included) for r in rounds],
        "answers": answers_box,
    }
    doc["checksum"] = checksum(doc)
    return doc


def _round_json(record: RoundRecord, *, with_answer_times: bool) -> dict[str, Any]:
    data: dict[str, Any] = record.model_dump(mode="json")
    data["answers"] = None
    if not with_answer_times:
        data["answered"] = None  # a round answered elsewhere is, here, a round still to answer
    return data


def answers_to_export(rounds: Sequence[RoundRecord], store_key: bytes | None) -> dict[str, Any]:
    """``{"<round index>": answers}`` as sent: sealed secrets opened; ones that cannot be opened here are marked
    omitted (the other machine asks for them again)."""
    from mcpcli.state.vault import OMITTED, is_marker, open_answers

    def unmarked(answer: Any) -> Any:
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not isinstance(content, Mapping):
            return answer
        return {**answer, "content": {k: {OMITTED: True} if is_marker(v) else v for k, v in content.items()}}

    plain: dict[str, Any] = {}
    for r in rounds:
        if r.answers is not None:
            opened, _lost = open_answers(r.answers, r.session_id, store_key)
            plain[str(r.index)] = {key: unmarked(answer) for key, answer in opened.items()}
    return plain


def seal_for_store(
    session_id: str, rounds: Sequence[RoundRecord], answers: Mapping[str, Any], store_key: bytes | None
) -> list[RoundRecord]:
    """The rounds with their imported answers, secret fields sealed with this machine's key (as the flow does)."""
    from mcpcli.state.vault import seal_answers, secret_fields

    sealed_rounds = []
    for r in rounds:
        given = answers.get(str(r.index))
        if given is None:
            sealed_rounds.append(r)
            continue
        # A value omitted at export stays omitted: seal_answers leaves markers alone.
        sealed = seal_answers(given, secret_fields(r.requests), session_id, store_key)
        sealed_rounds.append(r.model_copy(update={"answers": sealed}))
    return sealed_rounds


@dataclass
class Bundle:
    """A verified bundle: the session, its rounds (without answers) and the still-encrypted answers box."""

    session: SessionRecord
    rounds: list[RoundRecord]
    answers_box: dict[str, Any] | None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_bundle(text: str) -> Bundle:
    """Check format, version and checksum, then the records' shapes; ``BundleError`` for anything amiss."""
    if len(text) > MAX_BUNDLE_CHARS:
        raise BundleError(f"This file is too large to be a session bundle ({len(text)} characters).")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise BundleError(
            "This is not a session bundle: it is not valid JSON.",
            hint="Make one with: mcpcli sessions export ID -o FILE",
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BundleError(
            "This is not an mcpcli session bundle.", hint="Make one with: mcpcli sessions export ID -o FILE"
        )
    version = doc.get("version")
    number = version if isinstance(version, int) and not isinstance(version, bool) else None
    if number is None or number not in READABLE:
        if number is not None and number > VERSION:
            raise BundleError(
                f"This bundle was written by a newer mcpcli (bundle version {version}).",
                hint="Upgrade mcpcli: pipx upgrade mcpcli",
            )
        raise _damaged("unknown version")
    try:
        expected = checksum(doc)
    except RecursionError:
        raise _damaged("nested too deeply") from None
    if doc.get("checksum") != expected:
        raise _damaged("checksum mismatch")
    session_doc, rounds_doc, box = doc.get("session"), doc.get("rounds"), doc.get("answers")
    if not isinstance(session_doc, dict) or not isinstance(rounds_doc, list):
        raise _damaged("no session or rounds")
    if box is not None:
        _check_box(box)
    try:
        # A lease is this machine's business: an imported session is held by nobody.
        session = SessionRecord.model_validate({k: v for k, v in session_doc.items() if k not in LEASE_FIELDS})
        rounds = [RoundRecord.model_validate(r) for r in rounds_doc]
    except (ValidationError, TypeError, ValueError) as exc:
        raise _damaged(f"invalid record: {_first_error(exc)}") from None
    if session.task is not None and (problem := task_problem(session.task)) is not None:
        raise _damaged(f"invalid task: {problem}")
    indexes = [r.index for r in rounds]
    if any(r.session_id != session.id for r in rounds) or len(set(indexes)) != len(indexes):
        raise _damaged("rounds that do not belong to the session")
    if any(r.answers is not None for r in rounds):
        raise _damaged("answers outside the encrypted box")
    return Bundle(session, sorted(rounds, key=lambda r: r.index), box)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err.get("loc", ()))
        return f"{where}: {err.get('msg', '')}" if where else str(err.get("msg", ""))
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _check_box(box: Any) -> None:
    """A passphrase box whose parameters are sane — before scrypt is asked to allocate anything."""
    if not isinstance(box, dict) or box.get("kdf") != "scrypt" or box.get("cipher") != "aes-256-gcm":
        raise _damaged("unknown answer encryption")
    params = [box.get(name) for name in ("n", "r", "p")]
    n, r, p = [v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for v in params]
    if not (n and r and p):
        raise _damaged("bad key-derivation parameters")
    if n < 2 or n & (n - 1) or 128 * n * r > MAX_SCRYPT_MEMORY or p > MAX_SCRYPT_P:
        raise _damaged("key-derivation cost out of range")
    if not all(isinstance(box.get(name), str) for name in ("salt", "nonce", "ciphertext")):
        raise _damaged("bad answer encryption")


def open_box(box: Mapping[str, Any], passphrase: str, bundle: Bundle) -> dict[str, Any]:
    """The answers inside ``box``: ``{"<round index>": answers}``, checked against the bundle's rounds."""
    from mcpcli.state.vault import decrypt_with_passphrase

    plain = decrypt_with_passphrase(box, passphrase, bundle.session.id.encode())
    try:
        answers = json.loads(plain, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise _damaged("unreadable answers") from None
    indexes = {str(r.index) for r in bundle.rounds}
    if not isinstance(answers, dict) or not all(
        key in indexes and isinstance(value, dict) and all(isinstance(a, dict) for a in value.values())
        for key, value in answers.items()
    ):
        raise _damaged("answers that do not fit the rounds")
    return answers
