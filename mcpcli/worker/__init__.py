"""The warm engine: a per-user background worker that keeps mcpcli and the SDK loaded, so a command that talks
to a server starts in a fraction of the cold time — and changes nothing else.

How (``front`` is the front end, ``server`` the worker): the front end hands the worker its argv, environment,
working directory and its own stdin/stdout/stderr file descriptors over a Unix socket (``SCM_RIGHTS``). The
worker forks a child that already has everything imported; the child puts those descriptors on 0/1/2, takes the
caller's environment and directory, and runs the very same command body as the cold path would. So prompts are
asked at the caller's terminal (it *is* the caller's terminal), output goes where the caller's goes, and exit
codes, sessions and every behaviour are the cold path's own. The front end forwards Ctrl-C, SIGTERM, SIGHUP and
window-size changes to that child, and exits with its status.

Nothing runs twice: the child waits for the front end's "go" before it runs, and the front end falls back to
running in-process (with a note) only before it has said "go" — when the worker is missing, stale, of another
version, or does not answer in time.

One worker per user and install of mcpcli, serving every ``MCPCLI_HOME`` (each command has its caller's
environment; what the worker keeps is keyed by home): a 0600 socket in a 0700 directory of the user's
(``userdirs.socket_file``), same-uid peers only (``platform.peer``). It starts when a second server command comes soon
after a first that ran without it (a lone command leaves nothing behind), exits after an idle period (short until
it has served a few commands), when the homes it served are gone, or when its socket is removed, and is off
where a background process would surprise (``CI`` set), or with ``--no-worker`` / ``MCPCLI_WORKER=0`` /
``[worker] enabled = false``. ARCHITECTURE.md (The worker) has the rules and their numbers.

The front end's side lives in ``mcpcli.warm`` (standard library only: the warm path), over ``mcpcli.framing`` (the
messages) and ``mcpcli.userdirs`` (where the socket is); a kept-alive server's transport in ``mcpcli.net.attach``.
The front end is a package apart from this one because the command line calls it (``mcpcli worker start``, the
subcommand it names) while this package's child runs the command line: together they would import each other.
"""

from __future__ import annotations

import os
import sys
import time


def log_line(role: str, text: str) -> None:
    """One line of the worker's log (``worker-TAG.log`` beside its socket: its and its relay's stderr): when, who,
    what."""
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {role} {os.getpid()}: {text}\n")
    sys.stderr.flush()
