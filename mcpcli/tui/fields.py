"""One widget per elicitation field kind, built from ``forms.FieldSpec`` — the same model the inline prompts use.

What a value means and whether it fits comes from ``forms`` (``coerce``, ``constraint_hint``,
``display_value``): a value refused here is refused by ``--answer`` and by the prompts, with the same message.
Each widget shows the title, a required mark, the description and a hint, pre-fills the default (or preset),
checks its value on every change and shows the error right under itself.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Select, SelectionList, Static, Switch
from textual.widgets.selection_list import Selection

from mcpcli.forms import FieldError, FieldSpec, coerce, constraint_hint
from mcpcli.tui.marks import Checklist
from mcpcli.tui.text import plain

NOT_GIVEN: Any = object()
"""An optional field left empty: it is left out of the answer."""

SECRET_WARNING = (
    "⚠ This looks like a password or key. MCP servers must not ask for secrets in forms; "
    "decline unless you trust this server."
)

PLACEHOLDERS = {
    "email": "name@example.com",
    "uri": "https://example.com/path",
    "date": "YYYY-MM-DD",
    "date-time": "YYYY-MM-DDTHH:MM:SSZ",
}


class FieldInput(Input):
    """An ``Input`` whose cursor blinks only when the app allows it (snapshots need a steady cursor)."""

    def on_mount(self) -> None:
        self.cursor_blink = bool(getattr(self.app, "blink", True))


class FieldWidget(Vertical):
    """A labelled form field: the control, its hint and its live error. Subclasses own the control."""

    DEFAULT_CSS = """
    FieldWidget { height: auto; margin: 0 0 1 0; }
    FieldWidget > .field--label { height: auto; }
    FieldWidget > .field--error { color: $error; height: auto; display: none; }
    FieldWidget.-invalid > .field--error { display: block; }
    FieldWidget.-invalid > .field--label { color: $error; }
    """

    class Changed(Message):
        """The value changed (and with it, maybe, whether the form can be sent)."""

        def __init__(self, field: FieldWidget, *, mounted: bool = False) -> None:
            super().__init__()
            self.field = field
            self.mounted = mounted
            """Sent because the field was just mounted (a lazily mounted one joins its form's checks)."""

    def __init__(self, spec: FieldSpec, initial: Any = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec = spec
        """The field, as ``forms`` parsed it."""
        self.initial = initial
        """The value to pre-fill: a preset, else the schema's (valid) default; None for none."""
        self.dirty = False
        """Touched by the user: only then (or after an attempt to send) is an error shown."""
        self.reveal_errors = False
        self._shown: str | None = None

    def compose(self) -> ComposeResult:
        # One label (title, required mark, hint, description, secret warning) rather than a widget for each:
        # a 14-field form is then painted in a fraction of the time (wanted within 0.5 s).
        # Each space ends a piece rather than starting the next: SVG renderers drop a text run's leading spaces,
        # and the snapshots read "HomepageURI" when the hint began with them.
        """One label (title, required mark, constraints, description, the secret warning), the control, and its error
        line below — one label rather than a widget each, so a long form paints within the 0.5 s target."""
        label = plain(f"{self.spec.title} ", "bold")
        label += plain("* ", "bold $error") if self.spec.required else plain("(optional) ", "$text-muted")
        if hint := constraint_hint(self.spec, typed=False):
            label += plain(f"· {hint}", "italic $text-muted")
        if self.spec.description:
            label += plain(f"\n{self.spec.description}", "$text-muted")
        if self.spec.secret:
            label += plain(f"\n{SECRET_WARNING}", "$warning")
        yield Static(label, classes="field--label")
        yield self.make_control()
        yield Static("", classes="field--error")

    def on_mount(self) -> None:
        self.refresh_error()
        self.post_message(self.Changed(self, mounted=True))

    def make_control(self) -> Widget:
        raise NotImplementedError

    def raw(self) -> Any:
        """What the control holds; ``NOT_GIVEN`` when it is empty."""
        raise NotImplementedError

    def value(self) -> Any:
        """The typed value to send, or ``NOT_GIVEN``; raises ``FieldError`` when it does not fit."""
        raw = self.raw()
        if raw is NOT_GIVEN:
            if self.spec.required:
                raise FieldError(f"{self.spec.name}: is required", field=self.spec.name)
            return NOT_GIVEN
        return coerce(self.spec, raw)

    def error(self) -> str | None:
        try:
            self.value()
        except FieldError as exc:
            return str(exc)
        return None

    @property
    def touched(self) -> bool:
        """Typed in, pre-filled, or sent (tried): only then is its error shown. An empty field nobody touched is
        still to fill in, not wrong."""
        return self.dirty or self.reveal_errors or self.raw() is not NOT_GIVEN

    def refresh_error(self) -> str | None:
        """Check the value; show the error when the user has touched the field (or tried to send)."""
        error = self.error()
        shown = error if self.touched else None
        if shown != self._shown:  # an unchanged message costs no layout pass (one runs per keystroke otherwise)
            self._shown = shown
            self.query_one(".field--error", Static).update(plain(shown or ""))
            self.set_class(shown is not None, "-invalid")
        return error

    def changed(self) -> None:
        self.dirty = True
        self.refresh_error()
        self.post_message(self.Changed(self))


class TextField(FieldWidget):
    """Strings (min/maxLength; email, uri, date, date-time formats), integers and numbers (bounds)."""

    def make_control(self) -> Widget:
        shown = "" if self.initial is None else str(self.initial)
        placeholder = PLACEHOLDERS.get(self.spec.format or "", self.spec.kind if self.spec.kind != "string" else "")
        return FieldInput(value=shown, placeholder=placeholder, password=self.spec.secret, id=f"{self.id}-input")

    def raw(self) -> Any:
        text = self.query_one(Input).value
        return text if text != "" else NOT_GIVEN

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self.changed()


class BooleanField(FieldWidget):
    """A switch; an optional one the user never touched (and with no default) is left out.

    A required one with no default is a yes/no choice the user must make, as the inline prompt asks it: a switch
    left alone would send ``false`` for a question nobody answered.
    """

    @property
    def must_pick(self) -> bool:
        return self.spec.required and self.initial is None

    def make_control(self) -> Widget:
        if self.must_pick:
            options = [("Yes", True), ("No", False)]
            return Select(options, allow_blank=True, prompt="Pick yes or no", id=f"{self.id}-select")
        return Switch(value=bool(self.initial), id=f"{self.id}-switch")

    def raw(self) -> Any:
        if self.must_pick:
            value = self.query_one(Select).value
            return NOT_GIVEN if value is Select.NULL else value
        if not (self.spec.required or self.dirty or self.initial is not None):
            return NOT_GIVEN
        return self.query_one(Switch).value

    @on(Switch.Changed)
    @on(Select.Changed)
    def _switched(self, event: Switch.Changed | Select.Changed) -> None:
        event.stop()
        self.changed()


class SelectField(FieldWidget):
    """One of the choices: untitled ``enum``, titled ``oneOf`` (const/title), legacy ``enumNames``."""

    def make_control(self) -> Widget:
        options = [(plain(_label(c.label, c.value)), c.value) for c in self.spec.choices]
        initial = self.initial if self.initial is not None else Select.NULL
        return Select(
            options,
            value=initial,
            allow_blank=initial is Select.NULL or not self.spec.required,
            prompt="Pick one",
            id=f"{self.id}-select",
        )

    def raw(self) -> Any:
        value = self.query_one(Select).value
        return NOT_GIVEN if value is Select.NULL else value

    @on(Select.Changed)
    def _picked(self, event: Select.Changed) -> None:
        event.stop()
        self.changed()


class MultiSelectField(FieldWidget):
    """Any of the choices (space toggles), within min/maxItems."""

    DEFAULT_CSS = """
    MultiSelectField > SelectionList { height: auto; max-height: 8; }
    """

    def make_control(self) -> Widget:
        chosen = set(self.initial or [])
        selections = [Selection(plain(_label(c.label, c.value)), c.value, c.value in chosen) for c in self.spec.choices]
        return Checklist(*selections, id=f"{self.id}-list")

    def raw(self) -> Any:
        order = [c.value for c in self.spec.choices]
        picked = set(self.query_one(SelectionList).selected)
        values = [value for value in order if value in picked]
        return values or NOT_GIVEN  # none picked: "required" for a required field, left out otherwise

    @on(SelectionList.SelectedChanged)
    def _toggled(self, event: SelectionList.SelectedChanged[str]) -> None:
        event.stop()
        self.changed()


def _label(label: str, value: str) -> str:
    """A choice as shown: its title, and the value sent when that differs."""
    return label if label == value else f"{label} ({value})"


def field_widget(spec: FieldSpec, initial: Any, *, id: str) -> FieldWidget:
    """The widget for a field's kind."""
    kinds: dict[str, type[FieldWidget]] = {
        "boolean": BooleanField,
        "select": SelectField,
        "multiselect": MultiSelectField,
    }
    return kinds.get(spec.kind, TextField)(spec, initial, id=id)
