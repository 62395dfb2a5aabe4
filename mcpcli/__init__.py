"""mcpcli — a command-line client and terminal UI for MCP servers.

Only the version lives here: importing ``mcpcli`` must stay free of heavy
imports so that ``mcpcli --help`` and ``--version`` start fast.
"""

__version__ = "0.1.0"
