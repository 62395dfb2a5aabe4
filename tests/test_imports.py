"""Startup stays fast and the core stays headless: checked by looking at ``sys.modules`` in a fresh interpreter.

``mcp`` (and its ``mcp_types``) costs 0.2–0.7 s to import and ``textual`` as
much again, so ``--help``, ``--version`` and ``sessions list`` must not import
them; and the core modules must never pull in the UI (ARCHITECTURE.md §Layout).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKER = "@@modules@@"

SDK = ("mcp", "mcp_types")
UI = ("textual", "mcpcli.tui")


def _imported(code: str, home: Path, cwd: Path = ROOT) -> set[str]:
    """Run ``code`` in a fresh interpreter (in ``cwd``) and return every module it left in ``sys.modules``."""
    return run_and_list_modules(code, home, cwd)[1]


def run_and_list_modules(code: str, home: Path, cwd: Path = ROOT) -> tuple[str, set[str]]:
    """Run ``code`` in a fresh interpreter (in ``cwd``): what it printed, and every module it left loaded."""
    script = code + f"\nimport json, sys\nprint({MARKER!r} + json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "MCPCLI_HOME": str(home), "PYTHONPATH": str(ROOT)},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    assert lines, f"no module list printed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout, set(json.loads(lines[-1].removeprefix(MARKER)))


def _matching(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The modules that are one of ``packages`` or inside one (``mcp`` matches ``mcp.client`` but not ``mcpcli``)."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def _run_main(*argv: str) -> str:
    return textwrap.dedent(
        f"""
        import sys
        sys.argv = ["mcpcli", *{list(argv)!r}]
        from mcpcli.cli import main
        try:
            main()
        except SystemExit:
            pass
        """
    )


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("--version",), ("sessions", "list"), ("sessions", "list", "--json"), ("inbox",), ("skill",)],
)
def test_fast_commands_import_neither_the_sdk_nor_textual(argv: tuple[str, ...], home: Path) -> None:
    modules = _imported(_run_main(*argv), home)
    assert "mcpcli.cli" in modules  # the list is real: the command ran in that interpreter
    assert _matching(modules, SDK + UI) == []


def test_sessions_show_and_the_inbox_import_neither_the_sdk_nor_textual(home: Path) -> None:
    """On a real session with a secret answer, so masking, the timeline and the inbox all run."""
    from mcpcli.settings.config import Paths
    from mcpcli.state.store import SessionRecord, open_store

    schema = {"type": "object", "properties": {"password": {"type": "string"}}, "required": ["password"]}
    ask = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Password?", "requestedSchema": schema},
    }
    session = SessionRecord(
        server="demo", method="tools/call", name="x", arguments={}, protocol_version=None, status="waiting"
    )
    paths = Paths.from_env({"MCPCLI_HOME": str(home)})
    store = open_store(None, paths.store_file)
    try:
        store.add_round(session.id, attempt=1, requests={"q": ask}, request_state="s", new_session=session)
        store.record_answers(session.id, 1, {"q": {"action": "accept", "content": {"password": "hunter2"}}})
        store.add_round(session.id, attempt=1, requests={"q": ask}, request_state="t")
    finally:
        store.close()
    for argv, body in (
        (("sessions", "show", session.id), "mcpcli.commands.sessions"),
        (("sessions", "list", "--waiting"), "mcpcli.terminal.session_lines"),  # the listing's own fast path
    ):
        modules = _imported(_run_main(*argv), home)
        assert body in modules
        assert _matching(modules, SDK + UI) == []


def test_the_import_check_does_see_the_sdk_when_a_command_needs_it(home: Path) -> None:
    """The detector is not vacuous: a module that needs the SDK shows up in the list."""
    modules = _imported("import mcpcli.net.connection", home)
    assert "mcp" in _matching(modules, SDK)
    assert "mcp_types" in _matching(modules, SDK)


CORE = [
    "mcpcli.engine.flow",
    "mcpcli.engine.answers",
    "mcpcli.forms",
    "mcpcli.state.store",
    "mcpcli.settings.config",
    "mcpcli.terminal.inline",
]
CORE += [
    "mcpcli.commands.run",
    "mcpcli.commands.discovery",
    "mcpcli.commands.connecting",
    "mcpcli.commands.jobs",
    "mcpcli.state.inbox",
    "mcpcli.state.keeper",
    "mcpcli.state.vault",
    "mcpcli.cli",
    "mcpcli.engine.sampling",
    "mcpcli.llm",
]


@pytest.mark.parametrize("module", CORE)
def test_core_modules_never_import_the_ui(module: str, home: Path) -> None:
    modules = _imported(f"import {module}", home)
    assert module in modules
    assert _matching(modules, UI) == []


def test_the_ui_check_does_see_textual_when_the_app_is_imported(home: Path) -> None:
    """The detector is not vacuous for the UI either: the app's module pulls in Textual."""
    modules = _imported("import mcpcli.tui.app", home)
    assert "textual" in _matching(modules, UI)
    assert "mcpcli.tui" in _matching(modules, UI)


