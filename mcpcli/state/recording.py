"""Recordings: what ``--record FILE`` writes, read back for ``mcpcli replay`` and ``mcpcli mock``.

A recording is a trace (``mcpcli.state.trace``: redacted NDJSON, one JSON object per line) with every message whole,
plus ``fact`` lines: ``connect`` (the target), ``connected`` (protocol, server info, capabilities) and ``answer``
(a request key and where its answer came from). A session's stored trace (``sessions show ID --trace --json``,
a JSON array of the same lines) is a recording too, without the facts.

A recording comes from elsewhere, so it is read as hostile input: at most ``MAX_BYTES`` (checked before it is
read), UTF-8, and every line checked for the shape it claims (``Malformed`` names the first bad one: exit 2).
Every line carries its checksum (``sum``), chained to the line before it: a line edited, added (a blank line, ``{}``, a
made-up fact), moved or removed by hand is caught where it is. Nothing read here is displayed unsanitized or run: a
recorded command line is only a ``target`` dict, which the replay runs only with the user's consent
(``mcpcli.settings.trust``).

The lines become ``Exchange``s, in the order they were sent: a listing (``tools/list``…) is one leg; a flow
(``tools/call``, ``prompts/get``, ``resources/read``) is its first request and every retry (a request that
carries ``requestState``) with the responses, and for pre-2026 servers the back-channel questions asked during
each leg with the client's replies.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli.errors import UsageError
from mcpcli.state.trace import canonical, line_sum

MIB = 2**20
MAX_BYTES = 8 * MIB
"""A recording larger than this is refused before it is read (``--max-mb`` raises it)."""
FLOW_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
LISTING_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
HANDSHAKE_METHODS = frozenset({"initialize", "server/discover"})
BACK_CHANNEL = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
KINDS = frozenset({"request", "notification", "response", "error", "exception"})
HIDDEN = ("[secret]", "[redacted]")
"""What a recording holds instead of a secret answer: it must be given again to replay it."""
SUPPORTED_VERSION = 2


class Malformed(UsageError):
    """A recording that cannot be read as one: too big, not UTF-8, a line cut short or edited by hand."""

    default_title = "Malformed recording"


@dataclass
class Asked:
    """A back-channel question a pre-2026 server asked during a leg, and the client's reply."""

    request: dict[str, Any]
    reply: dict[str, Any] | None = None
    line: int = 0


@dataclass
class Leg:
    """One request the client sent and what came back."""

    request: dict[str, Any]
    response: dict[str, Any] | None = None
    line: int = 0
    asked: list[Asked] = field(default_factory=list)

    @property
    def params(self) -> dict[str, Any]:
        params = self.request.get("params")
        return params if isinstance(params, dict) else {}


@dataclass
class Exchange:
    """A listing (one leg) or a flow (its legs, first to last)."""

    method: str
    legs: list[Leg]

    @property
    def name(self) -> str:
        params = self.legs[0].params
        value = params.get("uri") if self.method == "resources/read" else params.get("name")
        return value if isinstance(value, str) else ""

    @property
    def arguments(self) -> dict[str, Any] | None:
        value = self.legs[0].params.get("arguments")
        return value if isinstance(value, dict) else None

    @property
    def is_flow(self) -> bool:
        return self.method in FLOW_METHODS

    @property
    def mid_flow(self) -> bool:
        """A flow recorded from a retry on (``resume``): its start, and the state it echoes, are not in the file."""
        return self.is_flow and "requestState" in self.legs[0].params

    def label(self) -> str:
        return f"{self.method} {self.name}".strip()


