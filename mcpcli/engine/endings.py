"""How a flow's run ended, in one line for its person: a dead transport, a refused request, an error dressed as a
result. Shared by every body that drives a flow (``commands.run``, a view's calls, ``batch``)."""

from __future__ import annotations

from mcpcli.engine.flow import Flow
from mcpcli.engine.steps import Outcome
from mcpcli.errors import DRESSED_RPC_ERROR, McpcliError, ServerError, lone
from mcpcli.net.connection import transport_failure


async def ending_of(flow: Flow, exc: BaseException) -> BaseException:
    """What a run that raised ``exc`` ends with: an ``McpcliError`` as it is; a dead transport as one line (exit 4,
    the session kept waiting); anything else — Ctrl-C, a signal, a bug — with the session put back to waiting."""
    single = lone(exc)
    if isinstance(single, McpcliError):
        return single
    if isinstance(single, Exception) and (why := transport_failure(single)) is not None:
        return await flow.lost(why)
    await flow.interrupted()
    return exc


_LISTED_BY = {"tools/call": "mcpcli tools", "prompts/get": "mcpcli prompts", "resources/read": "mcpcli resources"}


def refused_hint(flow: Flow, rpc_code: int | None) -> str | None:
    """What to do when the server refused the request itself as naming something it does not have or with bad
    parameters (-32602; -32002, resource not found): look at what it lists."""
    if flow.call is None or rpc_code not in (-32602, -32002):
        return None
    listing = _LISTED_BY.get(flow.call.method)
    what = "the URI" if flow.call.method == "resources/read" else "the name and the arguments"
    return f"Check {what} against what the server lists: {listing}" if listing else None


def _result_text(outcome: Outcome) -> str | None:
    """The one text of an ``isError`` tool result, if that is what it is."""
    content = outcome.result.get("content") or []
    if not outcome.result.get("isError") or len(content) != 1 or content[0].get("type") != "text":
        return None
    text = content[0].get("text")
    return text if isinstance(text, str) else None


def error_result(outcome: Outcome) -> Outcome:
    """A JSON-RPC error dressed as an ``isError`` result is a protocol error: exit 4, like any other."""
    text = _result_text(outcome)
    if text is not None and (match := DRESSED_RPC_ERROR.fullmatch(text.strip())):
        code, message = int(match.group(1)), match.group(2).strip()
        raise ServerError(f"The server answered with an error: {message} (code {code}).")
    return outcome


def wanted_back_channel(outcome: Outcome) -> bool:
    """fastmcp's wording for a tool that asked over the back-channel on 2026-07-28 (only a hint depends on it)."""
    text = (_result_text(outcome) or "").lower()
    return "server-initiated request" in text and "2026-07-28" in text
