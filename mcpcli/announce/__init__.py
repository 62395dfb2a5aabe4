"""Announcements: a flow that parks for a person, gets an answer, finishes or fails, told through the channels
``[inbox] notify`` names — the terminal, the desktop, a webhook, a command (``announce.channels``).

The threat is twofold. What is announced leaves mcpcli: a terminal acts on escape sequences, a notification daemon
on markup, Slack on ``<!channel>``; and the text (an ask's title, a server name) came from a server. So every channel
sanitizes for its reader, and the announcer adds nothing of its own but a title made of the event's kind and id:
no environment, no headers beyond ``Content-Type``, never the webhook's URL in a diagnostic (a Slack URL or an ntfy
topic is a password). The event itself holds no answers or secrets; its caller guarantees that.

And an announcement must never cost the flow: ``announce`` returns at once (the terminal's few bytes are written
there, everything else by one daemon thread per channel), never raises, and a channel that fails says so once, in
one line, through ``warn``. ``close`` waits a bounded time for what is still being delivered.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from mcpcli.announce.channels import Command, Desktop, Undelivered, Webhook, terminal_bytes, terminal_kind
from mcpcli.announce.message import Event, bounded, title_of

if TYPE_CHECKING:
    from mcpcli.settings.config import InboxConfig

Warn = Callable[[str], None]

QUEUE_MAX = 64
"""Announcements one channel may have waiting; past it, new ones are dropped (and said so once)."""


def _to_stderr(line: str) -> None:
    print(f"mcpcli: {line}", file=sys.stderr, flush=True)


class Announcer:
    """Delivers announcements through the channels an ``InboxConfig`` names.

    ``terminal`` is the stream of the waiting command's terminal (None: there is none); ``environ`` the environment
    the terminal, the session bus, a proxy and the command are found in (default ``os.environ``). ``warn`` is
    called, from a background thread too, at most once per channel with one line saying what failed and how to fix
    it — once per process, since a process makes one announcer. Use it as a context manager, or ``close`` it.
    """

    def __init__(
        self,
        config: InboxConfig,
        *,
        terminal: TextIO | None = None,
        warn: Warn = _to_stderr,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Only the channels ``config`` names, each once: the terminal is written by ``announce`` itself, each other
        channel gets a lane of its own. Nothing starts yet: a lane's thread starts with its first announcement."""
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._warn = warn
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._give_up = threading.Event()
        channels = list(dict.fromkeys(config.notify))
        self._terminal = terminal if "terminal" in channels else None
        self._lanes = [
            _Lane(name, deliver, self._warn_once)
            for name in channels
            if (deliver := self._deliverer(name, config)) is not None
        ]

    def _deliverer(self, channel: str, config: InboxConfig) -> Callable[[Event], None] | None:
        if channel == "desktop":
            return Desktop(self._environ)
        if channel == "webhook":
            return Webhook(config, self._environ, self._give_up)
        if channel == "command":
            return Command(config.notify_command, self._environ)
        return None

    def announce(self, event: Event) -> None:
        """Deliver ``event`` through every channel; returns within milliseconds and never raises."""
        if self._closed:
            return
        try:
            tidy = bounded(event)
            if self._terminal is not None:
                self._ring(tidy)
            for lane in self._lanes:
                lane.put(tidy)
        except Exception as exc:  # an announcement never costs the flow
            self._warn_once("announce", f"an announcement failed: {type(exc).__name__}: {exc}")

    def _ring(self, event: Event) -> None:
        """The terminal channel, written here rather than by a thread: a few hundred bytes, and written between the
        caller's own writes they cannot cut one of its escape sequences in two."""
        stream = self._terminal
        try:
            if stream is None or not stream.isatty():
                return
            with self._lock:
                stream.write(terminal_bytes(terminal_kind(self._environ), title_of(event), str(event.get("text", ""))))
                stream.flush()
        except (OSError, ValueError) as exc:  # a closed stream, a terminal gone, an encoding that lacks a character
            self._warn_once("terminal", f"terminal: the notification could not be written ({type(exc).__name__})")

    def close(self, timeout: float = 3.0) -> None:
        """Wait up to ``timeout`` seconds for the announcements still being delivered, then give the rest up."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + timeout
        for lane in self._lanes:
            lane.stop()
        for lane in self._lanes:
            lane.join(deadline)
        self._give_up.set()

    def __enter__(self) -> Announcer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn_once(self, channel: str, line: str) -> None:
        with self._lock:
            if channel in self._warned:
                return
            self._warned.add(channel)
        with contextlib.suppress(Exception):  # the diagnostic is best effort too; the flow goes on
            self._warn(line)


_STOP = object()


class _Lane:
    """One channel's queue and the daemon thread that empties it, so that a webhook that hangs delays no desktop
    notification. The thread starts with the first announcement."""

    def __init__(self, name: str, deliver: Callable[[Event], None], warn_once: Callable[[str, str], None]) -> None:
        self.name = name
        self._deliver = deliver
        self._warn_once = warn_once
        self._queue: queue.Queue[object] = queue.Queue(QUEUE_MAX)
        self._thread: threading.Thread | None = None

    def put(self, event: Event) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"mcpcli-announce-{self.name}", daemon=True)
            self._thread.start()
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._warn_once(self.name, f"{self.name}: announcements are arriving faster than they can be delivered")

    def stop(self) -> None:
        if self._thread is not None:
            with contextlib.suppress(queue.Full):  # join's deadline bounds the wait all the same
                self._queue.put_nowait(_STOP)

    def join(self, deadline: float) -> None:
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    def _run(self) -> None:
        while isinstance(item := self._queue.get(), Mapping):  # until _STOP
            try:
                self._deliver(item)
            except Undelivered as exc:
                self._warn_once(self.name, str(exc))
            except Exception as exc:  # a daemon thread has nobody to raise to
                self._warn_once(self.name, f"{self.name}: {type(exc).__name__}: {exc}")