@dataclass
class Recording:
    """A recording as read: the connection facts and the exchanges."""

    path: str
    target: dict[str, Any] | None = None
    """The ``connect`` fact's target (``label``, ``kind``, ``url`` or ``command``…); None in a session's trace."""
    protocol: str | None = None
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    """What the recorded client's ``initialize`` declared (pre-2026 handshakes: what the server may ask)."""
    instructions: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)
    """Request key → where each of its answers came from (``preset``, ``prompt``, ``replay``…), in order."""
    sessions: list[str] = field(default_factory=list)
    """The session ids the flow's events name (a session's trace says no target: its session does)."""

    @property
    def flows(self) -> list[Exchange]:
        return [x for x in self.exchanges if x.is_flow]

    @property
    def legacy(self) -> bool:
        """Whether the server spoke a pre-2026 protocol (it asked over the back-channel)."""
        return self.protocol is not None and not self.protocol.startswith("2026")

    def listing(self, method: str) -> dict[str, Any] | None:
        """The last recorded result of a listing method."""
        for exchange in reversed(self.exchanges):
            if exchange.method == method and exchange.legs[0].response is not None:
                result = exchange.legs[0].response.get("result")
                if isinstance(result, dict):
                    return result
        return None


def hidden_answers(recording: Recording) -> list[tuple[str, str]]:
    """(request key, field) of every answer the recording hides (``[secret]``): it must be given to replay."""
    found: list[tuple[str, str]] = []
    for exchange in recording.flows:
        for leg in exchange.legs:
            responses = leg.params.get("inputResponses")
            if isinstance(responses, dict):
                for key, answer in responses.items():
                    found += [(key, name) for name in _hidden_fields(answer) if (key, name) not in found]
            for n, asked in enumerate(leg.asked):
                result = (asked.reply or {}).get("result")
                key = back_channel_key([a.request for a in leg.asked], n)
                found += [(key, name) for name in _hidden_fields(result) if (key, name) not in found]
    return found


def back_channel_key(requests: Sequence[Mapping[str, Any]], index: int) -> str:
    """How a replay and ``--answer`` name the ``index``-th back-channel question of a leg: as a flow does
    (``elicitation-1``, ``sampling-1``…: counted by kind)."""

    def kind(request: Mapping[str, Any]) -> str:
        names = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
        return names.get(str(request.get("method", "")), "request")

    mine = kind(requests[index])
    return f"{mine}-{sum(1 for r in requests[: index + 1] if kind(r) == mine)}"


def _hidden_fields(answer: Any) -> list[str]:
    content = answer.get("content") if isinstance(answer, dict) else None
    if not isinstance(content, dict):
        return []
    return [name for name, value in content.items() if isinstance(value, str) and value in HIDDEN]


# --- reading ---------------------------------------------------------------------------------------------------------


