"""``call TOOL --app`` and ``resume ID --app``: the tool's view in the user's browser, bridged through this run's
own connection, while the call runs and until the view is closed.

The loopback host (``mcpcli.net.apphost``) shows the view; the bridge (``mcpcli.engine.apps``) answers it. This
body joins them to a flow: the launching call runs as every call does (asked at the terminal, or answered by
``--answer``; stored round by round), the view gets its input at once and its result when final; a ``tools/call``
from the view is a flow of its own (its rounds asked and stored alike, the view sees only the final result). What
the view says (``ui/message``, model context, logs, what was refused) goes to stderr, or with ``--json`` to stdout
as JSON Lines events an agent can read (``app_events.CliEvents``). The front end is a parameter (``AppSeat``): the
full-screen app runs the same body with its forms, its run screen's log and a consent dialog. The run ends when
the page is closed, at ``--for SECONDS``, or on Ctrl-C (``ui/resource-teardown`` first); its exit code is the
launching call's (130 on Ctrl-C).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp import Client

from mcpcli import __version__
from mcpcli.commands.app_events import AppEvents, CliEvents
from mcpcli.commands.connecting import at_terminal
from mcpcli.commands.discovery import all_pages
from mcpcli.commands.flows import (
    Seat,
    build_flow,
    drive_connected,
    ending_of,
    presets_of,
    terminal_seat,
)
from mcpcli.display import sanitize
from mcpcli.engine.apps import AppRefused, AppResource, Bridge, app_tools, load_app
from mcpcli.engine.apps import resource_uri_of as app_uri
from mcpcli.engine.arguments import build_arguments, no_such, usable_schema
from mcpcli.engine.steps import Call, NeedInput, Outcome, dump
from mcpcli.errors import ExitCode, McpcliError, UsageError
from mcpcli.settings import trust
from mcpcli.settings.targets import connection_settings

if TYPE_CHECKING:
    from mcpcli.engine.flow import Flow
    from mcpcli.net.apphost import AppHost, View
    from mcpcli.runtime import AnswerOptions, Runtime

log = logging.getLogger(__name__)

INIT_BOUND = 30.0
"""Seconds a view has, once its page is attached, to send ``ui/initialize``; then one line says it never did
(``MCPCLI_APP_INIT_SECONDS`` changes it)."""


@dataclass
class AppOptions:
    """``--app``'s companions: ``--no-browser`` (print the URL instead) and ``--for SECONDS``."""

    browser: bool = True
    seconds: float | None = None


def check_app_options(app: bool, no_browser: bool, seconds: float | None) -> AppOptions | None:
    """The options as given: ``--no-browser``/``--for`` without ``--app`` are a usage error (exit 2)."""
    if not app:
        if no_browser or seconds is not None:
            raise UsageError(
                f"{'--no-browser' if no_browser else '--for'} goes with --app.",
                hint="Add --app to open the tool's view: mcpcli call TOOL --app --no-browser",
            )
        return None
    if seconds is not None and not seconds > 0:
        raise UsageError(f"--for needs a positive number of seconds, not {seconds:g}.", hint="Give --for 60.")
    return AppOptions(browser=not no_browser, seconds=seconds)


@dataclass
class AppSeat:
    """The front end's part of an app run: who answers the rounds of the launching call and of a view's calls
    (``seat``), where what happens is said (``events``), who is asked before a view's link is opened (``ask_link``;
    None: nobody, refused) and how a page is opened (``open_url``, in a worker thread)."""

    seat: Seat
    events: AppEvents
    ask_link: Callable[[str], Awaitable[bool]] | None
    open_url: Callable[[str], object]


def terminal_app_seat(rt: Runtime, opts: AnswerOptions) -> AppSeat:
    """The CLI's: prompts at the terminal (when a person is there), events on stderr or as JSON Lines."""
    ask = None if opts.no_input or not at_terminal() else _terminal_link(rt)
    return AppSeat(terminal_seat(rt, opts), CliEvents(rt), ask, _open_browser)


