"""What an MCP App view may load and use: its Content-Security-Policy and its iframe ``allow``, from its declarations.

A ``ui://`` resource declares, in ``_meta.ui.csp``, the origins its view needs (``connectDomains``,
``resourceDomains``, ``frameDomains``, ``baseUriDomains``) and, in ``_meta.ui.permissions``, the browser features it
asks for. The app host (``apphost.host``) sends the policy built here as the view's HTTP
``Content-Security-Policy`` header, and sets ``allow`` on the view's iframe. Both are made from what was declared and
nothing else (SEP-1865 "No Loosening"): a declaration that is not a plain origin — a CSP keyword such as
``'unsafe-eval'``, a ``;`` or ``,`` that would start another directive, a space, a bare ``*`` — is dropped, never
passed through. Pure: standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

DOMAIN_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
"""The keys of ``_meta.ui.csp`` (SEP-1865 ``McpUiResourceCsp``)."""

SOURCES_MAX = 32
"""Origins taken from one key (more are dropped: no view needs them, and the header stays small)."""

PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
"""``_meta.ui.permissions`` keys and the Permissions Policy feature each one asks for."""

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ORIGIN = re.compile(
    rf"(?P<scheme>https?|wss?)://(?P<wild>\*\.)?(?P<host>(?:{_LABEL}\.)*{_LABEL})(?::(?P<port>[0-9]{{1,5}}|\*))?",
    re.IGNORECASE,
)


def plain_origin(entry: object) -> str | None:
    """``entry`` as a CSP host source if it is a plain origin (``https://cdn.example.com``, ``https://*.example.com``,
    ``http://127.0.0.1:8080``; one trailing ``/`` is dropped), else None.

    No path, query, credentials, quotes, spaces, ``;`` or ``,``: those would let a declaration say more than an
    origin. A wildcard must stand for subdomains of a name with a dot in it (``https://*.com`` is refused).
    """
    if not isinstance(entry, str) or len(entry) > 300:
        return None
    text = entry.strip()
    text = text[:-1] if text.endswith("/") else text
    found = _ORIGIN.fullmatch(text)
    if found is None:
        return None
    if found["wild"] and "." not in found["host"]:
        return None
    if found["port"] and found["port"] != "*" and not 0 < int(found["port"]) < 65536:
        return None
    return text.lower()


def declared(csp: Mapping[str, Any], key: str) -> list[str]:
    """The plain origins declared under ``key``, in order, without repeats (at most ``SOURCES_MAX``)."""
    raw = csp.get(key) if isinstance(csp, Mapping) else None
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        return []
    kept: list[str] = []
    for entry in raw:
        origin = plain_origin(entry)
        if origin is not None and origin not in kept and len(kept) < SOURCES_MAX:
            kept.append(origin)
    return kept


def refused(csp: Mapping[str, Any]) -> list[str]:
    """The declarations ``content_security_policy`` dropped (each as ``key: entry``, clipped), for a warning line."""
    if not isinstance(csp, Mapping):
        return []
    out: list[str] = []
    for key in DOMAIN_KEYS:
        raw = csp.get(key)
        if raw is None:
            continue
        if isinstance(raw, str) or not isinstance(raw, Sequence):
            out.append(f"{key}: {str(raw)[:80]}")
            continue
        out += [f"{key}: {str(entry)[:80]}" for entry in raw if plain_origin(entry) is None]
    return out


def content_security_policy(csp: Mapping[str, Sequence[str]], report_uri: str | None = None) -> str:
    """The view's policy: SEP-1865's restrictive default, widened only by the plain origins declared.

    Nothing declared gives the spec's default (``default-src 'none'; script-src 'self' 'unsafe-inline'; style-src
    'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'``) followed by what its
    sandbox rules add — ``frame-src 'none'; base-uri 'self'; object-src 'none'`` — and ``form-action 'self'`` (a
    form could otherwise send the view's data to any site: ``default-src`` does not cover it), then ``report-uri``
    when given. ``resourceDomains`` widen script, style, img, font and media; ``connectDomains`` connect-src;
    ``frameDomains`` frame-src; ``baseUriDomains`` base-uri.
    """
    resources = declared(csp, "resourceDomains")
    connect = declared(csp, "connectDomains")
    frames = declared(csp, "frameDomains")
    bases = declared(csp, "baseUriDomains")
    directives = [
        ["default-src", "'none'"],
        ["script-src", "'self'", "'unsafe-inline'", *resources],
        ["style-src", "'self'", "'unsafe-inline'", *resources],
        ["img-src", "'self'", "data:", *resources],
        *([["font-src", "'self'", *resources]] if resources else []),
        ["media-src", "'self'", "data:", *resources],
        ["connect-src", *(connect or ["'none'"])],
        ["frame-src", *(frames or ["'none'"])],
        ["base-uri", *(bases or ["'self'"])],
        ["object-src", "'none'"],
        ["form-action", "'self'"],
    ]
    if report_uri is not None:
        directives.append(["report-uri", report_uri])
    return "; ".join(" ".join(words) for words in directives)


def allow_attribute(permissions: Mapping[str, Any]) -> str:
    """The iframe ``allow`` value: each feature of ``PERMISSIONS`` the resource declared (present, not false/null)."""
    if not isinstance(permissions, Mapping):
        return ""
    return "; ".join(feature for key, feature in PERMISSIONS.items() if permissions.get(key) not in (None, False))


def delegated_allow(permissions: Mapping[str, Any], origin: str) -> str:
    """The ``allow`` of the frame around the view's frame: the same features, delegated to the view's ``origin``
    too (a nested frame gets a feature only if every frame above it has it for that origin)."""
    features = allow_attribute(permissions)
    return "; ".join(f"{feature} 'src' {origin}" for feature in features.split("; ")) if features else ""
