"""A real browser for the MCP Apps tests: the system's Chromium, driven by Playwright (no browser download).

A test module takes the fixtures with ``pytest_plugins = ["browser"]``. ``chromium`` is one headless browser per
test module (Playwright's sync API runs an event loop in this thread while it is open: an in-process CLI test after
it would find asyncio already running); ``browser_context`` a fresh context (its own storage and cookies) for each
test. The executable is ``$MCPCLI_TEST_CHROMIUM``, else the first of chromium, chromium-browser, google-chrome on
the PATH; without one (or without Playwright) the tests are skipped — but fail under ``CI``, which must have it
(``.ci/run`` installs Debian's chromium).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must have it)")
    pytest.skip(why)


def chromium_path() -> str | None:
    """The browser to drive: ``$MCPCLI_TEST_CHROMIUM``, else the first Chromium-like browser on the PATH."""
    if given := os.environ.get("MCPCLI_TEST_CHROMIUM"):
        return given
    return next(
        (found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None
    )


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the session (``--no-sandbox`` only as root, where Chromium refuses its sandbox)."""
    path = chromium_path()
    if path is None:
        _unavailable("needs chromium (or $MCPCLI_TEST_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("needs playwright (the test extra)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_context(chromium: Any) -> Iterator[Any]:
    """A fresh browser context (storage, cookies, cache) for one test."""
    context = chromium.new_context()
    context.set_default_timeout(10_000)
    try:
        yield context
    finally:
        context.close()
