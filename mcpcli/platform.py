"""What differs between the systems mcpcli runs on, in one place: no other module names a platform or reaches for a
call that only some systems have.

- **Linux**: everything. Peer credentials from ``SO_PEERCRED``; process facts from ``/proc`` (read by hand: it is
  a few lines, on the warm path, where a library's import would cost more than the read).
- **macOS and the BSDs**: everything, the worker included. Peer credentials from ``LOCAL_PEERCRED`` (the uid) and
  ``LOCAL_PEERPID`` (macOS: the pid); process facts where the system gives them cheaply, else not compared.
- **Windows**: everything but the background worker and kept-alive servers (they need ``fork`` and Unix sockets):
  every command runs in-process, and ``WORKERLESS`` says why, once.

Each fact is found by what the running Python has, not by the system's name, so a Python with a part missing
(as the tests make one) gets the same answers as the system that lacks it.
"""

from __future__ import annotations

# The C modules beneath ``socket`` and ``signal`` (``_signal``, below), not those: the front end's warm path imports
# this module, and their Python layers (enum, selectors) cost every warm command ~2 ms.
import _socket
import os
import struct
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~4 ms (mypy reads the name alone)
if TYPE_CHECKING:
    import signal as _signal  # the same functions and numbers (typeshed has no stub for ``_signal``)
    import socket
    from typing import Any
else:
    import _signal

SYSTEM: str = sys.platform
"""The system's name, for what is by name rather than by capability: where an app keeps its files (``platformdirs``'
rules; other MCP hosts' config files)."""

_SOL_LOCAL = 0
"""``SOL_LOCAL`` on macOS and the BSDs: the level of a Unix socket's own options."""
_LOCAL_PEERCRED = 1
"""``LOCAL_PEERCRED``: the peer's ``struct xucred`` (version, uid, groups)."""
_LOCAL_PEERPID = 2
"""``LOCAL_PEERPID`` (macOS): the peer's pid."""
_XUCRED = struct.Struct("=Ii")
"""The head of ``struct xucred``: ``cr_version``, ``cr_uid``."""

_SO_PEERCRED: int | None = getattr(_socket, "SO_PEERCRED", None)
_BSD_CREDENTIALS = hasattr(os, "uname") and os.uname().sysname in ("Darwin", "FreeBSD", "OpenBSD", "NetBSD")


