"""Mock: a recording served as an MCP server, for any client (built on the SDK's lowlevel ``Server``).

It offers what the recorded server offered: its name, version and instructions, its listings (several
recordings: their items together, the first of a name wins), and for each recorded flow the same rounds.

A flow is a list of ``Step``s — the questions of one round and the answers recorded for them — and the final
result. Whatever era the client speaks, the steps are the same: a 2026-07-28 client gets each round as an
``InputRequiredResult`` with a ``requestState`` of the mock's own (which flows still match, and which step is
next: authenticated with a key of this process, never the recorded one); a pre-2026 client is asked each
question over the back-channel, mid-call. So a recording made against a pre-2026 server is served to either.

A retry (or a back-channel reply) is matched by its place in the flow and by its answers: an answer the
recording hides (``[secret]``) matches any value, roots and sampling replies match any; otherwise a different
answer is a ``-32602`` error naming the first difference. A request the recording does not have is a
``-32601``/``-32602`` error naming what it has.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcpcli.engine.replay import ABSENT, first_difference, normalize
from mcpcli.state.recording import HIDDEN, LISTING_METHODS, Exchange, Recording, back_channel_key

M = TypeVar("M", bound=BaseModel)

LOOSE = ("roots/list", "sampling/createMessage")
"""Questions whose recorded reply is not checked: the client's directory and its LLM differ from run to run."""
LIST_ITEMS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
"""Each listing's array of items."""


@dataclass
class Step:
    """One round of questions and the answers the recording gave them (request key → wire JSON)."""

    questions: dict[str, dict[str, Any]]
    answers: dict[str, Any]


@dataclass
class Flow:
    method: str
    name: str
    arguments: dict[str, Any] | None
    steps: list[Step]
    final: dict[str, Any]
    """The recorded final response message: ``result`` or ``error``."""
    label: str = ""


@dataclass
class Served:
    """What a set of recordings serves."""

    name: str = "mcpcli-mock"
    version: str = ""
    instructions: str | None = None
    listings: dict[str, dict[str, Any]] = field(default_factory=dict)
    flows: list[Flow] = field(default_factory=list)


def flows_of(exchange: Exchange) -> Flow | None:
    """A recorded flow as steps; None when the recording does not hold its end."""
    steps: list[Step] = []
    legs = exchange.legs
    for index, leg in enumerate(legs):
        if leg.response is None:
            return None
        requests = [a.request for a in leg.asked]
        for n, asked in enumerate(leg.asked):  # pre-2026: one question at a time, mid-call
            key = back_channel_key(requests, n)
            reply = (asked.reply or {}).get("result", {"action": "cancel"})
            steps.append(
                Step({key: {k: v for k, v in asked.request.items() if k in ("method", "params")}}, {key: reply})
            )
        result = leg.response.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            if index + 1 >= len(legs):
                return None  # the flow stopped here: there is no answer to check, nor a result to give
            questions = result["inputRequests"] if isinstance(result.get("inputRequests"), dict) else {}
            answers = legs[index + 1].params.get("inputResponses")
            steps.append(Step(dict(questions), dict(answers) if isinstance(answers, dict) else {}))
            continue
        return Flow(exchange.method, exchange.name, exchange.arguments, steps, leg.response, exchange.label())
    return None


def served(recordings: Sequence[Recording]) -> Served:
    """The server several recordings make together (the first names it)."""
    out = Served()
    first = next((r for r in recordings if r.server_info), None)
    if first is not None and first.server_info is not None:
        out.name = str(first.server_info.get("name") or out.name)
        out.version = str(first.server_info.get("version") or "")
    out.instructions = next((r.instructions for r in recordings if r.instructions), None)
    for recording in recordings:
        for exchange in recording.exchanges:  # every page of every listing, one item per name
            method, response = exchange.method, exchange.legs[0].response or {}
            result = response.get("result")
            if method not in LISTING_METHODS or not isinstance(result, dict):
                continue
            items = out.listings.setdefault(method, {LIST_ITEMS[method]: []})[LIST_ITEMS[method]]
            have = {_item_name(i) for i in items}
            found = result.get(LIST_ITEMS[method])
            items += [i for i in found if _item_name(i) not in have] if isinstance(found, list) else []
        out.flows += [f for x in recording.flows if not x.mid_flow and (f := flows_of(x)) is not None]
    return out


def _item_name(item: Any) -> str:
    return str(item.get("name") or item.get("uri") or item.get("uriTemplate")) if isinstance(item, dict) else ""


