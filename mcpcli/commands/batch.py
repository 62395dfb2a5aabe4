"""``mcpcli batch``: many tool-call flows in one process — read and check a JSON Lines file, run its flows
``--jobs`` at a time, print one JSON line per flow as each finishes, and a summary on stderr.

Each flow is what ``call`` runs — its own ``Flow``, ``Keeper`` (own lease owner) and session — built by
``flows.build_flow``; only the connection is shared. A 2026-07-28 server asks nothing over a back-channel, so
every flow runs on one connection. A pre-2026 server asks mid-call, and the SDK's callback context names no
request a question belongs to, so there each flow gets a connection of its own (at most ``--jobs`` open), with
its own back-channel answerers, as ``call`` has.

Nothing is sent before the whole input is read (bounded) and checked: a bad line is a usage error naming it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mcpcli import telemetry
from mcpcli.display import counted
from mcpcli.errors import ExitCode, McpcliError, ServerError, UsageError

if TYPE_CHECKING:
    from mcp import Client

    from mcpcli.auth import Credentials
    from mcpcli.commands.runtime import AnswerOptions, Runtime
    from mcpcli.commands.seat import Seat
    from mcpcli.engine.answers import Presets
    from mcpcli.engine.flow import Flow
    from mcpcli.engine.steps import Outcome
    from mcpcli.settings.targets import Target
    from mcpcli.state.store import SessionRecord

MAX_FLOWS = 10_000
"""Flows one batch may hold."""
MAX_LINE_BYTES = 1 << 20
"""Bytes one line may hold (1 MiB)."""
MAX_INPUT_BYTES = 64 << 20
"""Bytes the whole input may hold (64 MiB)."""
JOBS_DEFAULT = 8
JOBS_MAX = 256

KEYS = ("tool", "arguments", "answers", "id")
EXAMPLE = '{"tool": "provision", "arguments": {"name": "a"}, "answers": {"region": "eu-west-1"}, "id": 1}'
HINT = f"Each line is one JSON object: {EXAMPLE} (only tool is required; see mcpcli batch --help)."


@dataclass(frozen=True)
class Line:
    """One flow of the input, checked."""

    number: int
    """Its line number in the input (1-based, blank and comment lines counted)."""
    tool: str
    arguments: dict[str, Any]
    answers: dict[str, Any] | None
    """Its own answers, in the ``--answers`` file format (laid over the command line's)."""
    id: Any = None
    """Echoed back as given."""


# --- the input -------------------------------------------------------------------------------------------------------


def read_input(source: str | None, *, answers_file: str | None = None) -> list[Line]:
    """Read and check the whole input — ``source`` a file, ``-`` or ``None`` for stdin — before anything is sent."""
    from_stdin = source in (None, "-")
    if from_stdin and answers_file == "-":
        raise UsageError(
            "The batch is read from stdin, so --answers cannot be read from it too.",
            hint="Give the batch as a file (mcpcli batch FILE --answers -), or the answers as a file.",
        )
    if from_stdin:
        stream: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)
        return parse_lines(stream, "stdin")
    assert source is not None
    try:
        with Path(source).open("rb") as file:
            return parse_lines(file, source)
    except OSError as exc:
        raise UsageError(f"Cannot read the batch file {source}: {exc.strerror or exc}.") from None


def parse_lines(stream: IO[Any], where: str) -> list[Line]:
    """Every flow of ``stream`` (bytes or text), read with bounds: at most ``MAX_LINE_BYTES`` a line,
    ``MAX_INPUT_BYTES`` in all and ``MAX_FLOWS`` flows; blank lines and ``#`` comments skipped."""
    lines: list[Line] = []
    total = 0
    for number, raw in enumerate(_bounded_lines(stream, where), start=1):
        total += len(raw)
        if total > MAX_INPUT_BYTES:
            raise UsageError(
                f"The batch input ({where}) is larger than {MAX_INPUT_BYTES >> 20} MiB; nothing was sent.",
                hint="Split it into several batches.",
            )
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if len(lines) == MAX_FLOWS:
            raise UsageError(
                f"The batch input ({where}) holds more than {MAX_FLOWS} flows; nothing was sent.",
                hint="Split it into several batches.",
            )
        lines.append(_check(number, text, where))
    return lines


