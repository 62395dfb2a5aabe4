"""Traces: every JSON-RPC message of a run, redacted, one JSON object per line — and the server's own logs.

One tap, four readers:

- ``--record FILE``: the same lines plus ``fact`` lines, each line with its chained checksum
  (``mcpcli.state.recording`` reads it back for ``mcpcli replay`` and ``mcpcli mock``);
- ``--trace FILE``: the whole run as NDJSON in a 0600 file (``{"t", "at", "dir", "kind", "id", "method",
  "message"}`` per message, ``{"t", "at", "event", ...}`` for the flow's rounds, restarts and result);
- ``-v``: one sanitized summary line per message on stderr (worded by ``terminal.trace_lines``);
- the flow's session: the same lines (each message cut at 64 KiB) handed to the ``Keeper``, which stores them
  with its next write; ``mcpcli sessions show ID --trace`` prints them.

The tap (``mcpcli.net.tap.traced``) wraps the transport given to the SDK ``Client``: both memory streams are forwarded
and recorded, so what is traced is exactly what the JSON-RPC dispatcher sends and receives, whatever the
transport. A connection without a ``Tracer`` has no wrapper at all.

Nothing secret reaches a line (``redact``): ``request_state`` becomes its length and hash; answers to secret
form fields (``vault.secret_fields`` decides, from the questions seen in this flow) become ``"[secret]"`` and
are then treated as registered secrets; any string holding a registered secret (tokens, API keys, those
answers) becomes ``"[redacted]"``; so does the value of a header-like key (``authorization``…).

No SDK import here. ``terminal.trace_lines`` turns lines into readable text; ``terminal.server_logs`` prints
the server's own log messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from mcpcli.errors import UsageError
from mcpcli.platform import private_file_mode

if TYPE_CHECKING:
    from rich.console import Console

Direction = Literal["send", "recv"]

log = logging.getLogger(__name__)

STORED_MESSAGE_MAX = 64 * 1024
"""A message longer than this (as JSON) is kept in a session's trace as a marker with its size and head."""
STORED_HEAD = 2048
"""How much of a cut message the marker keeps (already redacted)."""
BUFFER_MAX_LINES = 2001
"""Lines held for the store between two writes: one more than a session keeps, so the store adds its marker."""
BUFFER_MAX_BYTES = 16 * 2**20
"""Bytes held for the store between two writes; past that, lines are counted and dropped."""
MIN_SECRET = 4
"""Registered secrets shorter than this are ignored: redacting every "abc" would hide the trace, not a secret."""

RECORDING_VERSION = 2
"""The ``recording`` header line's version (``mcpcli.state.recording`` reads it). 2: every line carries its chained
checksum (``sum``); 1 had one on message lines only."""

SECRET = "[secret]"
REDACTED = "[redacted]"
STATE_KEYS = frozenset({"request_state", "requestState"})
SENSITIVE_KEYS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "api_key", "apikey"}
)
"""Keys whose values are credentials wherever they appear (``_meta``, headers echoed by a server)."""


# --- redaction ---------------------------------------------------------------------------------------------------


