"""mcpcli — a command-line client and terminal UI for MCP servers.

Only the version and the names of the server commands live here: importing ``mcpcli`` must stay free of heavy
imports so that ``mcpcli --help`` and ``--version`` start fast.
"""

__version__ = "0.1.0"

SERVER_COMMANDS = frozenset(
    {"tools", "prompts", "resources", "info", "call", "prompt", "read", "resume", "batch", "replay", "watch"}
)
"""The commands that talk to a server: the ones the warm worker serves (``mcpcli.warm``), looked for by the
executable before anything else is imported (``mcpcli.entry``)."""

HELD_THRESHOLD = 1_000_000
"""The cyclic collector's first threshold while a command run in this process starts (``hold_collector``): the
start allocates some half a million objects (the SDK's and mcpcli's modules, pydantic's schemas) and none of them
is garbage, yet at the default (700) the collector walks them some 240 times, 0.05–0.1 s of a cold ``call``. Still
a bound: a start that allocated this many would be collected."""

_held: tuple[int, int, int] | None = None


def hold_collector() -> None:
    """A server command runs in this process (``mcpcli.entry``): no cyclic collection while it starts, until
    ``settle_collector``."""
    global _held
    import gc

    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(HELD_THRESHOLD, _held[1], _held[2])


def settle_collector() -> None:
    """The start is over (a connection is up: ``mcpcli.net.connection``): what it made lives on — modules, classes,
    the client — so it is frozen out of every later collection, and the collector runs as usual from here. Nothing
    if ``hold_collector`` was not called (the worker, the TUI, the tests)."""
    global _held
    import gc

    if _held is not None:
        gc.freeze()
        gc.set_threshold(*_held)
        _held = None
