"""Settings and paths.

Owns where mcpcli keeps things (platformdirs, relocated as a whole by
``MCPCLI_HOME``) and the ``config.toml`` model; what the user typed after ``-s``
becomes a ``Target`` in ``mcpcli.settings.targets``. Pure: no network, no ``mcp`` import.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mcpcli.errors import ConfigError

APP = "mcpcli"


@dataclass(frozen=True)
class Paths:
    """Where mcpcli keeps its files. ``MCPCLI_HOME`` puts all of them in one directory."""

    config_dir: Path
    state_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def store_file(self) -> Path:
        return self.state_dir / "sessions.db"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def store_key_file(self) -> Path:
        """Seals secret answers in the session store (``MCPCLI_STORE_KEY`` takes precedence)."""
        return self.config_dir / "keys" / "store.key"

    @property
    def demo_key_file(self) -> Path:
        return self.state_dir / "keys" / "demo-request-state.key"

    @property
    def servers_file(self) -> Path:
        """Servers added or imported by ``mcpcli servers add|import`` (the ``mcpServers`` JSON shape)."""
        return self.config_dir / "servers.json"

    @property
    def token_dir(self) -> Path:
        """OAuth tokens and client registrations, one 0600 file per server URL (unless the OS keyring holds them)."""
        return self.config_dir / "tokens"

    @property
    def cache_dir(self) -> Path:
        """Throw-away caches (the tool lists that shell completion reads)."""
        return self.state_dir / "cache"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Paths:
        env = os.environ if environ is None else environ
        if home := env.get("MCPCLI_HOME"):
            root = Path(home).expanduser()
            return cls(config_dir=root, state_dir=root)
        import platformdirs  # deferred: only the commands that touch files need it

        return cls(
            config_dir=Path(platformdirs.user_config_dir(APP)),
            state_dir=Path(platformdirs.user_state_dir(APP)),
        )


def write_private(path: Path, text: str, *, durable: bool = True, private_parent: bool = True) -> None:
    """Replace ``path`` atomically with a 0600 file holding ``text``: a reader never sees half a file.

    A temporary file beside it is written (and fsynced unless ``durable`` is off, as for a throw-away cache), then
    renamed over ``path``. The parent is created 0700 unless ``private_parent`` is off (a place the user chose).
    ``OSError`` propagates: each caller says what could not be written.
    """
    directory = private_dir(path.parent) if private_parent else path.parent
    tmp = directory / f".{path.name}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def create_once(path: Path, content: bytes) -> None:
    """Make ``path`` a 0600 file holding ``content`` unless it exists; either way, what is there then is whole.

    ``content`` is written and fsynced under a private name, then linked into place — a link never replaces — so
    of processes racing to make the same file (a key, on first use) the first one's is everyone's, and none reads
    a file half written. ``OSError`` propagates.
    """
    directory = private_dir(path.parent)
    draft = directory / f".{path.name}.{os.urandom(4).hex()}.tmp"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a rename, unless one got there first
            if not path.exists():
                draft.replace(path)
    finally:
        draft.unlink(missing_ok=True)


def private_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents as 0700 directories; leave existing ones' modes alone."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
    return path


def check_client_metadata_url(url: str | None) -> str | None:
    """A Client ID Metadata Document URL must be https with a path (it becomes the client id; the SDK insists)."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/"):
        raise ValueError(f"{url!r} is not an https URL with a path (like https://example.com/mcpcli/client.json)")
    return url


