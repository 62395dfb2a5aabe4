"""What every command runs on: the merged global options, paths, settings, store and output — and the guard
that turns every failure into one line on stderr and an exit code.

No Typer here and nothing heavy at import: ``cli.py`` parses, this builds.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcpcli.errors import ExitCode, McpcliError, UsageError, lone
from mcpcli.platform import signals

if TYPE_CHECKING:
    import logging

    from mcpcli.engine.answers import Presets
    from mcpcli.net.bounds import Bounds
    from mcpcli.settings.config import Paths, Settings
    from mcpcli.settings.servers import ServerTable
    from mcpcli.settings.targets import Target
    from mcpcli.state.store import Store
    from mcpcli.state.trace import Tracer, TraceSinks
    from mcpcli.terminal.output import Output


@dataclass(frozen=True)
class Surroundings:
    """What a command runs in — its environment variables, working directory, streams and where its log lines go —
    handed to it (``Globals.surroundings``, ``cli.app.run_command``) instead of read from the process, so that one
    process can run a command in surroundings of its own (the worker's rehearsal) and keep its own as they were. A
    command run the usual way gets the process's own (``of_process``).

    What the runtime reads goes through this: the homes (``Paths``), ``MCPCLI_STORE``, the process settings,
    tracing's ``OTEL_*``, the connection bounds' variables, ``./.mcp.json``, a flow's default root, the log file.
    What is read of the process itself still is the process's, whatever is handed here: in the core, a stdio
    server's environment (``net.serverenv``), the worker's plumbing and proxies (``net.transports``, ``net.attach``),
    ``MCPCLI_ASSUME_TTY`` and ``MCPCLI_USER``; in libraries, the terminal's size and colours (Rich), ``getpass``'s
    user, Typer's completion variable; and Click, Rich and the error guard write to ``sys``'s streams, which
    ``process_wide`` sets for the length of a command."""

    environ: Mapping[str, str]
    """The environment variables: the process's own ``os.environ`` (live, not a copy) unless handed others."""
    cwd: Path | None
    """The directory relative paths mean (``./.mcp.json``, the default root of a flow); ``None``: the process's,
    read when needed (a command whose directory was removed still runs until it needs one)."""
    stdin: TextIO
    """Where the command reads (prompts): ``sys.stdin`` unless handed another."""
    stdout: TextIO
    """Where its results go: ``sys.stdout`` unless handed another."""
    stderr: TextIO
    """Where its notes and errors go: ``sys.stderr`` unless handed another."""
    log: logging.Handler | None = None
    """Where the command's log lines go: ``None``, its home's log file (and ``--debug``'s stderr), set up on the root
    logger by ``configure_logging`` as a command always did; else this handler alone, beside the root logger's own
    for the length of the command (``process_wide``) — the rehearsal's discards them."""

    @classmethod
    def of_process(cls) -> Surroundings:
        """The process's own: what a command run from a shell (or in a worker's child, which has become its
        caller's process) runs in."""
        return cls(os.environ, None, sys.stdin, sys.stdout, sys.stderr)

    def directory(self) -> Path:
        """The directory relative paths mean, read now when it is the process's."""
        return Path.cwd() if self.cwd is None else self.cwd

    @contextlib.contextmanager
    def process_wide(self) -> Iterator[None]:
        """What must still be the process's own while the command runs, for that long only: ``sys.stdin``,
        ``sys.stdout`` and ``sys.stderr`` are these streams (Click, Rich and the error guard write to ``sys``'s
        themselves), and a handed ``log`` is on the root logger (the SDK's server calls ``logging.basicConfig``,
        which gives a root logger with no handler one of its own, for good). Nothing changes for the process's own
        surroundings (a command run from a shell, a worker's child)."""
        if (sys.stdin, sys.stdout, sys.stderr) == (self.stdin, self.stdout, self.stderr) and self.log is None:
            yield
            return
        import logging

        streams = sys.stdin, sys.stdout, sys.stderr
        root = logging.getLogger()
        sys.stdin, sys.stdout, sys.stderr = self.stdin, self.stdout, self.stderr
        if self.log is not None:
            root.addHandler(self.log)
        try:
            yield
        finally:
            if self.log is not None:
                root.removeHandler(self.log)
            sys.stdin, sys.stdout, sys.stderr = streams


@dataclass
class Globals:
    """Options given before the subcommand; the same options after it win."""

    server: str | None = None
    headers: list[str] = field(default_factory=list)
    protocol: str | None = None
    store: str | None = None
    debug: bool = False
    verbose: bool = False
    trace: str | None = None
    """``--trace FILE``: every JSON-RPC message of the run, redacted, as NDJSON."""
    record: str | None = None
    """``--record FILE``: a recording of the run (``mcpcli replay``, ``mcpcli mock`` read it)."""
    log_level: str | None = None
    """``--log-level LEVEL``: print the server's log messages at this level and above (none without it)."""
    bearer: str | None = None
    """``--bearer TOKEN``: a static token for HTTP servers (wins over the config's ``bearer_token_env`` and OAuth)."""
    keep_alive: bool = False
    """``--keep-alive``: a stdio server's process outlives the command (kept by the background worker)."""
    json: bool = False
    """``--json`` before the subcommand: as if given after it (it cannot be turned off again there)."""
    surroundings: Surroundings = field(default_factory=Surroundings.of_process)
    """What the command runs in (``Surroundings``): the process's own, unless its caller handed others."""

    def merged(self, **after: Any) -> Globals:
        values = {k: v for k, v in after.items() if v not in (None, [])}
        if "headers" in values:
            values["headers"] = [*self.headers, *values["headers"]]
        return Globals(**{**self.__dict__, **values})


@dataclass(frozen=True)
class ProcessSettings:
    """What the environment sets for a whole process, read once here at the edge and handed down: the core reads
    no environment variable of its own, so one process (a warm worker) can run many flows, each told its own."""

    lease_ttl: float
    """``MCPCLI_LEASE_TTL`` (tests shorten it): seconds a lease lasts without a heartbeat; 30 otherwise."""
    faults: str | None = None
    """``MCPCLI_FAULT`` (tests only): ``POINT[:N]`` kills the process the Nth time a flow passes POINT."""
    token_store: str = "auto"
    """``MCPCLI_TOKEN_STORE``: ``file``, ``keyring`` or ``auto`` (the keyring when one works); checked where used."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ProcessSettings:
        from mcpcli.state.keeper import LEASE_TTL

        env = os.environ if environ is None else environ
        try:
            ttl = max(0.2, float(env.get("MCPCLI_LEASE_TTL", LEASE_TTL)))
        except ValueError:
            ttl = LEASE_TTL
        return cls(
            lease_ttl=ttl,
            faults=env.get("MCPCLI_FAULT") or None,
            token_store=env.get("MCPCLI_TOKEN_STORE", "auto").strip().lower(),
        )


@dataclass
class AnswerOptions:
    """How a flow gets its answers and its bounds (the options of call, prompt, read and resume)."""

    answer: list[str]
    answers: str | None
    decline: list[str]
    cancel: list[str]
    accept: list[str]
    accept_defaults: bool
    no_input: bool
    roots: list[Path]
    max_rounds: int
    timeout: float | None
    json: bool
    llm: str | None = None
    """``--llm``: the provider that answers sampling requests (default: ``[sampling] provider``)."""
    approve_sampling: str | None = None
    """``--approve-sampling``: overrides the configured sampling policy for this run."""
    ask: list[str] = field(default_factory=list)
    """``--ask``: people or groups who may answer this flow (the team inbox)."""
    no_self_answer: bool = False
    """``--no-self-answer``: this flow's owner may not answer it."""
    wait_for_answer: float | None = None
    """``--wait-for-answer[=SECONDS]``: with nobody here to answer, park the flow and continue as soon as an answer
    lands in the store (``mcpcli answer``), for at most this long; ``None``: exit 3 at once."""

    def presets(self) -> Presets:
        """The answers given up front (``--answer``, ``--answers``, ``--decline``, …), parsed and checked once per
        use: a bad value is a usage error (exit 2)."""
        from mcpcli.engine.answers import Presets

        return Presets.parse(
            self.answer,
            self.answers,
            decline=self.decline,
            cancel=self.cancel,
            accept=self.accept,
            accept_defaults=self.accept_defaults,
        )


class Runtime:
    """What a command needs, built lazily: paths, settings, store, output."""

    def __init__(self, g: Globals, *, json_out: bool = False) -> None:
        """Everything is read lazily except the paths, the settings and the output (a bad config exits 2 here, before
        anything runs); logging goes to the private log file."""
        from mcpcli.settings.config import Paths, load_settings
        from mcpcli.terminal.output import Output

        self.g = g
        self.surroundings = g.surroundings
        """What the command runs in: its environment, directory, streams and log (``Surroundings``)."""
        self.json = json_out or g.json
        self.json_lines = False
        """Whether stdout is JSON Lines (``watch --json``, ``batch``): an error document is one line too."""
        self.paths: Paths = Paths.from_env(self.surroundings.environ)
        self.settings: Settings = load_settings(self.paths)
        self.out: Output = Output(verbose=g.verbose)
        if g.trace == "-":  # stdout carries the trace alone (NDJSON a reader can trust): results go to stderr
            self.out.out_console = self.out.err
        self._store: Store | None = None
        self._trace: TraceSinks | None = None
        self.closers: list[Callable[[], None]] = []
        """What ``close`` runs first (``commands.inbox``: deliveries of announcements, bounded)."""
        self.announcer: Any = None
        """The team inbox's announcer, once one was needed (``commands.inbox.announce``)."""
        if self.surroundings.log is None:
            configure_logging(self.paths, g.debug)

    @property
    def store(self) -> Store:
        if self._store is None:
            from mcpcli.state.store import open_store

            given = [
                ("flag", self.g.store),
                ("env", self.surroundings.environ.get("MCPCLI_STORE")),
                ("config", self.settings.store),
            ]
            source, url = next(((s, u) for s, u in given if u), ("flag", None))
            # A password in a config-file URL is refused (it belongs in ~/.pgpass or PGPASSWORD).
            self._store = open_store(url, self.paths.store_file, source=source)  # type: ignore[arg-type]
        return self._store

    @cached_property
    def process(self) -> ProcessSettings:
        """The environment's process-wide settings, read once (first needed by a command that runs a flow)."""
        return ProcessSettings.from_env(self.surroundings.environ)

    def target(self) -> Target:
        """The server to talk to (``resolve``), its note said on stderr (no server given: the demo)."""
        target, note = self.resolve()
        if note:
            self.out.note(note)
        return target

    def resolve(self, stored: str | None = None) -> tuple[Target, str | None]:
        """The one way a server is found: ``-s`` when given, else ``stored`` (a session's own server), else
        ``MCPCLI_SERVER``, ``default_server``, the demo; a name is looked up in config.toml, servers.json and
        ./.mcp.json (in that order), ``--keep-alive`` applied. Prints nothing: the caller says the note (the app
        has no stderr)."""
        from mcpcli.settings.targets import parse_headers, resolve_target

        given = self.g.server or stored
        servers = None
        if not (given or "").startswith(("http://", "https://")):
            servers = self.server_table()
        headers = parse_headers(self.g.headers)
        environ = self.surroundings.environ
        target, note = resolve_target(given, self.settings, headers=headers, environ=environ, servers=servers)
        return self.kept(target), note

    def server_table(self) -> ServerTable:
        """The named servers of config.toml, servers.json and the ``./.mcp.json`` of the command's directory (each
        file read only when a lookup needs it)."""
        from mcpcli.settings.servers import ServerTable

        return ServerTable(self.paths, self.settings, cwd=self.surroundings.cwd)

    def kept(self, target: Target) -> Target:
        """``target`` with ``--keep-alive`` applied (stdio only)."""
        if self.g.keep_alive and target.kind == "stdio" and not target.keep_alive:
            import dataclasses

            from mcpcli.platform import WORKERLESS

            if WORKERLESS is not None:
                raise UsageError(
                    f"--keep-alive needs the background worker, and there is none here: {WORKERLESS}.",
                    hint="Leave out --keep-alive: each command then starts its own server.",
                )

            return dataclasses.replace(target, keep_alive=True)
        return target

    def protocol(self) -> str | None:
        """``--protocol`` as given, None when not (``connection.connect`` checks it and applies the target's own)."""
        return self.g.protocol

    def bounds(self) -> Bounds:
        """The connection bounds: ``[limits]`` and their environment variables (a bad value: exit 2)."""
        from mcpcli.net.bounds import Bounds

        return Bounds.from_settings(self.settings, self.surroundings.environ)

    def trace_sinks(self) -> TraceSinks:
        """Where this run's trace lines go: ``--trace``, ``--record``, ``-v`` (opened once, closed with the run)."""
        from mcpcli.state.trace import TraceSinks
        from mcpcli.terminal.trace_lines import summarize

        if self._trace is None:
            console = self.out.err if self.g.verbose else None
            self._trace = TraceSinks.open(self.g.trace, console, summarize, record=self.g.record)
        return self._trace

    def tracer(self, *, record: bool = False, summaries: bool = True) -> Tracer | None:
        """The tap for one connection: ``--trace``, ``-v`` summaries (unless ``summaries`` is off: the app owns
        the terminal) and, with ``record``, the lines a flow's session keeps. None when nobody would read it."""
        from mcpcli.state.trace import Tracer

        sinks = self.trace_sinks()
        if not (record or sinks.writing or (summaries and sinks.console is not None)):
            return None
        return Tracer(sinks, record=record, summaries=summaries)

    def traces(self) -> None:
        """Turn OpenTelemetry tracing on for this command when ``[telemetry]`` or the ``OTEL_*`` environment asks for
        it (``mcpcli.telemetry``), once; the spans are sent as the command closes. Off, it imports nothing of
        OpenTelemetry's SDK."""
        from mcpcli import telemetry

        config = self.settings.telemetry
        environ = self.surroundings.environ
        if telemetry.ON or not telemetry.wanted(environ, config.enabled):
            return
        from mcpcli.telemetry import export

        why_not = export.start(environ, endpoint=config.endpoint, service_name=config.service_name)
        if why_not is not None:
            self.out.warning(why_not)
            return
        self.closers.append(export.stop)

    def log_level(self) -> str | None:
        """``--log-level`` checked (exit 2 with the levels when it is none of them)."""
        from mcpcli.terminal.server_logs import check_log_level

        return check_log_level(self.g.log_level)

    def close(self) -> None:
        """Close the store and the trace file; a second call (``until_stopped`` inside ``local_command``) does
        nothing."""
        closers, self.closers = self.closers, []
        for close in closers:  # the announcements still on their way, bounded
            close()
        store, self._store = self._store, None
        trace, self._trace = self._trace, None
        if store is not None:
            store.close()
        if trace is not None:
            trace.close()


LOG_MAX = 4 * 2**20
"""Bytes the log file may hold before the next command moves it aside to ``mcpcli.log.1`` (replacing the one there):
the logs take at most about twice this, however long mcpcli is used."""

QUIET_LOGGERS = ("httpx2", "httpcore2")
"""Libraries whose INFO lines are one per request: kept out of the log file unless ``--debug``."""


def configure_logging(paths: Paths, debug: bool) -> None:
    """SDK and server logs go to a private file; on stderr only with --debug."""
    import logging

    from mcpcli.settings.config import private_dir

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "mcpcli", False)]:  # a second run in one process
        root.removeHandler(old)
        old.close()
    handlers: list[logging.Handler] = []
    log_file = paths.log_dir / "mcpcli.log"
    try:
        private_dir(paths.log_dir)
        _move_aside_when_full(log_file)
        os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    except OSError as exc:
        # A read-only home: everything still works, only without the log file.
        sys.stderr.write(f"warning: not logging to {log_file}: {exc.strerror or exc}\n")
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if debug:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.mcpcli = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    # httpx2 says "HTTP Request: POST …" at INFO for every request: a line and a flush per round of every flow, and
    # a log that grows with each one. Its warnings and errors still come; --debug shows everything.
    for chatty in QUIET_LOGGERS:
        logging.getLogger(chatty).setLevel(logging.NOTSET if debug else logging.WARNING)


