"""``call TOOL --app`` and ``resume ID --app``: the tool's view in the user's browser, bridged through this run's
own connection, while the call runs and until the view is closed.

The loopback host (``mcpcli.apphost.host``) shows the view; the bridge (``mcpcli.apphost.bridge``) answers it. This
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

import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp import Client

from mcpcli import __version__
from mcpcli.apphost.bridge import AppRefused, Bridge, app_tools
from mcpcli.apphost.resource import AppResource, load_app
from mcpcli.apphost.resource import resource_uri_of as app_uri
from mcpcli.commands.app_events import AppEvents, CliEvents
from mcpcli.commands.discovery import all_pages
from mcpcli.commands.jobs import ResumeJob
from mcpcli.commands.run import build_flow
from mcpcli.commands.seat import at_terminal
from mcpcli.display import sanitize
from mcpcli.engine.arguments import build_arguments, no_such, usable_schema
from mcpcli.engine.endings import ending_of
from mcpcli.engine.steps import Call, NeedInput, Outcome, dump
from mcpcli.errors import ExitCode, McpcliError, UsageError

if TYPE_CHECKING:
    from mcpcli.apphost.host import AppHost, View
    from mcpcli.commands.jobs import AppOptions, CallJob
    from mcpcli.commands.run import Run
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.engine.flow import Flow

log = logging.getLogger(__name__)

INIT_BOUND = 30.0
"""Seconds a view has, once its page is attached, to send ``ui/initialize``; then one line says it never did
(``MCPCLI_APP_INIT_SECONDS`` changes it)."""


@dataclass(frozen=True)
class AppViews:
    """The front end's part of an app run (``Seat.views``): where what happens is said (``events``), who is asked
    before a view's link is opened (``ask_link``; None: nobody, refused) and how a page is opened (``open_url``, in
    a worker thread). The rounds of the launching call and of a view's calls are answered by the seat's sources."""

    events: AppEvents
    ask_link: Callable[[str], Awaitable[bool]] | None
    open_url: Callable[[str], object]

    async def show(self, run: Run, job: CallJob | ResumeJob, client: Client) -> int:
        """The job's body on its connection (``commands.run``): ``with_view``."""
        return await with_view(run, job, client)


def terminal_views(rt: Runtime, opts: AnswerOptions) -> AppViews:
    """The CLI's: links asked at the terminal (when a person is there), events on stderr or as JSON Lines."""
    ask = None if opts.no_input or not at_terminal() else _terminal_link(rt)
    return AppViews(CliEvents(rt), ask, _open_browser)


async def with_view(run: Run, job: CallJob | ResumeJob, client: Client) -> int:
    """``call TOOL --app`` and ``resume ID --app`` on their connection (``commands.run``): the view opens on the
    tool's input, the launching call runs (or the waiting flow continues) under it, the view gets its result; the
    run lasts while the view is open. Its exit code: the launching call's."""
    flow, seat = run.flow, run.seat
    assert job.app is not None and seat.views is not None
    session = flow.session
    if isinstance(job, ResumeJob):
        if session is None or session.method != "tools/call":
            raise UsageError("Only a tool call has a view to reopen.", hint="Resume it without --app.")
        name = session.name
    else:
        name = job.name
    tools = app_tools(await all_pages(client.list_tools, "tools"))
    tool = tools.get(name)
    if tool is None:
        raise no_such("tool", name, list(tools))
    launch: Callable[[], Awaitable[Outcome]]
    if isinstance(job, ResumeJob):
        assert session is not None
        arguments, launch = dict(session.arguments), flow.resume
    else:
        if job.arguments is not None:
            arguments = dict(job.arguments)
        else:
            schema = usable_schema(tool.get("inputSchema"))
            arguments = build_arguments(schema, list(job.pairs), job.args, warn=seat.shows.warning)
        launch = functools.partial(flow.start, Call("tools/call", name, arguments))
    return await _with_view(run, client, tool, tools, arguments, launch, job.app)


async def _with_view(
    run: Run,
    client: Client,
    tool: Mapping[str, Any],
    tools: Mapping[str, Mapping[str, Any]],
    arguments: dict[str, Any],
    launch: Callable[[], Awaitable[Outcome]],
    app: AppOptions,
) -> int:
    """The view shown while ``launch`` runs and until it is closed: the loopback host serves it, the bridge
    answers it on ``client``; the launching call's result (or error) goes to the view and to the front end's events.
    However it ends, a view that initialized is told to tear down and its trace is kept with the session."""
    from mcpcli.apphost.host import AppHost, ViewSpec

    uri = app_uri(tool)
    if uri is None:
        raise UsageError(
            f"The tool {sanitize(str(tool.get('name')))} has no app (no _meta.ui.resourceUri).",
            hint="Call it without --app; mcpcli tools marks the tools that have one.",
        )

    async def read(resource: str) -> dict[str, Any]:
        return dump(await client.read_resource(resource))

    resource = await load_app(read, uri)
    flow, where = run.flow, run.seat.views
    assert isinstance(where, AppViews)
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
            call_tool=_view_calls(run, client, asking),
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
    from mcpcli.engine.endings import error_result

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
    run: Run, client: Client, asking: anyio.Lock
) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A view's ``tools/call``: a flow of its own on this connection (rounds asked, answered by ``--answer``,
    stored and resumable); the view gets only the final result."""
    launching, where = run.flow, run.seat.views
    assert isinstance(where, AppViews)

    async def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the view's call as a flow on the launching connection, one flow asking at a time; the view gets the
        result, or an error saying the call waits as a session."""
        async with asking:
            flow = build_flow(run.rt, run.opts, run.seat, launching.server, run.flows, launching.connection)
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


def _consent(asking: anyio.Lock, where: AppViews) -> Callable[[str], Awaitable[bool]]:
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


def _opener(where: AppViews) -> Callable[[str], None]:
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