async def run_app_call(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    name: str,
    pairs: list[str],
    args: str | None,
    app: AppOptions,
    *,
    where: AppSeat | None = None,
    target: Any = None,
    given: dict[str, Any] | None = None,
) -> int:
    """``call TOOL --app``: the view opens on the tool's input; the call runs; the view gets its result.

    ``where``: the front end (the terminal's by default); ``target``: the server (``rt.target()`` by default);
    ``given``: the arguments already typed (the full-screen app's form), else built from ``pairs``/``args``."""
    where = where or terminal_app_seat(rt, opts)
    target = target or rt.target()
    protocol = rt.protocol()
    rt.store.check_writable()
    trust.remember(rt.paths, target)
    connection = connection_settings(target, protocol or target.protocol or "auto")
    flow = build_flow(rt, opts, where.seat, target.label, flows, connection=connection)

    async def body(client: Client) -> int:
        tools = app_tools(await all_pages(client.list_tools, "tools"))
        tool = tools.get(name)
        if tool is None:
            raise no_such("tool", name, list(tools))
        if given is not None:
            arguments = dict(given)
        else:
            arguments = build_arguments(usable_schema(tool.get("inputSchema")), pairs, args, warn=rt.out.warning)
        launch = _launcher(flow, Call("tools/call", name, arguments))
        return await _with_view(rt, opts, flows, flow, client, tool, tools, arguments, launch, app, where)

    async with flow.keeper.running():
        return await drive_connected(rt, opts, flow, target, protocol, body)


def _launcher(flow: Flow, call: Call) -> Callable[[], Awaitable[Outcome]]:
    async def launch() -> Outcome:
        return await flow.start(call)

    return launch


def app_resume(
    rt: Runtime, opts: AnswerOptions, flows: list[Flow], flow: Flow, app: AppOptions
) -> Callable[[Client], Awaitable[int]]:
    """``resume ID --app``: a waiting flow's view reopened on its stored input, the flow continued under it (the
    flow already adopted: its lease held)."""

    async def body(client: Client) -> int:
        session = flow.session
        if session is None or session.method != "tools/call":
            raise UsageError("Only a tool call has a view to reopen.", hint="Resume it without --app.")
        tools = app_tools(await all_pages(client.list_tools, "tools"))
        tool = tools.get(session.name)
        if tool is None:
            raise no_such("tool", session.name, list(tools))
        arguments = dict(session.arguments)
        where = terminal_app_seat(rt, opts)
        return await _with_view(rt, opts, flows, flow, client, tool, tools, arguments, flow.resume, app, where)

    return body


async def _with_view(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    flow: Flow,
    client: Client,
    tool: Mapping[str, Any],
    tools: Mapping[str, Mapping[str, Any]],
    arguments: dict[str, Any],
    launch: Callable[[], Awaitable[Outcome]],
    app: AppOptions,
    where: AppSeat,
) -> int:
    from mcpcli.net.apphost import AppHost, ViewSpec

    uri = app_uri(tool)
    if uri is None:
        raise UsageError(
            f"The tool {sanitize(str(tool.get('name')))} has no app (no _meta.ui.resourceUri).",
            hint="Call it without --app; mcpcli tools marks the tools that have one.",
        )

    async def read(resource: str) -> dict[str, Any]:
        return dump(await client.read_resource(resource))

    resource = await load_app(read, uri)
    events = where.events
    asking = anyio.Lock()  # one flow asks at a time: the launching call first, then the view's calls in turn
    outcome: list[Outcome] = []
    async with AppHost() as host:
        view = await host.open_view(
            ViewSpec(
                html=resource.html,
                csp=resource.csp,
                permissions=resource.permissions,
                prefers_border=resource.prefers_border,
                title=f"{tool.get('name')} · {flow.server}",
            )
        )
        _record_view(flow, resource, view)
        url = host.page_url()
        events.url(url, opened=app.browser, renew=host.page_url)
        if app.browser:
            await anyio.to_thread.run_sync(_opener(where), url, abandon_on_cancel=True)
        bridge = Bridge(
            view=view,
            tool=tool,
            tools=tools,
            call_tool=_view_calls(rt, opts, flows, flow, client, asking, where),
            read_resource=read,
            consent_link=_consent(asking, where),
            on_event=events.said,
            host_info={"name": "mcpcli", "version": __version__},
            context=_host_context(),
            sandbox={"csp": resource.csp, "permissions": resource.permissions},
            record=lambda direction, message: _trace(flow, "app", direction=direction, message=message),
        )
        code = ExitCode.OK
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(bridge.run)
                tg.start_soon(_watch_init, host, bridge, events)
                await bridge.tool_input(arguments)
                code = await _launch(flow, bridge, launch, asking, events, outcome)
                if code == ExitCode.INPUT_REQUIRED:
                    tg.cancel_scope.cancel()
                else:
                    await _until_done(host, bridge, app.seconds, events)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                reason = "mcpcli stopped" if code is not ExitCode.INPUT_REQUIRED else "the call waits for input"
                if bridge.initialized.is_set() and not bridge.closed.is_set():
                    events.teardown(reason, answered=await bridge.teardown(reason))
                await _keep_trace(flow)
    return int(code)


