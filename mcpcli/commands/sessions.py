"""``mcpcli sessions list | show | rm | prune``: stored flows as tables, timelines, traces or JSON, and removing them.

Never imports the SDK: ``sessions list`` and ``sessions show`` must start fast (a test checks
``sys.modules``). What a server sent — names, messages, field names, values, results — reaches the
terminal only through ``display``; answers to secret-looking fields are masked unless ``--reveal``;
a round's ``request_state`` is shown only as its size and hash, never itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mcpcli import telemetry
from mcpcli.display import reveal_invisible, safe, sanitize
from mcpcli.errors import SessionError, UsageError
from mcpcli.forms import SECRET_MASK, FieldSpec, SchemaError, is_secret_name, parse_schema
from mcpcli.state.inbox import (
    LEASE_FIELDS,
    describe_request,
    gone_drivers,
    inbox,
    is_interrupted,
    lease_holder,
    pending_requests,
)
from mcpcli.state.store import RoundRecord, SessionRecord, utcnow
from mcpcli.state.store.base import STATUSES, Status

if TYPE_CHECKING:
    from rich.text import Text

    from mcpcli.commands.runtime import Runtime

LIST_FIELDS = ("id", "status", "server", "method", "name", "round", "created", "updated")

PRUNE_STATUSES = ("done", "failed", "expired")
"""What ``sessions prune`` removes unless ``--status`` says otherwise: never a flow someone may still answer."""

UNAVAILABLE = {"$omitted": True}
"""A secret that ``--reveal`` cannot open here (stored without a key, or sealed with another machine's key)."""


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _time(value: datetime | None) -> str:
    return "-" if value is None else f"{_stamp(value)} UTC"


def session_json(record: SessionRecord, gone: Collection[str] = ()) -> dict[str, Any]:
    """A session as ``sessions list --json`` shows it; ``gone``: ``inbox.gone_drivers`` of the listing."""
    data: dict[str, Any] = record.model_dump(mode="json", include=set(LIST_FIELDS) | {"protocol_version", "exit_code"})
    data["interrupted"] = is_interrupted(record, gone)
    data["task"] = _task_summary(record)
    data["owner"] = record.owner
    data["answered_by"] = record.answered_by
    return data


def _task_summary(record: SessionRecord) -> dict[str, Any] | None:
    """The task a session's call became, as listings show it: id, last status seen, its message."""
    task = record.task
    if task is None:
        return None
    return {"id": task.get("id"), "status": task.get("status"), "message": task.get("message")}


# --- list ------------------------------------------------------------------------------------------------------------


def list_sessions(
    rt: Runtime, status: str | None, limit: int, *, server: str | None = None, waiting: bool = False
) -> int:
    """``sessions list`` from the store's records (``commands.listing`` serves the plain case without them)."""
    if waiting:
        if status not in (None, "waiting"):
            raise UsageError(
                f"--waiting lists waiting sessions; it cannot be combined with --status {status}.",
                hint="Drop one of them.",
            )
        status = "waiting"
    records = (
        inbox(rt.store, server=server, limit=limit)
        if waiting
        else rt.store.list(status=status, server=server, limit=limit)
    )
    pending = {r.id: pending_requests(rt.store.last_round(r.id)) for r in records if waiting or r.status == "waiting"}
    gone = gone_drivers(rt.store, records)  # one look at the database's locks for the whole listing
    docs = [session_json(r, gone) for r in records]
    if waiting:
        for doc, record in zip(docs, records, strict=True):
            doc["pending"] = pending[record.id]
            doc["lease"] = lease_holder(record)
    return print_listing(rt, docs, pending, waiting=waiting, limit=limit)


def print_listing(
    rt: Runtime,
    docs: list[dict[str, Any]],
    pending: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    waiting: bool,
    limit: int,
) -> int:
    """The listing as JSON, or one line per session (``terminal.session_lines``)."""
    if rt.json:
        rt.out.json(docs)
        return 0
    from mcpcli.terminal.session_lines import show

    show(docs, pending, waiting=waiting, limit=limit)
    return 0


# --- show ------------------------------------------------------------------------------------------------------------


def state_digest(state: str | None) -> dict[str, Any] | None:
    """What ``show`` tells about a ``request_state``: its size and hash — enough to compare, nothing to replay."""
    if state is None:
        return None
    raw = state.encode("utf-8")
    return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _form_fields(wire: Any) -> list[FieldSpec] | None:
    params = wire.get("params") if isinstance(wire, Mapping) else None
    if not isinstance(params, Mapping) or wire.get("method") != "elicitation/create":
        return None
    try:
        return parse_schema(params.get("requestedSchema") or {})
    except SchemaError:
        return None


def secret_names(wire: Any, names: Iterable[str]) -> set[str]:
    """Which of ``names`` (an answer's content keys) hold secrets: the schema's ``secret`` flag, else the name."""
    specs = {spec.name: spec for spec in _form_fields(wire) or []}
    return {name for name in names if (specs[name].secret if name in specs else is_secret_name(name))}


def _has_marker(answers: Mapping[str, Any]) -> bool:
    from mcpcli.state.vault import is_marker

    return any(
        isinstance(a, Mapping) and isinstance(a.get("content"), Mapping) and any(map(is_marker, a["content"].values()))
        for a in answers.values()
    )


def shown_answers(requests: Mapping[str, Any], answers: Mapping[str, Any], *, reveal: bool) -> dict[str, Any]:
    """``answers`` fit to show: secret values masked, or — revealed — still-sealed ones marked unavailable."""
    from mcpcli.state.vault import is_marker

    shown: dict[str, Any] = {}
    for key, answer in answers.items():
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not isinstance(content, Mapping):
            shown[key] = answer
            continue
        secret = secret_names(requests.get(key), content)
        masked = {}
        for name, value in content.items():
            if is_marker(value):
                masked[name] = UNAVAILABLE if reveal else SECRET_MASK
            elif name in secret and not reveal:
                masked[name] = SECRET_MASK
            else:
                masked[name] = value
        shown[key] = {**answer, "content": masked}
    return shown


def session_document(
    record: SessionRecord,
    rounds: Sequence[RoundRecord],
    *,
    reveal: bool,
    store_key: Callable[[], bytes | None] = lambda: None,
    gone: Collection[str] = (),
) -> dict[str, Any]:
    """The whole session as JSON for ``show``: masked unless ``reveal``; states as size and hash.

    ``store_key`` is called (once) only when ``reveal`` meets a sealed answer; ``gone``: ``inbox.gone_drivers``.
    """
    from mcpcli.state.vault import open_answers

    session: dict[str, Any] = record.model_dump(mode="json", exclude=set(LEASE_FIELDS))
    session["lease"] = lease_holder(record)
    session["interrupted"] = is_interrupted(record, gone)
    session["trace_id"] = telemetry.trace_id(record.trace_context)  # to find the flow in a tracing UI
    if session["lease"] is not None and record.id in gone:  # its lock went with its connection: nobody holds it
        session["lease"]["active"] = False
    key = functools.cache(store_key)
    shown_rounds = []
    for r in rounds:
        answers = r.answers
        if answers is not None and reveal and _has_marker(answers):
            answers, _lost = open_answers(answers, r.session_id, key())
        shown_rounds.append(
            {
                "index": r.index,
                "attempt": r.attempt,
                "received": r.received.isoformat(),
                "answered": r.answered.isoformat() if r.answered else None,
                "answered_by": r.answered_by,
                "answered_at": r.answered_at.isoformat() if r.answered_at else None,
                "requests": r.requests,
                "answers": None if answers is None else shown_answers(r.requests, answers, reveal=reveal),
                "state": state_digest(r.request_state),
            }
        )
    return {"session": session, "rounds": shown_rounds}


def show_session(rt: Runtime, id_or_prefix: str, *, reveal: bool) -> int:
    """``sessions show``: the session as a timeline (a line cut on a terminal past ``TERMINAL_TEXT_MAX``) and, when
    done, its result on stdout — or the session document with ``--json``. Secrets are masked unless ``reveal`` (a
    sealed one shows only where this machine has the store key)."""
    record = rt.store.get(id_or_prefix)
    rounds = rt.store.rounds(record.id)

    def store_key() -> bytes | None:
        from mcpcli.state.vault import load_store_key

        return load_store_key(rt.paths.store_key_file, create=False)

    gone = gone_drivers(rt.store, [record])
    doc = session_document(record, rounds, reveal=reveal, store_key=store_key, gone=gone)
    if rt.json:
        rt.out.json(doc)
        return 0
    console = rt.out.out
    from mcpcli.display import TERMINAL_TEXT_MAX

    for line in _timeline(doc):
        if console.is_terminal and len(line) > TERMINAL_TEXT_MAX:  # a key or message of a megabyte: --json has it
            cut = len(line) - TERMINAL_TEXT_MAX
            line.truncate(TERMINAL_TEXT_MAX)
            line.append(f"… [cut: {cut:,} more characters; all of it: --json]", style="dim")
        console.print(line)
    if record.status == "done" and record.result is not None:
        rt.out.result(record.method, record.result)
    return 0


def show_trace(rt: Runtime, id_or_prefix: str) -> int:
    """``sessions show ID --trace``: the redacted messages the session recorded, one line each (or as JSON)."""
    from rich.text import Text

    from mcpcli.terminal.trace_lines import offset, read_lines, summarize

    record = rt.store.get(id_or_prefix)
    entries = read_lines(rt.store.trace_lines(record.id))
    if rt.json:
        from mcpcli.state.trace import chained

        rt.out.json(chained(entries))  # each entry with its checksum: mcpcli replay and mock read it back
        return 0
    if not entries:
        rt.out.note(f"Session {record.id} has no recorded trace (recorded by mcpcli since schema 3, never imported).")
        return 0
    first = next((e["at"] for e in entries if isinstance(e.get("at"), str)), None)
    try:
        start = datetime.fromisoformat(first) if first else None
    except ValueError:
        start = None
    for entry in entries:
        if "unreadable" in entry:
            line = "? " + sanitize(str(entry["unreadable"]))[:200]
        else:
            line = f"{offset(entry, start)} {summarize(entry)}".lstrip()
        rt.out.out.print(Text(line), markup=False, highlight=False, soft_wrap=True)
    return 0


def _by(r: Mapping[str, Any]) -> Text:
    """Who answered a round apart from driving it (``mcpcli answer``), and when; nothing for the owner's own run."""
    from rich.text import Text

    if not r.get("answered_by"):
        return Text("")
    at = f" at {_time(datetime.fromisoformat(r['answered_at']))}" if r.get("answered_at") else ""
    return Text.assemble((" by ", "dim"), safe(r["answered_by"]), (at, "dim"))


def _field_line(label: str, value: object) -> Text:
    from rich.text import Text

    return Text.assemble(Text(f"  {label:<10} ", style="dim"), safe(value))


def _timeline(doc: Mapping[str, Any]) -> Iterable[Text]:
    """The session document as lines for a person: the session's facts (its lease, task, error; interrupted when its
    driver is gone), then each round — what was asked, what was answered, by whom and when, what is still open — and the
    result's exit code."""
    from rich.text import Text

    s = doc["session"]
    status = "interrupted" if s.get("interrupted") else s["status"]
    yield Text.assemble(("Session ", "bold"), (s["id"], "bold"), " · ", (status, _STATUS_STYLE.get(status, "")))
    if s.get("interrupted"):
        yield Text(
            f"  Its driver is gone (killed, crashed or cut off) while the flow was running; mcpcli resume {s['id']}"
            " continues it and sends the last answered round again.",
            style="yellow",
        )
    yield _field_line("server", s["server"])
    if connection := s.get("connection"):
        yield _field_line("connected", _connection_line(connection))
    yield _field_line("call", f"{s['method']} {s['name']}")
    yield _field_line("arguments", json.dumps(s["arguments"], ensure_ascii=False))
    yield _field_line("protocol", s["protocol_version"] or "-")
    yield _field_line("identity", s.get("identity") or "-")
    if s.get("trace_id"):
        yield _field_line("trace", s["trace_id"])
    if s.get("owner"):
        yield _field_line("owner", s["owner"])
    if asks := (s.get("routing") or {}).get("ask"):
        rules = [
            r for r, on in (("no self-answer", "no_self_answer"), ("owner confirms", "confirm")) if s["routing"].get(on)
        ]
        yield _field_line("asks", ", ".join(asks) + (f" ({', '.join(rules)})" if rules else ""))
    yield _field_line("created", _time(datetime.fromisoformat(s["created"])))
    yield _field_line("updated", _time(datetime.fromisoformat(s["updated"])))
    if lease := s.get("lease"):
        until = _time(datetime.fromisoformat(lease["expires"]))
        since = f"since {_time(datetime.fromisoformat(lease['since']))}, " if lease.get("since") else ""
        state = "held by" if lease["active"] else "last held by"
        yield _field_line("lease", f"{state} {lease['holder']}, {since}until {until}")
    if s.get("error"):
        yield _field_line("error", s["error"])
    if task := s.get("task"):
        yield from _task_timeline(task)
    if not doc["rounds"]:
        yield Text("\nNo rounds recorded.", style="dim")
    for r in doc["rounds"]:
        yield Text("")
        received = _time(datetime.fromisoformat(r["received"]))
        yield Text(f"Round {r['index']} · attempt {r['attempt']} · received {received}", style="bold")
        if not r["requests"]:
            yield Text("  nothing asked (a state-only round)", style="dim")
        for key, wire in r["requests"].items():
            yield from _question(key, wire)
        if r["answers"] is None:
            if r["requests"]:
                yield Text("  not answered yet", style="yellow")
        elif r["answered"] is None:  # answered in part: kept while the round waits for the rest
            left = [key for key in r["requests"] if key not in r["answers"]]
            yield Text.assemble(("  answered in part; still open: ", "yellow"), safe(", ".join(left)), _by(r))
            for key, answer in r["answers"].items():
                yield from _answer(key, answer, r["requests"].get(key))
        else:
            answered = _time(datetime.fromisoformat(r["answered"])) if r["answered"] else "-"
            yield Text.assemble((f"  answered {answered}", "dim"), _by(r))
            for key, answer in r["answers"].items():
                yield from _answer(key, answer, r["requests"].get(key))
        if r["state"]:
            state = r["state"]
            yield Text(f"  state      {state['bytes']} bytes, sha256 {state['sha256'][:12]}", style="dim")
    if s["status"] == "done" and s.get("result") is not None:
        yield Text("")
        yield Text(f"Result · exit {s.get('exit_code') or 0}", style="bold")


_STATUS_STYLE = {
    "waiting": "yellow",
    "running": "cyan",
    "interrupted": "yellow",
    "done": "green",
    "failed": "red",
    "expired": "red",
}


def _task_timeline(task: Mapping[str, Any]) -> Iterable[Text]:
    """The task the call became: its id and generation, then each status change mcpcli saw, oldest first."""
    from rich.text import Text

    polls = f", {task['polls']} polls" if task.get("polls") else ""
    polls += f", {task['pushed']} from the server's stream" if task.get("pushed") else ""
    yield _field_line("task", f"{task.get('id')} ({task.get('generation')}{polls})")
    for entry in task.get("timeline") or []:
        at = str(entry.get("at", ""))[:19].replace("T", " ")
        message = f" — {entry['message']}" if entry.get("message") else ""
        yield Text.assemble(Text(f"  {'':<10} {at} ", style="dim"), safe(f"{entry.get('status')}{message}"))


def _connection_line(connection: Mapping[str, Any]) -> str:
    """How the flow connected, in one line: ``stdio · python server.py · env A, B · protocol auto``."""
    parts = [str(connection.get("kind", "?"))]
    for key in ("url", "command", "cwd"):
        if connection.get(key):
            parts.append(str(connection[key]))
    for key in ("headers", "env"):
        if names := connection.get(key):
            parts.append(f"{key} {', '.join(map(str, names))}")
    parts.append(f"protocol {connection.get('protocol', 'auto')}")
    return " · ".join(parts)


def _question(key: str, wire: Any) -> Iterable[Text]:
    """One stored request as lines: a form's message and fields (secret ones marked), a URL with invisible characters
    revealed, or what else it asks for."""
    from rich.text import Text

    what = describe_request(wire)
    if what["kind"] == "form":
        yield Text.assemble("  ", safe(key), (" asks: ", "dim"), safe(what["message"]))
        specs = _form_fields(wire)
        if specs is not None:
            fields = [f"{spec.name}{' (secret)' if spec.secret else ''}" for spec in specs]
        else:
            fields = what["fields"]
        if fields:
            yield Text.assemble(("    fields: ", "dim"), safe(", ".join(fields)))
    elif what["kind"] == "url":
        url = reveal_invisible(what["url"])  # a zero-width character in a host is a spoofing tool, not text
        yield Text.assemble("  ", safe(key), (" asks: ", "dim"), safe(what["message"]), " — visit ", url)
    else:
        yield Text.assemble("  ", safe(key), (" asks for ", "dim"), safe(what["message"]))


def _answer(key: str, answer: Any, wire: Any) -> Iterable[Text]:
    """One stored answer as lines: an action and its content (masked secrets and secrets sealed on another machine said
    as such), roots, a sampling reply, or the value compact."""
    from rich.text import Text

    from mcpcli.state.vault import is_marker

    if not isinstance(answer, Mapping):
        yield Text.assemble("    ", safe(key), ": ", safe(_compact(answer)))
        return
    if "action" in answer:
        yield Text.assemble("    ", safe(key), ": ", safe(answer["action"]))
        content = answer.get("content")
        if isinstance(content, Mapping):
            secret = secret_names(wire, content)
            for name, value in content.items():
                if is_marker(value):
                    text = "(secret not available on this machine)"
                elif name in secret and value == SECRET_MASK:
                    text = SECRET_MASK
                else:
                    text = _compact(value)
                yield Text.assemble("      ", safe(name), " = ", safe(text))
        return
    if isinstance(answer.get("roots"), list):
        uris = [str(root.get("uri", "")) if isinstance(root, Mapping) else str(root) for root in answer["roots"]]
        yield Text.assemble("    ", safe(key), ": roots ", safe(", ".join(uris) or "(none)"))
        return
    content = answer.get("content")
    if isinstance(content, Mapping) and "model" in answer:  # a sampling reply
        text = content.get("text", _compact(content))
        yield Text.assemble("    ", safe(key), ": ", safe(f"LLM ({answer['model']}): "), safe(text))
        return
    yield Text.assemble("    ", safe(key), ": ", safe(_compact(answer)))


def _compact(value: Any) -> str:
    return sanitize(json.dumps(value, ensure_ascii=False))


# --- rm and prune ----------------------------------------------------------------------------------------------------


def remove_sessions(rt: Runtime, ids: Sequence[str]) -> int:
    """Delete the sessions named by ids or prefixes — all of them, or none when one is unknown."""
    records = [rt.store.get(given) for given in ids]  # raises before anything is deleted
    for record in records:
        if (lease := lease_holder(record)) and lease["active"]:
            raise SessionError(
                f"Session {record.id} is being driven by {lease['holder']} right now; nothing was removed.",
                hint=f"Let it finish or stop that process, then: mcpcli sessions rm {record.id}",
            )
    unique = list(dict.fromkeys(r.id for r in records))
    removed = rt.store.delete(unique)
    if rt.json:
        rt.out.json({"removed": removed, "ids": unique})
    else:
        rt.out.out.print(f"Removed {_sessions(removed)}: {', '.join(unique)}.", markup=False, highlight=False)
    return 0


_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``30m``, ``45s``, ``2w`` — or a combination such as ``1d12h``."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise UsageError(
            f"'{text}' is not a duration.", hint="Use a number and a unit: 30d, 12h, 30m, 45s, 2w (or 1d12h)"
        )
    try:
        return sum((timedelta(**{_UNITS[unit]: int(n)}) for n, unit in parts), timedelta())
    except OverflowError:
        raise UsageError(f"'{text}' is too long a duration.") from None


