"""``mcpcli worker status|start|stop|ps|restart``: the background worker that makes server commands start warm."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from mcpcli.cli.app import app
from mcpcli.cli.helpfmt import Typer
from mcpcli.cli.options import Json

worker_app = Typer(
    help=(
        "The background worker: keeps mcpcli and the SDK loaded so server commands start warm. One per user serves"
        " every MCPCLI_HOME. It starts by itself when a second server command comes within 5 minutes of the first"
        " (not when CI is set) and exits when idle; --no-worker or MCPCLI_WORKER=0 runs without it."
        "\n\nExample: mcpcli worker status"
    ),
    no_args_is_help=True,
)
app.add_typer(worker_app, name="worker")


def _path() -> object:
    from mcpcli.userdirs import socket_path

    return socket_path()


def _home() -> str:
    from pathlib import Path

    from mcpcli.userdirs import state_home

    return str(Path(state_home()).absolute())


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")


def _unusable() -> str | None:
    """Why no worker can run in this user's worker directory (another user's, or open to others), with how to pick
    another one; None when one can. Such a directory is never written to, so nothing in it (a log) is named."""
    from mcpcli.platform import WORKERLESS
    from mcpcli.userdirs import WORKER_DIR_ENV, private_dir_problem, worker_dir

    if WORKERLESS is not None:
        return f"No worker can run here: {WORKERLESS}. Every command runs in-process, as with --no-worker."
    directory = worker_dir()
    if (problem := private_dir_problem(directory)) is None:
        return None
    return (
        f"No worker can run in {directory}: {problem}, so server commands run without one."
        f" Choose a directory of your own: export {WORKER_DIR_ENV}=~/.cache/mcpcli-worker"
    )


@worker_app.command("status")
def status(json_out: Json = False) -> None:
    """Whether this user's worker runs: pid, version, uptime, commands served, homes served, memory, its socket and
    log; its HTTP relay (pid, upstream connections kept, requests served, or why it is off) and whether this
    environment's commands use it.

    Example: mcpcli worker status --json
    """
    from mcpcli.warm import ask

    path = _path()
    reply = ask(path, "status")  # type: ignore[arg-type]
    relay = _relay(reply)
    if reply is not None:
        reply["relay"] = relay
    if json_out:
        shown = {**(reply or {"socket": str(path)}), "running": reply is not None}  # the worker's "running" counts
        if reply is None and (problem := _unusable()) is not None:
            shown["unusable"] = problem
        if reply is not None:
            shown["commands_running"] = reply.get("running")  # its commands: not whether it runs
        sys.stdout.write(json.dumps(shown) + "\n")
        raise typer.Exit(0)
    if reply is None:
        if (problem := _unusable()) is not None:
            _say(problem)
        else:
            _say(
                f"No worker is running (socket {path}). It starts with the next server command, or: mcpcli worker start"
            )
        raise typer.Exit(0)
    uptime = time.time() - float(reply.get("started", time.time()))  # type: ignore[arg-type]
    sys.stdout.write(
        f"worker pid {reply['pid']} · mcpcli {reply['version']} · up {uptime:.0f} s · served {reply['served']}"
        f" · running {reply['running']} · homes {reply.get('homes', '?')} · idle timeout {reply['idle_timeout']:g} s"
        f" (now {reply.get('idle_now', reply['idle_timeout']):g} s) · rss {reply['rss_kb']} KiB\n"
        f"socket {reply['socket']}\nlog {reply.get('log', '?')}\n"
    )
    sys.stdout.write(_relay_line(relay, float(reply.get("relay_paused") or 0)))  # type: ignore[arg-type]
    if (use := _relay_use()) is not None:
        sys.stdout.write(use + "\n")


def _relay_line(relay: dict[str, object] | None, paused: float) -> str:
    """What the worker's relay is doing, as the worker and the relay say — never a promise the worker will not keep
    (it leaves a relay that keeps dying at its start off for a while)."""
    if relay is not None:
        return (
            f"HTTP relay pid {relay['pid']} · upstream connections {relay.get('connections', '?')}"
            f" · requests served {relay.get('served', '?')} · in flight {relay.get('in_flight', '?')}\n"
        )
    if paused > 0:
        return (
            f"HTTP relay off for {paused:.0f} s more: it died right after starting three times in a row (see the log);"
            " commands connect by themselves meanwhile\n"
        )
    return "HTTP relay not running (it exits after idle seconds; the next server command starts it)\n"


def _relay_use() -> str | None:
    """Whether this environment's commands use the relay (``MCPCLI_HTTP_RELAY``, read by each command: a worker
    command runs with its caller's environment), when they do not all."""
    import os

    from mcpcli.userdirs import OFF

    choice = os.environ.get("MCPCLI_HTTP_RELAY", "").strip().lower()
    if choice in OFF and choice:
        return (
            f"MCPCLI_HTTP_RELAY={choice} here: commands run from this environment connect by themselves, never relayed"
        )
    if choice == "all":
        return None
    return "Servers on this machine (localhost, loopback) are reached direct, not relayed (MCPCLI_HTTP_RELAY=all)"


