"""HTTP proxies from the environment, as curl and httpx read them: ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``
and ``NO_PROXY`` (lower case first, then upper).

httpx2 reads them only for a client that builds its own transport, and every mcpcli client is given one (the
bounds, the relay), so without this a user behind a proxy could reach no remote server. ``route`` wraps the direct
transport: each request goes to the proxy its scheme names, or straight to the server when ``NO_PROXY`` matches its
host — or when the server is on this machine, which a proxy cannot reach on the user's behalf (Go's rule too).
"""

from __future__ import annotations

import importlib.util
import ipaddress
from collections.abc import Callable, Mapping
from typing import TypeVar

import httpx2

from mcpcli.errors import ConfigError

P = TypeVar("P")

VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
"""The settings read, by their lower-case names."""


def from_environment(environ: Mapping[str, str]) -> dict[str, str | None]:
    """Each of ``VARIABLES``: its lower-case variable, else its upper-case one, else ``None``."""
    return {name: (environ.get(name) or environ.get(name.upper()) or None) for name in VARIABLES}


def route(
    settings: Mapping[str, str | None],
    direct: httpx2.AsyncBaseTransport,
    through: Callable[[httpx2.Proxy], httpx2.AsyncBaseTransport],
) -> httpx2.AsyncBaseTransport:
    """``direct``, or a transport choosing per request between it and one made by ``through`` for each proxy the
    settings name (``check``ed first)."""
    made: dict[str, httpx2.AsyncBaseTransport] = {}
    chosen: dict[str, httpx2.AsyncBaseTransport] = {}
    for scheme, proxy in check(settings).items():
        url = str(proxy.url)
        if url not in made:
            made[url] = through(proxy)
        chosen[scheme] = made[url]
    if not chosen:
        return direct
    return _Routing(direct, chosen, _bypass_list(settings.get("no_proxy")), list(made.values()))


def check(settings: Mapping[str, str | None]) -> dict[str, httpx2.Proxy]:
    """The proxy for each scheme the settings name (``http``, ``https``, ``all``); one that cannot be used is a
    ``ConfigError``, before anything is sent."""
    found: dict[str, httpx2.Proxy] = {}
    for scheme in ("http", "https", "all"):
        if not (value := (settings.get(f"{scheme}_proxy") or "").strip()):
            continue
        variable = f"{scheme.upper()}_PROXY"
        try:
            proxy = httpx2.Proxy(value if "://" in value else f"http://{value}")
        except (ValueError, TypeError, httpx2.InvalidURL) as exc:
            raise ConfigError(f"{variable} is not a proxy mcpcli can use: {exc}", hint=f"Check {variable}.") from None
        if proxy.url.scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
            raise ConfigError(
                f"{variable} names a SOCKS proxy, which needs the socksio package.",
                hint="Install socksio where mcpcli is installed, or use an HTTP proxy.",
            )
        found[scheme] = proxy
    return found


def for_url(url: str, environ: Mapping[str, str]) -> httpx2.Proxy | None:
    """The proxy a request to ``url`` goes through, or ``None`` when it goes direct — for a client that makes no
    transport to ``route`` (the announcements' webhook). A setting that cannot be used is a ``ConfigError``, a URL
    that is none an ``httpx2.InvalidURL``."""
    settings = from_environment(environ)
    return _pick(check(settings), _bypass_list(settings.get("no_proxy")), httpx2.URL(url))


def used_for(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy a request to ``url`` goes through (without its credentials, to be shown), or ``None``."""
    try:
        proxy = for_url(url, environ)
    except (ConfigError, httpx2.InvalidURL):
        return None
    if proxy is None:
        return None
    port = f":{proxy.url.port}" if proxy.url.port else ""
    return f"{proxy.url.scheme}://{proxy.url.host}{port}"


def _pick(by_scheme: Mapping[str, P], bypass: list[str], url: httpx2.URL) -> P | None:
    """What ``by_scheme`` holds for ``url``'s scheme (else for ``all``), or None when it goes direct."""
    if bypassed(url.host, url.port, bypass):
        return None
    return by_scheme.get(url.scheme) or by_scheme.get("all")


def _bypass_list(value: str | None) -> list[str]:
    return [entry.strip().lower() for entry in (value or "").split(",") if entry.strip()]


class _Routing(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        direct: httpx2.AsyncBaseTransport,
        proxies: dict[str, httpx2.AsyncBaseTransport],
        bypass: list[str],
        owned: list[httpx2.AsyncBaseTransport],
    ) -> None:
        self._direct = direct
        self._proxies = proxies
        self._bypass = bypass
        self.parts = [direct, *owned]
        """Every transport under this one (the relay counts their connections)."""

    def choose(self, url: httpx2.URL) -> httpx2.AsyncBaseTransport:
        return _pick(self._proxies, self._bypass, url) or self._direct

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self.choose(request.url).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self.parts:
            await transport.aclose()


def bypassed(host: str, port: int | None, bypass: list[str]) -> bool:
    """Whether a request to ``host`` goes direct: it is this machine, or ``NO_PROXY`` names it — ``*``, the host,
    a domain it is in (``example.com`` and ``.example.com`` both cover ``api.example.com``), ``host:port``, or an
    address block (``10.0.0.0/8``)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost") or _in_block(host, "127.0.0.0/8") or host == "::1":
        return True
    for entry in bypass:
        if entry == "*":
            return True
        name, _, wanted_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if wanted_port and str(port) != wanted_port:
            continue
        name = name.strip("[]").lstrip("*").lstrip(".")
        if not name:
            continue
        if host == name or host.endswith("." + name) or ("/" in name and _in_block(host, name)):
            return True
    return False


def _has_port(entry: str) -> bool:
    """``host:port`` or ``[v6]:port`` — not a bare IPv6 address."""
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1


def _in_block(host: str, block: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(block, strict=False)
    except ValueError:
        return False
