"""The app and its one factory, ``build_app`` — used by the CLI and by the tests alike, so tests run the real wiring.

The app owns the workers; screens only show and collect. A flow runs in a named async worker on the
app's own event loop (``commands.run.run_job``, with the app's seat), and answers rounds by
awaiting screens (``source.TuiUser``). Modes:

- ``flow`` (``call|prompt|read|resume --tui``, ``mcpcli tui SESSION``): one flow; its result is shown, and
  closing the app hands it back to the CLI, which prints it on stdout and exits with its code. A fatal
  error exits the app at once with the error, which the CLI prints with its exit code.
- ``start`` (``mcpcli tui``): the server's tools, prompts and resources (``start.StartScreen``); ``s``
  opens the sessions (``sessions.SessionsScreen``), where a waiting flow is resumed in place, or answered with
  its form (``inbox``) for its owner's run to send.
- ``answer`` (``mcpcli answer ID --tui``): that form alone; the app ends once the answers are stored, and the CLI
  says so as ``mcpcli answer`` would.
"""

from __future__ import annotations

import asyncio
import contextlib
import webbrowser
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from textual.app import App
from textual.binding import Binding, BindingType

from mcpcli.display import sanitize
from mcpcli.errors import ExitCode, McpcliError, UserStopped, lone
from mcpcli.terminal.hints import worded
from mcpcli.tui.host import Following

if TYPE_CHECKING:
    from mcpcli.commands.answer import Answered
    from mcpcli.commands.jobs import AnswerJob, CallJob, ResumeJob
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.commands.seat import Seat, Views
    from mcpcli.engine.answers import Presets
    from mcpcli.engine.askers import Asked
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import AnswerSource, NeedInput, Outcome
    from mcpcli.tui.apprun import AppRunScreen
    from mcpcli.tui.run import RunScreen

Mode = Literal["flow", "start", "sessions", "answer"]
SHORT_ROWS = 24
"""From this height on, the full layout; below it, the compact one (a 80x24 terminal still gets the full one)."""


@dataclass(frozen=True)
class TuiExit:
    """How the app ended, for the CLI to finish: print the result or the error, exit with the code."""

    code: int
    outcome: Outcome | None = None
    method: str | None = None
    error: McpcliError | None = None
    """A fatal error: the CLI prints it (one line and a hint) once the terminal is restored."""
    need: NeedInput | None = None
    """The flow waits for input nobody here can give (e.g. sampling without a provider): exit 3."""
    interrupted: bool = False
    """Ctrl-C: the CLI stops as it does on Ctrl-C without the app (the sessions kept, their line, exit 130)."""
    answered: Answered | None = None
    """``answer`` mode: the answers were stored; the CLI says so as ``mcpcli answer`` does."""


