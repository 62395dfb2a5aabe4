"""A fastmcp 4.x shop (the third-party framework, from PyPI) whose tools ask the pre-2026 way, ``ctx.elicit`` over
the back-channel, how many to order. Run it with ``--protocol legacy``: fastmcp speaks 2026-07-28 too.

- ``order(item)``: a question refused fails the call, as fastmcp fails it: an ``isError`` result
  ("Error calling tool 'order': …").
- ``order_one(item)``: a question refused is taken for one: a result, no error, which says so.
- ``shop://order/{item}``: a resource that asks the same; a question refused fails the read with a JSON-RPC error.
"""

from fastmcp import Context, FastMCP
from pydantic import BaseModel

mcp = FastMCP("shop")


class Quantity(BaseModel):
    quantity: int


async def _how_many(ctx: Context, item: str) -> int:
    answer = await ctx.elicit(f"How many {item}s?", response_type=Quantity)
    return answer.data.quantity if answer.action == "accept" else 0


@mcp.tool
async def order(item: str, ctx: Context) -> str:
    """Order an item; asks how many."""
    return f"ordered {await _how_many(ctx, item)} x {item}"


@mcp.tool
async def order_one(item: str, ctx: Context) -> str:
    """Order an item; asks how many, and orders one when nobody says."""
    try:
        return f"ordered {await _how_many(ctx, item)} x {item}"
    except Exception as exc:  # the refusal, whatever fastmcp raises for it
        return f"ordered 1 x {item} (nobody said how many: {exc})"


@mcp.resource("shop://order/{item}")
async def ordered(item: str, ctx: Context) -> str:
    """The order of an item; asks how many."""
    return f"ordered {await _how_many(ctx, item)} x {item}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
