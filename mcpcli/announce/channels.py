"""The announcement's channels: the terminal, the desktop, a webhook, a command — each sanitizes for its reader.

A terminal acts on escape sequences, a notification daemon on markup, Slack on ``<!channel>``, and the text came
from a server: so the terminal's text loses every control and every character that would end its escape, the
desktop's body is markup-escaped where the service reads markup, the webhook's Slack text has ``&``, ``<`` and ``>``
escaped. A channel adds no environment, no headers beyond ``Content-Type``, and never names the webhook's URL in a
diagnostic (a Slack URL or an ntfy topic is a password): it fails with ``Undelivered``, one line for ``warn``.

The desktop, webhook and command channels run in the announcer's threads (``mcpcli.announce``); ``terminal_bytes``
is written by the announcer itself. Their libraries (``jeepney``, ``httpx2``) are imported only when one delivers.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from mcpcli.announce.message import BODY_MAX, TEXT_MAX, Event, bounded, json_bytes, one_line, title_of
from mcpcli.display import json_text, sanitize
from mcpcli.platform import split_command

if TYPE_CHECKING:
    from mcpcli.settings.config import InboxConfig

Osc = Literal["osc9", "osc777"]

COMMAND_TIMEOUT = 10.0
"""Seconds a ``notify_command`` may run before it is stopped."""

_NTFY_TAGS = {"waiting": "bell", "answered": "speech_balloon", "done": "white_check_mark", "failed": "x"}


class Undelivered(Exception):
    """A channel could not deliver an announcement; the message is the one line ``warn`` gets."""


# --- terminal -------------------------------------------------------------------------------------------------------

_OSC_UNSAFE = str.maketrans({"\x1b": None, "\x07": None, "\x9c": None, ";": ","})

_BY_PROGRAM: dict[str, Osc] = {"iTerm.app": "osc9", "ghostty": "osc9", "WezTerm": "osc777"}


def terminal_kind(environ: Mapping[str, str]) -> Osc | None:
    """Which desktop-notification escape the terminal shows, judged by what it puts in the environment.

    ====================  ==========================================  =======
    terminal              recognised by                               escape
    ====================  ==========================================  =======
    iTerm2                ``TERM_PROGRAM=iTerm.app``                  OSC 9 (its own)
    Ghostty               ``TERM_PROGRAM=ghostty``, ``xterm-ghostty`` OSC 9 (1.2 has no OSC 777)
    WezTerm               ``TERM_PROGRAM=WezTerm``                    OSC 777 (it shows both)
    kitty                 ``KITTY_WINDOW_ID``, ``TERM=xterm-kitty``   OSC 777 (since 0.24)
    foot                  ``TERM=foot*``                              OSC 777
    rxvt-unicode          ``TERM=rxvt-unicode*``                      OSC 777 (shown by its ``notify`` extension)
    Windows Terminal      ``WT_SESSION``                              OSC 777 (2026 releases; older ignore it)
    VTE ≥ 0.46            ``VTE_VERSION`` ≥ 4600                      OSC 777 (GNOME Terminal, Tilix: Fedora's
                                                                      patch shows it, upstream swallows it)
    ====================  ==========================================  =======

    Anything else — Apple Terminal, Alacritty, VS Code, Konsole, an unknown ``TERM`` — gets the bell alone: an
    unknown OSC may be printed, and OSC 9 is ConEmu's control family there (``9;4`` progress, ``9;9`` directory).
    Inside tmux or screen (``TMUX``, ``STY``, ``TERM=screen*|tmux*``) too: the terminal outside is unknown (tmux
    sets ``TERM_PROGRAM=tmux``), and tmux drops a passthrough unless ``allow-passthrough`` is on; the bell does
    reach the outer terminal and marks the window.
    """
    term = environ.get("TERM", "")
    if environ.get("TMUX") or environ.get("STY") or term.startswith(("screen", "tmux")):
        return None
    if (program := environ.get("TERM_PROGRAM", "")) in _BY_PROGRAM:
        return _BY_PROGRAM[program]
    if term == "xterm-ghostty":
        return "osc9"
    if environ.get("KITTY_WINDOW_ID") or term == "xterm-kitty" or term.startswith(("foot", "rxvt-unicode")):
        return "osc777"
    if environ.get("WT_SESSION"):
        return "osc777"
    vte = environ.get("VTE_VERSION", "")
    return "osc777" if vte.isdigit() and int(vte) >= 4600 else None


def osc_text(text: str) -> str:
    """``text`` safe inside an OSC string: sanitized (every control made visible), and without ESC, BEL, ST or
    ``;`` (which would end the sequence or start another field), on one line, cut at ``TEXT_MAX``."""
    return one_line(sanitize(text).translate(_OSC_UNSAFE))


def terminal_bytes(kind: Osc | None, title: str, text: str) -> str:
    """A bell, and the notification escape ``kind`` names. OSC 9's text starts with ``mcpcli:`` so that no
    terminal that reads ConEmu's ``9;N`` takes a session id for a sub-command."""
    if kind == "osc9":
        return f"\a\x1b]9;{osc_text(f'mcpcli: {text}')}\a"
    if kind == "osc777":
        return f"\a\x1b]777;notify;{osc_text(title)};{osc_text(text)}\a"
    return "\a"