class OAuthEntry(BaseModel):
    """``[mcpServers.NAME.oauth]``: who mcpcli is to one server's authorization server — a client registered in
    advance (``client_id``), or a Client ID Metadata Document (``client_metadata_url``)."""

    model_config = ConfigDict(extra="forbid")

    client_id: str | None = Field(default=None, min_length=1)
    """The client id the authorization server issued to you for mcpcli (no dynamic registration then)."""
    client_secret_env: str | None = None
    """An environment variable holding the client secret, for a confidential client (kept out of this file).
    mcpcli authenticates at the token endpoint as the authorization server advertises
    (``token_endpoint_auth_methods_supported``): HTTP Basic (``client_secret_basic``) when it lists it or lists
    nothing, the form fields (``client_secret_post``) when it lists only those."""
    client_metadata_url: str | None = None
    """This server's override of the top-level ``client_metadata_url``."""
    scope: str | None = None
    """Scopes to ask for, space-separated; default: what the server says it needs."""
    redirect_port: int | None = Field(default=None, ge=1024, le=65535)
    """The loopback port of the registered redirect URI ``http://127.0.0.1:PORT/callback``. Leave unset when the
    authorization server accepts any loopback port (RFC 8252 §7.3)."""

    @field_validator("client_metadata_url")
    @classmethod
    def _cimd(cls, value: str | None) -> str | None:
        return check_client_metadata_url(value)

    @model_validator(mode="after")
    def _someone(self) -> OAuthEntry:
        if self.client_id is None and self.client_metadata_url is None:
            raise ValueError("give 'client_id' (a pre-registered client) or 'client_metadata_url'")
        if self.client_secret_env is not None and self.client_id is None:
            raise ValueError("'client_secret_env' belongs to a pre-registered client: give its 'client_id' too")
        return self


ProtocolChoice = Literal["auto", "legacy", "2026-07-28"]


class ServerEntry(BaseModel):
    """One entry of the ``mcpServers`` table (the ``mcp.json`` shape of Claude Desktop, VS Code, Cursor)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    """Executable of a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Arguments of the stdio command."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment for the stdio server, on top of the SDK's safe whitelist (PATH, HOME, ...)."""
    cwd: str | None = None
    """Working directory of the stdio server."""
    url: str | None = None
    """Endpoint of a streamable HTTP server."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request to ``url``."""
    type: str | None = None
    """Accepted for compatibility with other clients' files (``stdio``/``http``); mcpcli infers it."""
    bearer_token_env: str | None = None
    """HTTP only: an environment variable holding a static bearer token, sent as ``Authorization: Bearer``
    (for servers that use API tokens rather than OAuth). ``--bearer TOKEN`` overrides it."""
    oauth: OAuthEntry | None = None
    """HTTP only: a client registered in advance with the server's authorization server. Without it mcpcli
    registers itself (dynamic client registration) the first time the server asks it to sign in."""
    protocol: ProtocolChoice | None = None
    """How to talk to this server: ``auto`` (the default: try 2026-07-28, fall back to the handshake), ``legacy``
    (the pre-2026 ``initialize`` handshake — for a server that still asks its questions over the back-channel,
    such as fastmcp's ``ctx.elicit``) or ``2026-07-28``. ``--protocol`` overrides it."""
    keep_alive: bool = False
    """stdio only: keep the server's process running between commands, in the background worker (``mcpcli worker
    ps``), so a stateful server — a browser, a database session, a REPL — remembers what the last call did.
    Without the worker (``--no-worker``, ``CI``) each command starts the server afresh, as before."""

    @model_validator(mode="after")
    def _one_kind(self) -> ServerEntry:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (stdio) or 'url' (HTTP)")
        return self


# --- LLM providers and sampling (docs/sampling.md) --------------------------------------------------------------------

PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A provider name: it names the key file ``keys/llm-NAME.key``, so nothing that could leave that directory."""
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

Api = Literal["openai-chat", "anthropic"]
ModelTag = Literal["vision", "tools"]
Policy = Literal["ask", "session", "always", "never"]


class ModelEntry(BaseModel):
    """One allowed model: ``"llama3.2"``, or ``{name = "llava", tags = ["vision"]}``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    """The model id sent to the provider, exactly as the provider spells it."""
    tags: list[ModelTag] = Field(default_factory=list)
    """What the model takes besides text: ``vision`` (images) and ``tools`` (tool use in sampling). A request
    with content the model cannot take stops before anything is sent."""


