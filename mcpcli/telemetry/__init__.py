"""OpenTelemetry traces of flows: off unless asked for, and free when off.

**On** when ``[telemetry] enabled = true`` says so, or, without that setting, when the standard environment names
an exporter or an endpoint (``OTEL_TRACES_EXPORTER=otlp``, ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none`` keep it off.
**Off**, nothing here imports OpenTelemetry's SDK or exporter, and every helper returns at its first line: the
``mcp`` SDK's own span per request goes to the OpenTelemetry API's no-op provider.

**On**, the ``mcp`` SDK's spans (one client span per JSON-RPC request, whose context it puts in the request's
``_meta`` as ``traceparent``/``tracestate``) get a provider, a parent and their facts, rather than being doubled::

    flow tools/call NAME        one per run (mcpcli.flow.run: start or resume), a span of mcpcli's
    ├─ tools/call NAME          the SDK's span per request, named and given facts (``request_facts``)
    ├─ round N                  what was asked (request keys and kinds), how each was answered
    │  └─ chat MODEL            a sampling request answered by the user's LLM (GenAI conventions)
    └─ tools/call NAME          the retry, with the answers

A flow's trace context is stored with its session (``trace_context``: ``root``, the span of the run that started
it, and ``parked``, the last run that left it waiting), so ``resume`` — from another shell, another host on a shared
store, or after ``sessions import`` — continues the same trace, linked to the run that parked. ``TRACEPARENT`` in the
environment (a CI job's span) parents a new flow.

**The threat and the rule.** Spans leave for a collector other people read. Nothing secret may go: no answer value,
secret, header, token, request state or result body. The spans made here carry keys, kinds, counts and sizes only;
and the one way out (``telemetry.export``, around the exporter) keeps only the attribute keys it allows and drops status
descriptions and exception messages and stack traces, whatever a library put there (a server's error text can quote
what was sent to it; an exception's message can hold a URL with a key).

Here: the hooks every layer calls (each a no-op while off). ``telemetry.export``, imported only once tracing is on,
gives the ``mcp`` SDK and these hooks a provider, and is the one way out.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span

T = TypeVar("T")

ON = False
"""Whether this process traces (``export.start`` turned it on)."""

SCOPE = "mcpcli"
"""The instrumentation scope of mcpcli's own spans (the ``mcp`` SDK's are ``mcp-python-sdk``)."""

KEYS_MAX = 64
"""A round's request keys a span names, at most (a server may ask any number)."""
KEY_MAX = 128
"""Characters of a request key a span keeps."""

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def wanted(environ: Mapping[str, str], enabled: bool | None) -> bool:
    """Whether tracing is asked for: ``[telemetry] enabled`` (``enabled``) when set, else the standard environment."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if enabled is not None:
        return enabled
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


# --- what a flow's spans say ------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """The running flow's span and what its requests' spans borrow from it."""

    span: Span
    session_id: str | None = None
    stored: dict[str, str] | None = None
    """The session's ``trace_context`` this run continues (resume), or None (a new flow)."""
    rounds: int = 0
    claimed: bool = True
    """Whether a flow took this span as its run's (``flow_run``): one opened for a connection waits for its flow."""
    ended: bool = False
    """Whether how the run ended was said already."""


@dataclass
class _Round:
    span: Span
    keys: list[str]
    how: dict[str, str] = field(default_factory=dict)
    size: int = 0


_RUN: ContextVar[_Run | None] = ContextVar("mcpcli_trace_run", default=None)
_ROUND: ContextVar[_Round | None] = ContextVar("mcpcli_trace_round", default=None)
_CONNECTION: ContextVar[dict[str, Any] | None] = ContextVar("mcpcli_trace_connection", default=None)


def connected(kind: str, url: str | None, protocol: str | None) -> None:
    """The connection the next requests go over (``net.connection``): transport, server, protocol version. No path,
    query or user of a URL: only its host and port."""
    if not ON:
        return
    facts: dict[str, Any] = {"network.transport": "pipe" if kind == "stdio" else "tcp" if kind == "http" else "inproc"}
    if kind == "http" and url:
        facts |= {"network.protocol.name": "http", **_server(url)}
    if protocol:
        facts["mcp.protocol.version"] = protocol
    _CONNECTION.set(facts)


