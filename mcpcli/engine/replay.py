"""Replay: run a recording's exchanges again against a live server and compare, round by round.

Every listing is asked again and every flow is called again with its recorded name and arguments; each round is
answered with the recorded answers (a hidden one — ``[secret]`` — with the value the caller supplies), and the
retry carries the live server's ``requestState``, never the recorded one. Pre-2026 servers ask over the
back-channel: each question is compared with the recorded one and answered with the recorded reply.

What is compared is what the live connection's tap records (``mcpcli.state.trace``: redacted exactly as the
recording was), so a secret the server echoes is ``[redacted]`` on both sides. Volatile fields are ignored
(``normalize``): JSON-RPC ids, ``requestState``, progress tokens, timestamps and session ids in ``_meta``, and
whatever JSON pointers the caller adds. The replay stops at the first difference (``Difference``): later
rounds would answer questions that were not asked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as t
from mcp.shared.exceptions import MCPError

from mcpcli.state.recording import BACK_CHANNEL, HIDDEN, Exchange, Leg, Recording
from mcpcli.state.recording import back_channel_key as key_of
from mcpcli.state.trace import Tracer, TraceSinks

if TYPE_CHECKING:
    from mcp import Client

VOLATILE = frozenset({"requestState", "request_state"})
"""Keys ignored wherever they are."""
VOLATILE_META = ("progresstoken", "timestamp", "time", "session", "related-task")
"""Keys of a ``_meta`` object ignored when their name holds one of these (lower case)."""


class Absent:
    """What a side of a difference has where the other has something."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT = Absent()


@dataclass
class Difference:
    """The first place the live server answered otherwise than the recording."""

    exchange: int
    """1-based, in the recording's order."""
    label: str
    """``tools/call provision``."""
    round: int
    """1-based leg of the exchange."""
    what: str
    """``result``, ``question 2`` (a back-channel question), ``rounds`` (the flow ended at another round)."""
    pointer: str
    """Where in the compared message (a JSON pointer)."""
    expected: Any
    got: Any

    def document(self) -> dict[str, Any]:
        def side(value: Any) -> Any:
            return None if value is ABSENT else value

        return {
            "exchange": self.exchange,
            "label": self.label,
            "round": self.round,
            "what": self.what,
            "pointer": self.pointer,
            "expected": side(self.expected),
            "got": side(self.got),
            "expected_absent": self.expected is ABSENT,
            "got_absent": self.got is ABSENT,
        }


@dataclass
class Report:
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    """One per exchange replayed: ``label``, ``rounds`` (compared), ``equal``."""
    difference: Difference | None = None

    @property
    def equal(self) -> bool:
        return self.difference is None

    def document(self) -> dict[str, Any]:
        return {
            "status": "equal" if self.equal else "different",
            "exchanges": self.exchanges,
            "difference": self.difference.document() if self.difference else None,
        }


# --- comparing -------------------------------------------------------------------------------------------------------


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """A JSON pointer (RFC 6901) as its parts; ``ValueError`` when it is not one."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(pointer)
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/"))


def normalize(message: Any, ignore: Sequence[tuple[str, ...]] = ()) -> Any:
    """``message`` without what changes from run to run: its id, states, volatile ``_meta``; and ``ignore``."""
    if not isinstance(message, dict):
        return message
    body = {k: v for k, v in message.items() if k not in ("id", "jsonrpc")}
    body = _strip(body)
    for parts in ignore:
        _drop(body, parts)
    return body


def _strip(value: Any, meta: bool = False) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in VOLATILE or (meta and any(word in key.lower() for word in VOLATILE_META)):
                continue
            out[key] = _strip(item, meta=key == "_meta")
        return out
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


def _drop(value: Any, parts: tuple[str, ...]) -> None:
    if not parts:
        return
    head, rest = parts[0], parts[1:]
    if head == "*":  # an extension of RFC 6901: every member
        children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
        for child in children:
            _drop(child, rest)
        if not rest and isinstance(value, dict | list):
            value.clear()
        return
    if isinstance(value, dict) and head in value:
        if rest:
            _drop(value[head], rest)
        else:
            del value[head]
    elif isinstance(value, list) and head.isdigit() and int(head) < len(value):
        if rest:
            _drop(value[int(head)], rest)
        else:
            value.pop(int(head))


def first_difference(expected: Any, got: Any, pointer: str = "") -> tuple[str, Any, Any] | None:
    """Where two JSON values first differ (a JSON pointer) and the two values there; None when equal."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            here = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            if key not in expected:
                return here, ABSENT, got[key]
            if key not in got:
                return here, expected[key], ABSENT
            if (found := first_difference(expected[key], got[key], here)) is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for index in range(max(len(expected), len(got))):
            here = f"{pointer}/{index}"
            if index >= len(expected):
                return here, ABSENT, got[index]
            if index >= len(got):
                return here, expected[index], ABSENT
            if (found := first_difference(expected[index], got[index], here)) is not None:
                return found
        return None
    if expected == got and type(expected) is type(got):
        return None
    return pointer, expected, got