# --- the mock's own requestState ------------------------------------------------------------------------------------


class States:
    """The mock's ``requestState``: the flows still matching and the next step, authenticated (HMAC)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def seal(self, candidates: list[int], step: int) -> str:
        body = base64.urlsafe_b64encode(json.dumps([candidates, step]).encode()).decode()
        return body + "." + hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()[:32]

    def open(self, state: str) -> tuple[list[int], int]:
        body, _, mac = state.rpartition(".")
        good = hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()[:32]
        if not body or not hmac.compare_digest(mac, good):
            raise MCPError(t.INVALID_PARAMS, "Invalid or expired requestState")
        candidates, step = json.loads(base64.urlsafe_b64decode(body))
        return list(candidates), int(step)


# --- matching --------------------------------------------------------------------------------------------------------


def _masked(recorded: Any, given: Any) -> Any:
    """``given`` with every value the recording hides masked the same way (a hidden answer matches any value)."""
    if isinstance(recorded, dict) and isinstance(given, dict):
        return {k: (_masked(recorded[k], v) if k in recorded else v) for k, v in given.items()}
    if isinstance(recorded, str) and recorded in HIDDEN:
        return recorded
    return given


def answer_difference(step: Step, given: Mapping[str, Any]) -> str | None:
    """Why ``given`` is not the answer the recording has for ``step`` (None: it is)."""
    for key, recorded in step.answers.items():
        method = str(step.questions.get(key, {}).get("method", ""))
        if key not in given:
            return f"no answer to {key!r}"
        if method in LOOSE:
            continue
        got = _masked(recorded, given[key])
        found = first_difference(normalize(recorded), normalize(got))
        if found is not None:
            pointer, want, have = found
            return f"the answer to {key!r} differs at {pointer or '/'}: recorded {_short(want)}, got {_short(have)}"
    extra = sorted(set(given) - set(step.answers))
    return f"an answer to {extra[0]!r}, which was not asked" if extra else None


def _short(value: Any) -> str:
    text = "(absent)" if value is ABSENT else json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 120 else text[:120] + "..."


class Mock:
    """Answers requests from ``served``: listings, and flows step by step."""

    def __init__(self, what: Served) -> None:
        self.what = what
        self.states = States()

    # listings

    def listing(self, method: str) -> dict[str, Any]:
        return self.what.listings.get(method) or {LIST_ITEMS[method]: []}

    # flows

    def candidates(self, method: str, name: str, arguments: Mapping[str, Any] | None) -> list[int]:
        """The recorded flows a call may be replaying: same method, name and arguments. None is an ``MCPError`` that
        says what the recording has instead (its names, or the first difference in arguments), as a server would refuse
        the call."""
        named = [i for i, f in enumerate(self.what.flows) if f.method == method and f.name == name]
        kind = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}[method]
        if not named:
            names = sorted({f.name for f in self.what.flows if f.method == method})
            listed = ", ".join(names[:20]) or "none"
            code = t.INVALID_PARAMS if method != "tools/call" or names else t.METHOD_NOT_FOUND
            raise MCPError(code, f"The recording has no {method} of {kind} {name!r}; it has: {listed}.")
        wanted = dict(arguments or {})
        matching = [i for i in named if (self.what.flows[i].arguments or {}) == wanted]
        if not matching:
            recorded = self.what.flows[named[0]].arguments or {}
            pointer, want, have = first_difference(recorded, wanted) or ("", ABSENT, ABSENT)
            raise MCPError(
                t.INVALID_PARAMS,
                f"The recording has {kind} {name!r} with other arguments: at {pointer or '/'} recorded"
                f" {_short(want)}, got {_short(have)}.",
            )
        return matching

    def advance(self, candidates: list[int], step: int, given: Mapping[str, Any]) -> list[int]:
        """The candidates whose ``step`` was answered as ``given``; an error naming the difference when none."""
        kept = [i for i in candidates if step < len(self.what.flows[i].steps)]
        fits = [i for i in kept if answer_difference(self.what.flows[i].steps[step], given) is None]
        if fits:
            return fits
        if not kept:
            raise MCPError(t.INVALID_PARAMS, "The recorded flow has no more rounds to answer.")
        why = answer_difference(self.what.flows[kept[0]].steps[step], given)
        raise MCPError(t.INVALID_PARAMS, f"Not the recorded answer (round {step + 1}): {why}.")

    async def serve(
        self, ctx: Any, method: str, name: str, arguments: Mapping[str, Any] | None, params: Any
    ) -> dict[str, Any]:
        """One request of a flow: the next round's questions, or the recorded result (as wire JSON)."""
        modern = str(getattr(ctx, "protocol_version", "")) in MODERN_PROTOCOL_VERSIONS
        state = getattr(params, "request_state", None)
        responses = getattr(params, "input_responses", None) or {}
        if state:
            candidates, step = self.states.open(state)
            given = {k: _wire(v) for k, v in responses.items()}
            candidates = self.advance(candidates, step, given)
            step += 1
        else:
            candidates, step = self.candidates(method, name, arguments), 0
        flow = self.what.flows[candidates[0]]
        while step < len(flow.steps):
            questions = flow.steps[step].questions
            if modern:
                asked = {"inputRequests": questions} if questions else {}
                return {"resultType": "input_required", **asked, "requestState": self.states.seal(candidates, step)}
            given = {key: await _ask(ctx, question) for key, question in questions.items()}
            candidates = self.advance(candidates, step, given)
            flow = self.what.flows[candidates[0]]
            step += 1
        final = flow.final
        if isinstance(final.get("error"), dict):
            error = final["error"]
            raise MCPError(int(error.get("code", t.INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
        result = dict(final.get("result") or {})
        result.pop("resultType", None)
        return result


def _wire(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return model


async def _ask(ctx: Any, question: Mapping[str, Any]) -> Any:
    """A recorded question over the back-channel (a pre-2026 client): the client's reply as wire JSON."""
    method = question.get("method")
    payload = {"method": method, "params": question.get("params") or {}}
    kinds: dict[Any, tuple[Any, Any]] = {
        "elicitation/create": (t.ElicitRequest, t.ElicitResult),
        "sampling/createMessage": (t.CreateMessageRequest, t.CreateMessageResult),
        "roots/list": (t.ListRootsRequest, t.ListRootsResult),
    }
    if method not in kinds:
        raise MCPError(t.INTERNAL_ERROR, f"The recording asks {method!r}, which the mock cannot ask.")
    request_type, result_type = kinds[method]
    if method == "roots/list":
        payload.pop("params")
    request = request_type.model_validate(payload)
    meta = ServerMessageMetadata(related_request_id=getattr(ctx, "request_id", None))
    try:
        reply = await ctx.session.send_request(request, result_type, metadata=meta)
    except MCPError as exc:
        return {"error": {"code": exc.code, "message": exc.error.message}}
    return _wire(reply)


def build_server(recordings: Sequence[Recording]) -> Server[Any]:
    """The lowlevel ``Server`` that serves ``recordings`` (only the kinds they hold are offered)."""
    what = served(recordings)
    mock = Mock(what)
    methods = {f.method for f in what.flows} | set(what.listings)
    handlers: dict[str, Any] = {}

    def typed(model: type[M], data: Mapping[str, Any]) -> M:
        return model.model_validate(data)

    if "tools/list" in methods or "tools/call" in methods:

        async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
            return typed(t.ListToolsResult, mock.listing("tools/list"))

        async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult | t.InputRequiredResult:
            result = await mock.serve(ctx, "tools/call", params.name, params.arguments, params)
            if result.get("resultType") == "input_required":
                return typed(t.InputRequiredResult, result)
            return typed(t.CallToolResult, result)

        handlers |= {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if "prompts/list" in methods or "prompts/get" in methods:

        async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
            return typed(t.ListPromptsResult, mock.listing("prompts/list"))

        async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult | t.InputRequiredResult:
            result = await mock.serve(ctx, "prompts/get", params.name, params.arguments, params)
            if result.get("resultType") == "input_required":
                return typed(t.InputRequiredResult, result)
            return typed(t.GetPromptResult, result)

        handlers |= {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}
    if methods & {"resources/list", "resources/templates/list", "resources/read"}:

        async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
            return typed(t.ListResourcesResult, mock.listing("resources/list"))

        async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
            return typed(t.ListResourceTemplatesResult, mock.listing("resources/templates/list"))

        async def read_resource(
            ctx: Any, params: t.ReadResourceRequestParams
        ) -> t.ReadResourceResult | t.InputRequiredResult:
            result = await mock.serve(ctx, "resources/read", str(params.uri), None, params)
            if result.get("resultType") == "input_required":
                return typed(t.InputRequiredResult, result)
            return typed(t.ReadResourceResult, result)

        handlers |= {
            "on_list_resources": list_resources,
            "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource,
        }
    return Server(what.name, version=what.version, instructions=what.instructions, **handlers)


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    await web.serve()