def read_recording(path: str | Path, *, max_bytes: int = MAX_BYTES) -> Recording:
    """Read and check ``path`` (``-``: stdin); ``Malformed`` (exit 2) names what is wrong, and where."""
    shown = str(path)
    raw = _read_bounded(shown, max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise Malformed(f"{shown}, line {line}: not UTF-8 text.", hint=_REDO) from None
    del raw
    # A recording is many small acyclic objects, all kept: the cyclic collector would walk the growing heap again
    # and again as they are made (reading 10,000 flows cost 2.6 times 5,000's), and can free none of them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        entries = list(_entries(shown, text))
        if not entries:
            raise Malformed(f"{shown} is empty: no recorded message.", hint=_REDO)
        return _assemble(shown, entries)
    finally:
        if collecting:
            gc.enable()


_REDO = "Record it again (--record FILE), or use the file as it was written."


def _read_bounded(path: str, max_bytes: int) -> bytes:
    """The bytes of ``path`` (``-``: stdin), at most ``max_bytes``: a larger file is refused before it is read
    (``Malformed``), a missing or unreadable one is a ``UsageError`` that says which."""
    import sys

    if path == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
    else:
        try:
            with Path(path).expanduser().open("rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size > max_bytes:
                    raise _too_big(path, size, max_bytes)
                data = file.read(max_bytes + 1)
        except FileNotFoundError:
            raise UsageError(f"No recording at {path}.", hint="Give the file --record wrote.") from None
        except IsADirectoryError:
            raise UsageError(f"{path} is a directory, not a recording.", hint="Give the file --record wrote.") from None
        except OSError as exc:
            raise UsageError(f"Cannot read the recording {path}: {exc.strerror or exc}.", hint=None) from None
    if len(data) > max_bytes:
        raise _too_big(path, len(data), max_bytes)
    return data


def _too_big(path: str, size: int, max_bytes: int) -> Malformed:
    return Malformed(
        f"{path} is {size / MIB:.1f} MB, more than the {max_bytes / MIB:g} MB a recording may be.",
        hint="If you trust the file, raise the bound with --max-mb.",
    )


def _entries(path: str, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, entry) of NDJSON, or of a JSON array (a session's trace); a bad one raises, naming it.

    Every line carries its checksum (``sum``), chained to the line before (``trace.line_sum``): a line without
    one — a blank line, ``{}``, a line added by hand — or whose checksum does not follow — a line edited, or a line
    added, moved or removed before it — is refused where it is. The newline that ends the last line is the
    file's end; a file cut at a line's end (a crash while recording) is read as far as it goes."""
    if text.lstrip().startswith("["):
        yield from _array_entries(path, text)
        return
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    previous = ""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise _bad(path, n, "a blank line, which a recording never has (added by hand?).")
        try:
            entry = json.loads(line)
        except ValueError:
            cut = n == len(lines) and not text.endswith("\n")
            why = "cut short (the file ends mid-line)" if cut else "not a JSON object: edited by hand?"
            raise Malformed(f"{path}, line {n}: {why}.", hint=_REDO) from None
        if not isinstance(entry, dict):
            raise Malformed(f"{path}, line {n}: not a JSON object.", hint=_REDO)
        given = entry.pop("sum", None)
        if n == 1 and "recording" in entry:
            _check_version(path, n, entry["recording"])
        if not isinstance(given, str) or not line.endswith(f',"sum":"{given}"}}'):
            raise _bad(path, n, "a line without its checksum (added by hand?).")
        previous, expected = given, line_sum(previous, line[: -len(given) - 10] + "}")
        if given != expected:
            raise _bad(
                path, n, "not the line recorded here (edited by hand, or a line added, moved or removed before it?)."
            )
        yield n, entry


def _array_entries(path: str, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """A session's exported trace (``sessions show ID --trace --json``): each entry's checksum covers its compact
    JSON (``trace.canonical``), chained as a recording's lines are."""
    try:
        array = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"{path}, line {exc.lineno}: not JSON ({exc.msg}): cut short, or edited?", hint=_REDO) from None
    if not isinstance(array, list):
        raise Malformed(f"{path}: not a JSON array of trace lines.", hint=_REDO)
    previous = ""
    for n, entry in enumerate(array, 1):
        if not isinstance(entry, dict):
            raise Malformed(f"{path}, entry {n}: not a JSON object.", hint=_REDO)
        given = entry.pop("sum", None)
        if not isinstance(given, str):
            why = "an entry without its checksum (added by hand, or exported by an older mcpcli?)"
            raise Malformed(f"{path}, entry {n}: {why}.", hint=_REEXPORT)
        previous, expected = given, line_sum(previous, canonical(entry))
        if given != expected:
            why = "not the entry exported here (edited by hand, or an entry added, moved or removed before it?)"
            raise Malformed(f"{path}, entry {n}: {why}.", hint=_REEXPORT)
        yield n, entry


_REEXPORT = "Export it again from the session it came from (its trace as JSON: sessions show ID --trace --json)."


def _check_version(path: str, n: int, version: Any) -> None:
    if version == 1:
        why = "a recording of version 1, whose lines carry no checksum; this mcpcli reads version 2."
        raise _bad(path, n, why)
    if not isinstance(version, int) or version > SUPPORTED_VERSION:
        raise _bad(path, n, f"a recording of version {version!r}; this mcpcli reads {SUPPORTED_VERSION}.")


def _bad(path: str, n: int, why: str) -> Malformed:
    return Malformed(f"{path}, line {n}: {why}", hint=_REDO)


def _message_of(path: str, n: int, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's message, checked against its line: None when a session's trace cut it (over 64 KiB)."""
    direction, kind = entry.get("dir"), entry.get("kind")
    if direction not in ("send", "recv") or kind not in KINDS:
        raise _bad(path, n, "a message line with an unknown direction or kind.")
    if kind == "exception":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        raise _bad(path, n, "a message line without its message.")
    if message.get("truncated") is True:
        return None
    method = message.get("method")
    if kind in ("request", "notification") and not isinstance(method, str):
        raise _bad(path, n, f"a {kind} without a method.")
    if "params" in message and not isinstance(message["params"], dict):
        raise _bad(path, n, "params that are not an object.")
    if kind == "response" and not isinstance(message.get("result"), dict):
        raise _bad(path, n, "a response without a result object.")
    if kind == "error":
        error = message.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise _bad(path, n, "an error without a code.")
    if kind == "request" and method in FLOW_METHODS:
        params = message.get("params") or {}
        key = "uri" if method == "resources/read" else "name"
        if not isinstance(params.get(key), str):
            raise _bad(path, n, f"a {method} request without its {key}.")
        for name in ("arguments", "inputResponses"):
            if name in params and not isinstance(params[name], dict):
                raise _bad(path, n, f"{name} that are not an object.")
    return message


def _assemble(path: str, entries: list[tuple[int, dict[str, Any]]]) -> Recording:
    """The recording's lines put back together as exchanges: each listing, and each flow with its legs in order — a
    retry joins the flow its ``requestState`` came from (flows of a ``batch`` interleave), a back-channel question joins
    the last leg still open, a response its request by id.

    The facts (target, handshake, answer sources) and the sessions named are kept beside; notes are skipped; a malformed
    line raises ``Malformed`` naming its line.
    """
    recording = Recording(path)
    sent: dict[Any, Leg] = {}
    """Requests the client sent, awaiting their response, by id."""
    asked: dict[Any, Asked] = {}
    """Back-channel questions awaiting the client's reply, by id."""
    flows: dict[tuple[str, str], Exchange] = {}
    """The flow each (method, name) continues with its next retry (when its state says nothing)."""
    states: dict[str, Exchange] = {}
    """The flow a ``requestState`` (its recorded hash) belongs to: flows run at once (``batch``) interleave."""
    legs: dict[int, Exchange] = {}
    named: set[str] = set()
    """The sessions already in ``recording.sessions``."""
    outstanding: list[Leg] = []
    """Flow legs sent and not answered yet: a back-channel question belongs to the last of them."""
    for n, entry in entries:
        if "recording" in entry:
            _check_version(path, n, entry["recording"])
            continue
        if "fact" in entry:
            _fact(recording, path, n, entry)
            continue
        if "event" in entry:
            session = entry.get("session")
            if isinstance(session, str) and session not in named:  # a set: a batch's recording names thousands
                named.add(session)
                recording.sessions.append(session)
            continue
        if "dir" not in entry:
            if "unreadable" in entry:
                raise _bad(path, n, "a line the session's store could not read.")
            continue  # a note (``dropped``): nothing to replay
        message = _message_of(path, n, entry)
        if message is None:
            continue
        kind, msg_id, method = entry["kind"], message.get("id"), message.get("method")
        if entry["dir"] == "send":
            if kind == "request":
                leg = Leg(message, line=n)
                sent[msg_id] = leg
                if method in LISTING_METHODS:
                    recording.exchanges.append(Exchange(method, [leg]))
                elif method in FLOW_METHODS:
                    params = leg.params
                    key = (method, str(params.get("uri") if method == "resources/read" else params.get("name")))
                    owner = states.get(_state_hash(params.get("requestState")) or "", flows.get(key))
                    if "requestState" in params and owner is not None:
                        owner.legs.append(leg)
                    else:
                        owner = flows[key] = Exchange(method, [leg])
                        recording.exchanges.append(owner)
                    legs[id(leg)] = owner
                    outstanding.append(leg)
            elif kind in ("response", "error") and msg_id in asked:
                asked.pop(msg_id).reply = message
        elif kind == "request":
            if method in BACK_CHANNEL and outstanding:
                question = Asked(message, line=n)
                outstanding[-1].asked.append(question)
                asked[msg_id] = question
        elif kind in ("response", "error") and msg_id in sent:
            leg = sent.pop(msg_id)
            leg.response = message
            if leg in outstanding:
                outstanding.remove(leg)
            result = message.get("result")
            state = _state_hash(result.get("requestState")) if isinstance(result, dict) else None
            if state and id(leg) in legs:
                states[state] = legs[id(leg)]
            if leg.request.get("method") in HANDSHAKE_METHODS:
                _handshake(recording, leg)
    return recording


def _state_hash(state: Any) -> str | None:
    """The hash a recording keeps of a ``requestState`` (``trace.state_digest``)."""
    digest = state.get("sha256") if isinstance(state, dict) else None
    return f"{digest}:{state.get('length')}" if isinstance(digest, str) else None


def _fact(recording: Recording, path: str, n: int, entry: dict[str, Any]) -> None:
    """Keep one fact line on the recording: the target connected to (checked: a command is a list of words), what the
    handshake said, or which source gave an answer. Unknown facts are ignored; a malformed target raises ``Malformed``.
    """
    kind = entry["fact"]
    if kind == "connect":
        target = entry.get("target")
        if not isinstance(target, dict) or not isinstance(target.get("kind"), str):
            raise _bad(path, n, "a connect line without its target.")
        command = target.get("command")
        if command is not None and not (
            isinstance(command, list) and command and all(isinstance(w, str) for w in command)
        ):
            raise _bad(path, n, "a target command that is not a list of words.")
        recording.target = target
    elif kind == "connected":
        if isinstance(entry.get("protocol"), str):
            recording.protocol = entry["protocol"]
        if isinstance(entry.get("server_info"), dict):
            recording.server_info = entry["server_info"]
        if isinstance(entry.get("capabilities"), dict):
            recording.capabilities = entry["capabilities"]
        if isinstance(entry.get("instructions"), str):
            recording.instructions = entry["instructions"]
    elif kind == "answer" and isinstance(entry.get("key"), str) and isinstance(entry.get("source"), str):
        recording.sources.setdefault(entry["key"], []).append(entry["source"])


def _handshake(recording: Recording, leg: Leg) -> None:
    """Server info, capabilities and protocol from the handshake itself (a session's trace has no facts)."""
    result = (leg.response or {}).get("result")
    if not isinstance(result, dict):
        return
    if leg.request.get("method") == "initialize":
        info = result.get("serverInfo")
        declared = leg.params.get("capabilities")
        if isinstance(declared, dict) and recording.client_capabilities is None:
            recording.client_capabilities = declared
        if isinstance(result.get("protocolVersion"), str):
            recording.protocol = recording.protocol or result["protocolVersion"]
    else:
        meta = result["_meta"] if isinstance(result.get("_meta"), dict) else {}
        info = meta.get("io.modelcontextprotocol/serverInfo")
        sent = leg.params.get("_meta")
        asked = sent.get("io.modelcontextprotocol/protocolVersion") if isinstance(sent, dict) else None
        if isinstance(asked, str):
            recording.protocol = recording.protocol or asked
    if isinstance(info, dict) and recording.server_info is None:
        recording.server_info = info
    if isinstance(result.get("capabilities"), dict) and recording.capabilities is None:
        recording.capabilities = result["capabilities"]
    if isinstance(result.get("instructions"), str) and recording.instructions is None:
        recording.instructions = result["instructions"]