async def _launch(
    flow: Flow,
    bridge: Bridge,
    launch: Callable[[], Awaitable[Outcome]],
    asking: anyio.Lock,
    events: AppEvents,
    outcome: list[Outcome],
) -> ExitCode:
    """Run the launching call; show its result (or error) and hand it to the view; its exit code."""
    from mcpcli.commands.flows import error_result

    async with asking:
        try:
            done = error_result(await launch())
        except NeedInput as need:
            await bridge.tool_cancelled(f"The call waits for input (session {need.session.id}).")
            return ExitCode(events.waiting(need))
        except McpcliError as exc:
            await bridge.tool_cancelled(exc.message)
            events.error(exc)
            return ExitCode(int(exc.exit_code))
    outcome.append(done)
    refused = await _declined(flow)
    if refused is not None:
        # The user said no: the view is told the call was cancelled; the server's answer is shown.
        await bridge.tool_cancelled(f"The call's question was {refused}.")
    code = events.result(done)
    if refused is None:
        await bridge.tool_result(done.result)
    return code


async def _declined(flow: Flow) -> str | None:
    """``"declined"``/``"cancelled"`` when the last round's answers said so (a person, or ``--decline``)."""
    if flow.session is None:
        return None
    try:
        last = await flow.keeper.last_round()
    except Exception:  # boundary: the store is only read for wording; the result stands
        log.debug("the last round could not be read", exc_info=True)
        return None
    answers = (last[0].answers or {}) if last is not None else {}
    actions = {a.get("action") for a in answers.values() if isinstance(a, Mapping)}
    return "declined" if "decline" in actions else "cancelled" if "cancel" in actions else None


async def _until_done(host: AppHost, bridge: Bridge, seconds: float | None, events: AppEvents) -> None:
    """The page closed, the view gone, or ``--for`` elapsed (Ctrl-C cancels this from outside)."""
    with anyio.move_on_after(seconds if seconds is not None else float("inf")):
        async with anyio.create_task_group() as tg:

            async def ended(event: anyio.Event, why: str) -> None:
                await event.wait()
                events.note(why)
                tg.cancel_scope.cancel()

            tg.start_soon(ended, host.closed, "The app's page was closed.")
            tg.start_soon(ended, bridge.closed, "The app's view is gone.")
    if seconds is not None and not host.closed.is_set() and not bridge.closed.is_set():
        events.note(f"Closing the app after {seconds:g} s (--for).")


async def _watch_init(host: AppHost, bridge: Bridge, events: AppEvents) -> None:
    """The view must say ``ui/initialize`` within ``INIT_BOUND`` of its page attaching: else say so, once."""
    await host.attached.wait()
    bound = _seconds("MCPCLI_APP_INIT_SECONDS", INIT_BOUND)
    with anyio.move_on_after(bound):
        await bridge.initialized.wait()
        return
    events.warning(
        f"The app's view did not initialize within {bound:g} s of its page opening (no ui/initialize): "
        "it is not an MCP App view, or it failed to start (see the browser's console)."
    )


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def _view_calls(
    rt: Runtime,
    opts: AnswerOptions,
    flows: list[Flow],
    launching: Flow,
    client: Client,
    asking: anyio.Lock,
    where: AppSeat,
) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A view's ``tools/call``: a flow of its own on this connection (rounds asked, answered by ``--answer``,
    stored and resumable); the view gets only the final result."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async with asking:
            flow = build_flow(
                rt,
                opts,
                where.seat,
                launching.server,
                flows,
                connection=launching.connection,
                presets=presets_of(opts),
            )
            flow.client = client
            async with flow.keeper.running():
                try:
                    outcome = await flow.start(Call("tools/call", name, arguments))
                except NeedInput as need:
                    where.events.parked(name, need)
                    raise AppRefused(
                        f"Input required: the call waits as session {need.session.id} (mcpcli resume "
                        f"{need.session.id})."
                    ) from None
                except BaseException as exc:
                    settled = await ending_of(flow, exc)
                    if settled is exc:
                        raise
                    raise settled from None
                finally:
                    await flow.keeper.close()
        where.events.view_call(name, outcome)
        return outcome.result

    return call_tool