class McpcliApp(App[TuiExit]):
    """Runs flows in workers and shows them; see the module docstring for the modes."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "mcpcli"
    ENABLE_COMMAND_PALETTE = False
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_ROWS, "-tall")]  # noqa: RUF012 (Textual types it as an instance attribute)
    """Every screen has the class ``-short`` under ``SHORT_ROWS`` rows (a compact layout: ``app.tcss``)."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # Textual binds ctrl+c to a "press ctrl+q to quit" hint (and, in a field, to copy): here, as on every server
        # command, Ctrl-C stops. A priority binding is looked up first, whatever is focused, on every screen.
        Binding("ctrl+c", "interrupt", "Stop", show=False, priority=True),
    ]

    def __init__(
        self,
        rt: Runtime,
        opts: AnswerOptions,
        *,
        mode: Mode,
        job: CallJob | ResumeJob | AnswerJob | None = None,
        flows: list[Flow] | None = None,
        open_url: Callable[[str], object] = webbrowser.open,
        blink: bool = True,
    ) -> None:
        """The app for one command: its runtime and answer options, its mode and job, and the list of flows the CLI's
        Ctrl-C handler reads too."""
        super().__init__()
        self.rt = rt
        self.opts = opts
        self.mode: Mode = mode
        self.job = job
        self.flows: list[Flow] = [] if flows is None else flows
        """Every flow this app drove (the CLI's Ctrl-C handler reads the same list)."""
        self.browse = open_url
        """Opens a URL-mode page in the browser — called only after the user's explicit consent."""
        self.blink = blink
        """Whether text cursors blink; off for tests and snapshots, which need a steady screen."""
        self.outcome: tuple[str, Outcome] | None = None
        """The standalone flow's result, once it arrived."""
        self.failure: McpcliError | None = None
        """The standalone app run's launching call failed: the CLI prints it and exits with its code."""
        self._watches: list[Following] = []
        """The workers that follow the server's changes (``commands.watch``): ended with the app."""

    def on_mount(self) -> None:
        """Start what the mode asks for: the job's flow, the answer form, the sessions, or the start screen and its
        catalog."""
        from mcpcli.commands.jobs import AnswerJob

        if isinstance(self.job, AnswerJob):
            self.answer_session(self.job.session_id)
        elif self.mode == "flow":
            assert self.job is not None
            self.start_job(self.job)
        elif self.mode == "sessions":
            from mcpcli.tui.sessions import SessionsScreen

            self.push_screen(SessionsScreen())
        else:
            from mcpcli.tui.start import StartScreen

            self.push_screen(StartScreen(self.rt.resolve()[0].label))
            self.run_worker(self._load_catalog(), name="catalog", group="catalog", exit_on_error=False)

    # --- workers -----------------------------------------------------------------------------------------------------

    async def _load_catalog(self) -> None:
        """List the server's catalog for the start screen in a worker, then follow its changes; a failure is one
        notification, the app stays usable."""
        from mcpcli.commands.discovery import catalog
        from mcpcli.tui.start import StartScreen

        try:
            found = await catalog(self.rt)
        except BaseException as exc:  # every failure ends the app with the CLI's code
            single = lone(exc)
            if isinstance(single, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
            self._fatal(single)
            return
        for screen in self.screen_stack:
            if isinstance(screen, StartScreen):
                screen.set_catalog(found)
        # Where the server sends list changes, the lists (and the form of the entry shown) follow them.
        self._watched(self._follow_catalog(), "follow-catalog", "watch")

    async def _follow_catalog(self) -> None:
        from mcpcli.commands.watch import Catalog, follow_catalog
        from mcpcli.tui.start import StartScreen

        def changed(found: Catalog) -> None:
            for screen in self.screen_stack:
                if isinstance(screen, StartScreen):
                    screen.refresh_catalog(found)

        await follow_catalog(self.rt, changed, self._watch_note)

    def follow_resource(self, uri: str, screen: RunScreen) -> None:
        """Show ``uri`` again on ``screen`` each time the server says it changed (until the screen closes)."""
        from mcpcli.commands.watch import follow_resource

        async def follow() -> None:
            await follow_resource(self.rt, uri, screen.show_update, self._watch_note)
            screen.set_status("The server does not send updates of this resource.")

        screen.following = self._watched(follow(), "follow-resource", "follow")

    async def on_unmount(self) -> None:
        """Watches run until the app ends: stop them and wait (briefly) for their connections to close, so that a
        stdio server they started is ended, not left to the event loop's end."""
        for watch in self._watches:
            watch.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(watch.ended.wait() for watch in self._watches)), 5)

    def _watched(self, work: Coroutine[Any, Any, None], name: str, group: str, *, shielded: bool = False) -> Following:
        """Run a watch in a worker that is stopped by ``Following.stop`` — an anyio cancellation, which lets the
        connection close its stdio server under its shield (a Textual ``Worker.cancel`` is a raw task
        cancellation, which would cut that short). ``shielded``: the work runs in a task of its own that the
        worker's cancellation does not reach (the app cancels its workers as it closes, before ``on_unmount``
        stops the watches and waits for them): an app run's view is told to close and its server is ended."""
        watch = Following()

        async def run() -> None:
            try:
                with watch.scope:
                    await work
            finally:
                watch.ended.set()

        async def shield() -> None:
            watch.task = asyncio.ensure_future(run())
            await asyncio.shield(watch.task)

        self.run_worker(shield() if shielded else run(), name=name, group=group, exit_on_error=False)
        self._watches.append(watch)
        return watch

    def _watch_note(self, text: str) -> None:
        self.notify(sanitize(text), title="Watching", severity="warning", markup=False)

    def start_job(self, job: CallJob | ResumeJob) -> None:
        """Run one flow in a worker, on a new run screen (which the round screens stack on)."""
        from mcpcli.tui.run import RunScreen

        standalone = self.mode == "flow"
        if getattr(job, "app", None) is not None:
            self._start_app(job, standalone=standalone)
            return
        screen = RunScreen(_title(job), standalone=standalone)
        if _method(job) == "resources/read":
            screen.follow_uri = getattr(job, "name", None)
        mounted = self.push_screen(screen, self._run_closed)
        drive = self._drive(job, screen, mounted)
        self.run_worker(drive, name="flow", group="flow", exclusive=True, exit_on_error=False)

    def _seat(self, screen: RunScreen, views: Views | None = None) -> Seat:
        """The app's seat for a flow shown on ``screen``: its forms ask (after the presets), its dialog approves
        sampling, notes become notifications. The app owns the terminal: no -v lines on it, and no browser sign-in
        (``mcpcli auth login`` signs in)."""
        from mcpcli.commands.seat import Seat
        from mcpcli.tui.sampling import TuiApprover
        from mcpcli.tui.source import TuiReporter

        reporter = TuiReporter(self, screen, verbose=self.rt.g.verbose)
        return Seat(
            reporter=reporter,
            shows=ShownOn(self, screen),
            app_user=self._user,
            approver=TuiApprover(self),
            views=views,
            summaries=False,
            always_views=True,
        )

    async def _drive(self, job: CallJob | ResumeJob, screen: RunScreen, mounted: Awaitable[Any]) -> None:
        """The flow of ``job`` (``commands.run.run_job``), its outcome on ``screen`` — once the screen is mounted: a
        stored result is shown at once, before the screen would otherwise have its widgets."""
        from mcpcli.commands.run import run_job

        await mounted
        try:
            await run_job(self.rt, self.opts, job, self._seat(screen), self.flows)
        except BaseException as exc:  # shown, or the app exits with the CLI's code
            self._failed(exc, screen)

    def _failed(self, exc: BaseException, screen: RunScreen) -> None:
        """A flow's error: shown on its screen, or (standalone, or not an ``McpcliError``) the app exits with it."""
        from mcpcli.engine.steps import NeedInput

        single = lone(exc)
        if isinstance(single, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
            raise exc  # the app is closing: let the worker end
        if isinstance(single, McpcliError):
            worded(single)  # the core says what to do next as data; the app shows it as the CLI would
        if isinstance(single, NeedInput) and screen.standalone:
            self.exit(TuiExit(int(ExitCode.INPUT_REQUIRED), need=single))
        elif isinstance(single, NeedInput):
            screen.show_waiting(single)
        elif screen.standalone or not isinstance(single, McpcliError):
            self._fatal(single)
        else:
            screen.show_error(single)
            self.notify(sanitize(single.message), title=sanitize(single.title), severity="error", markup=False)

    def _start_app(self, job: CallJob | ResumeJob, *, standalone: bool) -> None:
        """A tool with its view (``commands.apps``), on an app run screen; leaving the screen ends the run (the
        view told to close first), and so does leaving the app (``on_unmount`` waits for it, as for a watch)."""
        from mcpcli.tui.apprun import AppRunScreen

        screen = AppRunScreen(_title(job), standalone=standalone)
        self.push_screen(screen, self._run_closed)
        screen.running = self._watched(self._drive_app(job, screen), "app", "app", shielded=True)

    async def _drive_app(self, job: CallJob | ResumeJob, screen: AppRunScreen) -> None:
        """A tool with its view (``commands.run.run_job`` with the app's ``Views``): the link, the view's news and
        the launching call's result on ``screen``; a standalone run that waits for input ends the app (exit 3)."""
        from mcpcli.commands.apps import AppViews
        from mcpcli.commands.run import run_job
        from mcpcli.tui.apprun import TuiAppEvents

        def got(done: Outcome) -> None:
            self.outcome = ("tools/call", done)

        def failed(exc: McpcliError) -> None:
            self.failure = exc

        events = TuiAppEvents(screen, got, failed)
        seat = self._seat(screen, AppViews(events, self._ask_link, self.browse))
        try:
            code = await run_job(self.rt, self.opts, job, seat, self.flows)
        except BaseException as exc:
            self._failed(exc, screen)  # a cancellation (the screen left, the app closing) goes on up from here
            screen.run_ended("The app could not be shown.")
            return
        if code == ExitCode.INPUT_REQUIRED and events.need is not None and screen.standalone:
            self.exit(TuiExit(int(ExitCode.INPUT_REQUIRED), need=events.need))
            return
        screen.run_ended("The app's run is over.")

    async def _ask_link(self, url: str) -> bool:
        """A view's ``ui/open-link``: yes or no in a dialog (no by default) before anything is opened."""
        from mcpcli.tui.apprun import LinkConsent

        yes: bool = await self.push_screen_wait(LinkConsent(url))
        return yes

    def answer_session(self, session_id: str) -> None:
        """Answer the round ``session_id`` waits on with its form, as ``mcpcli answer`` would (``tui.inbox``)."""
        self.run_worker(self._answer(session_id), name="answer", group="answer", exclusive=True, exit_on_error=False)

    async def _answer(self, session_id: str) -> None:
        """Answer session_id's round on its form in a worker: the answers stored, or one line why not; in answer mode
        the app ends with the CLI's outcome."""
        from mcpcli.tui.inbox import answer_here
        from mcpcli.tui.sessions import SessionsScreen

        try:
            answered = await answer_here(self, self.rt, self.opts, session_id, self.browse)
        except BaseException as exc:  # one line in a notification, or (answer mode) the CLI's error and code
            single = lone(exc)
            if isinstance(single, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
            if self.mode == "answer" or not isinstance(single, McpcliError):
                self._fatal(single)
            elif isinstance(single, UserStopped):  # escape on the form: nothing written, nothing wrong
                self.notify(f"Nothing answered: session {session_id} still waits.", title="Not answered", markup=False)
            else:
                self.notify(sanitize(single.message), title=sanitize(single.title), severity="error", markup=False)
            return
        if self.mode == "answer":
            self.exit(TuiExit(int(ExitCode.OK), answered=answered))
            return
        self.notify(sanitize(answered.note()), title="Answered", markup=False, timeout=8)
        for screen in self.screen_stack:
            if isinstance(screen, SessionsScreen):
                screen.action_reload()  # the store's watch would say so too, a moment later

    def _user(self, flow: Asked, presets: Presets) -> AnswerSource:
        from mcpcli.tui.source import TuiUser

        return TuiUser(self, presets, flow, self.rt.store, self.browse)

    # --- ending ------------------------------------------------------------------------------------------------------

    def _fatal(self, exc: BaseException) -> None:
        """End the app with the error; the CLI prints it and exits with its code (as it would without --tui)."""
        if not isinstance(exc, McpcliError):
            message = f"Unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            exc = McpcliError(message, title="Internal error", hint="Run again with --debug for the traceback.")
        self.exit(TuiExit(int(exc.exit_code), error=exc))

    def exit_ok(self) -> None:
        """Leave the app from a screen that has nothing to hand back."""
        self.exit(TuiExit(int(ExitCode.OK)))

    def _run_closed(self, _: None = None) -> None:
        if self.mode == "flow":
            self._finish()

    def _finish(self) -> None:
        if self.outcome is not None:
            method, outcome = self.outcome
            self.exit(TuiExit(int(outcome.exit_code), outcome=outcome, method=method))
        elif self.failure is not None:
            self.exit(TuiExit(int(self.failure.exit_code), error=self.failure))
        else:
            self.exit(TuiExit(int(ExitCode.OK)))

    def action_interrupt(self) -> None:
        """Ctrl-C: leave at once; the CLI then says what was kept, as for Ctrl-C inline, and exits 130."""
        self.exit(TuiExit(int(ExitCode.INTERRUPTED), interrupted=True))

    async def action_quit(self) -> None:
        """Ctrl-Q: the result when there is one; mid-flow, stop (exit 5) and say how to resume."""
        from mcpcli.commands.jobs import AnswerJob

        if isinstance(self.job, AnswerJob):
            later = f"Answer it later: mcpcli answer {self.job.session_id}"
            self.exit(TuiExit(int(ExitCode.STOPPED), error=UserStopped("You quit: nothing was answered.", hint=later)))
            return
        running = any(w.group == "flow" and w.is_running for w in self.workers) or (
            self.outcome is None
            and self.failure is None
            and any(w.group == "app" and w.is_running for w in self.workers)
        )
        if not running or self.mode != "flow":
            self._finish() if self.mode == "flow" else self.exit(TuiExit(int(ExitCode.OK)))
            return
        session = next((f.session for f in reversed(self.flows) if f.session is not None and f.keeper.saved), None)
        hint = f"Resume it with: mcpcli resume {session.id}" if session else None
        self.exit(TuiExit(int(ExitCode.STOPPED), error=UserStopped("You quit the full-screen app.", hint=hint)))


@dataclass(frozen=True)
class ShownOn:
    """``commands.run.Shows`` for a run screen: the result in its panel (and kept for the CLI to print once the app
    ends), a flow left waiting shown there — or, standalone, the app ended with it (exit 3) —, warnings as
    notifications."""

    app: McpcliApp
    screen: RunScreen

    def result(self, method: str, outcome: Outcome) -> int:
        self.app.outcome = (method, outcome)
        self.screen.show_result(method, outcome)
        return int(outcome.exit_code)

    def waiting(self, need: NeedInput) -> int:
        worded(need)  # the core says what to do next as data; the app shows it as the CLI would
        if self.screen.standalone:
            self.app.exit(TuiExit(int(ExitCode.INPUT_REQUIRED), need=need))
        else:
            self.screen.show_waiting(need)
        return int(ExitCode.INPUT_REQUIRED)

    def warning(self, text: str) -> None:
        self.app.notify(sanitize(text), title="Warning", severity="warning", markup=False)

    def pages(self, pages: Sequence[Any]) -> None:
        for page in pages:
            self.app.notify(sanitize(f"{page.message} {page.url}"), title="Visit a page", markup=False, timeout=30)


def _method(job: CallJob | ResumeJob) -> str:
    return getattr(job, "method", "tools/call")


def _title(job: CallJob | ResumeJob) -> str:
    """The run screen's heading: the call as it will be sent (or the session being resumed)."""
    from mcpcli.commands.jobs import ResumeJob
    from mcpcli.tui.text import compact_json

    if isinstance(job, ResumeJob):
        return f"resume session {job.session_id}"
    given = compact_json(job.arguments) if job.arguments is not None else " ".join([*job.pairs, job.args or ""])
    shown = f"{job.method} {job.name} {given}".rstrip()
    return f"{shown} · with its view" if job.app is not None else shown


def build_app(
    rt: Runtime,
    opts: AnswerOptions,
    *,
    job: CallJob | ResumeJob | AnswerJob | None = None,
    mode: Mode | None = None,
    flows: list[Flow] | None = None,
    open_url: Callable[[str], object] = webbrowser.open,
    blink: bool = True,
) -> McpcliApp:
    """The one app factory: ``flow`` mode when given a job (``answer`` for an ``AnswerJob``), else the start screen
    (or ``mode``)."""
    from mcpcli.commands.jobs import AnswerJob

    chosen: Mode = mode or ("answer" if isinstance(job, AnswerJob) else "flow" if job is not None else "start")
    return McpcliApp(rt, opts, mode=chosen, job=job, flows=flows, open_url=open_url, blink=blink)
