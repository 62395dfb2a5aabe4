"""An MCP server built with the SDK whose tool takes three rounds, traced itself when ``--otlp URL`` is given.

``python tests/traced_server.py [--http HOST:PORT] [--otlp http://127.0.0.1:PORT]`` (stdio by default).

``ship(item)`` asks, one round each: ``creds`` (a form with a password), ``llm`` (a completion from the client's
LLM), ``sure`` (a confirmation). Its request state and its result carry markers (``STATE_MARKER``,
``RESULT_MARKER``) and the password it received, so a test can grep what a trace receiver got for them. With
``--otlp``, the server's own spans (the SDK's ``OpenTelemetryMiddleware``, on by default) go to that receiver
under ``service.name`` ``traced-server``, parented by the ``traceparent`` each request carries in ``_meta``.
"""

from __future__ import annotations

import argparse
import json

import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from servers import serve

STATE_MARKER = "STATE-8f3a1c-never-in-a-span"
RESULT_MARKER = "RESULT-51d0be-never-in-a-span"


def _form(message: str, schema: dict[str, object]) -> t.ElicitRequest:
    return t.ElicitRequest(params=t.ElicitRequestFormParams(message=message, requested_schema=schema))


def build() -> MCPServer:
    server = MCPServer("traced")

    @server.tool()
    async def ship(item: str, ctx: Context) -> t.CallToolResult | t.InputRequiredResult:
        """Three rounds: credentials, an LLM's word, a confirmation; then the result."""
        got = json.loads(ctx.request_state or "{}")
        got.pop("marker", None)
        for key, response in (ctx.input_responses or {}).items():
            got[key] = response.model_dump(mode="json", exclude_none=True)

        def ask(key: str, request: t.InputRequest) -> t.InputRequiredResult:
            state = json.dumps({**got, "marker": STATE_MARKER})
            return t.InputRequiredResult(input_requests={key: request}, request_state=state)

        if "creds" not in got:
            schema = {
                "type": "object",
                "properties": {"user": {"type": "string"}, "password": {"type": "string", "title": "Password"}},
                "required": ["user", "password"],
            }
            return ask(
                "creds", t.ElicitRequest(params=t.ElicitRequestFormParams(message="Who?", requested_schema=schema))
            )
        if "llm" not in got:
            params = {"messages": [{"role": "user", "content": {"type": "text", "text": f"Say yes to {item}"}}]}
            return ask(
                "llm",
                t.CreateMessageRequest(params=t.CreateMessageRequestParams.model_validate({**params, "maxTokens": 40})),
            )
        if "sure" not in got:
            schema = {"type": "object", "properties": {"yes": {"type": "boolean"}}, "required": ["yes"]}
            return ask(
                "sure", t.ElicitRequest(params=t.ElicitRequestFormParams(message="Ship?", requested_schema=schema))
            )
        password = got["creds"].get("content", {}).get("password")
        text = f"{RESULT_MARKER} shipped {item} (password {password})"
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)])

    return server


def trace_to(endpoint: str) -> None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "traced-server"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
    trace.set_tracer_provider(provider)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http")
    parser.add_argument("--otlp")
    args = parser.parse_args()
    if args.otlp:
        trace_to(args.otlp)
    serve(build(), args.http)


if __name__ == "__main__":
    main()
