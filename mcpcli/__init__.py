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
