"""The start screen of ``mcpcli tui``: the server's tools, prompts and resources, and a form to run one.

The argument form is built from the tool's ``inputSchema`` with the same field model and widgets as the
elicitation forms (``forms.parse_schema_lenient``, ``fields``), so arguments are typed the way ``--arg``
types them. Prompt arguments are strings; a resource template's ``{variables}`` are strings filled into
its URI. Running one hands a ``CallJob`` to the app, which runs the flow in a worker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, OptionList, Static
from textual.widgets.option_list import Option

from mcpcli import forms
from mcpcli.apphost.resource import resource_uri_of
from mcpcli.engine.arguments import usable_schema
from mcpcli.tui.fields import NOT_GIVEN, FieldWidget, field_widget
from mcpcli.tui.host import host
from mcpcli.tui.text import plain

if TYPE_CHECKING:
    from mcpcli.engine.steps import Method

_VARIABLE = re.compile(r"\{([^{}]+)\}")
APP_MARK = " [app]"
"""After the name of a tool that has a view (as ``mcpcli tools`` marks it)."""


@dataclass(frozen=True)
class Entry:
    """One runnable thing from the catalog, with the schema its form is built from."""

    method: Method
    name: str
    """Tool or prompt name; for a resource, its URI or URI template."""
    title: str
    description: str
    schema: dict[str, Any]
    template: bool = False
    app: bool = False
    """A tool with a view (MCP Apps: ``_meta.ui.resourceUri``): marked, and ctrl+b runs it with its view."""


def entries(found: Mapping[str, list[dict[str, Any]]]) -> list[Entry]:
    """The catalog as entries, in the order shown: tools, prompts, resources, resource templates."""
    listed: list[Entry] = []
    for tool in found.get("tools", []):
        schema = usable_schema(tool.get("inputSchema"))
        has_view = resource_uri_of(tool) is not None
        entry = Entry("tools/call", tool["name"], tool["name"], tool.get("description") or "", schema, app=has_view)
        listed.append(entry)
    for prompt in found.get("prompts", []):
        args = prompt.get("arguments") or []
        properties = {a["name"]: {"type": "string", "description": a.get("description") or ""} for a in args}
        required = [a["name"] for a in args if a.get("required")]
        schema = {"type": "object", "properties": properties, "required": required}
        listed.append(Entry("prompts/get", prompt["name"], prompt["name"], prompt.get("description") or "", schema))
    for resource in found.get("resources", []):
        title = resource.get("name") or resource["uri"]
        listed.append(Entry("resources/read", resource["uri"], title, resource.get("description") or "", {}))
    for template in found.get("resourceTemplates", []):
        uri = template["uriTemplate"]
        names = _VARIABLE.findall(uri)
        schema = {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": names}
        title = template.get("name") or uri
        listed.append(Entry("resources/read", uri, title, template.get("description") or "", schema, template=True))
    return listed


class ArgumentForm(Vertical):
    """The fields of one entry; ``arguments()`` is None while a value does not fit."""

    DEFAULT_CSS = "ArgumentForm { height: auto; }"

    def __init__(self, entry: Entry) -> None:
        super().__init__(id="argument-form")
        self.entry = entry
        try:
            self.specs, self.unsupported = forms.parse_schema_lenient(entry.schema or {"type": "object"})
        except forms.SchemaError as exc:
            self.specs, self.unsupported = [], [forms.Unsupported("(schema)", str(exc), True)]

    def compose(self) -> ComposeResult:
        initial = forms.defaults(self.specs)
        for index, spec in enumerate(self.specs):
            yield field_widget(spec, initial.get(spec.name), id=f"arg{index}")
        for item in self.unsupported:
            note = f"Not in this form: {item.reason}. Use: mcpcli call {self.entry.name} --args JSON"
            yield Static(plain(note), classes="panel--unsupported")
        if not self.specs and not self.unsupported:
            yield Static("No arguments.", classes="muted")

    def arguments(self) -> dict[str, Any] | None:
        if any(item.required for item in self.unsupported):
            return None
        fields = list(self.query(FieldWidget))
        if any(f.error() is not None for f in fields):
            return None
        return {f.spec.name: value for f in fields if (value := f.value()) is not NOT_GIVEN}

    def reveal(self) -> None:
        for field in self.query(FieldWidget):
            field.reveal_errors = True
            field.refresh_error()


class StartScreen(Screen[None]):
    """Pick a tool, prompt or resource on the left; fill its arguments and run it on the right."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run"),
        Binding("ctrl+b", "run_app", "Run with its view"),
        Binding("ctrl+o", "sessions", "Sessions"),
    ]

    def __init__(self, server: str) -> None:
        super().__init__()
        self.server = server
        self.entries: list[Entry] = []
        self.current: Entry | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain(f"mcpcli · {self.server}", "bold"), id="start-title")
        with Horizontal(id="start-body"):
            yield OptionList(id="catalog")
            with VerticalScroll(id="detail"):
                yield Static("Loading the server's tools…", id="detail-title")
                yield Static("", id="detail-description", classes="muted")
                yield Vertical(id="detail-form")
                yield Button("Run", id="run", variant="primary", disabled=True)
        yield Footer()

    def set_catalog(self, found: Mapping[str, list[dict[str, Any]]]) -> None:
        """Fill the list (called by the app's catalog worker)."""
        self.entries = entries(found)
        catalog = self.query_one("#catalog", OptionList)
        catalog.clear_options()
        catalog.add_options(self._options())
        if not self.entries:
            self.query_one("#detail-title", Static).update("The server offers no tools, prompts or resources.")
            return
        catalog.highlighted = 1
        catalog.focus()

    def refresh_catalog(self, found: Mapping[str, list[dict[str, Any]]]) -> None:
        """The server changed a list: show the new catalog, the entry shown kept in place (its form too, unless its
        schema changed), or said to be gone; the focus stays where it is."""
        current, catalog = self.current, self.query_one("#catalog", OptionList)
        self.entries = entries(found)
        options = self._options()
        catalog.clear_options()
        catalog.add_options(options)
        if current is None:
            return
        same = [i for i, e in enumerate(self.entries) if (e.method, e.name) == (current.method, current.name)]
        if not same:
            self.current = None
            self.query_one("#detail-title", Static).update(plain(f"{current.name} is no longer offered", "bold"))
            self.query_one("#run", Button).disabled = True
            return
        at = next(i for i, option in enumerate(options) if option.id == f"e{same[0]}")
        with catalog.prevent(OptionList.OptionHighlighted):
            catalog.highlighted = at
        if self.entries[same[0]] != current:  # its arguments changed: a new form
            self.run_worker(self.show(self.entries[same[0]]), group="catalog-form")

    def _options(self) -> list[Option]:
        headings = {"tools/call": "Tools", "prompts/get": "Prompts", "resources/read": "Resources"}
        options, last = [], None
        for index, entry in enumerate(self.entries):
            if entry.method != last:
                options.append(Option(plain(headings[entry.method], "bold"), disabled=True))
                last = entry.method
            options.append(Option(plain(f"  {entry.title}{APP_MARK if entry.app else ''}"), id=f"e{index}"))
        return options

    @on(OptionList.OptionHighlighted, "#catalog")
    async def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            await self.show(self.entries[int(event.option.id[1:])])

    @on(OptionList.OptionSelected, "#catalog")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on an entry: on to its first field (or straight to Run when it has none)."""
        first = next(iter(self.query("#detail-form Input, #detail-form Select, #detail-form Switch")), None)
        (first or self.query_one("#run", Button)).focus()

    async def show(self, entry: Entry) -> None:
        """Show an entry and its argument form (the old form is gone before the new one, with the same ids, comes)."""
        self.current = entry
        kind = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}[entry.method]
        self.query_one("#detail-title", Static).update(plain(f"{kind} {entry.name}", "bold"))
        described = entry.description
        if entry.app:
            view = "It has a view (MCP Apps): ctrl+b runs it with the view in your browser."
            described = f"{described}\n\n{view}" if described else view
        self.query_one("#detail-description", Static).update(plain(described))
        holder = self.query_one("#detail-form", Vertical)
        await holder.remove_children()
        await holder.mount(ArgumentForm(entry))
        self._refresh_run()
        self.refresh_bindings()

    def _form(self) -> ArgumentForm | None:
        found = self.query(ArgumentForm)
        return found.first() if found else None

    def _refresh_run(self) -> None:
        form = self._form()
        self.query_one("#run", Button).disabled = form is None or form.arguments() is None

    @on(FieldWidget.Changed)
    def _changed(self) -> None:
        self._refresh_run()

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self.action_run()

    def on_input_submitted(self) -> None:
        self.action_run()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The view's key only on a tool that has one (hidden otherwise)."""
        if action == "run_app":
            return self.current is not None and self.current.app
        return True

    def action_run_app(self) -> None:
        self.action_run(app=True)

    def action_run(self, app: bool = False) -> None:
        """Run the highlighted entry as a job (a tool call, a prompt, a resource read) once its form is valid; with
        app, the tool opens with its view."""
        from mcpcli.commands.jobs import AppOptions, CallJob

        form = self._form()
        if form is None or self.current is None:
            return
        arguments = form.arguments()
        if arguments is None:
            form.reveal()
            self.notify("Some arguments do not fit yet.", title="Not run", severity="warning")
            return
        entry = self.current
        if entry.method == "resources/read":
            uri = _VARIABLE.sub(lambda m: quote(str(arguments.get(m.group(1), "")), safe=""), entry.name)
            job = CallJob("resources/read", uri, arguments={})
        elif app and entry.app:
            job = CallJob(entry.method, entry.name, arguments=arguments, app=AppOptions())
        else:
            job = CallJob(entry.method, entry.name, arguments=arguments)
        host(self.app).start_job(job)

    def action_sessions(self) -> None:
        from mcpcli.tui.sessions import SessionsScreen

        self.app.push_screen(SessionsScreen())
