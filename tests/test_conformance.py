"""The official MCP client conformance suite (``@modelcontextprotocol/conformance``), run against mcpcli.

The suite's CLI starts each scenario's server (its own, in Node) and drives a client command against it; that
command is ``tests/conformance_client.py``, which does with mcpcli what the scenario asks (list, call, answer,
resume, sign in). The suite records what went over the wire and judges it; a test here passes only when the
suite says every check passed. Every scenario a revision requires of a client runs at that revision's wire —
2025-11-25 (initialize handshake) and 2026-07-28 (stateless) — plus ``json-schema-2020-12-preservation``, which
both revisions run without scoring it — and the scenarios the suite keeps for the older revisions 2025-06-18 and
2025-03-26 (``OLDER``).

The suite needs Node ≥ 22. Both it and Node 22 (the ``node`` npm package) are installed with the system's npm
into a cache directory once (``$MCPCLI_TEST_CACHE``, default ``~/.cache/mcpcli-tests``) and reused; where that
cannot be done the tests are skipped with the reason — except in CI, which must run them.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from conftest import PY, ROOT

pytestmark = pytest.mark.slow

SUITE_VERSION = "0.2.0-alpha.12"
"""The suite release these tests pin: its requirement sets are frozen, so a pin keeps the verdicts reproducible."""
PACKAGES = (f"@modelcontextprotocol/conformance@{SUITE_VERSION}", "node@22")
RUNNER = Path(__file__).resolve().parent / "conformance_client.py"

REQUIRED: dict[str, tuple[str, ...]] = {
    "2025-11-25": (
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        *("auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3"),
        "auth/basic-cimd",
        *("auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported"),
        *("auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit"),
        *("auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none"),
        "auth/pre-registration",
    ),
    "2026-07-28": (
        "tools_call",
        "request-metadata",
        *("auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3"),
        "auth/basic-cimd",
        *("auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported"),
        *("auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit"),
        *("auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none"),
        "auth/pre-registration",
        "auth/resource-mismatch",
        *("auth/offline-access-scope", "auth/offline-access-not-supported"),
        "auth/authorization-server-migration",
        *("auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer"),
        *("auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch"),
        "sep-2322-client-request-state",
        *("http-standard-headers", "http-custom-headers", "http-invalid-tool-headers"),
        "json-schema-ref-no-deref",
    ),
}
"""The ``client:`` list of the suite's ``requirements/<revision>.yaml`` (checked against the installed copy)."""
ALSO = ("json-schema-2020-12-preservation",)
"""Run at both revisions though not scored (added after they shipped): mcpcli must keep a schema as given."""
OLDER: dict[str, tuple[str, ...]] = {
    "2025-06-18": (
        "initialize",
        "tools_call",
        *("auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none"),
    ),
    "2025-03-26": ("auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"),
}
"""The suite's scenarios for revisions it no longer scores: servers people run still speak them."""
CASES = [
    *((version, scenario) for version, names in REQUIRED.items() for scenario in (*names, *ALSO)),
    *((version, scenario) for version, names in OLDER.items() for scenario in names),
]


@dataclass(frozen=True)
class Suite:
    node: Path
    cli: Path
    root: Path

    def run(self, *args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.node), str(self.cli), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=timeout,
        )


def _unavailable(reason: str) -> NoReturn:
    """Skip here, but fail in CI: CI must run the suite for real."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"CI must run the conformance suite, but cannot: {reason}", pytrace=False)
    pytest.skip(f"conformance suite skipped: Node >= 22 cannot be installed here ({reason})")


def _cache() -> Path:
    base = os.environ.get("MCPCLI_TEST_CACHE") or str(Path.home() / ".cache" / "mcpcli-tests")
    return Path(base) / f"conformance-{SUITE_VERSION}"


def _found(root: Path) -> Suite | None:
    suite = Suite(
        node=root / "node_modules" / "node" / "bin" / "node",
        cli=root / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
        root=root,
    )
    return suite if suite.node.is_file() and suite.cli.is_file() else None


def _node_major(node: Path) -> int:
    done = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30, check=False)
    try:
        return int(done.stdout.strip().lstrip("v").split(".")[0])
    except ValueError:
        return 0


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer at a time (parallel pytest runs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _install(target: Path) -> Suite:
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is not installed (apt-get install npm)")
    with _locked(target.with_name(target.name + ".lock")):
        if (suite := _found(target)) is not None:
            return suite
        staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        try:
            argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0 or _found(staging) is None:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                _unavailable(f"npm install {' '.join(PACKAGES)} failed: {last}")
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    suite = _found(target)
    assert suite is not None
    return suite


@pytest.fixture(scope="session")
def suite() -> Suite:
    found = _found(_cache()) or _install(_cache())
    if (major := _node_major(found.node)) < 22:
        _unavailable(f"the installed node is version {major}")
    return found


def test_the_scenarios_run_here_are_exactly_what_each_revision_requires_of_a_client(suite: Suite) -> None:
    for version, names in REQUIRED.items():
        text = (suite.cli.parents[1] / "requirements" / f"{version}.yaml").read_text(encoding="utf-8")
        assert _client_list(text) == names, version


def _client_list(yaml_text: str) -> tuple[str, ...]:
    """The ``client:`` list of a requirements file (a flat list of names; no YAML library among our dependencies)."""
    names: list[str] = []
    inside = False
    for line in yaml_text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            inside = line.rstrip() == "client:"
        elif inside and line.strip().startswith("- "):
            names.append(line.strip()[2:].strip())
    return tuple(names)


@pytest.mark.parametrize(("version", "scenario"), CASES, ids=[f"{v}-{s}" for v, s in CASES])
def test_mcpcli_passes_the_conformance_scenario(suite: Suite, version: str, scenario: str, tmp_path: Path) -> None:
    home = tmp_path / "home"  # its own: sign-ins, sessions and config of one scenario never meet another's
    env = {**os.environ, "MCPCLI_HOME": str(home)}
    env.pop("BROWSER", None)
    results = tmp_path / "results"
    command = shlex.join([PY, str(RUNNER)])  # the suite splits it on spaces and hands it to a shell
    args = ["client", "--command", command, "--scenario", scenario, "--spec-version", version]
    done = suite.run(*args, "--timeout", "90000", "-o", str(results), env=env, timeout=180)
    report = f"suite exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    files = list(results.rglob("checks.json"))
    assert len(files) == 1, report
    checks: list[dict[str, Any]] = json.loads(files[0].read_text())
    counts = collections.Counter(check["status"] for check in checks)
    bad = [f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}" for c in checks]
    bad = [line for line in bad if line.split()[0] in ("FAILURE", "WARNING")]
    assert not bad, "\n".join(bad) + "\n" + report
    assert counts["SUCCESS"] > 0, report  # a scenario that checked nothing has not been passed
    assert done.returncode == 0, report
