"""Tool arguments from the command line, typed by the tool's ``inputSchema``.

``--arg KEY=VALUE`` gives one argument: a string property keeps ``"012"``;
integers, numbers, booleans, arrays and objects are parsed as the schema says;
``KEY=@file`` reads the value from a file. ``--args`` gives them all as JSON
(inline, ``@FILE`` or ``-`` for stdin). The result is checked against the
schema before anything is sent: a bad argument is a usage error (exit 2). A JSON
``null`` for an optional property means "not given": it is sent, not refused.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcpcli import schemas
from mcpcli.errors import UsageError

_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def usable_schema(schema: Any) -> dict[str, Any]:
    """A tool's ``inputSchema`` as far as it can be read. The SDK checks only that it is an object, so a server can
    send ``properties`` that are not an object of objects, or a ``required`` that is not a list of names: those
    parts are left out (the arguments they concern are sent as given, untyped, as for a listing the SDK refuses),
    and every reader of the schema — typing, checking, listing, completion, the app's form — sees the same one."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    usable = dict(schema)
    if "properties" in usable:
        properties = usable["properties"]
        if isinstance(properties, Mapping):
            usable["properties"] = {str(k): (v if isinstance(v, Mapping) else {}) for k, v in properties.items()}
        else:
            del usable["properties"]
    if "required" in usable:
        required = usable["required"]
        usable["required"] = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    return usable