@pytest.mark.parametrize("argv", [("call", "--help"), ("tui", "--help"), ("batch", "--help")])
def test_the_tui_options_in_help_import_neither_the_sdk_nor_textual(argv: tuple[str, ...], home: Path) -> None:
    modules = _imported(_run_main(*argv), home)
    assert "mcpcli.cli" in modules
    assert _matching(modules, SDK + UI) == []


def test_the_import_contract_holds() -> None:
    """ARCHITECTURE.md §Layout as ``lint-imports`` checks it (pyproject.toml): front ends over command bodies over the
    runtime and the terminal over the core; the core imports no UI toolkit, no command body and no front end."""
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    proc = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _core_files() -> list[Path]:
    """The core's source files: everything under mcpcli/ but the front ends, the command bodies, the runtime and
    the terminal (ARCHITECTURE.md §Layout)."""
    package = ROOT / "mcpcli"
    front = {"cli", "tui", "worker", "commands", "terminal", "runtime.py", "__main__.py"}
    core = [p for p in package.rglob("*.py") if p.relative_to(package).parts[0] not in front]
    assert len(core) > 20  # the walk is real
    return core


def test_the_core_never_asks_at_a_prompt() -> None:
    """Rich's prompts belong to the terminal layer (``lint-imports`` forbids only whole external packages, and the
    core may use Rich to style text): no core module imports ``rich.prompt``."""
    import ast

    found = []
    for path in _core_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if any(name == "rich.prompt" or name.startswith("rich.prompt.") for name in names):
                found.append(str(path.relative_to(ROOT)))
    assert found == []


def test_the_core_words_no_session_command() -> None:
    """What to do next about a session (resume it, steal it, look at it) is data in the core (``errors.NextStep``),
    worded at the boundary (``terminal.hints``): no string the core builds names ``mcpcli resume`` or
    ``mcpcli sessions show`` (docstrings may)."""
    import ast

    found = []
    for path in _core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                docstrings.add(id(body[0].value))
        words = ("mcpcli resume", "mcpcli sessions show")
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docstrings else None
            if isinstance(text, str) and any(w in text for w in words):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


NO_FLOW = ("mcpcli.engine.flow", "mcpcli.state.keeper", "mcpcli.engine.sampling", "mcpcli.llm", "mcpcli.commands.run")
"""What only a run that drives a flow needs: the loop, the lease keeper, the sampler and its providers, the body."""


def test_answer_stores_a_rounds_answers_without_building_a_flow(home: Path) -> None:
    """``mcpcli answer`` never connects: it reads the round, asks the answer sources and writes — no flow, no lease
    keeper, no sampler is built (nor imported), so a misconfigured LLM provider or store key cannot stop it."""
    env = {**os.environ, "MCPCLI_HOME": str(home), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "mcpcli", "--no-worker", "call", "provision", "-a", "name=orders", "--no-input"]
    parked = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert parked.returncode == 3, parked.stderr
    session = json.loads(parked.stdout)["session_id"]
    modules = _imported(_run_main("answer", session, "--answer", "region=eu-west-1"), home)
    assert "mcpcli.commands.answer" in modules
    assert _matching(modules, NO_FLOW) == []
    from mcpcli.settings.config import Paths
    from mcpcli.state.store import open_store

    store = open_store(None, Paths.from_env({"MCPCLI_HOME": str(home)}).store_file)
    try:
        assert store.get(session).answered_by is not None  # the answer was stored: the command did run
    finally:
        store.close()
    modules = _imported(_run_main("call", "provision", "-a", "name=orders", "--no-input"), home)
    assert set(NO_FLOW) <= set(modules)  # not vacuous: a call imports every one of them
