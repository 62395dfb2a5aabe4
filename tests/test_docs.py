"""The project's documents stand alone and tell the truth about themselves: nothing points at a file that is not in
the repository, nothing cites an issue number (a reader of the repository has no issue tracker to look them up in),
and the changelog has a release entry for the version ``mcpcli --version`` prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = ("DESIGN.md", "PROTOCOL.md", "STYLE.md", "LAYOUT-EXAMPLE.md", "../shared")
"""Documents the developers read that do not ship with the repository."""


def _texts() -> list[Path]:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.split()
    files = [ROOT / name for name in tracked] or [*ROOT.glob("*.md"), *ROOT.glob("mcpcli/**/*.py")]
    return [path for path in files if path.suffix in {".md", ".py", ".toml"} and path.is_file()]


@pytest.mark.parametrize("needle", OUTSIDE)
def test_no_document_or_docstring_points_at_a_file_outside_the_repository(needle: str) -> None:
    here = Path(__file__).name
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _texts()
        if path.name != here
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if needle in line
    ]
    assert not found, f"{needle} is not in the repository, yet named at {found}"


def test_the_readme_and_architecture_cite_no_issue_numbers() -> None:
    for name in ("README.md", "ARCHITECTURE.md", "CHANGELOG.md"):
        text = (ROOT / name).read_text()
        assert not re.search(r"\bissues? \d+|issue's", text), f"{name} refers to an issue"


def test_architecture_has_one_title_and_opens_with_the_picture() -> None:
    lines = (ROOT / "ARCHITECTURE.md").read_text().splitlines()
    titles = [line for line in lines if line.startswith("# ")]
    sections = [line for line in lines if line.startswith("## ")]
    assert len(titles) == 1
    assert sections[0] == "## The picture"


def test_the_changelog_has_a_release_entry_for_the_version_mcpcli_prints() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "mcpcli", "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(printed)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), printed
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{printed}]")


def test_the_command_reference_is_what_the_command_line_says_today() -> None:
    from mcpcli.cli.reference import REFRESH

    fresh = subprocess.run(
        [sys.executable, "-m", "mcpcli.cli.reference"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    committed = (ROOT / "docs" / "reference.md").read_text()
    assert committed == fresh, f"docs/reference.md is stale: refresh it with `{REFRESH}`"


def test_every_link_between_the_documents_reaches_a_file_of_the_repository() -> None:
    documents = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")]
    broken = [
        f"{path.relative_to(ROOT)} → {target}"
        for path in documents
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
        if "://" not in target and not (path.parent / target).exists()
    ]
    assert not broken, broken


def test_the_readme_is_short_and_keeps_the_test_command_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 320, "the README is the way in; the details belong in docs/"
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test,postgres]' && .venv/bin/python -m pytest -q"
    assert command in readme and command in ci