def _bounded_lines(stream: IO[Any], where: str) -> Iterator[str]:
    """The lines of ``stream`` as text; never reads more than one line's bound (plus its newline) at a time."""
    number = 0
    while True:
        number += 1
        chunk = stream.readline(MAX_LINE_BYTES + 3)  # a line at the bound, its "\r\n", and one byte past it
        if not chunk:
            return
        data = chunk if isinstance(chunk, bytes) else chunk.encode("utf-8", "surrogatepass")
        if len(data.rstrip(b"\r\n")) > MAX_LINE_BYTES:
            raise UsageError(
                f"Batch input ({where}), line {number}: longer than {MAX_LINE_BYTES >> 20} MiB; nothing was sent.",
                hint="Pass large arguments some other way (a file the tool reads, a resource).",
            )
        if isinstance(chunk, bytes):
            try:
                yield chunk.decode("utf-8")
            except UnicodeDecodeError:
                raise UsageError(f"Batch input ({where}), line {number}: not UTF-8; nothing was sent.") from None
        else:
            yield chunk


def _check(number: int, text: str, where: str) -> Line:
    """One input line checked whole before anything runs: a JSON object naming a tool, its arguments an object, its
    id and answers well-typed; else a usage error naming the line (exit 2, nothing sent)."""

    def bad(what: str) -> UsageError:
        return UsageError(f"Batch input ({where}), line {number}: {what}; nothing was sent.", hint=HINT)

    try:
        data = json.loads(text)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise bad(f"not valid JSON ({reason})") from None
    except RecursionError:
        raise bad("nested too deeply to read") from None
    if not isinstance(data, dict):
        raise bad(f"a JSON {_kind(data)}, not an object")
    if unknown := [key for key in data if key not in KEYS]:
        names = ", ".join(repr(key) for key in unknown)
        raise bad(f"unknown key{'s' if len(unknown) > 1 else ''} {names} (known: {', '.join(KEYS)})")
    tool = data.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise bad('no "tool" (a non-empty string)' if tool is None else '"tool" must be a non-empty string')
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        raise bad(f'"arguments" must be an object, not a JSON {_kind(arguments)}')
    answers = data.get("answers")
    if answers is not None:
        if not isinstance(answers, dict):
            raise bad(f'"answers" must be an object (the --answers file format), not a JSON {_kind(answers)}')
        from mcpcli.engine.answers import Presets

        try:
            Presets().merged(answers, f"line {number}")  # the same checks as an --answers file's
        except UsageError as exc:
            raise bad(f'"answers": {exc.message.rstrip(".")}') from None
    return Line(number, tool, arguments, answers, data.get("id"))


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# --- running ---------------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the batch has printed so far, for the summary line and the exit code."""

    total: int
    codes: list[int] = field(default_factory=list)

    def add(self, code: int) -> None:
        self.codes.append(code)

    def exit_code(self) -> int:
        return max(self.codes, default=0)

    def summary(self) -> str:
        """The summary line's words: how many flows finished, erred, wait for input, failed, or never ran."""
        done = self.codes.count(ExitCode.OK)
        tool_errors = self.codes.count(ExitCode.TOOL_ERROR)
        waiting = self.codes.count(ExitCode.INPUT_REQUIRED)
        failed = len(self.codes) - done - tool_errors - waiting
        parts = [f"{done} done"]
        if tool_errors:
            parts.append(f"{tool_errors} tool error{'s' if tool_errors > 1 else ''}")
        if waiting:
            parts.append(f"{waiting} need{'s' if waiting == 1 else ''} input")
        if failed:
            parts.append(f"{failed} failed")
        if left := self.total - len(self.codes):
            parts.append(f"{left} not run")
        return f"{self.total} flow{'s' if self.total != 1 else ''}: {', '.join(parts)}."


class _Reporter:
    """A flow's notes on stderr, each naming its line (progress bars of a hundred flows would only flicker)."""

    def __init__(self, rt: Runtime, number: int) -> None:
        self.out = rt.out
        self.number = number

    def note(self, text: str) -> None:
        self.out.note(f"line {self.number}: {text}")

    def detail(self, text: str) -> None:
        self.out.detail(f"line {self.number}: {text}")

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        pass