class ProviderConfig(BaseModel):
    """``[providers.NAME]``: one LLM endpoint that answers sampling requests."""

    model_config = ConfigDict(extra="forbid")

    api: Api
    """Wire format: ``openai-chat`` (OpenAI Chat Completions — also Ollama, vLLM, llama.cpp server, LM Studio)
    or ``anthropic`` (the Anthropic Messages API)."""
    base_url: str
    """Where requests go: ``{base_url}/chat/completions`` (openai-chat) or ``{base_url}/messages`` (anthropic),
    e.g. ``http://127.0.0.1:11434/v1`` or ``https://api.anthropic.com/v1``. The API key is sent here and nowhere
    else: redirects are not followed."""
    api_key_env: str | None = None
    """Environment variable holding the API key, used when no key was stored with ``mcpcli keys set NAME``.
    Optional: a local server (Ollama) needs no key."""
    models: list[ModelEntry] = Field(min_length=1)
    """The allow-list, as names or ``{name, tags}`` tables; the first is the default. A server's model hints
    choose among these by substring; a hint is never sent as a model id."""
    max_tokens_cap: int = Field(default=4096, ge=1)
    """The most completion tokens one request may ask for; a server's larger ``maxTokens`` is lowered to it."""
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """openai-chat only: the body field carrying the token limit (OpenAI's newer models want
    ``max_completion_tokens``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers sent with every request to this provider (the API key header is set by mcpcli)."""

    @field_validator("models", mode="before")
    @classmethod
    def _names_are_entries(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL, such as http://127.0.0.1:11434/v1")
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not carry credentials; store the key with 'mcpcli keys set NAME'")
        if parts.query or parts.fragment:
            raise ValueError("must not have a query or a fragment")
        return value.strip().rstrip("/")

    @field_validator("headers")
    @classmethod
    def _valid_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if any(c in text for c in "\r\n\0"):
                raise ValueError(f"the value of header {name!r} has a line break")
        return value

    @property
    def default_model(self) -> ModelEntry:
        return self.models[0]


class ServerSampling(BaseModel):
    """``[sampling.servers."TARGET"]``: settings for one server, by its target (URL or config name)."""

    model_config = ConfigDict(extra="forbid")

    policy: Policy
    """Approval policy for this server's sampling requests; overrides ``[sampling] policy``."""


class SamplingConfig(BaseModel):
    """``[sampling]``: how a server's sampling requests (``CreateMessageRequest``) are answered."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    """The provider (a ``[providers.NAME]``) that answers; ``--llm NAME`` overrides it. Unset with exactly one
    provider configured means that one."""
    policy: Policy = "ask"
    """Approval: ``ask`` (each request and reply), ``session`` (ask once per session), ``always`` (no questions),
    ``never`` (refuse). Non-interactive runs refuse unless the policy allows the server."""
    max_calls: int = Field(default=20, ge=0)
    """Budget per session: completions at most."""
    max_tokens: int = Field(default=20000, ge=0)
    """Budget per session: completion tokens at most (as the provider reports them)."""
    servers: dict[str, ServerSampling] = Field(default_factory=dict)
    """Per-server settings, keyed by the server target as given to ``-s`` (URL or config name)."""

    def policy_for(self, *targets: str | None) -> Policy:
        """The policy of the first of ``targets`` (say the label, then the URL) with an entry; else the default."""
        for target in targets:
            if target is not None and (entry := self.servers.get(target)) is not None:
                return entry.policy
        return self.policy


class LimitsConfig(BaseModel):
    """``[limits]``: what bounds every connection, so that nothing waits forever or reads without bound.

    Each has an environment variable that wins over this file (for one run: ``MCPCLI_CONNECT_TIMEOUT=5 mcpcli ...``).
    """

    model_config = ConfigDict(extra="forbid")

    connect_timeout: float = Field(default=60.0, gt=0)
    """Seconds to start a server and finish the handshake (``MCPCLI_CONNECT_TIMEOUT``): a stdio server that never
    answers ``initialize``, or an HTTP server that never answers, is given up after this (exit 4). Generous by
    default, since ``npx -y`` may download the server the first time."""
    idle_timeout: float = Field(default=300.0, gt=0)
    """Seconds an HTTP response or event stream may go without a message (``MCPCLI_IDLE_TIMEOUT``); SSE comments
    (keep-alives) do not count as one, a progress notification does. Past it the request fails (exit 4)."""
    max_message_mb: float = Field(default=64.0, gt=0)
    """The largest single message a server may send, in MiB (``MCPCLI_MAX_MESSAGE_MB``), over HTTP and stdio.
    A larger one is not read: the request fails (exit 4) with a line naming the size and this setting."""


class WorkerConfig(BaseModel):
    """The background worker (``[worker]``). The front end reads this table itself, before anything heavy is
    imported (``mcpcli.warm``); it is here so that config.toml is checked as a whole and documented in one
    place."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Serve server commands through the background worker (``MCPCLI_WORKER=0`` or ``--no-worker`` turn it off
    for one shell or one command)."""
    idle_timeout: float = Field(default=900.0, gt=0)
    """Seconds without a command after which a worker this home's commands start exits (``MCPCLI_WORKER_IDLE``
    overrides it). Until it has served three commands, a worker exits after one idle minute at most."""


class TelemetryConfig(BaseModel):
    """``[telemetry]``: OpenTelemetry traces of flows (``pip install 'mcpcli[otel]'``). The standard ``OTEL_*``
    environment variables work without this table, and win over what it says."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    """Trace every flow (true) or never (false). Unset: traced when the environment names an OTLP exporter or
    endpoint (``OTEL_TRACES_EXPORTER=otlp``, ``OTEL_EXPORTER_OTLP_ENDPOINT``); ``OTEL_SDK_DISABLED=true`` always
    turns it off."""
    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    """The OTLP/HTTP collector's base URL, e.g. ``http://localhost:4318`` (spans go to ``/v1/traces`` under it);
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` wins. Default: the standard ``http://localhost:4318``."""
    service_name: str | None = Field(default=None, min_length=1)
    """The ``service.name`` the spans carry (default ``mcpcli``); ``OTEL_SERVICE_NAME`` wins."""


PERSON_NAME = re.compile(r"[^\s\x00-\x1f\x7f]{1,128}")
"""A person or group name in ``[user]``, ``[inbox]`` and ``--ask``: no spaces or control characters."""

Channel = Literal["terminal", "desktop", "webhook", "command"]


class UserConfig(BaseModel):
    """``[user]``: who you are to the team inbox."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, pattern=PERSON_NAME.pattern)
    """Your name as flows record their owner and answers their author (``MCPCLI_USER`` wins over it); default
    ``user@host``. ``--ask NAME`` and ``[inbox.groups]`` name people by it, or by the part before ``@``."""


class InboxRoute(BaseModel):
    """``[[inbox.routes]]``: whom the flows of one server (and tool) ask, and the rules for answering them."""

    model_config = ConfigDict(extra="forbid")

    server: str | None = None
    """The server as given with ``-s`` (a config name, URL or command line); unset: every server."""
    tool: str | None = None
    """A tool or prompt name, or a resource URI; unset: every call of the server."""
    ask: list[str] = Field(default_factory=list)
    """People or groups (``[inbox.groups]``) who may answer these flows."""
    no_self_answer: bool = False
    """The flow's owner may not answer it (``mcpcli answer`` refuses): somebody else must."""
    confirm: bool = False
    """The owner's driver shows another person's answer and sends it only once the owner confirms."""

    @field_validator("ask")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return check_people(value)

    def matches(self, server: str, name: str) -> bool:
        return (self.server is None or self.server == server) and (self.tool is None or self.tool == name)


class InboxConfig(BaseModel):
    """``[inbox]``: groups of people, routes, and how a waiting flow is announced."""

    model_config = ConfigDict(extra="forbid")

    groups: dict[str, list[str]] = Field(default_factory=dict)
    """Groups by name, each a list of people: ``ops = ["alice", "bob@build-1"]``."""
    routes: list[InboxRoute] = Field(default_factory=list)
    """Whom flows ask, by server and tool; every route that matches a flow adds its people and rules."""
    notify: list[Channel] = Field(default_factory=lambda: list[Channel](["terminal"]))
    """How a flow that parks, gets an answer, finishes or fails is announced: ``terminal`` (a bell, and an OSC 9 /
    OSC 777 notification where the terminal shows them), ``desktop`` (the freedesktop notification service, with
    the ``notify`` extra), ``webhook``, ``command``."""
    webhook: str | None = None
    """An http(s) URL the announcements are POSTed to as JSON: one body that ntfy and Slack incoming webhooks (and
    Mattermost's) both read. An ntfy topic URL — one path segment, ``https://ntfy.sh/TOPIC`` — is published as
    ntfy's JSON, to the server's root; end any other one-segment URL with ``/`` to have it POSTed to as it is.
    Redirects are not followed."""
    webhook_timeout: float = Field(default=5.0, gt=0, le=60)
    """Seconds one POST may take."""
    webhook_retries: int = Field(default=2, ge=0, le=5)
    """How many times a failed POST is tried again (with a short backoff) before it is given up."""
    notify_command: str | None = None
    """A command line run once per announcement (split as your shell would, run without one), the event as one JSON
    line on its stdin; stopped after 10 seconds. Where there is no ``desktop`` channel (macOS), e.g.
    ``terminal-notifier -title mcpcli -message "a flow needs you"``."""

    @field_validator("groups")
    @classmethod
    def _groups(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for group, members in value.items():
            check_people([group, *members])
        return value

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError("the webhook must be an http:// or https:// URL")
        return value


def check_people(names: list[str]) -> list[str]:
    """Person and group names, checked (``PERSON_NAME``): a ``ValueError`` names the first bad one."""
    for name in names:
        if not PERSON_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a name: use no spaces or control characters, at most 128 characters")
    return names


class Settings(BaseModel):
    """The contents of ``config.toml``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    default_server: str | None = None
    """Server target used when neither ``-s`` nor ``MCPCLI_SERVER`` is given."""
    store: str | None = None
    """Session store URL: ``sqlite:`` (default, under the state dir), ``sqlite:/path.db``."""
    mcp_servers: dict[str, ServerEntry] = Field(default_factory=dict, alias="mcpServers")
    """Named servers, usable as ``-s NAME``."""
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    """LLM providers for sampling, by name: ``[providers.NAME]``. The name is used by ``--llm NAME``,
    ``[sampling] provider`` and ``mcpcli keys set NAME``."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    """How sampling requests are answered: which provider, approval policy, budgets."""
    client_metadata_url: str | None = None
    """The https URL of a Client ID Metadata Document you publish for mcpcli (a JSON document naming it, with
    ``redirect_uris`` such as ``http://127.0.0.1/callback``). Where a server's authorization server advertises
    ``client_id_metadata_document_supported``, mcpcli signs in with this URL as its client id — the registration
    2026-07-28 prefers — instead of registering itself; elsewhere it registers dynamically as before. A server's
    ``[mcpServers.NAME.oauth] client_metadata_url`` overrides it, and a pre-registered ``client_id`` wins over
    both."""

    @field_validator("client_metadata_url")
    @classmethod
    def _cimd(cls, value: str | None) -> str | None:
        return check_client_metadata_url(value)

    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    """Connection bounds: connect/handshake timeout, idle-read timeout, largest message (``[limits]``)."""
    worker: WorkerConfig = Field(default_factory=WorkerConfig)
    """The background worker (``[worker]``): on or off, and its idle timeout."""
    user: UserConfig = Field(default_factory=UserConfig)
    """Who you are to the team inbox (``[user] name``)."""
    inbox: InboxConfig = Field(default_factory=InboxConfig)
    """The team inbox: groups, routes, announcements (``[inbox]``)."""
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """OpenTelemetry traces of flows (``[telemetry]``): on or off, the collector, the service name."""

    @field_validator("providers")
    @classmethod
    def _provider_names(cls, value: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
        for name in value:
            if not PROVIDER_NAME.fullmatch(name):
                raise ValueError(f"provider name {name!r} may only use letters, digits, '.', '_' and '-'")
        return value


def load_settings(paths: Paths) -> Settings:
    """Read ``config.toml``; a missing file means defaults, a broken one a one-line error."""
    path = paths.config_file
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.", hint=f"Fix or move {path}.") from None
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to read.", hint=f"Fix or move {path}.") from None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}.", hint=f"Fix {where} in {path}.") from None