def _relay(reply: dict[str, object] | None) -> dict[str, object] | None:
    """The worker's HTTP relay as the worker names it, with the relay's own counters (it answers for itself: the
    worker's loop never waits on it)."""
    named = (reply or {}).get("relay")
    if not isinstance(named, dict):
        return None
    from mcpcli.net.relayed import relay_status

    return {**named, **(relay_status(str(named.get("socket"))) or {})}


@worker_app.command("start")
def start() -> None:
    """Start the worker now, keeping [worker] idle_timeout from the start (by itself it starts with the second
    server command in a row, and exits after an idle minute until it has served three).

    Example: mcpcli worker start
    """
    from mcpcli.warm import ask, start

    path = _path()
    if ask(path, "status") is not None:  # type: ignore[arg-type]
        _say("The worker is already running.")
        return
    if (problem := _unusable()) is not None:
        _say(problem)
        raise typer.Exit(4)
    start(asked=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if (reply := ask(path, "status")) is not None:  # type: ignore[arg-type]
            _say(f"Started the worker (pid {reply['pid']}).")
            return
        time.sleep(0.05)
    from mcpcli.userdirs import worker_file

    _say(f"The worker did not come up; see {worker_file('.log')}.")
    raise typer.Exit(4)


@worker_app.command("stop")
def stop() -> None:
    """Stop this user's worker — the one process that serves every MCPCLI_HOME — with its HTTP relay and every
    kept-alive server (commands it is running finish first). The next server commands start it again.

    Example: mcpcli worker stop
    """
    from mcpcli.warm import stop as stop_worker

    _say("Stopped the worker." if stop_worker(_path()) else "No worker was running.")  # type: ignore[arg-type]


@worker_app.command("ps")
def ps(json_out: Json = False) -> None:
    """The stdio servers the worker keeps alive for this home: target, pid, uptime, calls, the directory each runs
    in.

    Example: mcpcli worker ps --json
    """
    from mcpcli.warm import ask

    reply = ask(_path(), "ps", home=_home())  # type: ignore[arg-type]
    servers = list((reply or {}).get("servers") or [])  # type: ignore[call-overload]
    if json_out:
        sys.stdout.write(json.dumps(servers) + "\n")
        return
    if not servers:
        _say("No servers are kept alive." if reply is not None else "No worker is running.")
        return
    for server in servers:
        sys.stdout.write(
            f"{server['name']}\tpid {server['pid']}\tup {server['uptime']:.0f} s\tcalls {server['calls']}"
            f"\tin {server.get('cwd') or '?'}\n"
        )


@worker_app.command("restart")
def restart(
    name: Annotated[
        str | None, typer.Argument(help="A kept-alive server to restart; without it, the worker.", metavar="NAME")
    ] = None,
) -> None:
    """Restart one of this home's kept-alive servers (by name), or the whole worker (every home's).

    Example: mcpcli worker restart files
    """
    from mcpcli.warm import ask
    from mcpcli.warm import start as start_worker
    from mcpcli.warm import stop as stop_worker

    path = _path()
    if name is None:
        stop_worker(path)  # type: ignore[arg-type]
        start_worker(asked=True)
        _say("Restarted the worker.")
        return
    reply = ask(path, f"restart:{name}", home=_home())  # type: ignore[arg-type]
    if not reply or not reply.get("ok"):
        _say(f"No kept-alive server named {name!r} (see: mcpcli worker ps).")
        raise typer.Exit(6)
    _say(f"Restarted {name}.")
