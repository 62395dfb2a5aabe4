"""How every command connects: the one place that builds a ``ConnectOptions`` from a run — how it signs in
(``credentials``), what each connection declares and is bounded by (``declared``), and where the server's log lines
go (``with_server_logs``) — so that ``tools``, the app's lists, completion, ``replay`` and ``call`` all see a server
the same way. Which server it is comes from ``Runtime.resolve``. Imported only by commands that talk to a server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from mcpcli.auth import Credentials
from mcpcli.commands.seat import at_terminal
from mcpcli.errors import McpcliError
from mcpcli.net.connection import ConnectOptions

if TYPE_CHECKING:
    from mcp.client.session import LoggingFnT

    from mcpcli.commands.runtime import Runtime
    from mcpcli.settings.targets import Target


def credentials(rt: Runtime, *, interactive: bool) -> Credentials:
    """How this run signs in to an HTTP server: ``--bearer``, else the config, else OAuth (a browser only when
    ``interactive``: a person is at the terminal)."""
    return Credentials(interactive=interactive, bearer=rt.g.bearer, token_store=rt.process.token_store)


def with_server_logs(options: ConnectOptions, rt: Runtime, say: Callable[[str], None]) -> ConnectOptions:
    """``--log-level``: the opt-in and where each server log line goes (``say``); without it, ``options`` as they
    are (no opt-in, no printer)."""
    level = rt.log_level()
    if level is None:
        return options
    from mcpcli.terminal.server_logs import log_printer

    printer = cast("LoggingFnT", log_printer(level, say))  # takes the SDK's params, typed Any there (no SDK import)
    return replace(options, log_level=level, on_log=printer)


def declared(
    rt: Runtime,
    target: Target,
    llm_name: str | None = None,
    *,
    person: bool | None = None,
    presets: bool = False,
    sampling_policy: str | None = None,
    later: bool = False,
) -> ConnectOptions:
    """The options of a connection to ``target`` with what every connection of this run declares and is bounded
    by — the one place that decides it, so that ``tools``, the app's lists and completion see what ``call`` sees.

    The protocol, the limits, whether sampling offers tool use (only when the provider that would answer, ``--llm``
    or the default, has a ``tools`` model), and which back-channel capabilities the pre-2026 handshake declares:
    only what this run can answer, since such a question cannot wait for a resume — roots always (the working
    directory answers), elicitation with a ``person`` to ask (default: a terminal) or ``presets``, sampling with a
    provider whose policy lets it answer (``ask`` needs the person). The 2026-07-28 era declares all three
    (``ConnectOptions.handshake_offers``). ``later``: all three too — a run that only lists (nothing is asked
    while listing, and the list shows what a call could use), or one told ``--no-input`` (what is asked is the
    exit-3 document's, answered by a resume that starts the call over; a result that comes anyway after the
    refusal is printed, never thrown away). The rest (credentials, tracer, answerers) the caller ``replace``s in.
    """
    person = at_terminal() if person is None else person
    offers = {"roots"}
    if later:
        offers |= {"elicitation", "sampling"}
    if person or presets:
        offers.add("elicitation")
    if rt.settings.providers:
        policy = sampling_policy or rt.settings.sampling.policy
        if policy == "always" or (person and policy != "never"):
            offers.add("sampling")
    return ConnectOptions(
        target,
        rt.paths,
        protocol=rt.protocol(),
        bounds=rt.bounds(),
        sampling_tools=_sampling_tools(rt, llm_name),
        handshake_offers=frozenset(offers),
    )


def _sampling_tools(rt: Runtime, llm_name: str | None) -> bool:
    if not rt.settings.providers:
        return False
    from mcpcli import llm

    try:
        _name, provider = llm.resolve_provider(rt.settings, llm_name)
    except McpcliError:
        return False
    return any("tools" in m.tags for m in provider.models)
