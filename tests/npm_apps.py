"""The official MCP Apps example servers from npm (``@modelcontextprotocol/server-<name>``, built from
``modelcontextprotocol/ext-apps``'s ``examples/``), pinned, with what ``mcpcli call TOOL --app`` runs on each and what
its rendered view shows once the tool's result arrived: the material for the real-server app tests.

How they were examined (2026-12, each run as ``node <pkg>/dist/index.js --stdio`` under ``unshare -rn``, i.e. with
no network at all): the SDK's ``mcp.Client`` (2.3) declaring ``extensions: {"io.modelcontextprotocol/ui":
{"mimeTypes": ["text/html;profile=mcp-app"]}}`` listed the tools, read each ``resourceUri``, called the tool; then
each view was rendered in Debian's chromium (Playwright, headless) inside a minimal spec host: the view on an
origin of its own in an iframe ``sandbox="allow-scripts allow-same-origin"``, served with the CSP the spec builds
from its ``_meta.ui.csp`` (the restrictive default when none), every other request aborted; the host answered
``ui/initialize`` (hostContext: theme light, displayMode inline, containerDimensions {width: 800, maxHeight:
3000}, locale en-US, timeZone UTC, platform desktop, toolInfo), sent ``tool-input`` then ``tool-result`` after
``ui/notifications/initialized``, and proxied the view's ``tools/call`` / ``resources/read`` to the server.

What every one of them does:

- Speaks only 2025-11-25 (the TypeScript SDK 2.0.0, ``@modelcontextprotocol/server``): ``server/discover`` is
  refused, so ``auto`` falls back to the ``initialize`` handshake. None declares the extension in its capabilities,
  and none gates its tools on the client's declaration: ``tools/list`` is the same with and without it.
- Every UI tool carries both ``_meta.ui.resourceUri`` and the deprecated flat ``_meta["ui/resourceUri"]`` (same
  URI); app-only tools carry ``_meta.ui.visibility: ["app"]`` (system-monitor's and pdf's without a resourceUri).
- Each view is one self-contained HTML file (the app bundled inline: 218 KB for basic-vanillajs, ~400-700 KB for the
  React/Chart.js ones, 1.2 MB threejs, 4.3 MB pdf), one ``text`` content, MIME ``text/html;profile=mcp-app``.
  The ``http(s)://`` strings in the offline ones are only in library comments and error texts, never in a
  ``src``/``href``/``import``/``fetch``; their views rendered with the spec's default CSP and the network cut.
- The views use the ext-apps ``App`` class: ``ui/initialize`` with ``protocolVersion`` "2026-01-26", then
  ``ui/notifications/initialized``, then ``ui/notifications/size-changed``. None sent anything the spec summary
  does not list (seen: ``tools/call``, ``resources/read``, ``ui/update-model-context``, ``ui/message``,
  ``ui/open-link``, ``notifications/message`` from buttons). The views take what they show from the tool input
  as sent (the server's schema defaults are NOT in it): pass every argument the view needs explicitly.

The chosen ones (``APPS``: each works offline, its view reached ``ui/initialize`` and showed the result):

======================  ======================  =============================================================
server                  tool (arguments)        the view after the result, and what else it does
======================  ======================  =============================================================
basic-vanillajs         get-time ({})           ``#server-time`` shows the result's text (an ISO time; "Loading..."
basic-react/-preact/                            before, in all six). The five framework twins show the same
-solid/-svelte/-vue                             page: "Server Time:" then the ISO time of the result. Buttons
                                                send ui/message, notifications/message, ui/open-link, and
                                                tools/call get-time.
budget-allocator        get-budget-data ({})    "Allocated: $100,000 / $100,000" (from the result's
                                                structuredContent; "Allocated: $0 / $0" before); Chart.js bundled.
cohort-heatmap          get-cohort-data ({})    "Cohort Retention Analysis", "M11"; the view itself calls
                                                ``tools/call get-cohort-data`` (model+app tool) on load, and shows
                                                the same without the tool-result notification.
customer-segmentation   get-customer-data ({})  "Customer Segmentation", "Enterprise"; the view calls
                                                ``get-customer-data`` itself (the same without the result).
scenario-modeler        get-scenario-data ({})  "SaaS Scenario Modeler", "12-MONTH PROJECTION"; only after the
                                                result: its templates ("🚀 VC Rocketship", …).
system-monitor          get-system-info ({})    "System Monitor", "Hostname" and the hostname of the result's
                                                structuredContent, "Stop" ("Start", "Ready", "--" before); then
                                                the view POLLS the app-only tool ``poll-system-stats``
                                                (visibility ["app"]) every 2 s until its Stop button: the host
                                                must let app-only tools through.
debug                   debug-tool ({})         "Event Log", "ontoolresult:" (only after the result), the
                                                host's ``hostInfo`` ("<name> v<version>") and hostContext (Theme,
                                                Locale, TimeZone, Platform, Display Mode) under "Host Info": a
                                                check of what the host sent. On each event the view calls the
                                                app-only tool ``debug-log``.
sheet-music             play-sheet-music        "Twinkle, Twinkle Little Star" (the title of the ABC it is given,
                        ({"abcNotation": …})    from the tool INPUT); audio soundfonts need
                                                https://paulrosen.github.io (declared in connectDomains; not needed
                                                to render). With ``{}`` the view renders nothing.
======================  ======================  =============================================================

Left out:

- map (CesiumJS loaded from cesium.com at run time: nothing renders offline; csp connect/resourceDomains
  openstreetmap + cesium), pdf 2.0.4 (pdf.js from unpkg.com; ``display_pdf`` fetches the PDF: "fetch failed"
  offline), wiki-explorer (the tool fetches Wikipedia: its result is ``{"links": [], "error": "fetch failed"}``),
  video-resource (the view's ``resources/read videos://bunny-1mb`` makes the server fetch the video: -32603 "fetch
  failed" offline).
- threejs: its view evaluates the scene code as a string (``new Function``), which the spec's CSP forbids (no
  ``'unsafe-eval'``): "Evaluating a string as JavaScript violates the following Content Security Policy
  directive". A correct host cannot run it; it also sends ``ui/update-model-context`` at start.
- shadertoy: renders offline in headless chromium (WebGL, SwiftShader) given ``{"fragmentShader": …}`` ("Invalid
  tool input" with ``{}``), but shows no text to check (a canvas) — usable only for ``ui/initialize``.
- transcript: renders offline ("Your speech will appear here..."), but its tool declares ``_meta.ui.permissions``
  {microphone, clipboardWrite} and the app is about the microphone: a permissions test at most.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCOPE = "@modelcontextprotocol"
VERSION = "2.0.3"
"""Every example server at one release of ext-apps (pdf alone has 2.0.4)."""
TWINKLE = "X:1\nT:Twinkle, Twinkle Little Star\nM:4/4\nL:1/4\nK:C\nC C G G | A A G2 | F F E E | D D C2 |"


@dataclass(frozen=True)
class NpmApp:
    """One example server: the tool ``call --app`` runs, with its arguments, and what its view shows then."""

    name: str
    """The package is ``@modelcontextprotocol/server-<name>``."""
    tool: str
    arguments: dict[str, Any]
    shows: tuple[str, ...]
    """Texts the rendered view contains once the result arrived (besides ``shows_result``)."""
    after_result: tuple[str, ...] = ()
    """Those of ``shows`` that appear ONLY once ``ui/notifications/tool-result`` arrived (rendered without it, the view
    lacks them). Empty where the view shows the same without the result (it loads its data by its own
    ``tools/call``, or draws from the tool input): there, check the result's delivery in the host's record."""
    shows_result: bool = False
    """The result's first text block (e.g. an ISO time) appears in the view as it is."""
    selector: str | None = None
    """An element whose text is the result's text, where there is one."""
    app_calls: tuple[str, ...] = field(default=())
    """Tools the view calls by itself (each must reach the server: its visibility includes "app")."""

    @property
    def spec(self) -> str:
        return f"{SCOPE}/server-{self.name}@{VERSION}"


