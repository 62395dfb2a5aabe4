"""The person at the terminal: inline prompts for forms, and consent before a URL is opened.

An interactive ``flow.AnswerSource``; the flow asks it only for what presets,
roots and replay could not answer. Imported only when somebody can answer
(it brings in Rich and the prompt code).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import mcp_types as t
from rich.text import Text

from mcpcli import forms
from mcpcli.display import has_invisible, is_web_link, reveal_invisible, safe, sanitize
from mcpcli.engine.answers import Presets
from mcpcli.engine.sampling import Decision, SamplingView
from mcpcli.engine.steps import Question
from mcpcli.terminal.inline import Terminal, ask_form, interruptible, read_reply, refuse_form, shown


@dataclass
class TerminalUser:
    """Inline prompts on stderr: forms field by field, and consent before a URL is opened."""

    term: Terminal
    presets: Presets
    open_url: Callable[[str], object]
    interactive = True
    answered_as = "prompt"
    """How a round's span says it was answered (``mcpcli.telemetry``)."""

    async def answer(self, question: Question) -> t.InputResponse | None:
        request = question.request
        if not isinstance(request, t.ElicitRequest):
            return None
        with interruptible():  # from the header on: a Ctrl-C while it prints stops the run, not only one in a read
            return self._ask(question, request)

    async def confirm_answers(self, by: str, requests: Mapping[str, Any], answers: Mapping[str, Any]) -> bool:
        """A route asks the owner to confirm another person's answers (``[[inbox.routes]] confirm``): show them,
        secrets masked, and send them only on ``y``."""
        from mcpcli.state.vault import secret_fields

        secret = secret_fields(requests)
        console = self.term.console
        with interruptible():
            console.print(Text.assemble((sanitize(by), "bold"), " answered this round; your route asks you first:"))
            for key, answer in answers.items():
                action = answer.get("action") if isinstance(answer, Mapping) else None
                content = answer.get("content") if isinstance(answer, Mapping) else None
                console.print(Text(f"  {sanitize(str(key))}: {sanitize(str(action))}", style="dim"))
                for name, value in (content or {}).items() if isinstance(content, Mapping) else ():
                    shown_value = "[secret]" if name in secret.get(key, set()) else shown(value)
                    console.print(Text(f"    {sanitize(str(name))} = {shown_value}"))
            try:
                reply = self.term.read_line("Send their answers? [y/N] ").strip().lower()
            except EOFError:
                return False
        return reply in ("y", "yes")

    def _ask(self, question: Question, request: t.ElicitRequest) -> t.ElicitResult:
        """One elicitation asked at the terminal: a URL request as consent to visit, a form as inline prompts (prefilled
        with what presets gave), a form that cannot be filled in as a decline-or-cancel choice. Returns the person's
        action and content."""
        if isinstance(request.params, t.ElicitRequestURLParams):
            return self._url_consent(question, request.params)
        # Asked on the event loop's own thread, on purpose: Ctrl-C then lands in input() and unwinds cleanly,
        # and nothing else needs the loop while a person thinks (every leg is a fresh request).
        try:
            specs = forms.parse_schema(request.params.requested_schema)
        except forms.SchemaError as exc:
            outcome = refuse_form(self.term, request.params.message, str(exc), server_label=question.server)
        else:
            preset = self.presets.partial(question, specs)
            outcome = ask_form(self.term, request.params.message, specs, server_label=question.server, preset=preset)
        if outcome.action == "accept":
            return t.ElicitResult(action="accept", content=outcome.content or {})
        return t.ElicitResult(action=outcome.action)

    def _url_consent(self, question: Question, params: t.ElicitRequestURLParams) -> t.ElicitResult:
        """Show the message, the link (sanitized, its host emphasised) and its warnings, and ask: open it (then wait for
        Enter), already done, decline or cancel. A link that is not a web page is declined without asking."""
        console = self.term.console
        check = check_url(params.url)
        console.print(Text.assemble(("? ", "bold cyan"), shown(params.message)))
        console.print(Text.assemble("  ", url_text(params.url)))
        for warning in check.warnings:
            console.print(Text.assemble(("  ! ", "bold yellow"), safe(warning)))
        if check.refused:
            console.print(Text("  This link is not a web page; declining it.", style="red"))
            return t.ElicitResult(action="decline")
        while True:
            reply = read_reply(
                self.term, "  Open it in your browser? [y]es / [a]lready done / [n]o (decline) / [c]ancel: "
            )
            reply = reply.strip().lower()
            if reply in ("y", "yes"):
                self.open_url(params.url)
                read_reply(self.term, "  Press Enter when you have finished on that page. ")
                return t.ElicitResult(action="accept")
            if reply in ("a", "already"):
                return t.ElicitResult(action="accept")
            if reply in ("n", "no", "decline", "d"):
                return t.ElicitResult(action="decline")
            if reply in ("c", "cancel"):
                return t.ElicitResult(action="cancel")


@dataclass(frozen=True)
class UrlCheck:
    host: str
    warnings: list[str]
    refused: bool


