"""The net: what carries a flow to a server and back, and nothing about what the flow means.

- ``connection``: ``connect()`` — one open, initialized SDK client for a target, with the flow's hooks;
  ``legs``: the wrapper every leg of a flow goes out under (fresh ids, spec defaults, a refusal understood).
- ``transports``: stdio and HTTP transports, guarded by ``bounds`` (size, depth and time limits on what a
  server sends) and routed through ``proxies``.
- ``handshakes``, ``warmcache`` and ``listcache``: what a server said at initialize, to discover and in its lists,
  remembered on disk (one listing cache, read by completion and by a warm call alike).
- ``tasks``: the tasks protocol extension the connection installs (``tasks/get``, ``tasks/result``…) and the
  client-side task state a task flow polls.
- ``tap``: the SDK client's streams wrapped so every message reaches a tracer; ``serverlog``: a stdio server's
  stderr, kept in a private log, its tail explaining a failed start.
- ``attach`` and ``relayed``: reaching a server the warm worker keeps, over its socket.

Importing this package imports nothing (no SDK): take the module you need.
"""
