"""A fastmcp 4.x server (the third-party framework, from PyPI) whose tool asks the pre-2026 way: ``ctx.elicit``."""

from fastmcp import Context, FastMCP

mcp = FastMCP("fm")


@mcp.tool
async def ask(ctx: Context) -> str:
    """Asks for a name over the back-channel."""
    answer = await ctx.elicit("Your name?", response_type=str)
    return f"hello {getattr(answer, 'data', None)}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
