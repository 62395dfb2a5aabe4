"""The bundled demo MCP server: every kind of question mcpcli can answer, offline.

Built with the SDK's ``MCPServer``. Each interactive handler is written once as a *step* (``demo.steps``): given the
answers so far, it either returns its result or the questions it still needs. ``demo.server`` serves that step to
both protocol generations — on 2026-07-28 it returns an ``InputRequiredResult`` whose ``request_state`` carries the
answers so far; on older protocols it asks over the back-channel mid-call.

``request_state`` is sealed with a key generated once and kept (0600) under the state dir (``demo.key``), so a flow
started by one process resumes in another. The ``provision`` tool's view (MCP Apps) ships beside it (``app.html``).

``-s demo`` runs it in mcpcli's own process (``net.connection``); run it standalone with ``python -m mcpcli.demo``
(stdio) or ``python -m mcpcli.demo --http 127.0.0.1:8000`` (streamable HTTP at ``/mcp``).
"""

from mcpcli.demo.key import DamagedKey, load_or_create_key
from mcpcli.demo.server import build_server

__all__ = ["DamagedKey", "build_server", "load_or_create_key"]