def build_arguments(
    schema: Mapping[str, Any] | None,
    pairs: Sequence[str],
    args_json: str | None = None,
    *,
    read_stdin: Callable[[], str] | None = None,
    what: str = "tool",
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The arguments object for a call; raises ``UsageError`` naming the bad argument (``warn`` hears of a key the
    schema does not list but allows)."""
    arguments: dict[str, Any] = {}
    if args_json is not None:
        arguments = _load_args(args_json, read_stdin or (lambda: read_input("-", "--args -")))
    properties: Mapping[str, Any] = (schema or {}).get("properties") or {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"Bad --arg {pair!r}.", hint="Write --arg KEY=VALUE (or KEY=@file to read a file).")
        if key not in properties:
            _check_known(key, schema or {}, what, warn)
        if raw.startswith("@") and len(raw) > 1:
            raw = read_input(raw[1:], f"--arg {key}")
        arguments[key] = typed_value(key, raw, properties.get(key), schema)
    if schema:
        check(schema, arguments, what)
    return arguments


def _check_known(key: str, schema: Mapping[str, Any], what: str, warn: Callable[[str], None] | None) -> None:
    """An ``--arg`` key the schema does not list: refused when it is close to one it does (a typo, exit 2) or the
    schema forbids other keys; else sent as given — the schema allows it — and named through ``warn``."""
    names = [str(name) for name in (schema.get("properties") or {})]
    if not names:
        return  # a schema without properties says nothing about names
    close = closest(key, names)
    listed = f"Its arguments: {', '.join(names)}"
    if close:
        raise UsageError(f"The {what} has no argument {key!r}.", hint=f"Did you mean --arg {close}=…? {listed}")
    if schema.get("additionalProperties") is False:
        raise UsageError(f"The {what} does not take that argument: {key!r}.", hint=listed)
    if warn is not None:
        warn(f"--arg {key}: the {what} does not list that argument; sent as given. {listed}.")


def closest(given: str, names: Sequence[str]) -> str | None:
    """The one of ``names`` that ``given`` most likely mistypes (an argument's, a tool's, a prompt's name), if any:
    what every "Did you mean" says."""
    import difflib

    close = difflib.get_close_matches(given, list(names), n=1, cutoff=0.6)
    return close[0] if close else None


def no_such(kind: str, given: str, names: list[str]) -> UsageError:
    """An unknown tool or prompt (``kind``): the one it most likely mistypes, as for an argument, and the first few
    the server has (nothing is sent)."""
    shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    listed = f"Its {kind}s: {shown or 'none'} (mcpcli {kind}s)"
    close = closest(given, names)
    hint = f"Did you mean {close}? {listed}" if close else listed
    return UsageError(f"The server has no {kind} {given!r}.", hint=hint)


def typed_value(key: str, raw: str, prop: Any, root: Mapping[str, Any] | None = None) -> Any:
    """One ``--arg`` value, typed by its property schema, read as ``schemas.read`` reads it (``root``: the whole
    schema, for its ``$ref``s); an unknown property: JSON if it parses, else text."""
    kinds = schemas.accepted(schemas.read(prop, root))
    if not kinds or kinds == {"string"}:
        if kinds == {"string"} or prop is not None:
            return raw
        return _json_or_text(raw)
    if "string" in kinds and not raw.strip():
        return raw
    for kind in ("integer", "number", "boolean", "array", "object", "null"):
        if kind not in kinds:
            continue
        value = _parse(kind, raw)
        if value is not _FAIL:
            return value
    if "string" in kinds:
        return raw
    expected = " or ".join(sorted(kinds))
    raise UsageError(
        f"--arg {key}: {raw!r} is not {'an' if expected[0] in 'aeiou' else 'a'} {expected}.",
        hint=_json_hint(key, raw, kinds),
    )


def _json_hint(key: str, raw: str, kinds: set[str]) -> str | None:
    """How to write an array or an object on the command line: as JSON (``Ada`` → ``["Ada"]``)."""
    if "array" in kinds:
        items = [part.strip() for part in raw.split(",")] if raw.strip() else []
        example = json.dumps(items) if "'" not in raw else '["one", "two"]'  # inside the shell's single quotes
        return f"Write an array as JSON: --arg {key}='{example}'"
    if "object" in kinds:
        return f'Write an object as JSON: --arg {key}=\'{{"name": "value"}}\''
    return None


_FAIL = object()


def _parse(kind: str, raw: str) -> Any:
    """``raw`` as a value of the JSON type ``kind``, or ``_FAIL`` when it is not one (never raises): a boolean by its
    words, the rest as JSON of exactly that type."""
    text = raw.strip()
    if kind == "boolean":
        return _BOOLS.get(text.lower(), _FAIL)
    if kind == "null":
        return None if text == "null" else _FAIL
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past what can be read: not this kind
        return _FAIL
    if kind == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else _FAIL
    if kind == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else _FAIL
    if kind == "array":
        return value if isinstance(value, list) else _FAIL
    return value if isinstance(value, dict) else _FAIL


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


MAX_INPUT_BYTES = 64 << 20
"""The most read from a file or stdin the user hands over (``--args``, ``--arg K=@FILE``, ``--answers``): a path
to ``/dev/zero`` or a runaway pipe is refused, not read until memory runs out."""


def read_input(path: str, origin: str) -> str:
    """A file's text, or stdin's for ``-``: UTF-8, at most ``MAX_INPUT_BYTES``; a usage error naming ``origin``
    otherwise."""
    where = "stdin" if path == "-" else path
    data: bytes | str
    try:
        if path == "-":  # its bytes; a text stream without bytes beneath it (tests, an embedding program) as text
            data = getattr(sys.stdin, "buffer", sys.stdin).read(MAX_INPUT_BYTES + 1)
        else:
            with Path(path).expanduser().open("rb") as file:
                data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{origin}: cannot read {where}: {exc.strerror}.") from None
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"{origin}: {where} holds more than {MAX_INPUT_BYTES >> 20} MiB.")
    try:
        return data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{origin}: {where} is not UTF-8 text.") from None


def _load_args(source: str, read_stdin: Callable[[], str]) -> dict[str, Any]:
    """The object ``--args`` gives: inline JSON, ``@FILE`` or ``-`` (stdin). Anything but a JSON object is a
    ``UsageError`` naming where it came from."""
    if source == "-":
        text, where = read_stdin(), "--args - (stdin)"
    elif source.startswith("@"):
        text, where = read_input(source[1:], "--args"), f"--args {source}"
    else:
        text, where = source, "--args"
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON: {exc}.", hint='e.g. --args \'{"name": "orders"}\'') from None
    except RecursionError:
        raise UsageError(f"{where} is nested too deeply to read.", hint='e.g. --args \'{"name": "orders"}\'') from None
    if not isinstance(value, dict):
        raise UsageError(f"{where} must be a JSON object.", hint='e.g. --args \'{"name": "orders"}\'')
    return value


_SIMPLE_TOP = frozenset({"type", "properties", "required", "title", "description", "additionalProperties", "$schema"})
_SIMPLE_PROP = frozenset({"type", "title", "description", "default"})
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _simple(schema: Mapping[str, Any]) -> bool:
    """Only names, required and plain types: checked here, without importing jsonschema (~25 ms)."""
    if not set(schema) <= _SIMPLE_TOP or not isinstance(schema.get("additionalProperties", True), bool):
        return False
    props = schema.get("properties") or {}
    return isinstance(props, Mapping) and all(
        isinstance(p, Mapping) and set(p) <= _SIMPLE_PROP and _plain_type(p.get("type", "string"))
        for p in props.values()
    )


def _plain_type(kind: Any) -> bool:
    """One of the JSON types ``_check_simple`` checks itself (not a list of them, nor anything else)."""
    return isinstance(kind, str) and kind in _PY_TYPES


def _check_simple(schema: Mapping[str, Any], arguments: Mapping[str, Any], what: str) -> None:
    """Judge arguments against a ``_simple`` schema without jsonschema: required names present, no unnamed one where
    ``additionalProperties`` is false, each value of its plain type (a bool is no number). Raises the first
    ``UsageError``."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in arguments:
            raise UsageError(f"Missing required argument {name!r}.", hint=f"Add --arg {name}=VALUE")
    for name, value in arguments.items():
        prop = props.get(name)
        if prop is None:
            if schema.get("additionalProperties") is False:
                raise UsageError(f"The {what} does not take that argument: {name!r}.")
            continue
        kind = prop.get("type")
        if kind is None:
            continue
        ok = isinstance(value, _PY_TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))
        if not ok:
            raise UsageError(f"Argument {name}: {value!r} is not of type {kind!r}.")


def _judged(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments the schema judges: an explicit ``null`` for an optional property is how a caller says "not
    given" (the spec's custom headers omit such a parameter too), so it is sent as written but not judged — a
    ``null`` for a required property, or one the schema does not name, still is."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return {k: v for k, v in arguments.items() if v is not None or k in required or k not in properties}


def check(schema: Mapping[str, Any], arguments: Mapping[str, Any], what: str) -> None:
    """Validate against the whole input schema; the first problem becomes one line."""
    arguments = _judged(schema, arguments)
    if _simple(schema):
        _check_simple(schema, arguments, what)
        return
    import jsonschema  # imported only when the schema needs it

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    except Exception:  # a schema broken any way (a bad pattern, a bound of the wrong type, a $ref
        return  # that resolves nowhere…) is the server's: let it judge the arguments
    if error is None:
        return
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        if where:  # inside a value (an object in an array...): no --arg names it
            top = str(error.absolute_path[0])
            raise UsageError(
                f"Argument {where}: the required property {missing!r} is missing.",
                hint=f"Add it inside the JSON value of --arg {top}=… (or of --args).",
            )
        raise UsageError(f"Missing required argument {missing!r}.", hint=f"Add --arg {missing}=VALUE")
    if error.validator == "additionalProperties" and where:
        raise UsageError(f"Argument {where}: {error.message}.")
    if error.validator == "additionalProperties":
        raise UsageError(f"The {what} does not take that argument: {error.message}.")
    raise UsageError(f"Argument {where or '(all)'}: {error.message}.")