def _consent(asking: anyio.Lock, where: AppSeat) -> Callable[[str], Awaitable[bool]]:
    """``ui/open-link``: asked (at the terminal, in the full-screen app) before anything is opened; with nobody to
    ask, refused."""
    events = where.events

    async def consent(url: str) -> bool:
        if where.ask_link is None:
            events.link(url, opened=False, why="nobody at the terminal to ask")
            return False
        async with asking:
            yes = await where.ask_link(url)
        if yes:
            await anyio.to_thread.run_sync(_opener(where), url, abandon_on_cancel=True)
        events.link(url, opened=yes, why=None if yes else "declined")
        return yes

    return consent


def _terminal_link(rt: Runtime) -> Callable[[str], Awaitable[bool]]:
    async def ask(url: str) -> bool:
        return await anyio.to_thread.run_sync(_ask_link, rt, url, abandon_on_cancel=True)

    return ask


def _opener(where: AppSeat) -> Callable[[str], None]:
    def open_url(url: str) -> None:
        try:
            where.open_url(url)
        except Exception:  # boundary: a broken browser setting is not the run's failure (the URL was shown)
            log.debug("the browser could not be opened", exc_info=True)

    return open_url


def _ask_link(rt: Runtime, url: str) -> bool:
    from rich.prompt import Confirm
    from rich.text import Text

    from mcpcli.terminal.asking import url_text

    console = rt.out.err
    console.print(Text.assemble(("? ", "bold cyan"), "The app asks to open a link: ", url_text(url)))
    return Confirm.ask("  Open it in your browser?", console=console, default=False)


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.open(url)
    except Exception:  # boundary: a broken browser setting is not the run's failure (the URL was printed)
        log.debug("the browser could not be opened", exc_info=True)


def _host_context() -> dict[str, Any]:
    """What the view is told of its host at ``ui/initialize``: a web page on this machine, its locale and zone."""
    lang = (os.environ.get("LC_ALL") or os.environ.get("LANG") or "en_US").split(".")[0]
    locale = lang.replace("_", "-") if lang not in ("C", "POSIX", "") else "en-US"
    zone = os.environ.get("TZ") or time.strftime("%Z")
    return {
        "theme": os.environ.get("MCPCLI_APP_THEME", "light")
        if os.environ.get("MCPCLI_APP_THEME") in ("light", "dark")
        else "light",
        "locale": locale,
        "timeZone": zone,
        "platform": "web",
        "userAgent": f"mcpcli/{__version__}",
        "containerDimensions": {"maxWidth": 1200, "maxHeight": 4000},
        "deviceCapabilities": {"hover": True, "touch": False},
    }


def _record_view(flow: Flow, resource: AppResource, view: View) -> None:
    """The CSP in force, and what it was built from: in the trace, the recording and the session."""
    _trace(
        flow, "app-view", uri=resource.uri, csp=view.csp, allow=view.allow, declared=resource.csp, origin=view.origin
    )


def _trace(flow: Flow, kind: str, **fields: Any) -> None:
    if flow.tracer is not None:
        flow.tracer.event(kind, **fields)


async def _keep_trace(flow: Flow) -> None:
    """The view's messages after the call's last write: into its session too (when it has one)."""
    if flow.session is None or not flow.keeper.saved:
        return
    try:
        await flow.keeper.update(last=True)
    except Exception:  # boundary: the result is out; a trace that cannot be kept is not the run's failure
        log.debug("the app's trace could not be kept with the session", exc_info=True)
