"""What the worker imports before it serves: every module a command can reach, so a forked child imports
nothing (tests/test_worker.py checks that)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import mcpcli
from mcpcli.platform import POSIX

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

NOT_PRELOADED = ("mcpcli.tui", "mcpcli.__main__", "mcpcli.worker")
"""Left out of the preload: the TUI runs in the front end's own process (``--tui``), ``__main__`` would run the
CLI, and the worker is here already. (The demo is in: the default server runs in-process.)"""

PRELOADED_LIBRARIES = (
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "getpass",  # who owns a flow (state.inbox.whoami), with pwd when no USER is set
    "httpcore2",  # httpx2's transport imports it when a command connects direct (~20 ms, with h11 and h2)
    "jsonschema",
    "mcpcli.warm",  # the command's name, read by cli.app (the walk skips the worker's own package)
    "mcp.client.auth",
    # Tracing, when the otel extra is installed (telemetry.export imports them only when a command traces): ~0.15 s
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.sdk.resources",
    "opentelemetry.sdk.trace.export",
    "pwd",
    "rich._emoji_codes",
    "rich.live",
    "rich.logging",
    "rich.progress",
    "rich.prompt",
    "rich.table",
    "typer._adapters",
    "typer._click.decorators",
)
"""Imported lazily on a command's path (the SDK validates a tool's result with jsonschema, ~0.1 s to import)."""


def preload() -> Any:
    """Everything a command imports, once (the point of the worker): every mcpcli module a command can reach and
    the libraries they import lazily, so a forked child imports nothing (tests/test_worker.py checks that). Then
    the heap is frozen, so the collector neither walks nor dirties these pages in every child."""
    import gc
    import importlib
    import pkgutil

    import mcp
    import mcp.client.streamable_http  # noqa: F401

    packages: list[tuple[Iterable[str], str]] = [(mcpcli.__path__, "mcpcli.")]
    while packages:
        path, prefix = packages.pop()
        for info in pkgutil.iter_modules(path, prefix):
            if info.name.startswith(NOT_PRELOADED):
                continue
            with contextlib.suppress(ImportError):  # the postgres engine without its optional extra
                module = importlib.import_module(info.name)
                if info.ispkg:
                    packages.append((module.__path__, f"{info.name}."))
    for name in PRELOADED_LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    import typer.main

    from mcpcli.cli import app
    from mcpcli.engine.steps import prepare_validators
    from mcpcli.net.transports import tls_context

    command = typer.main.get_command(app)
    _coercions(command)
    prepare_validators()
    tls_context()  # the CA bundle, read once for every command's HTTP client
    rehearse(command)
    gc.collect()
    gc.freeze()
    return command


REHEARSALS = (
    ["call", "echo", "--arg", "text=hi", "-s", "demo"],
    ["call", "provision", "--arg", "name=rehearsal", "--answer", "region=eu-west", "-s", "demo"],
)
"""What the worker runs once before it serves, against the in-process demo (``rehearse``)."""


def rehearse(command: Any) -> None:
    """Run a few commands once, in the worker, before any caller's: what a command builds on first use and keeps —
    the SDK's and pydantic's validators, Click's contexts, the interpreter's specialised bytecode — is then built
    once, inherited by every child, instead of in each (a warm ``call`` spent ~5 ms of its ~8 in the child on
    that). A rehearsal that fails (or finds no temporary directory to run in) costs only its time: the worker
    serves as before.

    They run against the in-process demo server, in a home of their own that is removed afterwards, handed
    surroundings of their own (``runtime.Surroundings``): an environment with no tracing, no config and none of the
    worker's variables, that home as their directory, their output and log lines discarded. Nothing of the worker's
    is swapped but its streams and its root logger's handlers, by ``run_command`` for the length of each command
    (Click, Rich and the guard write to ``sys.stdout`` themselves; the SDK's demo server configures a root logger
    that has no handler); ``tempfile``'s cached directory is left as it was. What a library reads of the process
    itself (Rich's terminal size, ``getpass``'s user, asyncio's debug flag) it reads from the worker's, which
    changes nothing a command keeps."""
    import io
    import logging
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from mcpcli.cli.app import run_command
    from mcpcli.commands.runtime import Surroundings
    from mcpcli.state.store import sqlite

    cached = tempfile.tempdir
    try:
        home = tempfile.mkdtemp(prefix="mcpcli-rehearsal-")
    except OSError:
        return
    finally:  # mkdtemp caches the worker's temporary directory: forgotten again, as the worker had it
        tempfile.tempdir = cached
    environ = {"MCPCLI_HOME": home, "HOME": home, "PATH": os.defpath, "NO_COLOR": "1", "TERM": "dumb"}
    try:
        for words in REHEARSALS:
            streams = io.StringIO(), io.StringIO(), io.StringIO()
            quiet = Surroundings(environ, Path(home), *streams, log=logging.NullHandler())
            with contextlib.suppress(Exception, SystemExit):
                run_command(command, list(words), quiet)
    finally:
        sqlite.ROUNDS_WRITTEN.clear()  # the rehearsal's store is not one a child hands to the lock keeper
        shutil.rmtree(home, ignore_errors=True)


def _coercions(command: Any) -> None:
    """Typer builds each option's coercion (a pydantic TypeAdapter) on first use, ~40 of them a command (~10 ms):
    build them here, once, not in every child."""
    for param in getattr(command, "params", ()):
        if callable(build := getattr(param, "get_runtime_param", None)):
            build()
    for sub in getattr(command, "commands", {}).values():
        _coercions(sub)
