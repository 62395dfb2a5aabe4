"""Run mcpcli as a Python without Linux's extras would: ``python tests/platform_shim.py darwin|win32 ARGS…``.

Before mcpcli is imported, what the named system's Python does not have is taken out of ``socket``, ``select``,
``signal`` and ``os`` (as typeshed marks them): macOS has no ``SO_PEERCRED`` nor ``POLLRDHUP``; Windows has no
fork, no Unix sockets and no descriptor passing, no ``SIGHUP``, ``SIGQUIT``, ``SIGWINCH``, no process groups, no
``fchmod``, no uid. The servers mcpcli starts run on the real system; only mcpcli's process is the other one.
"""

from __future__ import annotations

import _signal
import _socket
import os
import runpy
import select
import signal
import socket
import sys

REMOVED: dict[str, dict[object, tuple[str, ...]]] = {
    "darwin": {socket: ("SO_PEERCRED",), _socket: ("SO_PEERCRED",), select: ("POLLRDHUP",)},
    "win32": {
        socket: ("SO_PEERCRED", "send_fds", "recv_fds", "SCM_RIGHTS"),
        _socket: ("SO_PEERCRED", "SCM_RIGHTS", "CMSG_LEN"),
        select: ("POLLRDHUP",),
        os: ("fork", "killpg", "fchmod", "register_at_fork", "O_NOFOLLOW", "getuid"),
        signal: ("SIGHUP", "SIGWINCH", "SIGQUIT"),
        _signal: ("SIGHUP", "SIGWINCH", "SIGQUIT"),
    },
}
"""Each from the module and from the C module beneath it (``_socket``, ``_signal``: what mcpcli's front end reads)."""

HIDDEN_AT_IMPORT = ("AF_UNIX",)
"""Taken out of ``socket`` only while ``mcpcli.platform`` looks at what this system has, then put back: Linux's own
asyncio needs it (its event loop's self-pipe is a Unix ``socketpair``), which Windows' asyncio does not. mcpcli's
code reaches it only through ``mcpcli.platform`` — ``mypy --platform win32`` holds that."""

system = sys.argv.pop(1)
hidden = {name: getattr(socket, name) for name in HIDDEN_AT_IMPORT if system == "win32" and hasattr(socket, name)}
for name in hidden:
    delattr(socket, name)
    delattr(_socket, name)
for module, names in REMOVED[system].items():
    for name in names:
        if hasattr(module, name):
            delattr(module, name)
import mcpcli.platform  # noqa: E402  # it reads what the system has, now

for name, value in hidden.items():
    setattr(socket, name, value)
    setattr(_socket, name, value)
mcpcli.platform.PROCFS = False  # neither system has /proc: process facts come from psutil, as they would there
sys.argv[0] = "mcpcli"
runpy.run_module("mcpcli", run_name="__main__", alter_sys=True)
