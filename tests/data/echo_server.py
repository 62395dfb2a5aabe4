"""A stdio MCP server for tests/test_servers.py: ``echo`` says back its text and what the server started with.

The reply shows the server's arguments and ``$ECHO_SUFFIX``, so a test sees what an entry's ``${env:...}``
references became when mcpcli started it.
"""

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Says back ``text`` with this process's arguments and $ECHO_SUFFIX."""
    return f"{text} args={' '.join(sys.argv[1:])} suffix={os.environ.get('ECHO_SUFFIX', '<unset>')}"


anyio.run(server.run_stdio_async)
