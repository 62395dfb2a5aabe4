"""The front end's side of the warm path: hand a command to the worker, relay signals, exit with its status.

Standard library only (its cheapest modules), and nothing of mcpcli but the ground it needs (``framing``,
``userdirs``, ``platform``) and this package's light ``__init__``: this runs before anything heavy is imported, so a
warm ``mcpcli call`` costs a bare interpreter plus one round trip to the worker. When the worker cannot take the
command (none yet, stale socket, another version, no answer in time) ``delegate`` returns ``None`` and the caller
runs it in-process, as without a worker; nothing has run then — the worker's child runs only once this side says
"go". With ``MCPCLI_WORKER_REQUIRED=1`` (the test suite's warm pass) that fallback is an error instead: one line,
exit 4, nothing run.
"""

from __future__ import annotations

# The C modules beneath ``socket`` and ``signal`` (``_signal``, below), not those: their Python layers (enum,
# selectors) cost every warm command ~2 ms.
import _socket
import os
import sys
import time

from mcpcli import SERVER_COMMANDS, __version__
from mcpcli.framing import FramingError, receive, send
from mcpcli.platform import O_NOFOLLOW, WORKERLESS, bare_unix_socket, cpu_ticks, current_umask, peer, signals, uid
from mcpcli.userdirs import (
    OFF,
    ON,
    config_home,
    env_seconds,
    own_private_dir,
    package_dir,
    socket_file,
    state_home,
    worker_dir,
    worker_file,
)

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~4 ms (mypy reads the name alone)

if TYPE_CHECKING:
    import signal as _signal  # the same functions (typeshed has no stub for ``_signal``)
    from collections.abc import Sequence
else:
    import _signal


VALUE_OPTIONS = frozenset(
    {"-s", "--server", "-H", "--header", "--protocol", "--store", "--trace", "--record", "--log-level", "--bearer"}
)
"""Global options that take a value (so the word after them is not the subcommand)."""

IN_PROCESS_FLAGS = frozenset({"--tui", "-h", "--help", "--version", "--install-completion", "--show-completion"})

ANSWER_TIMEOUT = 3.0
"""Seconds the front end waits for the worker to answer before it runs the command itself."""

BUSY_LIMIT = 30.0
"""Seconds the front end keeps waiting for a worker that is slow but busy (its CPU time grows: a loaded machine),
where a silent one is given up after ``ANSWER_TIMEOUT``."""

START_TIMEOUT = 30.0
"""Seconds the worker's child may take to start, once the worker has answered (a loaded machine is slow, and a
command that falls back to running here would only load it more)."""

START_WINDOW = 300.0
"""A server command run without a worker starts one only when another such command ran within this many seconds
(five minutes): a lone command — a cron job, a script's one call — leaves nothing behind, and a person running
commands one after another is warm from the third on. ``MCPCLI_WORKER_WINDOW=SECONDS`` changes it (0: start on the
first command, as ``--keep-alive`` and ``mcpcli worker start`` do)."""

FORWARDED = signals("SIGINT", "SIGTERM", "SIGHUP", "SIGWINCH", "SIGQUIT")
"""What the front end passes on to the command the worker runs (those that exist here)."""


def subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (global options may come before it), or ``None``."""
    words = iter(argv)
    for word in words:
        if word == "--":
            return None
        if word.startswith("-"):
            if word in VALUE_OPTIONS:
                next(words, None)
            continue
        return word
    return None


def wanted(argv: Sequence[str]) -> bool:
    """Whether this command should go through the worker (see the package docstring for the rules)."""
    if subcommand(argv) not in SERVER_COMMANDS or any(word in IN_PROCESS_FLAGS for word in argv):
        return False
    if WORKERLESS is not None:
        return False  # every command runs in-process here; `mcpcli worker status` says why
    if os.environ.get("_MCPCLI_COMPLETE"):
        return False
    choice = os.environ.get("MCPCLI_WORKER", "").strip().lower()
    if choice in OFF:
        return False
    if choice in ON or required():  # required: on wherever it would be off by default (CI, config.toml)
        return True
    if os.environ.get("CI"):
        return False  # a background process left behind on a CI runner would surprise
    return _configured()


def _configured() -> bool:
    """``[worker] enabled`` in config.toml (default true); an unreadable file leaves it to the in-process run."""
    section = _section()
    if section is None:
        return False  # the in-process run says what is wrong with the file
    return bool(section.get("enabled", True))


def _configured_idle() -> float | None:
    """``[worker] idle_timeout`` (seconds) in config.toml, for a worker this command starts."""
    value = (_section() or {}).get("idle_timeout")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _section() -> dict[str, object] | None:
    """The ``[worker]`` table of config.toml (empty when there is none); ``None`` when the file does not parse."""
    try:
        with open(os.path.join(config_home(), "config.toml"), encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return {}
    if "worker" not in text:
        return {}
    import tomllib

    try:
        section = tomllib.loads(text).get("worker") or {}
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    return section if isinstance(section, dict) else {}


def _note(text: str) -> None:
    sys.stderr.write(f"mcpcli: {text}\n")


REQUIRED_ENV = "MCPCLI_WORKER_REQUIRED"
"""Set (``1``): a server command the worker should run but cannot is an error (exit 4), never run in-process —
so that a test pass meant to go through the worker fails when it does not (tests/conftest.py's warm pass)."""

NO_ANSWER = "the background worker did not answer"


def required() -> bool:
    """Whether ``MCPCLI_WORKER_REQUIRED`` forbids running a server command in-process when the worker cannot."""
    return os.environ.get(REQUIRED_ENV, "").strip().lower() in ON


def delegate(argv: Sequence[str]) -> int | None:
    """Run ``argv`` in the worker and return its exit status; ``None`` when the caller should run it itself
    (``required``: exit status 4 and one line saying why instead)."""
    outcome = _delegate(argv)
    if isinstance(outcome, int):
        return outcome
    if not required():
        if outcome == NO_ANSWER:
            _note(f"{NO_ANSWER}; running without it (mcpcli worker stop to reset it).")
        return None
    message = f"{outcome}, and {REQUIRED_ENV} is set: nothing was run."
    hint = f"Check the worker with: mcpcli worker status (or unset {REQUIRED_ENV} to run without it)"
    _note(f"{message} {hint}.")
    words = argv[: list(argv).index("--")] if "--" in argv else argv
    if "--json" in words:  # an error document on stdout too, as every other failure with --json
        import json

        error = {"message": message, "hint": hint, "exit_code": 4}
        sys.stdout.write(json.dumps({"error": error}, ensure_ascii=False) + "\n")
    return 4


def _delegate(argv: Sequence[str]) -> int | str:
    """The worker's exit status for ``argv``, or why it could not take the command (nothing has run then)."""
    path = socket_file()
    sock = _connect(path, argv)
    if isinstance(sock, str):
        return sock
    try:
        return _run_through(sock, path, argv)
    finally:
        sock.close()


def _run_through(sock: _socket.socket, path: str, argv: Sequence[str]) -> int | str:
    """``_delegate`` on the worker's connection ``sock`` (its caller closes it)."""
    try:
        sock.settimeout(ANSWER_TIMEOUT)
        if peer(sock)[1] != uid():
            # not this user's (the socket directory is checked too): never hand it a terminal
            return f"the background worker's socket {path} is another user's"
        send(sock, {"op": "hello", "version": __version__, "package": package_dir()})
        hello = _answer(sock)
        if not hello.get("ok"):
            if hello.get("why") == "version":
                _replace_worker(path, why="version")
                return "the background worker was of another mcpcli version (replaced for the next command)"
            # "credentials": other groups or capabilities than the worker's run as themselves
            return "this command's rights (groups, capabilities) differ from the background worker's"
        # The caller's umask too: the command creates files as this process would.
        request = {
            "op": "run",
            "argv": list(argv),
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "umask": current_umask(),
        }
        send(sock, request, fds=[0, 1, 2])
        sock.settimeout(START_TIMEOUT)
        started, _ = receive(sock)
        child = int(started["started"])
    except (OSError, FramingError, KeyError, ValueError, TypeError):
        return NO_ANSWER
    with _Forwarding(child):
        send(sock, {"go": True})  # from here on the command is the worker's: no fallback, ever
        sock.settimeout(None)
        try:
            ended, _ = receive(sock)
            return int(ended["exit"])
        except (OSError, FramingError, KeyError, ValueError, TypeError):
            _note(
                "the background worker's run of this command died before it finished; a session it was"
                " driving is intact: mcpcli sessions list --waiting"
            )
            return 4


def _answer(sock: _socket.socket) -> dict[str, object]:
    """The worker's answer to the greeting. Past ``ANSWER_TIMEOUT`` keep waiting only while the worker works (on a
    loaded machine — a hundred commands at once — it is slow, and running here instead would load it more); a
    worker that uses no CPU meanwhile is hung (``TimeoutError``)."""
    worker, _uid = peer(sock)
    used = cpu_ticks(worker)
    deadline = time.monotonic() + BUSY_LIMIT
    while True:
        try:
            answer, _ = receive(sock)
            return answer
        except TimeoutError:
            now = cpu_ticks(worker)
            if used is None or now is None or now <= used or time.monotonic() > deadline:
                raise
            used = now


def _connect(path: str, argv: Sequence[str]) -> _socket.socket | str:
    """A connection to the worker at ``path``, or why there is none."""
    sock = bare_unix_socket()
    sock.settimeout(ANSWER_TIMEOUT)
    try:
        sock.connect(path)
        return sock
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        # No worker (or one that is gone): this command runs in-process; the next ones may be warm.
        if "--keep-alive" in argv or another_in_a_row(worker_file(".last"), start_window()):
            start()
        return f"no background worker listens at {path}"
    except OSError:
        sock.close()
        return NO_ANSWER


def start_window() -> float:
    return env_seconds("MCPCLI_WORKER_WINDOW", START_WINDOW, least=0.0)


def another_in_a_row(stamp: str, window: float, now: float | None = None) -> bool:
    """Whether a server command ran without a worker within ``window`` seconds before this one (``stamp``'s
    mtime says when the last one did); records this one. The stamp is an empty 0600 file in the worker's 0700
    directory; a directory that is not this user's alone counts as no stamp (and is not written)."""
    now = time.time() if now is None else now
    if window <= 0:
        return True
    if not own_private_dir(os.path.dirname(stamp)):
        return False
    try:
        last: float | None = os.stat(stamp).st_mtime
    except OSError:
        last = None
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | O_NOFOLLOW, 0o600))
        os.utime(stamp, (now, now))
    except OSError:
        pass
    return last is not None and 0 <= now - last <= window