# --- the live side ---------------------------------------------------------------------------------------------------


class Capture:
    """The live connection's tap, read as it writes: the response to the replayed request, the questions asked.

    A ``TraceSinks`` file: each line is parsed as it is written (the tap writes at once when a file reads it).
    Only the response to the request a leg replays counts (``expect``): the SDK sends requests of its own on the
    same connection — a ``tools/list`` after a call whose output schema it does not know yet (a recording made
    while mcpcli remembered the listing holds none) — and their answers are no leg's result."""

    def __init__(self, inner: Any = None) -> None:
        self.response: dict[str, Any] | None = None
        self.questions: list[dict[str, Any]] = []
        self.inner = inner
        """The run's own ``--trace`` file, written to as well."""
        self._method: str | None = None
        self._sent: Any = None
        """The JSON-RPC id of the replayed request, once sent."""

    def expect(self, method: str) -> None:
        """A leg starts: its response is the answer to the next ``method`` request sent; no question asked yet."""
        self.response, self._method, self._sent = None, method, None
        self.questions.clear()

    def write(self, text: str) -> int:
        """Pass ``text`` on to the run's own sink; note the replayed request's id, its response, and every
        back-channel question the server asks."""
        if self.inner is not None:
            self.inner.write(text)
        for line in text.splitlines():
            entry = json.loads(line)
            if not isinstance(message := entry.get("message"), dict):
                continue
            method, kind = entry.get("method"), entry.get("kind")
            if entry.get("dir") == "send":
                if kind == "request" and method == self._method and self._sent is None:
                    self._sent = message.get("id")
            elif entry.get("dir") != "recv":
                continue
            elif kind in ("response", "error") and method == self._method and message.get("id") == self._sent:
                self.response = message
            elif kind == "request" and method in BACK_CHANNEL:
                self.questions.append(message)
        return len(text)

    def flush(self) -> None:
        if self.inner is not None:
            self.inner.flush()

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def live_tracer(secrets: Sequence[str], sinks: TraceSinks | None = None) -> tuple[Tracer, Capture]:
    """A tap for the replay's connection, redacting as the recording did; the given secrets never show. ``sinks``:
    the run's own (``--trace``, ``--record``, ``-v``), which see the live messages too."""
    sinks = sinks or TraceSinks()
    capture = Capture(sinks.file)
    sinks.file = capture  # type: ignore[assignment]  # a file-like sink that reads what it is given
    tracer = Tracer(sinks)
    for secret in secrets:
        tracer.register_secret(secret)
    return tracer, capture


def fill(answer: Any, key: str, given: Mapping[tuple[str, str], str]) -> Any:
    """A recorded answer with its hidden values (``[secret]``) replaced by the given ones."""
    if not isinstance(answer, dict) or not isinstance(answer.get("content"), dict):
        return answer
    content = {
        name: given.get((key, name), value) if isinstance(value, str) and value in HIDDEN else value
        for name, value in answer["content"].items()
    }
    return {**answer, "content": content}


