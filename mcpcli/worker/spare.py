"""The worker's spare child: forked before a command comes, with the pages a command writes already its own.

A forked child shares the worker's memory until it writes to it; a command writes to ~4,000 of its pages
(reference counts of the preloaded objects it uses, the allocator's pools) and each first write is a page fault
that copies the page — ~15 ms of a warm call's ~25 in the child. So the worker keeps one child forked ahead of
time (``Spare``): it closes what is the worker's, faults in at once, in the kernel (``MADV_POPULATE_WRITE``), the
pages the last commands wrote (``PAGES_FILE``, beside the socket, recorded by a few children as they end), and
waits for its command on a socket pair of its own. A command then takes it at once — no fork, few faults — and
the worker forks the next spare once that command has answered, while the front end exits.

It takes exactly one command and exits: nothing of a command is ever in another one's process. Until then it has
run nothing of any caller's and holds no descriptor but its socket pair and the worker's own stdio; its
environment, directory and signals are set from the request, as for a child forked on demand; ``random`` is
seeded again by every fork (``os.register_at_fork``), so two spares never share a sequence; the worker opens no
store, so no SQLite connection is inherited. When the worker goes (exits, killed) the spare sees its socket close
and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpcli.platform import PAGE_FILES, POSIX

assert POSIX, "the background worker needs fork and Unix sockets (mcpcli.platform.WORKERLESS says why)"

MADV_POPULATE_WRITE = 23
"""Linux 5.14: fault a range in writable, as writes would (copying shared pages), with no data changed."""

PAGE = os.sysconf("SC_PAGE_SIZE")

MAX_PAGES = 16384
"""At most this many pages (64 MiB) are faulted in ahead: past it the newest record alone is kept."""

RECORD_FIRST = 3
RECORD_EVERY = 25
"""Which commands record the pages they wrote: the first few, then one in this many (a record costs the child
~4 ms after its command, once its status is with the front end)."""


def _libc() -> ctypes.CDLL | None:
    """The C library's ``madvise``, on Linux only (the advice's number means nothing elsewhere)."""
    if PAGE_FILES is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


_LIBC = _libc()


def pages_file(worker_socket: str | Path) -> Path:
    return Path(worker_socket).with_suffix(".pages")


def records(served: int) -> bool:
    return served < RECORD_FIRST or served % RECORD_EVERY == 0


class Spare:
    """A forked child waiting for a command on ``control`` (the worker's end of their pair)."""

    def __init__(self, pid: int, control: socket.socket) -> None:
        self.pid = pid
        self.control = control
        self.forked = time.monotonic()

    def exited(self) -> bool:
        try:
            done, _status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        return done != 0


class Pages:
    """The page ranges commands wrote, as the worker knows them (read again from ``PAGES_FILE`` when it changed)."""

    def __init__(self, worker_socket: str | Path) -> None:
        self.path = pages_file(worker_socket)
        self.ranges: list[tuple[int, int]] = []
        self.seen: float | None = None

    def refresh(self) -> list[tuple[int, int]]:
        try:
            stat = self.path.stat()
        except OSError:
            return self.ranges
        if stat.st_mtime == self.seen:
            return self.ranges
        self.seen = stat.st_mtime
        with contextlib.suppress(OSError, struct.error):
            data = self.path.read_bytes()
            new = [(lo, hi) for lo, hi in struct.iter_unpack("<QQ", data[: len(data) // 16 * 16])]
            merged = _merge([*self.ranges, *new])
            self.ranges = merged if _count(merged) <= MAX_PAGES else _merge(new)
        return self.ranges


def fault_in(ranges: list[tuple[int, int]]) -> None:
    """Make these pages this process's own now (in the spare, before any command): a kernel without
    ``MADV_POPULATE_WRITE`` or a range no longer mapped writable is left to fault as it would."""
    if _LIBC is None:
        return
    for lo, hi in ranges:
        _LIBC.madvise(lo, hi - lo, MADV_POPULATE_WRITE)  # failing fast where it cannot


def record(worker_socket: str) -> None:
    """In a child whose command is over: the pages of the worker's writable memory it made its own (present and
    mapped by this process alone, ``platform.PAGE_FILES``), written for the next spares. Best effort."""
    if PAGE_FILES is None:
        return
    ranges: list[tuple[int, int]] = []
    with contextlib.suppress(OSError, ValueError), Path(PAGE_FILES[0]).open(encoding="ascii") as maps:
        pagemap = os.open(PAGE_FILES[1], os.O_RDONLY)
        try:
            for line in maps:
                fields = line.split()
                special = len(fields) > 5 and fields[5].startswith("[") and fields[5] != "[heap]"  # stack, vdso
                if fields[1][:2] != "rw" or fields[1][3] != "p" or special:
                    continue
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                entries = os.pread(pagemap, (hi - lo) // PAGE * 8, lo // PAGE * 8)
                for i, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                    if entry >> 63 and entry >> 56 & 1:  # present, exclusively mapped
                        start = lo + i * PAGE
                        if ranges and ranges[-1][1] == start:
                            ranges[-1] = (ranges[-1][0], start + PAGE)
                        else:
                            ranges.append((start, start + PAGE))
        finally:
            os.close(pagemap)
    if not ranges:
        return
    target = pages_file(worker_socket)
    temp = target.with_name(f"{target.name}.{os.getpid()}")
    with contextlib.suppress(OSError):
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(b"".join(struct.pack("<QQ", lo, hi) for lo, hi in ranges))
        temp.replace(target)


def fork(worker: Any, wait: Callable[[socket.socket], int]) -> Spare:
    """Fork a spare of ``worker`` (``server.Worker``), which runs ``wait`` with its end of the pair."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ranges = worker.pages.refresh()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            ours.close()
            _forget_the_worker(worker)
            _become(theirs, ranges)
            code = wait(theirs)
        finally:
            os._exit(code)
    theirs.close()
    ours.settimeout(5.0)  # a spare that cannot take its message in time is given up
    return Spare(pid, ours)


def _forget_the_worker(worker: Any) -> None:
    """Close what is the worker's: its socket, the connections it has yet to hear, the other children's pairs and
    its selector, the kept servers' pipes, its relay's and lock keeper's pairs."""
    worker.listener.close()
    for conn in worker.pending:
        conn.close()
    if worker.selector is not None:
        for key in list(worker.selector.get_map().values()):
            if key.data[0] == "answered":
                key.fileobj.close()
        worker.selector.close()
    worker.kept.forget_in_child()
    for helper in (worker.relay, worker.locks):
        if helper is not None:
            helper.forget_in_child()


def _become(control: socket.socket, ranges: list[tuple[int, int]]) -> None:
    """The worker's signal handlers off (a SIGTERM to a spare ends it), the pages faulted in."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the worker's terminal is not for a spare
    fault_in(ranges)
    control.settimeout(None)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _count(ranges: list[tuple[int, int]]) -> int:
    return sum(hi - lo for lo, hi in ranges) // PAGE