def _move_aside_when_full(log_file: Path) -> None:
    """Past ``LOG_MAX``, the log becomes ``mcpcli.log.1`` (a rename: its 0600 mode kept, a process still writing to
    it goes on there) and this command starts a new one. Two commands doing so at once lose at worst the older
    half."""
    try:
        if log_file.stat().st_size > LOG_MAX:
            log_file.replace(log_file.with_name(log_file.name + ".1"))
    except FileNotFoundError:  # a first run, or another command moved it aside just now
        pass


def guarded(body: Callable[[], int | None], debug: bool, *, json: bool = False, lines: bool = False) -> int:
    """Run ``body``; every failure becomes one line (and a hint) on stderr and an exit code — with ``json``, also
    an error document on stdout (``lines``: on one line, for a command whose stdout is JSON Lines)."""
    from mcpcli.errors import print_error
    from mcpcli.terminal.hints import worded

    def fail(exc: McpcliError) -> int:
        print_error(worded(exc))
        if json:
            from mcpcli.display import json_text
            from mcpcli.errors import error_document

            sys.stdout.write(json_text(error_document(exc), indent=None if lines else 2) + "\n")
            sys.stdout.flush()
        return int(exc.exit_code)

    try:
        try:
            return body() or 0
        except BaseExceptionGroup as group:  # a task group wraps what a command body raised: unwrap a lone one
            raise lone(group) from None
    except McpcliError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        return fail(exc)
    except KeyboardInterrupt:
        if json:
            return fail(Interrupted("Interrupted."))
        sys.stderr.write("\nInterrupted.\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # boundary: a bug or an unforeseen failure still gets one line, not a traceback
        if debug:
            raise
        return fail(
            McpcliError(
                f"Unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                title="Internal error",
                hint="Run again with --debug for the traceback; stored sessions are unaffected.",
            )
        )


class Interrupted(McpcliError):
    """Ctrl-C outside a flow (a flow's own interruption is reported by ``commands.printed.interrupted``)."""

    exit_code = ExitCode.INTERRUPTED
    default_title = "Interrupted"


def run_async(fn: Callable[[], Coroutine[Any, Any, int | None]]) -> int | None:
    import anyio

    return anyio.run(fn)


# --- stopping a server command -----------------------------------------------------------------------------------


class StopSignals:
    """SIGTERM and SIGHUP stop a server command the way Ctrl-C does: the running coroutine is cancelled, so a flow's
    session is put back to waiting under its lease and a stdio server child is shut down (never left to init); the
    exit code is 128 + the signal's number (143, 129), as shells report a signal, and 130 for Ctrl-C."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        import signal

        for signum in signals("SIGTERM", "SIGHUP", "SIGBREAK"):  # SIGBREAK: Ctrl-Break on Windows
            try:
                self._old[signum] = signal.signal(signum, self._forward)
            except (ValueError, OSError):  # not the main thread, or no such signal here
                continue
        return self

    def __exit__(self, *exc_info: object) -> None:
        import signal

        for signum, old in self._old.items():
            # Stopping: a second SIGTERM/SIGHUP (its terminal gone after a kill) must not cut the cleanup short.
            signal.signal(signum, signal.SIG_IGN if self.signum is not None else old)

    def _forward(self, signum: int, frame: Any) -> None:
        import signal

        if self.signum is not None:
            return  # one stop at a time: the first signal says why, and its cleanup runs whole
        self.signum = signum
        # Whatever handles Ctrl-C right now (asyncio's runner cancels the main task; outside it, KeyboardInterrupt).
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    def what(self) -> str:

        said = {"SIGTERM": "Terminated (SIGTERM)", "SIGHUP": "Hung up (SIGHUP)", "SIGBREAK": "Interrupted (Ctrl-Break)"}
        names = {signum: text for name, text in said.items() for signum in signals(name)}
        return names.get(self.signum or 0, "Interrupted")

    def exit_code(self) -> int:
        if not self.signum or self.signum in signals("SIGBREAK"):  # Ctrl-Break is Windows' other Ctrl-C
            return int(ExitCode.INTERRUPTED)
        return 128 + self.signum


def until_stopped(rt: Runtime, run: Callable[[], int], stopped: Callable[[StopSignals], int] | None = None) -> int:
    """The one way every server command runs: ``run()`` under the stop signals, the runtime closed after it.
    Ctrl-C, SIGTERM or SIGHUP — even raised inside a task group, which wraps what its body raised — is ``stopped``'s
    to say and to end with its exit code (by default: one line, or the error document with ``--json``)."""
    stops = StopSignals()
    try:
        with stops:
            return run()
    except BaseException as exc:
        single = lone(exc)
        if isinstance(single, KeyboardInterrupt):
            return (stopped or functools.partial(said_stopped, rt))(stops)
        if single is not exc:
            raise single from None
        raise
    finally:
        rt.close()


def said_stopped(rt: Runtime, stops: StopSignals) -> int:
    """A command with nothing to keep was stopped: say by what (``--json``: also as the error document)."""
    stop = Interrupted(f"{stops.what()}.")
    stop.exit_code = stops.exit_code()  # type: ignore[assignment]
    rt.out.stop_progress()
    if rt.json:
        from mcpcli.display import json_text
        from mcpcli.errors import error_document

        sys.stdout.write(json_text(error_document(stop), indent=None if rt.json_lines else 2) + "\n")
        sys.stdout.flush()
    sys.stderr.write(f"\n{stop.message}\n")
    return stops.exit_code()
