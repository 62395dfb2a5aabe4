"""One completion over HTTP: build the request for the provider's API, send it with bounded retries, map the
reply back to MCP — or fail with one line that never holds the key.

Retries: 429, 5xx, timeouts and connection errors are tried at most twice more, waiting what ``Retry-After``
(or OpenAI's ``retry-after-ms``) says, capped at 30 s, else 1 s then 2 s. The URL is always built from the
provider's ``base_url`` and redirects are never followed, so the key cannot be carried to another origin.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from mcpcli import __version__, telemetry
from mcpcli.llm import anthropic, openai_chat
from mcpcli.llm.base import Completion, LlmError, Model, check_request, clamp_tokens, one_line, tools_of

if TYPE_CHECKING:
    import httpx2

    from mcpcli.settings.config import ProviderConfig

TRIES = 3
"""The first try and at most two retries."""
MAX_WAIT = 30.0
"""The longest a ``Retry-After`` is honoured, in seconds."""
BACKOFF = (1.0, 2.0)
"""Waits before the retries when the provider names none."""

Sleep = Callable[[float], Awaitable[Any]]


async def complete(
    provider_name: str,
    provider: ProviderConfig,
    model: Model,
    params: Mapping[str, Any],
    *,
    api_key: str | None,
    max_tokens: int,
    timeout: float = 60.0,
    sleep: Sleep = anyio.sleep,
) -> Completion:
    """Ask ``provider`` for a completion of ``params`` (``CreateMessageRequestParams`` as MCP wire JSON).

    ``model`` is one of the provider's allowed models (``pick_model``); ``max_tokens`` is what to ask for — it is
    clamped to ``max_tokens_cap`` once more here. ``timeout`` bounds each HTTP try. Content the model cannot take
    (images without ``vision``, tools without ``tools``) is refused before any request. ``metadata`` and
    ``includeContext`` are never forwarded.
    """
    check_request(provider_name, model, params)
    api = anthropic if provider.api == "anthropic" else openai_chat
    if provider.api == "anthropic" and not api_key:
        raise LlmError(
            f"Provider '{provider_name}' needs an API key and none is set.", hint=key_hint(provider_name, provider)
        )
    max_tokens = clamp_tokens(max_tokens, provider)
    body = api.build(provider, model, params, max_tokens)
    sent_headers = _headers(provider, api.headers(api_key))
    with telemetry.completion(provider.api, provider.base_url, model.name, max_tokens) as span:
        data = await _post(provider_name, provider, api.url(provider), body, sent_headers, api_key, timeout, sleep)
        try:
            parsed, usage_in, usage_out = api.parse(data, with_tools=bool(tools_of(params)))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
            raise LlmError(
                f"Provider '{provider_name}' sent a reply that is not a {provider.api} completion.",
                hint="Check that base_url points at the API itself (for openai-chat it usually ends in /v1).",
            ) from None
        span.done(parsed.get("model"), usage_in or 0, max_tokens if usage_out is None else usage_out)
    result = {"role": "assistant", "content": parsed["content"], "model": parsed.get("model") or model.name}
    if "stopReason" in parsed:
        result["stopReason"] = parsed["stopReason"]
    return Completion(result=result, usage_in=usage_in or 0, usage_out=max_tokens if usage_out is None else usage_out)


def key_hint(name: str, provider: ProviderConfig, *, replace: bool = False) -> str:
    """The command that gives provider ``name`` a (new) key."""
    hint = f"{'Replace it' if replace else 'Store one'}: mcpcli keys set {name}"
    if provider.api_key_env:
        hint += f"  (or export {provider.api_key_env}=…)"
    return hint


def _headers(provider: ProviderConfig, auth: Mapping[str, str]) -> dict[str, str]:
    """Defaults < the config's ``headers`` < the API's own (version, key), whatever the case of the names."""
    found: dict[str, str] = {}
    for source in (
        {"content-type": "application/json", "accept": "application/json", "user-agent": f"mcpcli/{__version__}"},
        provider.headers,
        auth,
    ):
        for name, value in source.items():
            for old in [k for k in found if k.lower() == name.lower()]:
                del found[old]
            found[name] = value
    return found


async def _post(
    name: str,
    provider: ProviderConfig,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    api_key: str | None,
    timeout: float,
    sleep: Sleep,
) -> dict[str, Any]:
    """POST ``body`` to the provider, up to ``TRIES`` times: a timeout, a network failure, a 429 or a 5xx is tried again
    after a backoff (or the server's ``Retry-After``, capped at ``MAX_WAIT``). Redirects are never followed, so the key
    goes nowhere else. The API key never appears in an error; any other answer is ``_reply``'s."""
    import httpx2  # deferred: only a command that reaches an LLM pays for the HTTP stack

    from mcpcli.net.transports import direct_transport  # the CA settings and proxies every mcpcli connection has

    content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    failure, said = "", ""
    transport = direct_transport()
    async with httpx2.AsyncClient(
        timeout=httpx2.Timeout(timeout), follow_redirects=False, transport=transport
    ) as client:
        for attempt in range(1, TRIES + 1):
            wait: float | None = None
            said = ""
            try:
                response = await client.post(url, content=content, headers=dict(headers))
            except httpx2.TimeoutException:
                failure = f"did not answer within {timeout:g} s"
            except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
                failure = f"could not be reached ({_exc_text(exc, api_key)})"
            except httpx2.HTTPError as exc:  # not transient (e.g. an unsupported URL): no retry
                raise LlmError(f"Provider '{name}' could not be asked: {_exc_text(exc, api_key)}.") from None
            else:
                status = response.status_code
                if status != 429 and status < 500:
                    return _reply(name, provider, response, api_key)
                failure = f"answered {status} {_reason(response)}"
                said = _message(response, api_key)
                wait = retry_after(response.headers)
            if attempt < TRIES:
                await sleep(min(MAX_WAIT, BACKOFF[attempt - 1] if wait is None else wait))
    raise LlmError(
        f"Provider '{name}' {failure} after {TRIES} tries" + (f": {said}" if said else "") + ".",
        hint="Try again later; nothing was answered.",
    )


def _reply(name: str, provider: ProviderConfig, response: httpx2.Response, api_key: str | None) -> dict[str, Any]:
    """The reply's JSON object for a 2xx; for anything else an ``LlmError`` that says what to fix: a redirect (not
    followed), a refused or missing key, a wrong model or URL, or the provider's own words."""
    status = response.status_code
    message = _message(response, api_key)
    detail = f"{status} {_reason(response)}" + (f": {message}" if message else "")
    if 200 <= status < 300:
        try:
            data = response.json()
        except (ValueError, RecursionError):  # not JSON, or nested past what can be read
            data = None
        if not isinstance(data, dict):
            raise LlmError(
                f"Provider '{name}' sent a reply that is not a JSON object.",
                hint="Check that base_url points at the API itself (for openai-chat it usually ends in /v1).",
            )
        return data
    if 300 <= status < 400:
        where = _display_url(response.headers.get("location", ""), base=str(response.request.url))
        raise LlmError(
            f"Provider '{name}' answered {status} {_reason(response)}, a redirect to {where}; mcpcli does not follow "
            "redirects, so the key never goes to another address.",
            hint=f"Set base_url of [providers.{name}] to the address the provider redirects to, if you trust it.",
        )
    if status in (401, 403):
        if api_key:
            raise LlmError(
                f"Provider '{name}' refused the API key ({detail}).", hint=key_hint(name, provider, replace=True)
            )
        raise LlmError(f"Provider '{name}' needs an API key ({detail}).", hint=key_hint(name, provider))
    if status == 404:
        raise LlmError(
            f"Provider '{name}': model or endpoint not found ({detail}) at {_display_url(str(response.request.url))}.",
            hint=f"Check base_url and the model names of [providers.{name}] ('mcpcli llm list').",
        )
    raise LlmError(f"Provider '{name}' rejected the request ({detail}).")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date; ``None`` if absent
    or unreadable. Not capped here."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _reason(response: httpx2.Response) -> str:
    import httpx2

    return response.reason_phrase or httpx2.codes.get_reason_phrase(response.status_code)


def _message(response: httpx2.Response, api_key: str | None) -> str:
    """The provider's own error message, one line: OpenAI/Anthropic ``error.message``, Ollama's ``error``."""
    try:
        data = json.loads(response.content or b"null")
    except (ValueError, RecursionError):
        data = None
    text: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        text = error.get("message") if isinstance(error, dict) else error
        text = text or data.get("message") or data.get("detail")
    html = response.headers.get("content-type", "").startswith("text/html")  # a proxy's error page: noise
    if text is None and not html and not isinstance(data, dict | list):
        text = response.content[:500].decode("utf-8", "replace") if response.content else None
    return one_line(str(text), secret=api_key).rstrip(".") if text else ""


def _exc_text(exc: BaseException, api_key: str | None) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, secret=api_key)


def _display_url(url: str, base: str | None = None) -> str:
    """A URL fit for an error line: scheme, host, port and path — no credentials, no query."""
    from urllib.parse import urljoin

    parts = urlsplit(urljoin(base, url) if base else url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return one_line(f"{parts.scheme}://{host}{port}{parts.path}")