# --- desktop --------------------------------------------------------------------------------------------------------

_NOTIFICATIONS = "org.freedesktop.Notifications"


class Desktop:
    """The freedesktop notification service (``org.freedesktop.Notifications.Notify``) on the D-Bus session bus,
    through ``jeepney`` (the ``notify`` extra): pure Python, no libnotify, no ``notify-send`` to find.

    Each announcement opens the bus, sends one notification and closes it again; a session's next announcement
    replaces its previous notification (``replaces_id``), so a flow is one notification that changes. The body is
    markup-escaped where the service reads markup (its ``body-markup`` capability), so a server's ``<a href>`` is
    text.

    macOS has no such bus and this channel is not implemented there: use ``command`` instead, e.g.
    ``notify_command = "terminal-notifier -title mcpcli -message 'a flow needs you'"``, or a small script that reads
    the event's JSON line and calls ``osascript -e 'display notification "…" with title "mcpcli"'``.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self._markup: bool | None = None
        self._ids: dict[str, int] = {}

    def __call__(self, event: Event) -> None:
        try:
            from jeepney.io.blocking import open_dbus_connection
        except ImportError:
            raise Undelivered("desktop notifications need jeepney: pip install 'mcpcli[notify]'") from None
        address = self._environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            raise Undelivered("desktop: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        try:
            connection = open_dbus_connection(bus=address, auth_timeout=2.0)
        except (OSError, RuntimeError, ValueError) as exc:
            raise Undelivered(f"desktop: the D-Bus session bus could not be reached ({type(exc).__name__})") from None
        with connection:
            self._notify(connection, event)

    def _notify(self, connection: Any, event: Event) -> None:
        """One ``Notify`` on an open bus, replacing the session's previous notification: the service's markup
        capability is asked once, and its absence or silence is one ``Undelivered`` line, never a traceback."""
        from jeepney import DBusAddress, new_method_call
        from jeepney.wrappers import DBusErrorResponse, unwrap_msg

        service = DBusAddress("/org/freedesktop/Notifications", bus_name=_NOTIFICATIONS, interface=_NOTIFICATIONS)
        try:
            if self._markup is None:
                (capabilities,) = unwrap_msg(
                    connection.send_and_get_reply(new_method_call(service, "GetCapabilities"), timeout=3.0)
                )
                self._markup = "body-markup" in capabilities
            session = str(event.get("session_id", ""))
            body = self._body(str(event.get("text", "")))
            summary = one_line(sanitize(title_of(event)))
            no_actions: list[str] = []
            no_hints: dict[str, tuple[str, Any]] = {}
            args = ("mcpcli", self._ids.get(session, 0), "", summary, body, no_actions, no_hints, -1)
            message = new_method_call(service, "Notify", "susssasa{sv}i", args)
            (self._ids[session],) = unwrap_msg(connection.send_and_get_reply(message, timeout=3.0))
        except DBusErrorResponse as exc:
            missing = exc.name == "org.freedesktop.DBus.Error.ServiceUnknown"
            raise Undelivered(
                "desktop: no notification service runs on the session bus" if missing else f"desktop: {exc.name}"
            ) from None
        except TimeoutError:
            raise Undelivered("desktop: the notification service did not answer") from None
        if len(self._ids) > 256:
            self._ids.pop(next(iter(self._ids)))

    def _body(self, text: str) -> str:
        body = one_line(sanitize(text), 2 * TEXT_MAX)
        if self._markup:
            body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return body


# --- webhook --------------------------------------------------------------------------------------------------------

_NTFY_TOPIC = re.compile(r"/([-_A-Za-z0-9]{1,64})")


def webhook_target(url: str) -> tuple[str, str | None]:
    """Where to POST, and the ntfy topic: a URL whose path is one segment (``https://ntfy.sh/TOPIC``, an ntfy topic
    URL) is published as ntfy's JSON — to the server's root, the topic in the body; any other URL is POSTed as it
    is. To POST to a one-segment path that is not ntfy, end it with ``/``."""
    parts = urlsplit(url)
    if (found := _NTFY_TOPIC.fullmatch(parts.path)) is None:
        return url, None
    return urlunsplit((parts.scheme, parts.netloc, "/", parts.query, "")), found.group(1)


def webhook_body(event: Event, topic: str | None) -> bytes:
    """One JSON body for ntfy and for a Slack incoming webhook (and Mattermost's, which reads Slack's).

    ``topic``, ``title``, ``message`` and ``tags`` are ntfy's JSON publishing (``topic`` only with a topic URL);
    ``text`` is what a Slack incoming webhook shows, with ``&``, ``<`` and ``>`` escaped as Slack asks, so a server's
    text cannot ``<!channel>`` or link; each ignores the other's keys. (Discord wants ``content`` and Google Chat
    refuses unknown keys: neither is served.) ``mcpcli`` is the whole event, for a receiver of your own. At most
    ``BODY_MAX`` bytes: the texts are cut further until it fits.
    """
    body: dict[str, Any] = {}
    for limit in (1000, 300, 80):
        body = _webhook_fields(event, topic, limit)
        if len(data := json_bytes(body)) <= BODY_MAX:
            return data
    body["mcpcli"] = {key: body["mcpcli"].get(key) for key in ("event", "session_id", "command")}
    return json_bytes(body)


def _webhook_fields(event: Event, topic: str | None, text_max: int) -> dict[str, Any]:
    text = one_line(sanitize(str(event.get("text", ""))), text_max)
    return ({"topic": topic} if topic else {}) | {
        "title": one_line(sanitize(title_of(event))),
        "message": text,
        "text": text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
        "tags": [_NTFY_TAGS.get(str(event.get("event")), "bell")],
        "mcpcli": bounded(event),
    }


class Webhook:
    """An HTTP POST of ``webhook_body`` with ``httpx2``: ``webhook_timeout`` per try, no redirect followed (the
    body goes only where the user said), proxies from the environment as for servers.

    A connection that failed, a 5xx or a 429 is tried again up to ``webhook_retries`` times, after 0.5, 1, 2 …
    seconds (a 429's ``Retry-After``, up to 10 s). A request that was sent but not answered in time is not: it may
    have arrived, and an announcement twice is worse than one missing. Diagnostics name the scheme and host only.
    """

    def __init__(self, config: InboxConfig, environ: Mapping[str, str], give_up: threading.Event) -> None:
        self._url = config.webhook
        self._timeout = config.webhook_timeout
        self._retries = config.webhook_retries
        self._environ = environ
        self._give_up = give_up

    def __call__(self, event: Event) -> None:
        if not self._url:
            raise Undelivered("webhook: [inbox] notify names it but [inbox] webhook sets no URL")
        target, topic = webhook_target(self._url)
        parts = urlsplit(target)
        where = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        with self._client(target, where) as client:
            self._post(client, target, webhook_body(event, topic), where)

    def _client(self, target: str, where: str) -> Any:
        import httpx2

        from mcpcli.errors import ConfigError
        from mcpcli.net.proxies import for_url

        try:
            proxy = for_url(target, self._environ)
        except (ConfigError, httpx2.InvalidURL) as exc:
            raise Undelivered(f"webhook {where}: {exc}") from None
        return httpx2.Client(timeout=self._timeout, follow_redirects=False, trust_env=False, proxy=proxy)

    def _post(self, client: Any, target: str, body: bytes, where: str) -> None:
        """POST ``body`` until it is taken: what may not have arrived is tried again (backing off, stopped by the
        announcer's close), what may have arrived (a read timeout) never is, and a redirect is refused, not followed
        (the body goes only where the user said). Failing, one ``Undelivered`` line naming ``where`` alone."""
        import httpx2

        failed, wait = "", 0.0
        for attempt in range(self._retries + 1):
            if attempt and self._give_up.wait(wait):
                raise Undelivered(f"webhook {where} {failed}; given up at exit")
            try:
                with client.stream("POST", target, content=body, headers={"Content-Type": "application/json"}) as r:
                    status, retry_after = r.status_code, r.headers.get("Retry-After", "")
            except httpx2.ReadTimeout:
                raise Undelivered(f"webhook {where} did not answer within {self._timeout:g} s") from None
            except httpx2.TransportError as exc:
                failed, wait = f"could not be reached ({type(exc).__name__})", 0.5 * 2**attempt
                continue
            if status < 300:
                return
            if status < 400:
                raise Undelivered(
                    f"webhook {where} answered {status}, a redirect: mcpcli follows none (give its target)"
                )
            if status != 429 and status < 500:
                raise Undelivered(f"webhook {where} answered {status}")
            failed = f"answered {status}"
            wait = min(float(retry_after), 10.0) if retry_after.isdigit() else 0.5 * 2**attempt
        raise Undelivered(f"webhook {where} {failed} ({self._retries + 1} tries)")


# --- command --------------------------------------------------------------------------------------------------------


class Command:
    """``notify_command``, split as the system's shell would (``platform.split_command``) but run without one, the
    event as one JSON line on its stdin, its output discarded, stopped after ``COMMAND_TIMEOUT`` seconds."""

    def __init__(self, line: str | None, environ: Mapping[str, str]) -> None:
        self._line = line
        self._environ = environ

    def __call__(self, event: Event) -> None:
        """Run the command once with ``event`` on its stdin, in the given environment and without a shell: a
        command that cannot start, hangs past ``COMMAND_TIMEOUT`` (then it is killed) or exits non-zero is one
        ``Undelivered`` line naming the program only."""
        try:
            argv = split_command(self._line or "")
        except ValueError as exc:
            raise Undelivered(f"notify_command cannot be split: {exc}") from None
        if not argv:
            raise Undelivered("command: [inbox] notify names it but [inbox] notify_command is not set")
        data = (json_text(dict(event), indent=None) + "\n").encode("utf-8", "replace")
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(self._environ),
            )
        except OSError as exc:  # not found, not executable
            raise Undelivered(f"notify_command {argv[0]!r} cannot be run: {exc.strerror or exc}") from None
        try:
            process.communicate(data, timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise Undelivered(f"notify_command {argv[0]!r} ran past {COMMAND_TIMEOUT:g} s and was stopped") from None
        if process.returncode:
            raise Undelivered(f"notify_command {argv[0]!r} exited {process.returncode}")
