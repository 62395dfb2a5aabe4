"""A real OTLP/HTTP receiver for the tracing tests: ``POST /v1/traces`` on 127.0.0.1, decoded with OpenTelemetry's
own protobuf messages (``opentelemetry-proto``), every body kept as received so a test can grep all of it."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    """One received span, flattened: ids as hex, attributes as Python values."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    service: str
    scope: str
    attributes: dict[str, Any]
    links: list[tuple[str, str]]
    events: list[tuple[str, dict[str, Any]]]
    status: int


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def _attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


@dataclass
class Receiver:
    """What arrived: the raw bodies (decompressed) and the spans they held."""

    port: int = 0
    bodies: list[bytes] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[Span] = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(
                        Span(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            kind=s.kind,
                            service=str(resource.get("service.name")),
                            scope=scope_spans.scope.name,
                            attributes=_attributes(s.attributes),
                            links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                            events=[(e.name, _attributes(e.attributes)) for e in s.events],
                            status=s.status.code,
                        )
                    )
        with self.lock:
            self.bodies.append(body)
            self.spans.extend(found)

    def everything(self) -> bytes:
        """Every byte received, for a test that greps it for secrets."""
        with self.lock:
            return b"".join(self.bodies)

    def named(self, prefix: str) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.name.startswith(prefix)]

    def wait_for(self, count: int, prefix: str = "", timeout: float = 15.0) -> list[Span]:
        """The spans whose name starts with ``prefix``, once at least ``count`` arrived (they are sent in batches)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(found := self.named(prefix)) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"{count} spans named {prefix!r}… expected, got {[s.name for s in self.spans]}")

    def clear(self) -> None:
        with self.lock:
            self.bodies.clear()
            self.spans.clear()


def serve() -> Iterator[Receiver]:
    """Run a receiver until the generator is closed (a fixture's body)."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.take(body)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
