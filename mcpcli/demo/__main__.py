"""``python -m mcpcli.demo``: the demo server on its own, over stdio or streamable HTTP.

Only when run: the warm worker imports every module of mcpcli ahead of time, and importing this one serves nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from mcpcli.demo.key import DamagedKey, load_or_create_key
from mcpcli.demo.server import build_server


def main(argv: list[str] | None = None) -> None:
    """Serve the demo until stopped, with the user's sealing key unless ``--key-file`` names another: the same key
    as ``-s demo`` in mcpcli's own process, so a flow started by one resumes in the other. A damaged key file
    stops it with one line, never a new key in its place."""
    parser = argparse.ArgumentParser(prog="python -m mcpcli.demo", description="The mcpcli demo MCP server.")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--key-file", type=Path, help="request_state sealing key (created if missing)")
    parser.add_argument("--ttl", type=float, default=600.0, help="seconds a request_state stays valid")
    args = parser.parse_args(argv)
    if args.key_file is None:
        from mcpcli.settings.config import Paths

        args.key_file = Paths.from_env().demo_key_file
    try:
        key = load_or_create_key(args.key_file)
    except (DamagedKey, OSError) as exc:
        raise SystemExit(f"demo server: {exc} (delete it to make a new one)") from None
    server = build_server(key, ttl=args.ttl)
    if args.http:
        host, _, port = args.http.rpartition(":")
        anyio.run(lambda: server.run_streamable_http_async(host=host or "127.0.0.1", port=int(port)))
    else:
        anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