class Replayer:
    """Drives one connected client through a recording's exchanges and compares each round."""

    def __init__(
        self,
        client: Client,
        capture: Capture,
        *,
        given: Mapping[tuple[str, str], str],
        ignore: Sequence[tuple[str, ...]] = (),
    ) -> None:
        self.client = client
        self.capture = capture
        self.given = given
        self.ignore = ignore
        self.report = Report()
        self._leg: Leg | None = None
        self._asked = 0
        self._where: tuple[int, str, int] = (0, "", 0)

    async def run(self, exchanges: Sequence[Exchange]) -> Report:
        for number, exchange in enumerate(exchanges, 1):
            rounds = await (self._flow(number, exchange) if exchange.is_flow else self._listing(number, exchange))
            equal = self.report.difference is None
            self.report.exchanges.append({"label": exchange.label(), "rounds": rounds, "equal": equal})
            if not equal:
                break
        return self.report

    def _differs(self, what: str, expected: Any, got: Any) -> bool:
        number, label, leg = self._where
        expected, got = normalize(expected, self.ignore), normalize(got, self.ignore)
        found = first_difference(expected, got)
        if found is None:
            return False
        pointer, was, now = found
        rounds = _kind(expected), _kind(got)
        if what == "result" and rounds[0] != rounds[1]:  # one side finished, the other asks again: say so first
            what = {"input_required": "another round where the recording finished"}.get(rounds[1], "")
            what = what or "the flow finished where the recording had another round"
            pointer, was, now = "/result", expected.get("result"), got.get("result")
        self.report.difference = Difference(number, label, leg, what, pointer, was, now)
        return True

    async def _listing(self, number: int, exchange: Exchange) -> int:
        """Ask one recorded listing page again (the SDK's cache bypassed) and compare the answer; rounds compared."""
        leg = exchange.legs[0]
        if leg.response is None:
            return 0
        self._where = (number, exchange.label(), 1)
        cursor = leg.params.get("cursor")
        calls = {
            "tools/list": self.client.list_tools,
            "prompts/list": self.client.list_prompts,
            "resources/list": self.client.list_resources,
            "resources/templates/list": self.client.list_resource_templates,
        }
        self.capture.expect(exchange.method)
        with contextlib.suppress(MCPError):  # an error response is in the capture too
            await calls[exchange.method](cursor=cursor if isinstance(cursor, str) else None, cache_mode="refresh")
        self._differs("result", leg.response, self.capture.response or {})
        return 1

    async def _flow(self, number: int, exchange: Exchange) -> int:
        """Replay a flow leg by leg — the recorded answers, the live server's state — and stop at the first leg whose
        questions or result differ, or where the recording ends; how many legs were compared."""
        state: str | None = None
        compared = 0
        for index, leg in enumerate(exchange.legs):
            if leg.response is None:
                break  # the recording ends here (the flow was stopped): nothing to compare
            self._where = (number, exchange.label(), index + 1)
            responses = leg.params.get("inputResponses")
            answers = {k: fill(v, k, self.given) for k, v in responses.items()} if isinstance(responses, dict) else None
            self._leg, self._asked = leg, 0
            self.capture.expect(exchange.method)
            try:
                result = await self._send(exchange, answers, state if index else None)
            except MCPError:
                result = None
            compared += 1
            if self.report.difference is not None:  # a back-channel question differed
                return compared
            if self._asked < len(leg.asked):
                self._differs(f"question {self._asked + 1}", leg.asked[self._asked].request, {})
                return compared
            if self._differs("result", leg.response, self.capture.response or {}):
                return compared
            state = getattr(result, "request_state", None)
        return compared

    async def _send(self, exchange: Exchange, answers: dict[str, Any] | None, state: str | None) -> Any:
        from mcpcli.engine.steps import for_server
        from mcpcli.engine.steps import typed_responses as _typed_responses

        typed = _typed_responses(for_server(answers)) if answers is not None else None
        session = self.client.session
        name, arguments = exchange.name, exchange.arguments
        if exchange.method == "tools/call":
            return await session.call_tool(
                name, arguments, input_responses=typed, request_state=state, allow_input_required=True
            )
        if exchange.method == "prompts/get":
            return await session.get_prompt(
                name, arguments, input_responses=typed, request_state=state, allow_input_required=True
            )
        return await session.read_resource(name, input_responses=typed, request_state=state, allow_input_required=True)

    async def back_channel(self, request: t.InputRequest) -> t.InputResponse | t.ErrorData:
        """A pre-2026 server's question mid-leg: compared with the recorded one, answered with the recorded reply."""
        leg, index = self._leg, self._asked
        self._asked += 1
        got = self.capture.questions[index] if index < len(self.capture.questions) else {}
        refuse = t.ErrorData(code=t.INVALID_REQUEST, message="The replayed recording has no such question.")
        if leg is None or self.report.difference is not None:
            return refuse
        if index >= len(leg.asked):
            self._differs(f"question {index + 1}", {}, got)
            return refuse
        recorded = leg.asked[index]
        if self._differs(f"question {index + 1}", recorded.request, got):
            return refuse
        reply = recorded.reply or {}
        if "error" in reply or not isinstance(reply.get("result"), dict):
            error = reply["error"] if isinstance(reply.get("error"), dict) else {}
            return t.ErrorData(code=int(error.get("code", t.INVALID_REQUEST)), message=str(error.get("message", "")))
        result = fill(reply["result"], key_of([a.request for a in leg.asked], index), self.given)
        method = recorded.request.get("method")
        if method == "roots/list":
            return t.ListRootsResult.model_validate(result)
        if method == "sampling/createMessage":
            return t.CreateMessageResult.model_validate(result)
        return t.ElicitResult.model_validate(result)


def _kind(message: Any) -> str:
    """``input_required``, ``complete`` or ``error``: what a response says about the flow."""
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        return "error"
    return "input_required" if result.get("resultType") == "input_required" else "complete"


def replayable(recording: Recording) -> tuple[list[Exchange], int]:
    """The exchanges a replay runs — listings and flows with a recorded response — and how many flows it skips
    because they were recorded from a retry on (``resume``): their start is not in the file."""
    answered = [x for x in recording.exchanges if x.legs and x.legs[0].response is not None]
    runs = [x for x in answered if not x.mid_flow]
    return runs, len(answered) - len(runs)
