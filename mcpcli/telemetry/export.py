"""Turning tracing on for a command: the OpenTelemetry SDK's provider for the ``mcp`` SDK's spans and mcpcli's own
(``mcpcli.telemetry``), exporting over OTLP/HTTP in batches — and the one way out, scrubbed.

The threat and the rule (``mcpcli.telemetry`` says what the spans hold): nothing secret may leave. ``_scrubbed`` wraps
the exporter and keeps only the attribute keys in ``ALLOWED`` — on spans and their events —, drops status
descriptions (a server's error text can quote what was sent to it) and exception messages and stack traces (an
exception's message can hold a URL with a key), and keeps links without attributes, whatever any library put there.

Imported only when tracing is asked for (``runtime.Runtime.traces``): it imports the OpenTelemetry SDK and exporter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcpcli import telemetry

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

FLUSH_SECONDS = 5.0
"""How long a command waits at its end for its spans to be sent, at most, when ``OTEL_EXPORTER_OTLP_TIMEOUT`` (or
its ``_TRACES_`` twin) does not say: a collector that is down delays a command's exit by this, never more."""

ALLOWED = frozenset(
    {
        # the mcp SDK's own, and the MCP semantic conventions'
        "mcp.method.name",
        "mcp.protocol.version",
        "jsonrpc.request.id",
        "error.type",
        "rpc.response.status_code",
        "network.transport",
        "network.protocol.name",
        "server.address",
        "server.port",
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.prompt.name",
        # the GenAI conventions', for a sampling request answered by the user's LLM
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.request.max_tokens",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        # mcpcli's
        "mcpcli.session.id",
        "mcpcli.flow.run",
        "mcpcli.flow.outcome",
        "mcpcli.flow.exit_code",
        "mcpcli.flow.rounds",
        "mcpcli.flow.attempt",
        "mcpcli.round.index",
        "mcpcli.round.request_keys",
        "mcpcli.round.request_kinds",
        "mcpcli.round.answered_by",
        "mcpcli.round.answer_bytes",
        "mcpcli.batch.flows",
        "exception.type",
    }
)
"""The attribute keys a span may leave with (``_scrubbed``): names of methods, tools, models; ids; kinds; counts."""

_provider: TracerProvider | None = None
_flush_seconds = FLUSH_SECONDS

LATER = False
"""In a worker's child: ``stop`` as the command closes does nothing; the spans are sent once the front end has the
command's exit status (``worker.child.send_spans``), so the person at the terminal never waits for a collector."""


# --- turning it on and off ------------------------------------------------------------------------------------------


def start(environ: Mapping[str, str], *, endpoint: str | None = None, service_name: str | None = None) -> str | None:
    """Turn tracing on for this process: a provider exporting over OTLP/HTTP in batches. Returns why it stays off
    instead (one line for the user), or None. The environment wins over ``endpoint`` and ``service_name`` (the
    config's). Called once per command, in the process that runs it (the worker's child takes its caller's
    environment first, so a warm command exports with its own settings, never another caller's)."""
    global _provider, _flush_seconds
    if telemetry.ON:
        return None
    exporters = [e.strip().lower() for e in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if e.strip()]
    if exporters and exporters != ["otlp"]:
        return f"OTEL_TRACES_EXPORTER={','.join(exporters)}: mcpcli exports traces over OTLP only; tracing is off."
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol not in (None, "", "http/protobuf"):
        return f"OTLP protocol {protocol!r}: mcpcli sends http/protobuf only; tracing is off."
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return "Tracing is asked for, but the OpenTelemetry SDK is not installed: pip install 'mcpcli[otel]'."
    from mcpcli import __version__

    timeout = _seconds(environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"))
    _flush_seconds = timeout or FLUSH_SECONDS
    given = {"service.name": service_name or "mcpcli", "service.version": __version__}
    if environ.get("OTEL_SERVICE_NAME"):
        given.pop("service.name")  # Resource.create reads it, and OTEL_RESOURCE_ATTRIBUTES
    where = None
    if endpoint and not (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    ):
        where = endpoint.rstrip("/") + "/v1/traces"
    exporter = OTLPSpanExporter(endpoint=where, timeout=_flush_seconds)
    provider = TracerProvider(resource=Resource.create(given))
    provider.add_span_processor(_facts_processor())
    provider.add_span_processor(BatchSpanProcessor(_scrubbed(exporter), export_timeout_millis=_flush_seconds * 1000))
    trace.set_tracer_provider(provider)
    _provider, telemetry.ON = provider, True
    return None


def stop() -> None:
    """Send what is left and stop (the command's end): bounded by ``FLUSH_SECONDS`` or the OTLP timeout."""
    global _provider
    if LATER:
        return
    provider, _provider = _provider, None
    telemetry.ON = False
    if provider is None:
        return
    import logging

    # A collector that is down is the user's business, said once by the exporter's log (our log file), not a failure.
    with contextlib.suppress(Exception):
        provider.force_flush(int(_flush_seconds * 1000))
    logging.getLogger("opentelemetry").disabled = True  # shutting down twice, or late, logs noise only
    with contextlib.suppress(Exception):
        provider.shutdown()


def _seconds(text: str | None) -> float | None:
    """An OTLP timeout: the spec says milliseconds; the Python exporter reads seconds. Both are taken: a value
    over 120 is milliseconds."""
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    if value is None or value <= 0:
        return None
    return value / 1000 if value > 120 else value


# --- the SDK's spans given their facts; what leaves, scrubbed -------------------------------------------------------


def _facts_processor() -> Any:
    """The processor that names the ``mcp`` SDK's request spans and gives them the facts only mcpcli knows. Built
    here, not at import, so importing this module costs nothing of the SDK until tracing starts."""
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.trace import SpanKind

    class Facts(SpanProcessor):
        """Names the ``mcp`` SDK's span per request by the MCP conventions (``METHOD TARGET``) and gives it what the
        SDK cannot know: the transport, server and protocol version, the tool, the flow's session."""

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            attributes = span.attributes or {}
            method = attributes.get("mcp.method.name")
            if span.kind is not SpanKind.CLIENT or not isinstance(method, str) or not span.name.startswith("MCP send"):
                return
            target = span.name.removeprefix(f"MCP send {method}").strip()
            span.update_name(f"{method} {target}".strip())
            span.set_attributes(telemetry.request_facts(method, target))

    return Facts()


def _scrubbed(exporter: Any) -> Any:
    """``exporter`` behind the one way out: every span is copied with only ``ALLOWED`` attribute keys (its events'
    too), a status without description and links without attributes, whatever any library put on it; nothing else
    ever reaches the exporter."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Status

    def clean(span: ReadableSpan) -> ReadableSpan:
        """A copy of ``span`` that keeps what may leave (ids, names, kinds, counts) and nothing of what may not."""
        attributes = {k: v for k, v in (span.attributes or {}).items() if k in ALLOWED}
        events = [
            Event(e.name, {k: v for k, v in (e.attributes or {}).items() if k in ALLOWED}, e.timestamp)
            for e in span.events
        ]
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=attributes,
            events=events,
            links=[type(link)(link.context, {}) for link in span.links],
            kind=span.kind,
            status=Status(span.status.status_code),  # no description: a server's or an exception's words
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    class Scrubbed(SpanExporter):
        """The one way out: only ``ALLOWED`` attribute keys, no descriptions, no exception messages."""

        def export(self, spans: Sequence[ReadableSpan]) -> Any:
            return exporter.export([clean(span) for span in spans])

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return bool(exporter.force_flush(timeout_millis))

    return Scrubbed()