def line_sum(previous: str, line: str) -> str:
    """A recording line's checksum, chained: the hash of the previous line's checksum (``""`` for the first line)
    and this line as written without its own. ``mcpcli.state.recording`` refuses a line without it or whose
    checksum does not follow: a line edited, added, moved or removed by hand shows where it happened."""
    return hashlib.sha256((previous + line).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sealed(line: str, previous: str) -> tuple[str, str]:
    """``line`` (a JSON object with at least one member) with its chained checksum ``sum`` as its last member."""
    digest = line_sum(previous, line)
    return line[:-1] + ',"sum":"' + digest + '"}', digest


def canonical(entry: Mapping[str, Any]) -> str:
    """An exported trace entry as its checksum covers it (``sessions show ID --trace --json``: an array, reindented
    by anyone, so the checksum covers the entry's compact JSON, members in their order)."""
    return _json(entry)


def chained(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's trace entries, each with its chained checksum ``sum`` (what ``mcpcli replay`` reads back)."""
    out, previous = [], ""
    for entry in entries:
        previous = line_sum(previous, canonical(entry))
        out.append({**entry, "sum": previous})
    return out


def state_digest(state: str) -> dict[str, Any]:
    """What a trace keeps of a ``request_state``: its length and hash — enough to compare, nothing to replay."""
    raw = state.encode("utf-8", "surrogatepass")
    return {"redacted": "request_state", "length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()[:16]}


def redact(
    message: Any,
    *,
    secrets: Collection[str] = (),
    answer_secrets: Mapping[str, Collection[str]] | None = None,
    reply_secrets: Collection[str] = (),
) -> Any:
    """A JSON-RPC message fit for a trace: ``message`` itself when nothing in it needs hiding (most messages: a
    round's commit then writes them without copying each first), else a copy with only the changed parts new —
    ``message`` is never changed.

    ``answer_secrets``: request key → its secret field names, for the ``inputResponses`` of an outgoing retry
    (a key not in it is judged by the field's name). ``reply_secrets``: the secret field names of the
    back-channel elicitation this message answers. ``secrets``: strings that must not appear anywhere.
    """
    needles = tuple(s for s in secrets if len(s) >= MIN_SECRET)
    shown = _walk(message, needles)
    if not isinstance(shown, dict):
        return shown
    params = shown.get("params")
    responses = params.get("inputResponses") if isinstance(params, dict) else None
    if isinstance(params, dict) and isinstance(responses, dict):
        masked = {
            key: _masked(response, None if answer_secrets is None else answer_secrets.get(key))
            for key, response in responses.items()
        }
        if any(masked[key] is not responses[key] for key in responses):
            shown = {**shown, "params": {**params, "inputResponses": masked}}
    result = shown.get("result")
    if reply_secrets and isinstance(result, dict) and (masked_result := _masked(result, reply_secrets)) is not result:
        shown = {**shown, "result": masked_result}
    return shown


def secret_answers(
    message: Mapping[str, Any], answer_secrets: Mapping[str, Collection[str]], reply_secrets: Collection[str] = ()
) -> list[str]:
    """The secret string values an outgoing message carries (to be redacted wherever they show up later)."""
    found: list[str] = []
    params = message.get("params")
    responses = params.get("inputResponses") if isinstance(params, Mapping) else None
    if isinstance(responses, Mapping):
        for key, response in responses.items():
            found += _secret_values(response, answer_secrets.get(key))
    if reply_secrets and isinstance(message.get("result"), Mapping):
        found += _secret_values(message["result"], reply_secrets)
    return found


def _walk(value: Any, needles: tuple[str, ...]) -> Any:
    """``value`` with states digested and credentials and ``needles`` redacted: the same object where nothing
    changed (copy on write: a tool listing of a megabyte is read, not copied)."""
    if isinstance(value, str):
        return REDACTED if needles and any(n in value for n in needles) else value
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for index, (key, item) in enumerate(value.items()):
            name = REDACTED if needles and any(n in key for n in needles) else key
            if key in STATE_KEYS and isinstance(item, str):
                new: Any = state_digest(item)
            elif key.lower() in SENSITIVE_KEYS and item is not None:
                new = REDACTED
            else:
                new = _walk(item, needles)
            if out is None and (new is not item or name is not key):
                out = dict(itertools.islice(value.items(), index))  # the keys before this one, unchanged
            if out is not None:
                out[name] = new
        return value if out is None else out
    if isinstance(value, list):
        items = [_walk(item, needles) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value


def _is_secret(name: str, known: Collection[str] | None) -> bool:
    if known is not None:
        return name in known
    from mcpcli.forms import is_secret_name  # a question this flow never saw: judge by the name

    return is_secret_name(name)


def _masked(answer: Any, known: Collection[str] | None) -> Any:
    """``answer`` with its secret fields' values as ``[secret]`` (a new object; ``answer`` itself when none)."""
    content = answer.get("content") if isinstance(answer, dict) else None
    if not isinstance(content, dict) or not any(_is_secret(name, known) for name in content):
        return answer
    return {**answer, "content": {name: SECRET if _is_secret(name, known) else v for name, v in content.items()}}


def _secret_values(answer: Any, known: Collection[str] | None) -> list[str]:
    content = answer.get("content") if isinstance(answer, Mapping) else None
    if not isinstance(content, Mapping):
        return []
    return [v for k, v in content.items() if isinstance(v, str) and _is_secret(k, known)]


# --- lines -------------------------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    # ASCII only: no raw C1 or bidi control can reach a terminal that prints the file, and a lone surrogate
    # (valid in JSON) cannot break the UTF-8 of the file or the store.
    return _ENCODER.encode(value)


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)
"""``json.dumps`` with these settings, made once: it would build an encoder for each of a round's lines."""


def _classify(message: Mapping[str, Any]) -> tuple[str, Any, str | None]:
    """kind, id, method of a JSON-RPC message."""
    method = message.get("method")
    if isinstance(method, str):
        return ("request" if "id" in message else "notification"), message.get("id"), method
    if "error" in message:
        return "error", message.get("id"), None
    return "response", message.get("id"), None


@dataclass
class TraceSinks:
    """Where a run's lines go, shared by every connection of the run (the app opens several)."""

    file: IO[str] | None = None
    """``--trace FILE``, opened 0600; ``--trace -``: stdout (written to, never closed)."""
    path: str | None = None
    """Its name, as given."""
    console: Console | None = None
    """stderr, for ``-v`` summaries."""
    summarize: Callable[[Mapping[str, Any]], str] | None = None
    """Words an entry as one readable line for ``console`` (the front end's ``terminal.trace_lines.summarize``:
    the core only records)."""
    secrets: set[str] = field(default_factory=set)
    """Registered secret values (tokens, keys, secret answers): never written in any line."""
    start: float = field(default_factory=time.monotonic)
    """``t`` in every line counts from here."""
    recording: IO[str] | None = None
    """``--record FILE``, opened 0600: the same lines, whole, plus the facts a replay needs (``fact``)."""
    recording_path: str | None = None
    _sum: str = ""
    """The checksum of the last line written to the recording: the next line's is chained to it."""

    @classmethod
    def open(
        cls,
        path: str | None,
        console: Console | None,
        summarize: Callable[[Mapping[str, Any]], str] | None = None,
        *,
        record: str | None = None,
    ) -> TraceSinks:
        """The sinks of one command: the ``--trace`` file (``-``: stdout), the console's summaries, and the ``--record``
        file, both opened private (0600). A recording starts with its version line."""
        file = (sys.stdout if path == "-" else open_trace_file(Path(path))) if path else None
        recording = open_trace_file(Path(record), option="--record") if record else None
        sinks = cls(file=file, path=path, console=console, summarize=summarize, recording=recording)
        sinks.recording_path = record
        if recording is not None:
            from mcpcli import __version__

            sinks.fact({"recording": RECORDING_VERSION, "mcpcli": __version__, "at": _at()})
        return sinks

    @property
    def writing(self) -> bool:
        """Whether lines are read as they come (a trace or a recording file)."""
        return self.file is not None or self.recording is not None

    def fact(self, entry: Mapping[str, Any]) -> None:
        """A line for the recording alone (its header, the connection, where an answer came from)."""
        if self.recording is not None:
            self._put("recording", _json(_walk(dict(entry), tuple(self.secrets))))

    def summary(self, entry: Mapping[str, Any]) -> None:
        if self.console is not None and self.summarize is not None:
            from rich.text import Text

            text = self.summarize(entry)
            self.console.print(Text(text, style="dim"), markup=False, highlight=False, soft_wrap=True)

    def write(self, line: str) -> None:
        self._put("file", line)
        self._put("recording", line)

    def _put(self, which: Literal["file", "recording"], line: str) -> None:
        """Write to the trace or the recording; a failure (a full disk) stops that file with one line, never the
        flow."""
        handle = getattr(self, which)
        if handle is None:
            return
        if which == "recording":
            line, self._sum = sealed(line, self._sum)
        try:
            handle.write(line + "\n")
            handle.flush()  # read after a crash too
        except OSError as exc:
            what, where, stopped = (
                ("trace", self.path, "tracing") if which == "file" else ("recording", "", "recording")
            )
            where = (self.path if which == "file" else self.recording_path) or "its file"
            sys.stderr.write(
                f"mcpcli: cannot write the {what} to {where} ({exc.strerror or exc}); {stopped} stopped.\n"
            )
            self._close(which)

    def _close(self, which: Literal["file", "recording"]) -> None:
        handle = getattr(self, which)
        if handle is not None:
            if which == "file" and self.path == "-":  # stdout is the process's, not the trace's
                with contextlib.suppress(OSError, ValueError):
                    handle.flush()
            else:
                with contextlib.suppress(OSError):  # what could not be written was said at the time
                    handle.close()
            setattr(self, which, None)

    def close(self) -> None:
        self._close("file")
        self._close("recording")


def open_trace_file(path: Path, *, option: str = "--trace") -> IO[str]:
    """``path`` truncated and private (0600); missing parent directories are made 0700, existing ones left be."""
    from mcpcli.settings.config import private_dir

    path = path.expanduser()
    try:
        private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        what = "recording" if option == "--record" else "trace file"
        raise UsageError(
            f"Cannot write the {what} {path}: {exc.strerror or exc}.", hint=f"Give {option} a writable file path."
        ) from None
    if stat.S_ISREG(os.fstat(fd).st_mode):  # an existing file keeps its mode on O_CREAT: make it private too
        private_file_mode(fd)
    return os.fdopen(fd, "w", encoding="utf-8")


class Tracer:
    """The recorder behind one connection's tap: redacts each message once and hands the line to its readers.

    It follows the flow through ``event`` (rounds, restarts, the result) so that each message line says which
    round of the loop it belongs to, and learns from the questions it sees which answers are secret.
    """

    def __init__(self, sinks: TraceSinks | None = None, *, record: bool = False, summaries: bool = True) -> None:
        """``record``: keep the lines for the flow's session as well; ``summaries``: one-line summaries on the console
        (only when it has one)."""
        self.sinks = sinks if sinks is not None else TraceSinks()
        self.record = record
        """Keep lines for the flow's session (``drain``)."""
        self.summaries = summaries and self.sinks.console is not None
        self._pending: dict[tuple[str, Any], tuple[float, str | None, int | None]] = {}
        """Requests awaiting their response, by (direction, id): when sent, the method, the round label."""
        self._answer_secrets: dict[str, set[str]] = {}
        self._reply_secrets: dict[Any, set[str]] = {}
        self._round: int | None = None
        self._kept: list[str] = []
        self._kept_bytes = 0
        self._dropped = 0
        self._queue: deque[Callable[[], None]] = deque()
        """Lines to render (``_later``), in order."""
        self._scheduled = False

    # -- what the rest of mcpcli tells it --

    def register_secret(self, value: str | None) -> None:
        """Never write ``value`` (a token, an API key): any string containing it becomes ``"[redacted]"``."""
        if value and len(value) >= MIN_SECRET:
            self.sinks.secrets.add(value)

    def register_headers(self, headers: Mapping[str, str]) -> None:
        """Register the values of credential-bearing headers (``-H "Authorization: …"``)."""
        for name, value in headers.items():
            if name.lower() in SENSITIVE_KEYS:
                self.register_secret(value)
                self.register_secret(value.partition(" ")[2])  # the token without its "Bearer " scheme

    def learn(self, requests: Mapping[str, Any]) -> None:
        """The input requests of a round seen elsewhere (a resumed session): which of their answers are secret."""
        from mcpcli.state.vault import secret_fields

        secret = secret_fields(requests)
        for key in requests:
            self._answer_secrets[key] = secret.get(key, set())

    def event(self, kind: str, /, **fields: Any) -> None:
        """A loop event from the flow: ``start``, ``resume``, ``round``, ``restart``, ``result``."""
        now, at = time.monotonic(), time.time()
        self._later(lambda: self._event(kind, fields, now, at))

    def _event(self, kind: str, fields: dict[str, Any], now: float, at: float) -> None:
        if kind == "start":
            self._round = 0
        elif kind in ("round", "resume") and isinstance(fields.get("round"), int):
            self._round = fields["round"]
        entry = {"t": self._t(now), "at": _at(at), "event": kind, **_walk(fields, self._needles())}
        line = _json(entry)
        self.sinks.write(line)
        self._keep(line)

    def fact(self, kind: str, /, **fields: Any) -> None:
        """A fact for ``--record`` alone, in order with the messages: ``connect`` (the target, before the handshake),
        ``connected`` (the protocol spoken), ``answer`` (a request key and where its answer came from)."""
        if self.sinks.recording is None:
            return
        now, at = time.monotonic(), time.time()
        self._later(lambda: self.sinks.fact({"t": self._t(now), "at": _at(at), "fact": kind, **fields}))

    def drain(self, *, everything: bool = True) -> list[str]:
        """The lines kept since the last call, for the store's next write (which commits them with it).

        ``everything=False``: only the lines rendered so far — a flow's round writes so, and what is still queued
        (``_later``) goes with its next write; its last write takes everything."""
        if everything:
            self._render_queued()
        lines, self._kept, self._kept_bytes = self._kept, [], 0
        if self._dropped:
            note = {"event": "dropped", "lines": self._dropped, "note": "too much traffic between two writes"}
            lines.append(_json(note))
            self._dropped = 0
        return lines

    def _later(self, render: Callable[[], None]) -> None:
        """Render a line now when someone reads lines as they come (``--trace FILE``, ``-v``); otherwise — lines
        only for the session — a moment later, in order: when the event loop is next idle, which is typically
        while the server works on the request just sent, or while the store writes the round (so redacting and
        encoding costs a round nothing). Every state change (the round, the secrets learnt) happens in the
        same order as the messages, so a line says exactly what it would have said at once."""
        if self.sinks.writing or self.summaries or not self.record:
            render()
            return
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            render()
            return
        self._queue.append(render)
        if not self._scheduled:
            self._scheduled = True
            # A timer due at once runs after what is ready now (the transport sending the request just made).
            loop.call_later(0, self._render_queued)

    def _render_queued(self) -> None:
        self._scheduled = False
        while self._queue:
            render = self._queue.popleft()
            try:
                render()
            except Exception:  # boundary: a line that cannot be made must not stop the flow that waits on none
                log.warning("could not record a trace line", exc_info=True)

    # -- the tap --

    def message(self, direction: Direction, item: Any) -> None:
        """One item crossing the tap: a ``SessionMessage``, or an exception the transport delivered."""
        now, at = time.monotonic(), time.time()
        self._later(lambda: self._message(direction, item, now, at))

    def _message(self, direction: Direction, item: Any, now: float, at: float) -> None:
        wire = getattr(item, "message", None)
        if wire is None:
            text = f"{type(item).__name__}: {item}".splitlines()[0] if isinstance(item, BaseException) else repr(item)
            self._emit({"dir": direction, "kind": "exception", "error": _walk(text, self._needles())}, now, None, at)
            return
        raw: dict[str, Any] = wire.model_dump(by_alias=True, mode="json", exclude_unset=True)
        self.record_message(direction, raw, now, at)

    def record_message(
        self, direction: Direction, raw: dict[str, Any], now: float | None = None, at: float | None = None
    ) -> None:
        """Redact and write one message given as wire JSON."""
        now = time.monotonic() if now is None else now
        kind, msg_id, method = _classify(raw)
        entry: dict[str, Any] = {"dir": direction, "kind": kind}
        if msg_id is not None:
            entry["id"] = msg_id
        label = None if self._round is None else self._round + 1  # the leg after round n is round n + 1
        if kind == "request":
            self._pending[(direction, msg_id)] = (now, method, label)
        elif msg_id is not None:
            asked = self._pending.pop(("recv" if direction == "send" else "send", msg_id), None)
            if asked is not None:
                entry["ms"] = round((now - asked[0]) * 1000, 3)
                method, label = asked[1], asked[2]  # a response belongs to its request's round
        if method:
            entry["method"] = method
        if label is not None:
            entry["round"] = label
        reply: Collection[str] = ()
        if direction == "recv":
            self._learn_from(kind, msg_id, method, raw)
        else:
            if kind in ("response", "error"):
                reply = self._reply_secrets.pop(msg_id, set())
            for value in secret_answers(raw, self._answer_secrets, reply):
                self.register_secret(value)  # so the server's echo of it is redacted too
        message = redact(raw, secrets=self.sinks.secrets, answer_secrets=self._answer_secrets, reply_secrets=reply)
        self._emit(entry, now, message, at)

    def _learn_from(self, kind: str, msg_id: Any, method: str | None, raw: Mapping[str, Any]) -> None:
        from mcpcli.state.vault import secret_fields

        if kind == "response":
            result = raw.get("result")
            asks = result.get("inputRequests") if isinstance(result, Mapping) else None
            if isinstance(asks, Mapping):
                self.learn(asks)
        elif (
            kind == "request" and method == "elicitation/create" and (fields := secret_fields({"ask": raw}).get("ask"))
        ):
            self._reply_secrets[msg_id] = fields

    def _emit(self, entry: dict[str, Any], now: float, message: Any, at: float | None = None) -> None:
        head = {"t": self._t(now), "at": _at(at), **entry}
        body = None if message is None else _json(message)
        if body is not None:
            head["bytes"] = len(body)
        line = _json(head) if body is None else _json(head)[:-1] + ',"message":' + body + "}"
        self.sinks.write(line)
        if self.summaries:
            self.sinks.summary({**head, "message": message})
        if self.record:
            if body is not None and len(body) > STORED_MESSAGE_MAX:
                cut = {"truncated": True, "bytes": len(body), "head": body[:STORED_HEAD]}
                line = _json(head)[:-1] + ',"message":' + _json(cut) + "}"
            self._keep(line)

    def _keep(self, line: str) -> None:
        if not self.record:
            return
        if len(self._kept) >= BUFFER_MAX_LINES or self._kept_bytes + len(line) > BUFFER_MAX_BYTES:
            self._dropped += 1
            return
        self._kept.append(line)
        self._kept_bytes += len(line)

    def _needles(self) -> tuple[str, ...]:
        return tuple(self.sinks.secrets)

    def _t(self, now: float) -> float:
        return round(now - self.sinks.start, 6)


def _at(at: float | None = None) -> str:
    return (datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC)).isoformat(timespec="microseconds")