def connecting(session: Any, connection: AbstractAsyncContextManager[T]) -> AbstractAsyncContextManager[T]:
    """``connection`` (a flow's, ``connect()``) inside the flow's span, opened before it connects: the handshake's
    and the listings' requests belong to the flow too. ``session``: the stored session a resume continues. The
    flow's ``flow_run`` then takes this span as its own. Off: ``connection`` itself."""
    if not ON:
        return connection
    return _connecting(session, connection)


@contextlib.asynccontextmanager
async def _connecting(session: Any, connection: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
    with _run_span(getattr(session, "method", "") or "", getattr(session, "name", "") or "", session, claimed=False):
        async with connection as client:
            yield client


@contextlib.contextmanager
def flow_run(method: str, name: str, session: Any = None) -> Iterator[None]:
    """A run of a flow, as the current span: its requests' spans are its children. ``session``: the stored session a
    resume continues (its ``trace_context`` parents this run, linked to the run that parked it), or None for a new
    flow (parented by ``TRACEPARENT`` when set, linked to the span around it: a batch's). A span opened for the
    flow's connection (``connecting``) is taken as this run's."""
    if not ON:
        yield
        return
    run = _RUN.get()
    if run is None or run.claimed:
        with _run_span(method, name, session, claimed=True):
            yield
        return
    run.claimed = True
    run.span.update_name(_run_name(method, name, session))
    run.span.set_attributes({"mcp.method.name": method, **_target_attributes(method, name)})
    try:
        yield
    except BaseException as exc:
        _ended(run, exc)
        raise


@contextlib.contextmanager
def _run_span(method: str, name: str, session: Any, *, claimed: bool) -> Iterator[None]:
    """A flow run's own span, current while it runs: a resume's under the stored trace and linked to the run that
    parked it, a new flow's linked to the span around it (a batch's). A run that raises says how it ended
    (``_ended``); ``claimed`` False leaves it for ``flow_run`` to name once the request is known."""
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind

    stored = getattr(session, "trace_context", None) if session is not None else None
    parent, links = _parent(stored)
    if session is None and (around := trace.get_current_span().get_span_context()).is_valid:
        links.append(Link(around))
    attributes: dict[str, Any] = {"mcpcli.flow.run": "resume" if session else "start"}
    if method:
        attributes["mcp.method.name"] = method
    attributes.update(_target_attributes(method, name))
    tracer = trace.get_tracer(SCOPE)
    with tracer.start_as_current_span(
        _run_name(method, name, session),
        context=parent,
        kind=SpanKind.INTERNAL,
        links=links,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        run = _Run(span, stored=stored, claimed=claimed)
        token = _RUN.set(run)
        try:
            if session is not None:
                note_session(session.id)
            yield
        except BaseException as exc:
            _ended(run, exc)
            raise
        finally:
            span.set_attribute("mcpcli.flow.rounds", run.rounds)
            _RUN.reset(token)


def _run_name(method: str, name: str, session: Any) -> str:
    return f"{'resume' if session else 'flow'} {method} {name}".strip()


def _parent(stored: Mapping[str, str] | None) -> tuple[Any, list[Any]]:
    """The context a run's span starts in, and its links: a stored flow's root (linked to the run that parked it),
    ``TRACEPARENT`` from the environment, or a new trace."""
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Link

    links: list[Any] = []
    if stored:
        root = _span_context(stored.get("root"))
        if root is not None:
            parked = _span_context(stored.get("parked"))
            if parked is not None and parked != root:
                links.append(Link(parked))
            return trace.set_span_in_context(trace.NonRecordingSpan(root), Context()), links
    outer = _span_context(os.environ.get("TRACEPARENT"))
    if outer is not None:
        return trace.set_span_in_context(trace.NonRecordingSpan(outer), Context()), links
    return Context(), links


def _parsed(traceparent: Any) -> tuple[int, int, int] | None:
    """A W3C ``traceparent``'s trace id, span id and flags; None for anything else (all-zero ids included)."""
    found = _TRACEPARENT.fullmatch(traceparent.strip().lower()) if isinstance(traceparent, str) else None
    if found is None or int(found[1], 16) == 0 or int(found[2], 16) == 0:
        return None
    return int(found[1], 16), int(found[2], 16), int(found[3], 16)


def _span_context(traceparent: str | None) -> Any:
    from opentelemetry.trace import SpanContext, TraceFlags

    if (ids := _parsed(traceparent)) is None:
        return None
    return SpanContext(ids[0], ids[1], is_remote=True, trace_flags=TraceFlags(ids[2]))


def _traceparent(span: Span) -> str:
    ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def _ended(run: _Run, exc: BaseException) -> None:
    """How a run that raised ended: waiting for input (exit 3), stopped (Ctrl-C, a signal), or failed — said once,
    by the innermost ``with`` the exception left."""
    from opentelemetry.trace import StatusCode

    if run.ended:
        return
    run.ended, span = True, run.span
    kind, code = type(exc).__name__, getattr(exc, "exit_code", None)
    if kind == "NeedInput" or code == 3:  # nobody could answer (or --max-rounds, or a policy said wait): parked
        span.set_attribute("mcpcli.flow.outcome", "waiting")
        if kind != "NeedInput":
            span.set_attribute("error.type", kind)
        return
    if isinstance(exc, KeyboardInterrupt) or kind in ("Cancelled", "CancelledError") or code == 130:
        span.set_attribute("mcpcli.flow.outcome", "interrupted")
        return
    span.set_attribute("mcpcli.flow.outcome", "declined" if code == 5 else "failed")
    span.set_attribute("error.type", kind)
    span.set_status(StatusCode.ERROR)


def note_session(session_id: str) -> None:
    """The running flow has its session now (saved with its first round, or resumed): its spans name it."""
    run = _RUN.get() if ON else None
    if run is not None:
        run.session_id = session_id
        run.span.set_attribute("mcpcli.session.id", session_id)


def stored_context() -> dict[str, str] | None:
    """What a session keeps of the running flow's trace (``SessionRecord.trace_context``): the root it continues (or
    this run's span, for a new flow) and this run's span, the one that parks it if it stops."""
    run = _RUN.get() if ON else None
    if run is None:
        return None
    here = _traceparent(run.span)
    root = (run.stored or {}).get("root")
    return {"root": root if root is not None and _parsed(root) else here, "parked": here}


def flow_event(kind: str, fields: Mapping[str, Any]) -> None:
    """A step of the flow's loop (``Flow.event``): its result, or a start over (the server no longer took the flow's
    state, or its task is gone)."""
    run = _RUN.get() if ON else None
    if run is None:
        return
    if kind == "restart":
        run.span.add_event("restart", {"mcpcli.flow.attempt": int(fields.get("attempt") or 0)})
    elif kind == "result":
        code = int(fields.get("exit_code") or 0)
        run.span.set_attribute("mcpcli.flow.outcome", "done")
        run.span.set_attribute("mcpcli.flow.exit_code", code)
        if code:
            from opentelemetry.trace import StatusCode

            run.span.set_attribute("error.type", "tool_error")
            run.span.set_status(StatusCode.ERROR)


@contextlib.contextmanager
def round_span(index: int, requests: Mapping[str, Mapping[str, Any]]) -> Iterator[None]:
    """One round, as the current span (an LLM's completion for it is its child): the request keys and kinds asked,
    and, as it ends, how each was answered (``answered``)."""
    run = _RUN.get() if ON else None
    if run is None:  # off, or answered apart from any run (``mcpcli answer``)
        yield
        return
    from opentelemetry import trace

    run.rounds += 1
    # A server chooses the keys, and how many: a bounded list of bounded strings, as every attribute here.
    keys = [str(key)[:KEY_MAX] for key in list(requests)[:KEYS_MAX]]
    attributes: dict[str, Any] = {
        "mcpcli.round.index": index,
        "mcpcli.round.request_keys": keys,
        "mcpcli.round.request_kinds": [_kind(wire) for wire in list(requests.values())[:KEYS_MAX]],
    }
    if run.session_id:
        attributes["mcpcli.session.id"] = run.session_id
    with trace.get_tracer(SCOPE).start_as_current_span(
        f"round {index}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        this = _Round(span, keys)
        token = _ROUND.set(this)
        try:
            yield
        finally:
            _ROUND.reset(token)
            span.set_attribute("mcpcli.round.answered_by", [this.how.get(key, "unanswered") for key in keys])
            span.set_attribute("mcpcli.round.answer_bytes", this.size)


def answered(key: str, how: str, answer: Any) -> None:
    """How the round's ``key`` was answered: flag, file, prompt, tui, app, llm, roots, replay — or declined or
    cancelled, whoever said so. Only the answer's size is kept, never its content."""
    this = _ROUND.get() if ON else None
    if this is None:
        return
    action = getattr(answer, "action", None)
    key = key[:KEY_MAX]
    this.how[key] = {"decline": "declined", "cancel": "cancelled"}.get(action, how) if isinstance(action, str) else how
    dump = getattr(answer, "model_dump_json", None)
    with contextlib.suppress(Exception):
        this.size += len(dump(by_alias=True, exclude_none=True)) if dump else 0


def answered_as(source: Any, key: str, label: str) -> str:
    """How an answer source answered ``key``, in a round span's words: a source says it itself (``answered_as``: a
    word, or a function of the key — presets tell a flag from a file), else the flow's label for it."""
    said = getattr(source, "answered_as", None)
    if callable(said):
        return str(said(key))
    return said if isinstance(said, str) else label


def _kind(wire: Mapping[str, Any]) -> str:
    """A request's kind, from its method and mode: form, url, sampling, roots."""
    method = wire.get("method") if isinstance(wire, Mapping) else None
    if method == "elicitation/create":
        params = wire.get("params")
        mode = params.get("mode") if isinstance(params, Mapping) else None
        return "url" if mode == "url" else "form"
    return {"sampling/createMessage": "sampling", "roots/list": "roots"}.get(str(method), "other")


def request_facts(method: str, target: str) -> dict[str, Any]:
    """What the ``mcp`` SDK's span for a request is given (``export``): the connection's facts, the tool or
    prompt it names, the running flow's session."""
    facts = dict(_CONNECTION.get() or {})
    facts.update(_target_attributes(method, target))
    run = _RUN.get()
    if run is not None and run.session_id:
        facts["mcpcli.session.id"] = run.session_id
    return facts


def _server(url: str) -> dict[str, Any]:
    """A URL's host and port, as ``server.address`` and ``server.port``: never its user, path or query."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {"server.address": parts.hostname, "server.port": port} if parts.hostname else {}


def _target_attributes(method: str, name: str) -> dict[str, Any]:
    if method == "tools/call" and name:
        return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if method == "prompts/get" and name:
        return {"gen_ai.prompt.name": name}
    return {}


# --- a sampling request's completion, and a batch -------------------------------------------------------------------


@dataclass
class Completion:
    """What an LLM span is told when the completion came back."""

    span: Span | None = None

    def done(self, model: str | None, input_tokens: int, output_tokens: int) -> None:
        if self.span is None:
            return
        if model:
            self.span.set_attribute("gen_ai.response.model", model)
        self.span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


@contextlib.contextmanager
def completion(api: str, base_url: str, model: str, max_tokens: int) -> Iterator[Completion]:
    """A chat completion asked of the user's LLM provider, by the GenAI semantic conventions (a client span)."""
    if not ON:
        yield Completion()
        return
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, StatusCode

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic" if api == "anthropic" else "openai",
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
    }
    attributes |= _server(base_url)
    with trace.get_tracer(SCOPE).start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield Completion(span)
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR)
            raise


@contextlib.contextmanager
def batch_span(flows: int) -> Iterator[None]:
    """A batch: its flows are traces of their own (each resumed on its own later), linked to this span."""
    if not ON:
        yield
        return
    from opentelemetry import trace

    with trace.get_tracer(SCOPE).start_as_current_span("batch", attributes={"mcpcli.batch.flows": flows}):
        yield


def trace_id(stored: Mapping[str, Any] | None) -> str | None:
    """The trace id of a session's ``trace_context`` (``sessions show``), or None."""
    ids = _parsed(stored.get("root")) if isinstance(stored, Mapping) else None
    return None if ids is None else f"{ids[0]:032x}"
