"""Settings: where mcpcli keeps its files and what the user configured.

- ``config``: the paths (config, data, state) and the config file (``Settings``).
- ``targets``: the server a command talks to (``Target``), resolved from ``-s``, the environment or a configured
  server; and how a flow connected, as its session keeps it.
- ``servers``: the configured servers (add, remove, list, import).
- ``trust``: which servers the user trusts to run commands or read files.

Importing this package imports nothing: take the module you need.
"""