def _replace_worker(path: str, *, why: str) -> None:
    """A worker of another mcpcli version (or install) answered: stop it and start ours for the next command."""
    stop(path)
    start()


def start(*, asked: bool = False) -> int | None:
    """Start this user's worker in the background (its own session, no terminal); return its pid. ``asked``:
    by ``mcpcli worker start`` (the worker then keeps the configured idle timeout from its first minute)."""
    import subprocess

    if WORKERLESS is not None:
        return None
    directory = worker_dir()
    if not own_private_dir(directory):
        _note(f"not starting the background worker: {directory} is not a private directory of this user's.")
        return None
    try:
        log = os.open(worker_file(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | O_NOFOLLOW, 0o600)
    except OSError:
        log = os.open(os.devnull, os.O_WRONLY)
    env = dict(os.environ)
    if "MCPCLI_WORKER_IDLE" not in env and (idle := _configured_idle()) is not None:
        env["MCPCLI_WORKER_IDLE"] = str(idle)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "mcpcli.worker.server", os.path.abspath(state_home()), *(["--asked"] * asked)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    except OSError:
        return None
    finally:
        os.close(log)
    return proc.pid


def ask(path: str | os.PathLike[str], op: str, *, home: str | None = None) -> dict[str, object] | None:
    """A control request (``status``, ``stop``, ``ps``…) to the worker at ``path`` (about ``home``'s kept servers,
    for ``ps`` and ``restart:NAME``); ``None`` when none answers."""
    if WORKERLESS is not None:
        return None
    sock = bare_unix_socket()
    sock.settimeout(ANSWER_TIMEOUT)
    try:
        sock.connect(os.fspath(path))
        send(sock, {"op": op, "version": __version__, "package": package_dir(), "home": home})
        reply, _ = receive(sock)
        return reply
    except (OSError, FramingError):
        return None
    finally:
        sock.close()


def stop(path: str | os.PathLike[str], *, wait: float = 5.0) -> bool:
    """Ask the worker to exit and wait until its socket is gone; whether one was running."""
    reply = ask(path, "stop")
    if reply is None:
        return False
    deadline = time.monotonic() + wait
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


class _Forwarding:
    """Signals meant for the command (Ctrl-C, SIGTERM, SIGHUP, window size) go to the worker's child running it,
    while this is entered."""

    def __init__(self, child: int) -> None:
        self.child = child
        self.old: dict[int, object] = {}

    def forward(self, signum: int, _frame: object) -> None:
        try:
            os.kill(self.child, signum)
        except ProcessLookupError:
            pass

    def __enter__(self) -> None:
        self.old = {signum: _signal.signal(signum, self.forward) for signum in FORWARDED}

    def __exit__(self, *_exc: object) -> None:
        for signum, handler in self.old.items():
            _signal.signal(signum, handler)  # type: ignore[arg-type]  # what it returned before