def check_url(url: str) -> UrlCheck:
    """What to warn about before anyone opens ``url``: non-https, punycode, mixed-script or invisible characters
    in the host, a user name before it, other schemes. Never raises: a link that is no URL at all is refused."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:  # e.g. an unclosed "[" of an IPv6 host
        return UrlCheck("", ["Refused: this is not a valid link."], True)
    warnings: list[str] = []
    if not is_web_link(url):
        scheme = sanitize(parts.scheme) or "no"
        return UrlCheck(host, [f"Refused: {scheme} scheme — only http(s) links are opened."], True)
    if parts.scheme == "http":
        warnings.append("This link is not encrypted (http, not https).")
    if has_invisible(host):
        warnings.append(
            f"The host hides invisible or direction-changing characters ({reveal_invisible(host)}); "
            "it is not the site it looks like."
        )
    elif any(label.startswith("xn--") for label in host.split(".")) or not host.isascii():
        shown = _punycode(host)
        if shown is None:
            warnings.append(f"The host {sanitize(host)} is not a valid international domain name.")
        else:
            warnings.append(
                f"The host uses international characters (punycode {shown}); check it is the site you expect."
            )
    if parts.username or parts.password:
        warnings.append("The link carries a user name before the host; the real host is the part after '@'.")
    return UrlCheck(host, warnings, False)


def _punycode(host: str) -> str | None:
    """The ASCII form of ``host``, or None when it is no valid domain name (the IDNA codec refuses it)."""
    if host.isascii():
        return sanitize(host)
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def url_text(url: str) -> Text:
    """The full URL, sanitized, with its host emphasised (and anything invisible in the host escaped)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    start = url.find("//") + 2 if "//" in url else 0
    at = url.lower().find(host, start) if host else -1
    if at < 0 or url[at : at + len(host)].lower() != host:
        return Text(reveal_invisible(url), style="underline")
    text = Text()  # not Text(..., style="dim"): a Text's own style covers every span, and would dim the host too
    text.append(sanitize(url[:at]), style="dim")
    text.append(reveal_invisible(url[at : at + len(host)]), style="bold reverse")
    text.append(shown(url[at + len(host) :]), style="dim")  # a URL of a megabyte: its host is what matters
    return text


MESSAGES_SHOWN = 20
"""Messages of a sampling request shown before it is approved (the newest; the editor has them all)."""


@dataclass
class TerminalApprover:
    """The two sampling gates at the terminal: the request before it is sent, the reply before it is returned.

    ``e`` opens ``$EDITOR`` (the request as JSON, the reply as text); whatever comes back is what is used.
    """

    term: Terminal

    async def review_request(self, view: SamplingView) -> Decision:
        with interruptible():  # a Ctrl-C while the request prints counts, as one at the question
            return self._review_request(view)

    def _review_request(self, view: SamplingView) -> Decision:
        console = self.term.console
        console.print(Text.assemble(("? ", "bold cyan"), safe(view.server), " asks your LLM for a completion:"))
        console.print(Text(f"  model {view.provider}/{view.model}, at most {view.max_tokens} tokens", style="dim"))
        if system := view.params.get("systemPrompt"):
            console.print(Text.assemble(("  system: ", "bold"), shown(system)))
        messages = view.params.get("messages") or []
        for message in messages[-MESSAGES_SHOWN:]:  # the newest: what the completion answers
            role = shown(message.get("role", "?"), 20)
            console.print(Text.assemble((f"  {role}: ", "bold"), shown(_text_of(message))))
        if len(messages) > MESSAGES_SHOWN:
            earlier = len(messages) - MESSAGES_SHOWN
            console.print(Text(f"  (and {earlier:,} earlier messages: e to see them all)", style="dim"))
        return self._decide("  Send it? [y]es / [e]dit / [n]o: ", lambda: _edit_json(view.params))

    async def review_reply(self, view: SamplingView, reply: dict[str, Any]) -> Decision:
        text = _text_of(reply)
        with interruptible():
            self.term.console.print(Text.assemble(("  reply: ", "bold"), shown(text)))
            return self._decide("  Return it to the server? [y]es / [e]dit / [n]o: ", lambda: _edit_text(text))

    def _decide(self, prompt: str, edit: Callable[[], Any]) -> Decision:
        while True:
            reply = read_reply(self.term, prompt).strip().lower()
            if reply in ("y", "yes", ""):
                return Decision("approve")
            if reply in ("n", "no"):
                return Decision("reject")
            if reply in ("e", "edit"):
                return Decision("edit", edit())


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, Mapping):
            parts.append(str(block.get("text", f"[{block.get('type', '?')}]")))
    return " ".join(parts)


def _editor(initial: str, suffix: str) -> str:
    """The text ``initial`` as the user left it in their editor (``$VISUAL``, ``$EDITOR``, else the platform's), edited
    in a temporary file that is removed afterwards. The editor's exit status is not judged."""
    import os
    import subprocess
    import tempfile

    from mcpcli.platform import default_editor, split_command

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or default_editor()
    with tempfile.NamedTemporaryFile("w+", suffix=suffix, encoding="utf-8", delete=False) as f:
        f.write(initial)
        path = Path(f.name)
    try:
        subprocess.run([*split_command(editor), str(path)], check=False)
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink()


def _edit_json(params: Mapping[str, Any]) -> dict[str, Any]:
    """A sampling request's params as edited in the user's editor: still a JSON object with its ``messages``, or a
    ``UsageError``."""
    import json

    from mcpcli.errors import UsageError

    text = _editor(json.dumps(params, indent=2, ensure_ascii=False), ".json")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"The edited request is not valid JSON: {exc}.") from None
    except RecursionError:
        raise UsageError("The edited request is nested too deeply to read.") from None
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise UsageError("The edited request must stay a JSON object with its messages.")
    return value


def _edit_text(text: str) -> str:
    return _editor(text, ".txt").strip()
