"""The roots a server asks for before the call: the reference filesystem server asks for the client's roots as
soon as the handshake is done, and serves nothing until it has them. No flow is running yet to hold the question,
so the sources that need nobody (``--root``, the working directory) answer it, unrecorded; and the call waits a
moment for the server to take them in."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import mcp_types as t

from mcpcli.net import warmcache
from mcpcli.net.connection import roots_asked_again

if TYPE_CHECKING:
    from mcp import Client

    from mcpcli.engine.steps import AnswerSource, Question

ROOTS_SETTLE = 0.1
"""Seconds between answering a server's ``roots/list`` on connecting and sending the call (see ``Flow.start``)."""

ROOTS_WAIT = 2.0
"""How long a call waits for a kept-alive server told that the roots changed to ask for them."""


@dataclass
class EarlyRoots:
    """A flow's side of the ``roots/list`` that comes before its call."""

    given_at: float | None = None
    """When such a ``roots/list`` was answered (``answer``), on the monotonic clock."""

    async def settle(self, expected: bool, client: Client | None) -> None:
        """Before the call (while the flow's ``call`` is unset, so that the question is not taken for the flow's
        own): wait for a server known to ask for the roots on connecting (``expected``; or as an earlier connection
        found, ``net.warmcache``) to ask, then give it a moment to take them in — the filesystem server resolves
        each path before it serves any, and a call sent at once finds none."""
        if expected or (client is not None and (roots_asked_again(client) or warmcache.asks_roots(client))):
            with anyio.move_on_after(ROOTS_WAIT):  # a server that never asks after all is not waited for long
                while self.given_at is None:
                    await anyio.sleep(0.01)
        if self.given_at is not None:
            if client is not None:
                warmcache.learned_asks_roots(client)  # the next connection, with no listing to ask in, waits for it
            await anyio.sleep(max(0.0, self.given_at + ROOTS_SETTLE - time.monotonic()))

    async def answer(self, question: Question, sources: Sequence[AnswerSource]) -> t.InputResponse | t.ErrorData:
        """A back-channel request that arrives before the flow's call was made: a ``roots/list`` is answered by the
        sources that need nobody; anything else — a question out of nowhere — is refused."""
        if isinstance(question.request, t.ListRootsRequest):
            for source in sources:
                if not source.interactive and (answer := await source.answer(question)) is not None:
                    self.given_at = time.monotonic()
                    return answer
        return t.ErrorData(code=t.INVALID_REQUEST, message="The client has no call running to ask for.")
