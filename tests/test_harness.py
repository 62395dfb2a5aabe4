"""The test suite's own promises: what CI must run fails there when it cannot run (never skips), and CI is on
whoever runs .ci/run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import PY, ROOT

NEEDS_ROOT = """
from conftest import cannot_run_here

def test_needing_root():
    cannot_run_here("the test needing root", "it needs root")
"""


def _run(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_needs.py").write_text(NEEDS_ROOT)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT / "tests")}
    return subprocess.run(
        [PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path / "test_needs.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_test_that_cannot_run_here_fails_in_ci_and_skips_elsewhere(tmp_path: Path) -> None:
    r = _run(tmp_path, "true")
    assert r.returncode == 1 and "CI must run the test needing root, but cannot: it needs root" in r.stdout, r.stdout
    r = _run(tmp_path, "")
    assert r.returncode == 0 and "1 skipped" in r.stdout and "skipped locally: it needs root" in r.stdout, r.stdout


def test_ci_run_sets_ci_before_any_test_runs() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "\nexport CI=true\n" in script
    assert script.index("\nexport CI=true\n") < script.index("pytest")
