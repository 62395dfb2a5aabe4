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
    "mcpcli.worker.front",  # the command's name, read by cli.app (the walk skips the worker's own package)
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
    that). They run against the in-process demo server, in a home of their own that is removed afterwards, with an
    environment of their own (no tracing, no config, none of the caller's variables) and their output discarded;
    the worker's environment, directory, streams, ``argv``, log handlers and ``tempfile``'s directory are put back
    as they were. A rehearsal that fails (or finds no temporary directory to run in) costs only its time: the
    worker serves as before."""
    import io
    import logging
    import os
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from mcpcli.cli.app import run_command
    from mcpcli.state.store import sqlite

    environment, directory, argv, temporary = dict(os.environ), Path.cwd(), sys.argv, tempfile.tempdir
    streams = sys.stdin, sys.stdout, sys.stderr
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        home = tempfile.mkdtemp(prefix="mcpcli-rehearsal-")
    except OSError:
        tempfile.tempdir = temporary
        return
    for handler in handlers:  # set aside, not closed: a command replaces (and closes) the log handlers it finds
        root.removeHandler(handler)
    try:
        os.environ.clear()
        os.environ.update({"MCPCLI_HOME": home, "HOME": home, "PATH": os.defpath, "NO_COLOR": "1", "TERM": "dumb"})
        os.chdir(home)
        for words in REHEARSALS:
            sys.argv = ["mcpcli", *words]
            sys.stdin, sys.stdout, sys.stderr = io.StringIO(), io.StringIO(), io.StringIO()
            with contextlib.suppress(Exception, SystemExit):
                run_command(command, list(words))
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(directory)
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        sqlite.ROUNDS_WRITTEN.clear()  # the rehearsal's store is not one a child hands to the lock keeper
        shutil.rmtree(home, ignore_errors=True)
        tempfile.tempdir = temporary  # not cached from the worker's TMPDIR: a child finds its caller's


def _coercions(command: Any) -> None:
    """Typer builds each option's coercion (a pydantic TypeAdapter) on first use, ~40 of them a command (~10 ms):
    build them here, once, not in every child."""
    for param in getattr(command, "params", ()):
        if callable(build := getattr(param, "get_runtime_param", None)):
            build()
    for sub in getattr(command, "commands", {}).values():
        _coercions(sub)
