"""Answer sources that need nobody: presets (--answer/--answers/--decline/...) and roots.

Each source implements ``flow.AnswerSource``. The flow asks every
non-interactive source first (presets, roots, then its own replay of earlier
answers), and the interactive ones (``asking.TerminalUser``: inline prompts,
URL consent) only for what is left. Preset values are validated against the field's schema before
anything is sent: a bad one is a usage error (exit 2).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import mcp_types as t

from mcpcli import forms
from mcpcli.display import is_web_link, some_of
from mcpcli.engine.arguments import read_input
from mcpcli.engine.steps import Declined, Question, kind_of
from mcpcli.errors import InvalidAnswer, UsageError

Action = Literal["accept", "decline", "cancel"]


# --- presets ---------------------------------------------------------------------------------------------------------


@dataclass
class Presets:
    """Answers given up front. Field values are kept as given (text or JSON) and coerced per field."""

    fields: dict[tuple[str | None, str], tuple[Any, str]] = field(default_factory=dict)
    """(request key or None for a bare FIELD, field) → (raw value, where it came from, for messages)."""
    actions: dict[str, Action] = field(default_factory=dict)
    """Request key → accept/decline/cancel."""
    contents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Request key → content given with an action in an answers file."""
    origins: dict[str, str] = field(default_factory=dict)
    """Request key → where its action was given (``--decline KEY``, ``answers.json: KEY``), for messages."""
    accept_defaults: bool = False
    asked: dict[str, list[str]] = field(default_factory=dict)
    """Every request this run's flow asked: request key → its form's field names (none for a URL, sampling, roots)."""
    used: set[tuple[str | None, str]] = field(default_factory=set)
    """The presets that met their question: ``fields`` keys, and ``(key, "")`` for an action or a content."""

    interactive = False
    explicit = True
    """Answers given for this run win over replayed ones (the README's answering order)."""

    @classmethod
    def parse(
        cls,
        answers: Sequence[str] = (),
        answers_file: str | None = None,
        *,
        decline: Iterable[str] = (),
        cancel: Iterable[str] = (),
        accept: Iterable[str] = (),
        accept_defaults: bool = False,
        stdin: Callable[[], str] | None = None,
    ) -> Presets:
        """The presets of one run, from its options: the ``--answers`` file first, each ``--answer`` laid over it, then
        ``--decline``/``--cancel``/``--accept``. A malformed item or file is a ``UsageError`` (exit 2); values are
        checked against their field only when a question meets them (``answer``)."""
        presets = cls(accept_defaults=accept_defaults)
        if answers_file is not None:
            presets._load_file(answers_file, stdin or (lambda: read_input("-", "--answers -")))
        for item in answers:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise UsageError(
                    f"Bad --answer {item!r}.", hint="Write --answer FIELD=VALUE or --answer KEY.FIELD=VALUE."
                )
            presets._add_field(name, value, f"--answer {name}")
        for action, keys in (("decline", decline), ("cancel", cancel), ("accept", accept)):
            for key in keys:
                presets.actions[key] = action  # type: ignore[assignment]
                presets.origins[key] = f"--{action} {key}"
        return presets

    def _add_field(self, name: str, value: Any, origin: str) -> None:
        key, dot, fname = name.rpartition(".")
        self.fields[(key if dot else None, fname)] = (value, origin)

    def _load_file(self, source: str, read_stdin: Callable[[], str]) -> None:
        where = "stdin" if source == "-" else source
        text = read_stdin() if source == "-" else read_input(source, "--answers")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"The answers in {where} are not valid JSON: {exc}.") from None
        except RecursionError:
            raise UsageError(f"The answers in {where} are nested too deeply to read.") from None
        if not isinstance(data, dict):
            raise UsageError(f"The answers in {where} must be a JSON object.", hint='e.g. {"region": "eu-west-1"}')
        self._load_mapping(data, where)

    def merged(self, data: Mapping[str, Any], where: str) -> Presets:
        """A copy of these presets with ``data`` (the ``--answers`` file format, already parsed) laid over them:
        where both answer the same key or field, ``data`` wins. What this run asked and used starts empty."""
        presets = Presets(
            fields=dict(self.fields),
            actions=dict(self.actions),
            contents=dict(self.contents),
            origins=dict(self.origins),
            accept_defaults=self.accept_defaults,
        )
        presets._load_mapping(data, where)
        for name, value in data.items():  # a field given for a request key overrides an action given here for it
            key, dot, _field = name.rpartition(".")
            if dot and not (isinstance(value, dict) and "action" in value) and key in self.actions:
                presets.actions.pop(key, None)
                presets.origins.pop(key, None)
        return presets

    def _load_mapping(self, data: Mapping[str, Any], where: str) -> None:
        for name, value in data.items():
            if isinstance(value, dict) and "action" in value:
                action = value["action"]
                if action not in ("accept", "decline", "cancel"):
                    raise UsageError(f"{where}: {name}: action must be accept, decline or cancel.")
                self.actions[name] = action
                self.origins[name] = f"{where}: {name}"
                if isinstance(value.get("content"), dict):
                    self.contents[name] = value["content"]
            else:
                self._add_field(name, value, f"{where}: {name}")

    def answered_as(self, key: str) -> str:
        """How a round's span says ``key`` was answered (``mcpcli.telemetry``): ``flag`` when a command-line option
        gave any of it, else ``file`` (``--answers``)."""
        origins = [self.origins.get(key, "")]
        origins += [origin for (k, _f), (_v, origin) in self.fields.items() if k in (key, None)]
        return "flag" if any(origin.startswith("--") for origin in origins) else "file"

    # -- answering --

    async def answer(self, question: Question) -> t.InputResponse | None:
        """The preset answer to one question, or ``None`` to leave it (or the rest of its form) to the next source.

        A declined or cancelled request is answered as such; an accepted form gets its defaults under the values given.
        Values are coerced to their field before anything is sent: a bad one, ``--accept`` without a value for a
        required field, or an accepted link that is no web page is a ``UsageError``. Records what was asked (``asked``,
        ``used``) for the unused-preset warning.
        """
        request = question.request
        self.asked.setdefault(question.key, [str(name) for name in _properties(question.wire)])
        action = self.actions.get(question.key)
        if action is not None:
            self.used.add((question.key, ""))
        if not isinstance(request, t.ElicitRequest):
            self._not_a_form(question, action)
            return None
        if action in ("decline", "cancel"):
            return t.ElicitResult(action=action)
        if isinstance(request.params, t.ElicitRequestURLParams):
            if action == "accept" and not is_web_link(request.params.url):
                raise UsageError(
                    f"{self.origins.get(question.key, question.key)}: its link is not a web page"
                    " (only http(s) links are opened or accepted).",
                    hint=f"Decline it: --decline {shlex.quote(question.key)}",
                )
            # --accept on a URL request: the user has visited the page elsewhere.
            return t.ElicitResult(action="accept") if action == "accept" else None
        try:
            specs = self._specs(question)
        except UsageError:
            if action is None and not self.accept_defaults and not self._mentions(question):
                return None  # nothing preset for it: a person may still see the form and decline it (the TUI)
            raise
        content = self.partial(question, specs)
        if action == "accept" or self.accept_defaults:
            content = {**forms.defaults(specs), **content}
        elif not content:
            return None
        missing = [s.name for s in specs if s.required and s.name not in content]
        if missing:
            if action == "accept" or self.accept_defaults:
                raise UsageError(
                    f"Cannot accept {question.key!r} with defaults: no value for {', '.join(missing)}.",
                    hint=f"Add --answer {question.key}.{missing[0]}=VALUE",
                )
            return None  # partial: the person at the terminal fills in the rest, or the flow waits
        return t.ElicitResult(action="accept", content=content)

    def _not_a_form(self, question: Question, action: Action | None) -> None:
        """``--decline``/``--cancel`` on a sampling or roots request: the user's answer, though it has no such answer
        to send (``Declined``); ``--accept`` cannot make up a completion. Nothing else here answers one."""
        origin = self.origins.get(question.key, question.key)
        if action == "accept":
            raise UsageError(
                f"{origin}: {question.key} asks for {kind_of(question.request)}, which accepting cannot give.",
                hint=f"Let an LLM answer it ([providers] in config.toml), or --decline {shlex.quote(question.key)}",
            )
        if action is not None:
            raise Declined(question.key, action, origin, kind_of(question.request))

    def partial(self, question: Question, specs: Sequence[forms.FieldSpec] | None = None) -> dict[str, Any]:
        """The preset values that apply to this form, coerced and validated (a bad one: exit 2)."""
        request = question.request
        if not isinstance(request, t.ElicitRequest) or not isinstance(request.params, t.ElicitRequestFormParams):
            return {}
        specs = self._specs(question) if specs is None else specs
        content: dict[str, Any] = dict(self.contents.get(question.key, {}))
        if question.key in self.contents:
            self.used.add((question.key, ""))
        wheres: dict[str, tuple[str | None, str]] = {}
        for spec in specs:
            where = self._lookup(question.key, spec.name)
            if where is None:
                continue
            if _joined(where) == spec.name:  # the bare FIELD: it must name one request's field
                self._check_unambiguous(spec.name, question)
            self.used.add(where)
            if self.fields[where][0] is None:
                continue  # null, as the answers template leaves a field with no default: not given
            content[spec.name] = self.fields[where][0]
            wheres[spec.name] = where
        clean: dict[str, Any] = {}
        by_name = {s.name: s for s in specs}
        for name, raw in content.items():
            field_spec = by_name.get(name)
            if field_spec is None:
                raise UsageError(f"{question.key!r} has no field {name!r}.", hint=f"Its fields: {', '.join(by_name)}")
            try:
                clean[name] = forms.coerce(field_spec, raw)
            except forms.FieldError as exc:
                origin = self.fields.get(wheres[name]) if name in wheres else None
                raise InvalidAnswer(f"{origin[1] if origin else name}: {exc}") from None
        return clean

    def met(self, requests: Mapping[str, Any]) -> None:
        """Count a stored round's requests as asked (a round sent again with the answers it was given before): a
        preset for one of them is not "matched no question"."""
        for key, wire in requests.items():
            self.asked.setdefault(key, [str(name) for name in _properties(wire)])

    def unmatched(self) -> list[str]:
        """One line for each preset that met no question of the flow so far: what was asked, and a close match.

        A typo (``--answer regoin=...``) is otherwise silently dropped and the flow asks again, or exits 3.
        """
        if not self.fields and not self.actions and not self.contents:
            return []  # nothing was preset: nothing to match (a round may ask 50,000 questions)
        from collections import Counter

        fields = [f"{key}.{name}" for key, names in self.asked.items() for name in names]
        every = [name for names in self.asked.values() for name in names]
        bare = list(dict.fromkeys(every))
        counts = Counter(every)
        # As --answer would name them: a field alone when one request has it, else REQUEST_KEY.FIELD.
        shown = [f"{k}.{n}" if counts[n] > 1 else n for k, names in self.asked.items() for n in names]
        named = shown + [key for key, names in self.asked.items() if not names]
        asked = some_of(named, 10) or "nothing"
        lines = []
        for (key, fname), (_value, origin) in self.fields.items():
            # A preset for a field that was asked met its question, even when the flow stopped before using it
            # (it was ambiguous, the form could not be answered): the error that stopped it says why.
            met = _joined((key, fname)) in {*fields, *every}
            if (key, fname) not in self.used and not met:
                given, pool = (fname, bare) if key is None else (f"{key}.{fname}", fields)
                lines.append(_unmatched(origin, given, pool, asked))
        keys = some_of(list(self.asked), 10) or "nothing"  # an action names a request by its key
        for key in [*self.actions, *self.contents]:
            if (key, "") not in self.used and key not in self.asked:
                lines.append(_unmatched(self.origins.get(key, key), key, list(self.asked), keys))
        return list(dict.fromkeys(lines))

    def _mentions(self, question: Question) -> bool:
        """Whether any preset is meant for this request (by key, or a bare field name it has)."""
        names = _properties(question.wire)
        return question.key in self.contents or any(
            key == question.key
            or _joined((key, fname)).startswith(f"{question.key}.")
            or _joined((key, fname)) in names
            for key, fname in self.fields
        )

    def _lookup(self, key: str, name: str) -> tuple[str | None, str] | None:
        """Which preset answers field ``name`` of request ``key``: ``KEY.FIELD`` first, then the bare ``FIELD``.

        A flag is split on its last dot, which splits wrongly when a key or a field name holds a dot itself
        (``ask.v2``, a name quoting ``evil.example``): the whole name is compared as well, so that every key of the
        exit-3 answers template answers its field.
        """
        if (key, name) in self.fields:
            return (key, name)
        if (found := self._given_as(f"{key}.{name}")) is not None:
            return found
        if (None, name) in self.fields:
            return (None, name)
        return self._given_as(name)

    def _given_as(self, wanted: str) -> tuple[str | None, str] | None:
        """The ``KEY.FIELD`` preset that was written ``wanted`` (split on another of its dots)."""
        return next((where for where in self.fields if where[0] is not None and _joined(where) == wanted), None)

    def _check_unambiguous(self, fname: str, question: Question) -> None:
        owners = [key for key, wire in question.round_requests.items() if fname in _properties(wire)]
        if len(owners) > 1:
            raise UsageError(
                f"--answer {fname} is ambiguous: it matches {some_of([f'{k}.{fname}' for k in owners], 5)}.",
                hint=f"Name the request: --answer {owners[0]}.{fname}=VALUE",
            )

    @staticmethod
    def _specs(question: Question) -> list[forms.FieldSpec]:
        request = question.request
        assert isinstance(request, t.ElicitRequest) and isinstance(request.params, t.ElicitRequestFormParams)
        try:
            return forms.parse_schema(request.params.requested_schema)
        except forms.SchemaError as exc:
            key = shlex.quote(question.key)  # the server chose it: quoted for the command line it is pasted into
            raise UsageError(
                f"The server's form {question.key!r} cannot be answered: {exc}.",
                hint=f"Decline it (--decline {key}) or cancel it (--cancel {key}).",
            ) from None


