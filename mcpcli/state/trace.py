"""Traces: every JSON-RPC message of a run, redacted, one JSON object per line — and the server's own logs.

One tap, three readers:

- ``--trace FILE``: the whole run as NDJSON in a 0600 file (``{"t", "at", "dir", "kind", "id", "method",
  "message"}`` per message, ``{"t", "at", "event", ...}`` for the flow's rounds, restarts and result);
- ``-v``: one sanitized summary line per message on stderr (worded by ``terminal.trace_lines``);
- the flow's session: the same lines (each message cut at 64 KiB) handed to the ``Keeper``, which stores them
  with its next write; ``mcpcli sessions show ID --trace`` prints them.

The tap wraps the transport given to the SDK ``Client`` (``traced``): both memory streams are forwarded and
recorded, so what is traced is exactly what the JSON-RPC dispatcher sends and receives, whatever the
transport. A connection without a ``Tracer`` has no wrapper at all.

Nothing secret reaches a line (``redact``): ``request_state`` becomes its length and hash; answers to secret
form fields (``vault.secret_fields`` decides, from the questions seen in this flow) become ``"[secret]"`` and
are then treated as registered secrets; any string holding a registered secret (tokens, API keys, those
answers) becomes ``"[redacted]"``; so does the value of a header-like key (``authorization``…).

No SDK import at module level (the SDK's transports are imported when a connection is tapped).
``terminal.trace_lines`` turns lines into readable text; ``terminal.server_logs`` prints the server's own log
messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from mcpcli.errors import UsageError

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

SECRET = "[secret]"
REDACTED = "[redacted]"
STATE_KEYS = frozenset({"request_state", "requestState"})
SENSITIVE_KEYS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "api_key", "apikey"}
)
"""Keys whose values are credentials wherever they appear (``_meta``, headers echoed by a server)."""


# --- redaction ---------------------------------------------------------------------------------------------------


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
    """A copy of a JSON-RPC message fit for a trace.

    ``answer_secrets``: request key → its secret field names, for the ``inputResponses`` of an outgoing retry
    (a key not in it is judged by the field's name). ``reply_secrets``: the secret field names of the
    back-channel elicitation this message answers. ``secrets``: strings that must not appear anywhere.
    """
    needles = tuple(s for s in secrets if len(s) >= MIN_SECRET)
    copy = _walk(message, needles)
    if not isinstance(copy, dict):
        return copy
    params = copy.get("params")
    responses = params.get("inputResponses") if isinstance(params, dict) else None
    if isinstance(responses, dict):
        for key, response in responses.items():
            known = None if answer_secrets is None else answer_secrets.get(key)
            _mask(response, known)
    if reply_secrets and isinstance(copy.get("result"), dict):
        _mask(copy["result"], reply_secrets)
    return copy


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
    if isinstance(value, str):
        return REDACTED if needles and any(n in value for n in needles) else value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = REDACTED if needles and any(n in key for n in needles) else key
            if key in STATE_KEYS and isinstance(item, str):
                out[name] = state_digest(item)
            elif key.lower() in SENSITIVE_KEYS and item is not None:
                out[name] = REDACTED
            else:
                out[name] = _walk(item, needles)
        return out
    if isinstance(value, list):
        return [_walk(item, needles) for item in value]
    return value


def _is_secret(name: str, known: Collection[str] | None) -> bool:
    if known is not None:
        return name in known
    from mcpcli.forms import is_secret_name  # a question this flow never saw: judge by the name

    return is_secret_name(name)


def _mask(answer: Any, known: Collection[str] | None) -> None:
    content = answer.get("content") if isinstance(answer, dict) else None
    if isinstance(content, dict):
        for name in content:
            if _is_secret(name, known):
                content[name] = SECRET


def _secret_values(answer: Any, known: Collection[str] | None) -> list[str]:
    content = answer.get("content") if isinstance(answer, Mapping) else None
    if not isinstance(content, Mapping):
        return []
    return [v for k, v in content.items() if isinstance(v, str) and _is_secret(k, known)]


# --- lines -------------------------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    # ASCII only: no raw C1 or bidi control can reach a terminal that prints the file, and a lone surrogate
    # (valid in JSON) cannot break the UTF-8 of the file or the store.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)


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
    """``--trace FILE``, opened 0600."""
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

    @classmethod
    def open(
        cls, path: str | None, console: Console | None, summarize: Callable[[Mapping[str, Any]], str] | None = None
    ) -> TraceSinks:
        file = open_trace_file(Path(path)) if path else None
        return cls(file=file, path=path, console=console, summarize=summarize)

    def summary(self, entry: Mapping[str, Any]) -> None:
        if self.console is not None and self.summarize is not None:
            from rich.text import Text

            text = self.summarize(entry)
            self.console.print(Text(text, style="dim"), markup=False, highlight=False, soft_wrap=True)

    def write(self, line: str) -> None:
        if self.file is not None:
            try:
                self.file.write(line + "\n")
                self.file.flush()  # a trace is read after a crash too
            except OSError as exc:  # a full disk: the flow goes on, untraced, and says so once
                self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        import sys

        why = exc.strerror or exc
        sys.stderr.write(f"mcpcli: cannot write the trace to {self.path or 'its file'} ({why}); tracing stopped.\n")
        self.close()

    def close(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):  # what could not be written was said at the time
                self.file.close()
            self.file = None


def open_trace_file(path: Path) -> IO[str]:
    """``path`` truncated and private (0600); missing parent directories are made 0700, existing ones left be."""
    from mcpcli.settings.config import private_dir

    path = path.expanduser()
    try:
        private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise UsageError(
            f"Cannot write the trace file {path}: {exc.strerror or exc}.", hint="Give --trace a writable file path."
        ) from None
    if stat.S_ISREG(os.fstat(fd).st_mode):  # an existing file keeps its mode on O_CREAT: make it private too
        os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


class Tracer:
    """The recorder behind one connection's tap: redacts each message once and hands the line to its readers.

    It follows the flow through ``event`` (rounds, restarts, the result) so that each message line says which
    round of the loop it belongs to, and learns from the questions it sees which answers are secret.
    """

    def __init__(self, sinks: TraceSinks | None = None, *, record: bool = False, summaries: bool = True) -> None:
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
        if self.sinks.file is not None or self.summaries or not self.record:
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


# --- the tap -----------------------------------------------------------------------------------------------------


class _TapRead:
    """The client's read stream, recording every item it yields."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    @property
    def last_context(self) -> Any:  # the dispatcher restores the sender's context from it
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tracer.message("recv", item)
        return item

    def __aiter__(self) -> _TapRead:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._tracer.message("recv", item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _TapWrite:
    """The client's write stream, recording every message before it goes."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def send(self, item: Any) -> None:
        self._tracer.message("send", item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapWrite:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _TappedTransport:
    """A ``Transport`` (async context manager of the two streams) whose streams are tapped."""

    def __init__(self, inner: Any, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def __aenter__(self) -> tuple[_TapRead, _TapWrite]:
        read, write = await self._inner.__aenter__()
        return _TapRead(read, self._tracer), _TapWrite(write, self._tracer)

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


def traced(server: Any, tracer: Tracer) -> Any:
    """What to give ``Client`` instead of ``server`` so that every message is recorded.

    An in-process server (the demo) is served over the SDK's in-memory JSON-RPC streams — the same dual-era
    loop a stdio server runs — since its direct in-process path has no messages to tap.
    """
    from mcp.client._memory import InMemoryTransport  # the SDK's own in-process transport (a private module)
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, Server | MCPServer):
        server = InMemoryTransport(server)
    elif isinstance(server, str):
        server = streamable_http_client(server)
    elif isinstance(server, StdioServerParameters):
        server = stdio_client(server)
    return _TappedTransport(server, tracer)