@dataclass
class Batch:
    """One batch run: the shared pieces every flow is built from, and what has been printed."""

    rt: Runtime
    opts: AnswerOptions
    flows: list[Flow]
    """Every flow built (the interrupt handler reads it)."""
    target: Target
    protocol: Any
    presets: Presets
    """The command line's presets, parsed once; each flow gets a copy with its line's answers laid over."""
    credentials: Credentials
    tally: Tally
    tools: dict[str, Any] | None = None
    """The server's tools by name (their ``execution``); None when the listing could not be read (unchecked)."""
    client: Client | None = None
    """The shared connection (2026-07-28); None: each flow connects on its own."""
    started: float = field(default_factory=time.monotonic)
    """When the batch began: ``--wait-for-answer`` bounds its whole run from here."""
    roots_on_connect: bool = False
    """The server asked the listing's connection for its roots (the filesystem server does, on connecting): each
    flow's own connection waits for that question before its call, or the call finds no root yet."""

    async def run(self, lines: list[Line], jobs: int) -> None:
        import anyio

        queue = iter(lines)

        async def worker() -> None:
            for line in queue:  # one iterator, shared: each worker takes the next line when it is free
                await self.run_line(line)

        async with anyio.create_task_group() as tasks:
            for _ in range(min(jobs, len(lines))):
                tasks.start_soon(worker)

    async def run_line(self, line: Line) -> None:
        """Run one line to its JSON line: a server that wants to call back on the shared connection gets the line
        again on a connection of its own (and so does every later line); the flow leaves flows once its line is
        out."""
        from mcpcli.commands.run import CallsBack

        for _ in range(2):  # a second time only on its own connection, for a server that wants to call back
            flow = self._flow(line)
            try:
                doc = await self._drive(flow, line)
                doc = await self._waiting(doc, line)
            except CallsBack:
                self.flows.remove(flow)
                if self.client is not None:
                    self.client = None  # from now on every flow connects on its own
                    self.rt.out.note(
                        "The server asks its questions over the pre-2026 back-channel; running each flow on a"
                        " connection of its own (--protocol legacy)."
                    )
                continue
            self.flows.remove(flow)  # what is left in ``flows`` is what an interruption stopped
            self.tally.add(doc["exit"])
            self.rt.out.json_line(doc)
            return

    def _seat(self, line: Line) -> Seat:
        """A line's seat: its notes prefixed with its number; nobody to ask, its outcome a JSON line (``_drive``)."""
        from mcpcli.commands.seat import Seat, Unshown

        return Seat(reporter=_Reporter(self.rt, line.number), shows=Unshown(), summaries=False)

    def _flow(self, line: Line) -> Flow:
        from mcpcli.commands.run import build_flow

        presets = self.presets.merged(line.answers or {}, f"line {line.number}")
        flow = build_flow(
            self.rt, self.opts, self._seat(line), self.target.label, self.flows, self._connection(), presets
        )
        if self.client is not None:
            flow.credentials = self.credentials  # the shared connection's sign-in (the session records who)
        return flow

    async def _waiting(self, doc: dict[str, Any], line: Line) -> dict[str, Any]:
        """``--wait-for-answer``: a line's flow that waits for a person is announced, and resumed (by this batch,
        on its connection) as soon as an answer lands in the store — until the time given runs out."""
        from mcpcli.commands.inbox import announce, until_answered

        if self.opts.wait_for_answer is None or doc["status"] != "input_required" or "error" in doc:
            return doc
        deadline, waited = self.started + self.opts.wait_for_answer, False
        while doc["status"] == "input_required" and "error" not in doc:
            record = self.rt.store.get(doc["session_id"])
            if not waited or record.answered_by is None:
                announce(self.rt, "waiting", record, doc["needs"]["pending"])
            woke = await until_answered(self.rt.store, record, deadline, fresh=not waited)
            if woke is None:
                return doc
            waited = True
            flow = self._flow(line)
            doc = await self._drive(flow, line, resume=woke)
            self.flows.remove(flow)
        announce(
            self.rt,
            "done" if doc["status"] in ("done", "tool_error") else "failed",
            self.rt.store.get(doc["session_id"]),
        )
        return doc

    def _connection(self) -> dict[str, Any]:
        from mcpcli.settings.targets import connection_settings

        return connection_settings(self.target, self.protocol or self.target.protocol or "auto")

    async def _drive(self, flow: Flow, line: Line, *, resume: SessionRecord | None = None) -> dict[str, Any]:
        """Run one flow to its line: a result, what it needs, or why it failed. ``resume``: its stored session,
        answered meanwhile (``--wait-for-answer``), continued instead of called anew."""
        from mcpcli.commands.run import CallsBack
        from mcpcli.engine.endings import ending_of
        from mcpcli.engine.steps import NeedInput
        from mcpcli.terminal.hints import worded

        async with flow.keeper.running():
            try:
                if resume is not None:
                    await flow.adopt(resume)
                if self.client is not None:
                    outcome = await self._on_shared(flow, line, self.client)
                else:
                    outcome = await self._on_own(flow, line)
                return self._result(line, flow, outcome)
            except CallsBack:
                raise
            except BaseException as exc:
                settled = await ending_of(flow, exc)
                if isinstance(settled, NeedInput):
                    return self._needs(line, settled)
                if isinstance(settled, McpcliError):
                    return self._failed(line, flow, worded(settled))
                if isinstance(settled, Exception) and not self.rt.g.debug:  # a bug stops this flow, not the batch
                    first = str(settled).splitlines()[0] if str(settled) else ""
                    return self._failed(line, flow, McpcliError(f"Unexpected {type(settled).__name__}: {first}"))
                raise  # Ctrl-C, a signal, the batch being cancelled (the session was put back to waiting)

    async def _start(self, flow: Flow, line: Line, client: Client) -> Outcome:
        """Start the line's call (or continue its adopted session) on client: a tool the shared listing does not name
        is refused before anything is sent, and the listing says whether it runs as a task."""
        from mcpcli.engine.arguments import no_such
        from mcpcli.engine.endings import error_result
        from mcpcli.engine.steps import Call
        from mcpcli.net.tasks import task_support

        if flow.session is not None:  # adopted (--wait-for-answer): its stored session continues
            return error_result(await flow.resume())
        if self.tools is not None:
            if line.tool not in self.tools:
                raise no_such("tool", line.tool, sorted(self.tools))
            flow.as_task = task_support(client, self.tools[line.tool], False)
        else:
            from mcpcli.net.connection import unlisted

            unlisted(client, line.tool)
        return error_result(await flow.start(Call("tools/call", line.tool, line.arguments)))

    async def _on_shared(self, flow: Flow, line: Line, client: Client) -> Outcome:
        from mcpcli.commands.run import CallsBack
        from mcpcli.net.connection import wants_back_channel

        flow.client = client
        try:
            return await self._start(flow, line, client)
        except ServerError:
            if flow.session is None and wants_back_channel(client):
                raise CallsBack from None
            raise

    async def _on_own(self, flow: Flow, line: Line) -> Outcome:
        """The line's flow on a connection of its own (a pre-2026 server asks over the back-channel, per connection):
        a question mcpcli refused to answer is the news, not what the server made of the refusal."""
        from mcpcli.commands.run import Run
        from mcpcli.net.connection import back_channel_failure

        run = Run(self.rt, self.opts, flow, self._seat(line), self.target, self.protocol, self.flows)
        async with run.connect() as client:
            flow.client = client
            flow.roots_expected = self.roots_on_connect
            try:
                outcome = await self._start(flow, line, client)
            except ServerError:
                if (failure := back_channel_failure(client)) is not None:
                    raise failure from None  # e.g. a bad answer to its question: why mcpcli refused is the news
                raise
            return outcome  # a complete result after a refused question stands (Outcome.refused names it)

    # --- the lines ---------------------------------------------------------------------------------------------------

    @staticmethod
    def _head(line: Line, code: int, status: str, session_id: str | None) -> dict[str, Any]:
        return {"line": line.number, "id": line.id, "exit": code, "status": status, "session_id": session_id}

    def _result(self, line: Line, flow: Flow, outcome: Outcome) -> dict[str, Any]:
        code = int(outcome.exit_code)
        status = "done" if code == ExitCode.OK else "tool_error"
        session_id = outcome.session.id if outcome.session is not None else None
        doc = self._head(line, code, status, session_id) | {"result": outcome.result}
        if (refusal := outcome.refusal()) is not None:
            doc["warning"] = refusal  # a pre-2026 server finished without what it asked: as call's one warning
        return doc

    def _needs(self, line: Line, need: Any) -> dict[str, Any]:
        from mcpcli.engine.answers import answers_template

        needs = {"pending": dict(need.pending), "answers_template": answers_template(need.pending)}
        doc = self._head(line, int(ExitCode.INPUT_REQUIRED), "input_required", need.session.id)
        if not need.deferred:  # asked mid-call (pre-2026): it could not wait; a resume asks the call again
            doc["error"] = need.message
        return doc | {"needs": needs}

    def _failed(self, line: Line, flow: Flow, exc: McpcliError) -> dict[str, Any]:
        session = flow.session
        session_id = exc.session_id or (session.id if session is not None and flow.keeper.saved else None)
        message = " ".join(exc.message.split())  # one line
        if exc.hint:
            message = f"{message} {' '.join(exc.hint.split())}"
        return self._head(line, int(exc.exit_code), "failed", session_id) | {"error": message}


