"""Settings: where mcpcli keeps its files and what the user configured.

- ``config``: the paths (config, data, state), the config file, a target (``Target``) resolved from the
  command line or a configured server.
- ``servers``: the configured servers (add, remove, list, import).
- ``trust``: which servers the user trusts to run commands or read files.

Importing this package imports nothing: take the module you need.
"""
