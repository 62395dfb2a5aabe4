"""Where this user's mcpcli files are: its homes (state, config; ``MCPCLI_HOME`` moves both) and the private
runtime directory where this user's worker of this install listens (its socket, relay, log, lock, stamp) — and
whether the worker is turned off. Computed without platformdirs or ``pathlib``: the warm path reads them.

Ground, not the worker's: the core reaches this user's worker from an in-process run (``net.attach`` attaches a
kept-alive server through it), and ``sessions list`` reads the homes before anything heavy is imported.
"""

from __future__ import annotations

import os

from mcpcli.platform import SYSTEM, uid

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~4 ms (mypy reads the name alone)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

OFF = frozenset({"0", "off", "false", "no"})
"""``MCPCLI_WORKER`` values that turn the worker off (``ON``: on, even where it would be off by default)."""
ON = frozenset({"1", "on", "true", "yes"})


def user_dir(kind: str, environ: Mapping[str, str] | None = None) -> str:
    """``platformdirs.user_{kind}_dir("mcpcli")`` (``kind``: ``state`` or ``config``), computed here on Linux when
    the XDG rule is plain (platformdirs costs a warm command ~18 ms to import); tests/test_worker.py checks the two
    agree."""
    env = os.environ if environ is None else environ
    xdg = env.get(f"XDG_{kind.upper()}_HOME", "")
    home = env.get("HOME", "")
    if SYSTEM == "linux":
        if os.path.isabs(xdg):
            return os.path.join(xdg, "mcpcli")
        if os.path.isabs(home):
            return os.path.join(home, ".local/state" if kind == "state" else ".config", "mcpcli")
    import platformdirs

    return str(platformdirs.user_state_dir("mcpcli") if kind == "state" else platformdirs.user_config_dir("mcpcli"))


def state_home(environ: Mapping[str, str] | None = None) -> str:
    """``config.Paths.from_env().state_dir`` as a string, without importing the config model (pydantic) or
    ``pathlib`` on the warm path."""
    env = os.environ if environ is None else environ
    if home := env.get("MCPCLI_HOME"):
        return os.path.expanduser(home)
    return user_dir("state", env)


def config_home(environ: Mapping[str, str] | None = None) -> str:
    """``config.Paths.from_env().config_dir`` as a string, as ``state_home`` (the warm path and ``sessions list``
    read config.toml before anything heavy is imported)."""
    env = os.environ if environ is None else environ
    if home := env.get("MCPCLI_HOME"):
        return os.path.expanduser(home)
    return user_dir("config", env)


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(state_home(environ))


def private_dirs(path: Path) -> Path:
    """``path`` and its missing parents, each created 0700 (``mkdir(parents=True)`` would make the parents 0755,
    and the session store refuses a state dir others can read)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass
    return path


WORKER_DIR_ENV = "MCPCLI_WORKER_DIR"
"""Where this user's worker listens (its socket, its relay's, its log, the stamp of the last cold command): tests
point it at a directory of their own, so two test runs on one machine never reach each other's worker."""


def worker_dir(environ: Mapping[str, str] | None = None) -> str:
    """The 0700 directory of this user's workers: ``$MCPCLI_WORKER_DIR``, else ``$XDG_RUNTIME_DIR/mcpcli`` (a
    per-user tmpfs that logging out clears), else ``mcpcli-UID`` under ``$TMPDIR`` or ``/tmp``.

    One worker per user and install, not per ``MCPCLI_HOME``: a test suite with a home per test, or a script that
    makes a home per run, still has one worker (the worker runs each command with its caller's environment, so
    each command still gets its own home)."""
    env = os.environ if environ is None else environ
    if given := env.get(WORKER_DIR_ENV):
        return os.path.abspath(os.path.expanduser(given))
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "mcpcli")
    base = env.get("TMPDIR", "")  # macOS: a per-user directory of its own
    if not os.path.isabs(base) and not os.path.isdir(base := "/tmp"):
        import tempfile  # 3 ms: only where there is no /tmp

        base = tempfile.gettempdir()
    return os.path.join(base, f"mcpcli-{uid()}")


def install_tag() -> str:
    """A short name for this install and version of mcpcli: two virtualenvs or checkouts never share a worker
    (each would run the other's code)."""
    from mcpcli import __version__

    return f"{digest(os.fsencode(package_dir() + chr(0) + __version__)):08x}"


def digest(data: bytes) -> int:
    """A 32-bit FNV-1a hash of ``data``: a short name for a path, the same in every process (not a secret, and
    not ``zlib.crc32``: loading zlib costs every warm command ~0.2 ms)."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def worker_file(suffix: str, environ: Mapping[str, str] | None = None) -> str:
    """``worker-TAG{suffix}`` in the worker directory: ``.sock`` (where the worker listens), ``.log``, ``.last``
    (when the last server command ran without a worker), ``.lock``. When the directory's path is too long for a
    Unix socket (about 100 bytes), a directory of this user's under the system's temp dir with the long one's
    digest in the name."""
    directory = worker_dir(environ)
    path = os.path.join(directory, f"worker-{install_tag()}{suffix}")
    if len(os.fsencode(path)) <= 90:  # room for the relay's name beside it (``-relay.sock``)
        return path
    fallback = worker_dir({"TMPDIR": (environ or os.environ).get("TMPDIR", "")})
    return os.path.join(fallback, f"{digest(os.fsencode(directory)):08x}-worker-{install_tag()}{suffix}")


def socket_file(environ: Mapping[str, str] | None = None) -> str:
    """Where this user's worker (of this install) listens."""
    return worker_file(".sock", environ)


def socket_path(environ: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(socket_file(environ))


def own_private_dir(path: str) -> bool:
    """``path`` exists (created 0700 when missing), is a directory of this user's, and nobody else can enter it —
    under a shared ``/tmp`` another user could have made it first."""
    return private_dir_problem(path) is None


def private_dir_problem(path: str) -> str | None:
    """Why ``path`` cannot hold this user's worker, in a few words (None: it can; created 0700 when missing). Nothing
    is ever started or written in such a directory: whoever controls it could read or replace what is there."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        return f"it cannot be created or read ({exc.strerror or exc})"
    import stat

    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory" + (" (a symbolic link)" if stat.S_ISLNK(info.st_mode) else "")
    if info.st_uid != uid():
        return f"it belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o077:
        return f"other users can enter it (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def package_dir() -> str:
    """Which install of mcpcli this is (a worker serves front ends of its own install and version only)."""
    import mcpcli

    return os.path.dirname(os.path.realpath(mcpcli.__file__))


def env_seconds(name: str, default: float, *, least: float = 1.0) -> float:
    """A number of seconds from the environment variable ``name`` (at least ``least``); ``default`` when it is
    unset or not a number."""
    raw = os.environ.get(name)
    if raw:
        try:
            return max(least, float(raw))
        except ValueError:
            pass
    return default