def _joined(where: tuple[str | None, str]) -> str:
    """A preset's name as it was given: ``FIELD`` or ``KEY.FIELD``."""
    key, name = where
    return name if key is None else f"{key}.{name}"


def _unmatched(origin: str, given: str, pool: Sequence[str], asked: str) -> str:
    import difflib

    close = difflib.get_close_matches(given, pool, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else ""
    return f"{origin} matched no question (the server asked: {asked}).{hint}"


def _properties(wire: Mapping[str, Any]) -> Mapping[str, Any]:
    params = wire.get("params") or {}
    schema = params.get("requestedSchema") or {}
    props = schema.get("properties") or {}
    return props if isinstance(props, Mapping) else {}


def answers_template(pending: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the exit-3 JSON offers to fill in: the ``--answers`` format, defaults pre-filled, null where none."""
    template: dict[str, Any] = {}
    for key, wire in pending.items():
        method = wire.get("method")
        params = wire.get("params") or {}
        if method == "elicitation/create" and params.get("mode", "form") == "form":
            try:
                specs = forms.parse_schema(params.get("requestedSchema") or {})
            except forms.SchemaError:
                template[key] = {"action": "decline"}  # nobody can fill it in: left out, it would wait for ever
                continue
            valid = forms.defaults(specs)  # a default of the wrong type is no answer: sent back, it would fail
            for spec in specs:
                template[f"{key}.{spec.name}"] = valid.get(spec.name)
            if not specs:
                template[key] = {"action": "accept"}  # no fields: accepting just says yes
        elif method == "elicitation/create":
            web = is_web_link(str(params.get("url")))
            template[key] = {"action": "accept" if web else "decline"}
        else:
            template[key] = {"action": "decline"}
    return template


# --- roots -----------------------------------------------------------------------------------------------------------


@dataclass
class Roots:
    """Answers ``roots/list`` with ``--root`` paths (default: the current directory)."""

    paths: Sequence[Path]
    interactive = False
    origin = "roots"
    """Where its answers came from, as a recording says (``Flow._answered``)."""

    async def answer(self, question: Question) -> t.InputResponse | None:
        if not isinstance(question.request, t.ListRootsRequest):
            return None
        roots = [
            t.Root.model_validate({"uri": p.resolve().as_uri(), "name": p.resolve().name or str(p)}) for p in self.paths
        ]
        return t.ListRootsResult(roots=roots)