_BASIC = ("Server Time:", "Get Server Time", "Send Message", "Send Log", "Open Link")
APPS: tuple[NpmApp, ...] = (
    NpmApp("basic-vanillajs", "get-time", {}, _BASIC, shows_result=True, selector="#server-time"),
    NpmApp("basic-react", "get-time", {}, _BASIC, shows_result=True),
    NpmApp("basic-preact", "get-time", {}, _BASIC, shows_result=True),
    NpmApp("basic-solid", "get-time", {}, _BASIC, shows_result=True),
    NpmApp("basic-svelte", "get-time", {}, _BASIC, shows_result=True),
    NpmApp("basic-vue", "get-time", {}, _BASIC, shows_result=True),
    NpmApp(
        "budget-allocator",
        "get-budget-data",
        {},
        ("Budget Allocator", "Allocated: $100,000 / $100,000"),
        after_result=("Allocated: $100,000 / $100,000",),  # "Allocated: $0 / $0" before
    ),
    NpmApp(
        "cohort-heatmap", "get-cohort-data", {}, ("Cohort Retention Analysis", "M11"), app_calls=("get-cohort-data",)
    ),
    NpmApp(
        "customer-segmentation",
        "get-customer-data",
        {},
        ("Customer Segmentation", "Enterprise"),
        app_calls=("get-customer-data",),
    ),
    NpmApp(
        "scenario-modeler", "get-scenario-data", {}, ("SaaS Scenario Modeler", "12-MONTH PROJECTION", "Break-even:")
    ),
    NpmApp("system-monitor", "get-system-info", {}, ("System Monitor", "Hostname"), app_calls=("poll-system-stats",)),
    NpmApp("debug", "debug-tool", {}, ("Event Log", "ontoolresult:", "Host Info"), app_calls=("debug-log",)),
    NpmApp("sheet-music", "play-sheet-music", {"abcNotation": TWINKLE}, ("Twinkle, Twinkle Little Star",)),
)
"""The example servers whose views work offline, in the order a test parametrizes them."""