def prune_sessions(rt: Runtime, older_than: str, statuses: Sequence[str] | None) -> int:
    """``sessions prune``: delete the sessions of ``statuses`` (default ``PRUNE_STATUSES``) not updated within
    ``older_than`` (``30d``, ``1d12h``); a session being driven is never pruned. A bad duration or status is a
    ``UsageError``."""
    age = parse_duration(older_than)
    chosen = list(dict.fromkeys(statuses or PRUNE_STATUSES))
    if unknown := [s for s in chosen if s not in STATUSES]:
        raise UsageError(f"Unknown session status '{unknown[0]}'.", hint=f"Use one of: {', '.join(STATUSES)}")
    try:
        cutoff = utcnow() - age
    except OverflowError:
        raise UsageError(f"'{older_than}' reaches back before year 1.") from None
    removed = rt.store.prune(older_than=cutoff, statuses=typing.cast("list[Status]", chosen))
    if rt.json:
        rt.out.json({"removed": removed, "updated_before": cutoff.isoformat(), "statuses": chosen})
    else:
        which = ", ".join(chosen)
        rt.out.out.print(
            f"Removed {_sessions(removed)} ({which}) not updated for {older_than.strip()}.",
            markup=False,
            highlight=False,
        )
    return 0


def _sessions(n: int) -> str:
    return f"{n} session{'' if n == 1 else 's'}"
