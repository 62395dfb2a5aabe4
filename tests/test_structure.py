"""The shape of the code: no import circle between mcpcli's modules, and no module past 600 lines.

The layers themselves are import-linter's contracts (pyproject.toml, ``lint-imports``); these two checks are the
ones it does not make. Both read the source only (grimp's import graph, line counts): nothing is imported.
"""

from __future__ import annotations

from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "mcpcli"
MAX_LINES = 600


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other round in a circle (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    """Not vacuous: a circle of three and a module importing itself through another are found, a chain is not."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_between_mcpcli_modules() -> None:
    """Imports inside functions and under TYPE_CHECKING count too: a circle hidden there is still a circle."""
    graph = grimp.build_graph("mcpcli")
    modules = {m for m in graph.modules if m == "mcpcli" or m.startswith("mcpcli.")}
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i in modules} for m in modules}
    assert len(modules) > 50
    assert _circles(edges) == []


def test_no_module_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE.parent)): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")
    }
    assert len(sizes) > 50
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}


def _declared() -> set[str]:
    """The distributions pyproject.toml names for the runtime and its extras (not test or dev tools), normalised."""
    import re
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [
        *project["dependencies"],
        *(dep for name in ("postgres", "keyring", "notify", "otel") for dep in extras.get(name, ())),
    ]
    return {re.split(r"[\[<>=!~ ;]", dep, maxsplit=1)[0].lower().replace("_", "-") for dep in wanted}


IMPORT_NAMES = {"mcp_types": "mcp-types", "opentelemetry": "opentelemetry-api"}
"""Import names whose distribution is named otherwise (everything else imports as it is named)."""


def test_every_third_party_package_mcpcli_imports_is_declared_in_pyproject() -> None:
    """An import that works only because another package happens to bring its dependency (``cryptography`` arrived
    through an extra of the SDK's) breaks the day that package stops bringing it."""
    import ast
    import sys

    imported: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top != "mcpcli" and top not in sys.stdlib_module_names:
                    imported.setdefault(top, str(path.relative_to(PACKAGE.parent)))
    declared = _declared()
    undeclared = {
        top: where for top, where in imported.items() if IMPORT_NAMES.get(top, top).replace("_", "-") not in declared
    }
    assert not undeclared, f"imported by mcpcli but not declared in pyproject.toml: {undeclared}"


# --- what keeps a flow followable: short functions with their contract, state on its object, public seams ----------

MAX_FUNCTION_LINES = 80
DOCUMENTED_SHARE = 0.90
"""Of the functions of ``LONG`` lines or more, the share that must state their contract in a docstring."""
LONG = 15


def _functions() -> list[tuple[str, str, int, bool]]:
    """Every function and method of mcpcli: where, its name, its length in lines, whether it has a docstring."""
    import ast

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                found.append((where, node.name, node.end_lineno - node.lineno + 1, ast.get_docstring(node) is not None))
    return found


def test_no_function_is_over_80_lines() -> None:
    """A function a reader must hold in their head at once; past this it is several steps that want names."""
    functions = _functions()
    assert len(functions) > 1000
    assert [(where, name, n) for where, name, n, _ in functions if n > MAX_FUNCTION_LINES] == []


def test_nine_in_ten_long_functions_state_their_contract() -> None:
    """A reader following a flow reads the contract, not the body: a function of 15 lines or more says in its
    docstring what it guarantees (the hearts — run_job, Flow._loop, leases.claim, worker.server.serve — among them)."""
    long = [(where, name, documented) for where, name, n, documented in _functions() if n >= LONG]
    share = sum(documented for *_, documented in long) / len(long)
    undocumented = [f"{where} {name}" for where, name, documented in long if not documented]
    assert share >= DOCUMENTED_SHARE, f"{share:.1%} documented; without a docstring: {undocumented}"
    hearts = {"run_job", "_loop", "_leg", "_resumed", "claim", "serve", "connect", "answer_open", "answer"}
    assert [f"{where} {name}" for where, name, documented in long if name in hearts and not documented] == []


def test_no_table_keyed_by_an_objects_id() -> None:
    """What the code learns about an object lives on the object: a process-wide table keyed by ``id(obj)`` outlives
    it (the id is reused by the next object) and hides the state from whoever holds the object."""
    import re

    keyed = re.compile(r"\b[A-Z_][A-Z0-9_]*\s*(\[\s*id\(|\.(get|pop|add|discard|setdefault)\(\s*id\()|\.pop,\s*id\(")
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if keyed.search(line)
    ]
    assert found == []
    assert keyed.search("_REFUSED[id(client)] = refused") and keyed.search("stack.callback(_URLS.pop, id(client))")


def test_no_private_name_is_imported_from_another_module() -> None:
    """A module's ``_names`` are its own: another module that needs one needs a public seam instead."""
    import ast

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcpcli"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.module} {private}")
    assert found == []