def _worker_missing() -> str | None:
    if not hasattr(os, "fork") or not hasattr(_socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return "this system has no fork and Unix sockets, which the background worker and kept-alive servers need"
    if _SO_PEERCRED is None and not _BSD_CREDENTIALS:
        return "this system cannot tell who is at the other end of a Unix socket, which the background worker needs"
    return None


WORKERLESS: str | None = _worker_missing()
"""Why there can be no background worker (nor kept-alive servers) here; ``None`` where there can."""

POSIX = hasattr(os, "fork") and hasattr(_socket, "AF_UNIX")
"""Processes fork and talk over Unix sockets here. The modules only the worker runs begin with ``assert POSIX``, so
that ``mypy --platform win32 --always-false POSIX`` (``.ci/run``) checks the rest of the code as Windows has it."""

AF_UNIX: int = getattr(_socket, "AF_UNIX", -1)
"""The Unix socket family (``-1`` where there is none: only the worker's code, never run there, uses it)."""

O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
"""``open`` refuses a symlink as its last component (no such flag on Windows, where users do not plant them in
another's directory)."""


def unix_socket() -> socket.socket:
    """A new Unix stream socket (the worker's, its relay's, its lock keeper's)."""
    import socket

    return socket.socket(AF_UNIX, socket.SOCK_STREAM)


def bare_unix_socket() -> _socket.socket:
    """A new Unix stream socket without ``socket``'s Python layer (no ``with``, no ``makefile``): the front end's
    warm path, which never imports that layer."""
    return _socket.socket(AF_UNIX, _socket.SOCK_STREAM)


def uid() -> int:
    """This process's user id (``-1`` where users have none: Windows, where nothing compares it)."""
    getuid = getattr(os, "getuid", None)
    return int(getuid()) if getuid is not None else -1


def peer(sock: _socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a Unix socket (for a client: the process that listens);
    the pid is ``-1`` where the system does not say it. ``OSError`` where neither can be read."""
    if _SO_PEERCRED is not None:
        pid, user, _gid = struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i")))
        return int(pid), int(user)
    if not _BSD_CREDENTIALS:
        raise OSError("peer credentials are not available on this system")
    _version, user = _XUCRED.unpack_from(sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, 256))
    try:
        (pid,) = struct.unpack("i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))
    except OSError:
        pid = -1  # FreeBSD and the others: the uid is what is checked; the pid only finds the caller's rights
    return int(pid), int(user)


def default_editor() -> str:
    """The editor to use when ``$VISUAL`` and ``$EDITOR`` name none: ``vi``, or on Windows ``notepad``."""
    return "notepad" if SYSTEM == "win32" else "vi"


def split_command(line: str, system: str | None = None) -> list[str]:
    """A command line typed for this system's shell, as argv: POSIX quoting, or on Windows the shell's own (a
    backslash is a path separator there, not an escape; double quotes group)."""
    import shlex

    if (system or SYSTEM) != "win32":
        return shlex.split(line)
    words = shlex.split(line, posix=False)
    return [word[1:-1] if len(word) >= 2 and word[0] == word[-1] == '"' else word for word in words]


def signals(*names: str) -> tuple[int, ...]:
    """The numbers of the signals of ``names`` that exist here, in that order (Windows has no ``SIGHUP``,
    ``SIGQUIT``, ``SIGWINCH``; only Windows has ``SIGBREAK``)."""
    return tuple(int(getattr(_signal, name)) for name in names if hasattr(_signal, name))


def hangup_signal() -> int | None:
    """``SIGHUP`` (a terminal that went away), where there is one."""
    found = signals("SIGHUP")
    return found[0] if found else None


def kill_signal() -> int:
    """The signal that cannot be caught: ``SIGKILL``, or on Windows ``SIGTERM`` (which ``os.kill`` makes a hard
    ``TerminateProcess`` there)."""
    return signals("SIGKILL", "SIGTERM")[0]


def signal_group(pid: int, signum: int) -> None:
    """Send ``signum`` to the process group ``pid`` leads (a server and what it started); where there are no process
    groups, stop the process itself. A group that is gone already is not an error."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(pid, signum)
        else:
            os.kill(pid, kill_signal())
    except (ProcessLookupError, PermissionError):
        pass


def closed_by_peer(sock: socket.socket, *, wait: bool) -> bool:
    """Whether the other end closed ``sock`` (``wait``: block until it does; else look now), without reading what
    it sent: ``POLLRDHUP`` where there is one (Linux), else ``POLLHUP``. ``False`` where there is no ``poll``."""
    import select

    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(sock, getattr(select, "POLLRDHUP", 0) or getattr(select, "POLLHUP", 0))
    return bool(poller.poll(None if wait else 0))


MODES = hasattr(os, "fchmod")
"""Files have POSIX permission bits here (not on Windows, where a user's profile is private and ``st_mode`` shows
every file as readable by all)."""


def open_to_others(mode: int, bits: int = 0o077) -> bool:
    """Whether a file's ``st_mode`` lets other users in (``bits``: whom to look at); never where there are no modes."""
    return MODES and bool(mode & 0o777 & bits)


def private_file_mode(fd: int) -> None:
    """Make an open file 0600 where files have POSIX modes (on Windows a user's profile is private already)."""
    fchmod = getattr(os, "fchmod", None)
    if fchmod is not None:
        fchmod(fd, 0o600)


def fork_hook(after_in_child: Any) -> None:
    """Run ``after_in_child`` in a forked child (nothing where processes are never forked)."""
    register = getattr(os, "register_at_fork", None)
    if register is not None:
        register(after_in_child=after_in_child)


# --- process facts ------------------------------------------------------------------------------------------------


PROCFS = os.path.isdir("/proc/self")
"""Processes can be looked at in ``/proc`` (Linux); elsewhere ``psutil`` is asked."""

PAGE_FILES = ("/proc/self/maps", "/proc/self/pagemap") if SYSTEM.startswith("linux") and PROCFS else None
"""Where a process reads its own mappings and which of their pages it has (Linux): the worker's spare child
(``worker.spare``) faults in ahead what commands write, with Linux's ``MADV_POPULATE_WRITE``; elsewhere it
does not."""


def process_state(pid: int) -> tuple[str, float | None] | None:
    """Whether process ``pid`` runs here — ``"running"``, ``"zombie"`` (ended, not yet reaped) or ``"gone"`` — and
    when it started (epoch seconds; ``None`` where that cannot be read); ``None``: no way to tell (no permission).
    Linux reads ``/proc``; elsewhere ``psutil`` answers (a dependency there), else a signal 0 on POSIX."""
    if PROCFS:
        return _proc_state(pid)
    try:
        import importlib

        psutil: Any = importlib.import_module("psutil")
    except ImportError:
        return _signal_state(pid) if hasattr(os, "getuid") else None  # os.kill(pid, 0) on Windows is a Ctrl-C
    try:
        process = psutil.Process(pid)
        return ("zombie" if process.status() == psutil.STATUS_ZOMBIE else "running"), float(process.create_time())
    except psutil.NoSuchProcess:
        return "gone", None
    except psutil.Error:
        return None


def _signal_state(pid: int) -> tuple[str, float | None] | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone", None
    except PermissionError:
        return None
    return "running", None


def _proc_state(pid: int) -> tuple[str, float | None] | None:
    """Linux: the process's state from ``/proc`` — ``gone``, ``zombie`` or ``running`` — and its start time (epoch
    seconds) when it can be read; ``None`` when this user may not signal it (it may still run)."""
    if (state := _signal_state(pid)) is None or state[0] == "gone":
        return state
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            stat = file.read()
        with open("/proc/stat", encoding="ascii") as file:
            boot = next(float(line.split()[1]) for line in file if line.startswith("btime"))
    except (OSError, StopIteration, ValueError, IndexError):
        return "running", None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": comm may hold spaces and parentheses
    running = "zombie" if fields and fields[0] in ("Z", "X") else "running"
    if not hasattr(os, "sysconf"):
        return running, None
    try:
        return running, boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError, OSError):
        return running, None


def cpu_ticks(pid: int) -> int | None:
    """User + system CPU time of ``pid``'s main thread in clock ticks; ``None`` where that cannot be read."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat", "rb") as stat:  # bytes: no codec to load on the warm path
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


def status_lines(pid: int | str, prefixes: tuple[str, ...]) -> list[str] | None:
    """The lines of a process's status (``/proc/PID/status``) that start with ``prefixes``; ``None`` where they
    cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as file:
            return [line.rstrip("\n") for line in file if line.startswith(prefixes)]
    except OSError:
        return None


def current_umask() -> int:
    """This process's umask, read without changing it where the kernel says it (Linux 4.7+: another thread that
    creates a file meanwhile is never given a wrong one); elsewhere set and put back at once."""
    found = status_lines("self", ("Umask:",))
    if found:
        try:
            return int(found[0].split(":", 1)[1].strip(), 8)
        except ValueError:
            pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def open_descriptors() -> list[int]:
    """This process's open file descriptors (``/proc/self/fd``, else ``/dev/fd``, else the first 256)."""
    for where in ("/proc/self/fd", "/dev/fd"):
        try:
            return sorted(int(name) for name in os.listdir(where))
        except (OSError, ValueError):
            continue
    return list(range(256))