def _cache() -> Path:
    """Where npm servers are installed once: ``$MCPCLI_TEST_CACHE``, as ``tests/test_realservers.py``'s ``_cache``."""
    if given := os.environ.get("MCPCLI_TEST_CACHE"):
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpcli-tests"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must have it)")
    pytest.skip(why)


def _main(root: Path, app: NpmApp) -> Path:
    return root / "node_modules" / SCOPE / f"server-{app.name}" / "dist" / "index.js"


def install(folder: str = f"npm-apps-{VERSION}") -> Path:
    """The folder every pinned example server is installed in, by ONE ``npm install`` of them all the first time
    (as ``_npm_server`` does for one package: CI pays one install; they share ext-apps, the SDK, express, zod)."""
    if not (shutil.which("node") and shutil.which("npm")):
        _unavailable("needs node and npm")
    root = _cache() / folder
    if not all(_main(root, app).is_file() for app in APPS):
        root.mkdir(parents=True, exist_ok=True)
        specs = sorted({app.spec for app in APPS})
        done = subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root), *specs],
            capture_output=True,
            text=True,
            timeout=600,
        )
        missing = [app.name for app in APPS if not _main(root, app).is_file()]
        if done.returncode != 0 or missing:
            _unavailable(f"npm install of the MCP Apps examples failed ({missing}): {done.stderr[-500:]}")
    return root


def command(app: NpmApp) -> str:
    """A ``-s`` command line running ``app``'s server over stdio (installed first, with all the others)."""
    return shlex.join(["node", str(_main(install(), app)), "--stdio"])