async def run_batch(rt: Runtime, opts: AnswerOptions, flows: list[Flow], lines: list[Line], *, jobs: int) -> int:
    """Run the checked ``lines``, ``jobs`` flows at a time; print a JSON line per flow and the summary; the exit
    code: 0 when every flow exited 0, else the highest flow exit code."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    from mcpcli.commands.connecting import credentials, declared, with_server_logs
    from mcpcli.net.connection import connect
    from mcpcli.settings import trust

    tally = Tally(len(lines))
    if not lines:
        rt.out.note(f"No flows in the input. {HINT}")
        return 0
    target = rt.target()
    protocol = rt.protocol()
    rt.store.check_writable()  # before the first request: a flow may need the store at any round
    trust.remember(rt.paths, target)  # the user typed this command line: a later resume may run it unasked
    presets = opts.presets()
    creds = credentials(rt, interactive=False)  # nobody signs in mid-batch: mcpcli auth login first
    batch = Batch(rt, opts, flows, target, protocol, presets, creds, tally)

    async def roots_asked(request: Any) -> Any:  # the listing's connection answers nothing, but notes the question
        import mcp_types as t

        batch.roots_on_connect = True
        return t.ErrorData(code=t.INVALID_REQUEST, message="The roots are given to each flow's own connection.")

    # Nobody is asked mid-batch; each line may carry answers of its own.
    options = declared(rt, target, opts.llm, person=False, presets=True, sampling_policy=opts.approve_sampling)
    options = with_server_logs(replace(options, credentials=creds, roots=roots_asked), rt, rt.out.note)

    rt.traces()  # OpenTelemetry, when asked for: the batch's span; each flow a trace of its own, linked to it
    with telemetry.batch_span(len(lines)):
        try:
            async with connect(replace(options, tracer=rt.tracer())) as client:
                batch.tools = await _tools(rt, client)
                version = client.protocol_version
                if version in MODERN_PROTOCOL_VERSIONS:
                    batch.client = client
                    await batch.run(lines, jobs)
            if version not in MODERN_PROTOCOL_VERSIONS:
                # A pre-2026 server: its questions come over the back-channel, so each flow needs its own connection.
                rt.out.note(
                    f"The server speaks {version} (before 2026-07-28): each flow gets a connection of its own,"
                    f" {min(jobs, len(lines))} at a time."
                )
                await batch.run(lines, jobs)
        except BaseException:
            if tally.codes:  # some lines are out: say how far the batch got (the error, or the interruption, follows)
                say_summary(rt, tally)
            raise
    say_summary(rt, tally)
    return tally.exit_code()


async def _tools(rt: Runtime, client: Client) -> dict[str, Any] | None:
    """The server's tools (name → ``execution``), listed once for every flow; None when the listing cannot be
    read — the flows are then sent unchecked, as ``call`` does."""
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    tools: dict[str, Any] = {}
    cursor = None
    try:
        for _ in range(100):  # a paginator that never ends cannot hang us
            page = await client.list_tools(cursor=cursor)
            tools.update({item.name: item.execution for item in page.tools})
            cursor = page.next_cursor
            if not cursor:
                return tools
    except (MCPError, ValidationError) as exc:
        why = exc.message if isinstance(exc, MCPError) else "malformed"
        rt.out.note(f"The server's tool listing could not be read ({why}); sending every flow unchecked.")
        return None
    return tools


def say_summary(rt: Runtime, tally: Tally) -> None:
    """The batch's last line on stderr (no server text in it); where to answer the flows that wait."""
    from rich.text import Text

    rt.out.err.print(Text(tally.summary()), markup=False, highlight=False)
    if ExitCode.INPUT_REQUIRED in tally.codes:
        rt.out.err.print(
            Text(
                "Answer them: mcpcli sessions list --waiting, then mcpcli resume ID --answer FIELD=VALUE "
                "(their session ids and answers templates are in their lines).",
                style="dim",
            ),
            markup=False,
            highlight=False,
        )


def interrupted(rt: Runtime, stopped: list[Flow], what: str) -> None:
    """Ctrl-C, SIGTERM or SIGHUP: every running flow (``stopped``: those whose line is not out) was cancelled,
    and each one's session put back to waiting under its lease."""
    from rich.text import Text

    for flow in stopped:
        flow.keeper.give_back()  # normally given back already; not when a second signal cut the cleanup short
    kept = [f.session.id for f in stopped if f.session is not None and f.keeper.saved]
    if kept:
        text = (
            f"{what}; {counted(len(stopped), 'running flow')} stopped, {len(kept)} kept"
            f" {'its session' if len(kept) == 1 else 'their sessions'}:"
            f" {', '.join(kept[:5])}{', …' if len(kept) > 5 else ''}. Continue them with: mcpcli resume ID"
            " (mcpcli sessions list --waiting)"
        )
    else:
        text = f"{what}; {counted(len(stopped), 'running flow')} stopped, none had a session to keep."
    rt.out.err.print(Text(text), markup=False, highlight=False)
