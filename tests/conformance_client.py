"""The client the official conformance suite drives: ``python tests/conformance_client.py SERVER_URL``.

``@modelcontextprotocol/conformance client --command ...`` starts a scenario's server, then runs this with the
server's URL as the last argument and the scenario in the environment (``MCP_CONFORMANCE_SCENARIO``, the wire
version in ``MCP_CONFORMANCE_PROTOCOL_VERSION``, scenario data such as pre-registered credentials in
``MCP_CONFORMANCE_CONTEXT``). It does what a user would do with mcpcli for that scenario — list, call, answer,
resume, sign in — each step one real ``mcpcli`` process, and judges nothing itself: the suite's server records
what mcpcli sent and decides. Exit status: 0 when every step ended as a user would expect, else 1.

Sign-ins go through mcpcli's own path: ``$BROWSER`` is this file run with ``--browser URL``, which visits the
authorization URL and follows the redirects back to mcpcli's loopback listener, as a browser would.
``MCPCLI_HOME`` (a fresh directory per scenario) must be set by the caller; the config lives there.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

PY = sys.executable
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client id metadata document mcpcli is configured with (the suite's own example client uses this one)."""


class StepFailed(Exception):
    pass


def mcpcli(*args: str, expect: tuple[int, ...] = (0,), tty: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one mcpcli command against the scenario's server; a result outside ``expect`` fails the scenario."""
    env = dict(os.environ)
    if tty:  # a person at the terminal (with the browser below): a 401 or 403 signs in by itself
        env["MCPCLI_ASSUME_TTY"] = "1"
        env["BROWSER"] = f"{shlex.quote(PY)} {shlex.quote(str(Path(__file__).resolve()))} --browser %s"
    argv = [PY, "-m", "mcpcli", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)
    sys.stderr.write(f"$ mcpcli {' '.join(args)}\n-> {done.returncode}\n{done.stdout}{done.stderr}\n")
    if done.returncode not in expect:
        raise StepFailed(f"mcpcli {args[0]} exited {done.returncode}, expected {expect}")
    return done


def json_out(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def main(server: str) -> int:
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    home = Path(os.environ["MCPCLI_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)  # mcpcli refuses a store others could read
    s = ["-s", server]
    try:
        if scenario.startswith("auth/"):
            auth(scenario, server, context, home)
        else:
            run(scenario, s, context)
    except StepFailed as exc:
        sys.stderr.write(f"conformance client: {exc}\n")
        return 1
    return 0


def run(scenario: str, s: list[str], context: dict[str, Any]) -> None:
    if scenario in ("initialize", "json-schema-ref-no-deref"):
        mcpcli(*s, "tools")
    elif scenario == "tools_call":
        tools = json_out(mcpcli(*s, "tools", "--json"))["tools"]
        mcpcli(*s, "call", tools[0]["name"], "-a", "a=2", "-a", "b=3")  # typed as numbers by the tool's schema
    elif scenario == "request-metadata":
        mcpcli(*s, "info")
        mcpcli(*s, "tools")
    elif scenario == "json-schema-2020-12-preservation":
        tools = json_out(mcpcli(*s, "tools", "--json"))["tools"]
        (focal,) = (t for t in tools if t["name"] == "json_schema_2020_12_tool")
        mcpcli(*s, "call", "json_schema_echo", "--args", json.dumps({"schema": focal["inputSchema"]}))
    elif scenario == "sse-retry":
        mcpcli(*s, "call", "test_reconnection")
    elif scenario == "elicitation-sep1034-client-defaults":
        mcpcli(*s, "call", "test_client_elicitation_defaults", "--accept-defaults")
    elif scenario == "sep-2322-client-request-state":
        mcpcli(*s, "tools")
        # A flow that waits for an answer, an unrelated call in between, then the flow resumed from its session.
        waiting = json_out(mcpcli(*s, "call", "test_mrtr_echo_state", "--no-input", "--json", expect=(3,)))
        mcpcli(*s, "call", "test_mrtr_unrelated")
        mcpcli(*s, "resume", waiting["session_id"], "--answer", "confirmed=true")
        mcpcli(*s, "call", "test_mrtr_no_state", "--answer", "confirmed=true")
        mcpcli(*s, "call", "test_mrtr_no_result_type")
    elif scenario == "http-standard-headers":
        for tool in json_out(mcpcli(*s, "tools", "--json"))["tools"]:
            mcpcli(*s, "call", tool["name"])
        for resource in json_out(mcpcli(*s, "resources", "--json"))["resources"]:
            mcpcli(*s, "read", resource["uri"])
        for prompt in json_out(mcpcli(*s, "prompts", "--json"))["prompts"]:
            mcpcli(*s, "prompt", prompt["name"])
    elif scenario == "http-custom-headers":
        for call in context["toolCalls"]:
            mcpcli(*s, "call", call["name"], "--args", json.dumps(call["arguments"]))
    elif scenario == "http-invalid-tool-headers":
        # Call every tool mcpcli offers: a tool it must refuse never gets offered, so never called.
        for tool in json_out(mcpcli(*s, "tools", "--json"))["tools"]:
            mcpcli(*s, "call", tool["name"], "--args", json.dumps(sample_arguments(tool.get("inputSchema") or {})))
    else:
        raise StepFailed(f"no steps for scenario {scenario!r}")


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of the right type for each required property."""
    samples = {"string": "x", "integer": 1, "number": 1.5, "boolean": True}
    props = schema.get("properties") or {}
    return {name: samples.get(props.get(name, {}).get("type"), "x") for name in schema.get("required") or []}


def auth(scenario: str, server: str, context: dict[str, Any], home: Path) -> None:
    """Sign in as a person at a terminal would: the first call meets the 401 and signs in through the browser."""
    config = [f'client_metadata_url = "{CIMD_URL}"', "[mcpServers.conformance]", f'url = "{server}"']
    if scenario == "auth/pre-registration":
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        config += [
            "[mcpServers.conformance.oauth]",
            f'client_id = "{context["client_id"]}"',
            'client_secret_env = "CONFORMANCE_CLIENT_SECRET"',
        ]
    (home / "config.toml").write_text("\n".join(config) + "\n", encoding="utf-8")
    s = ["-s", "conformance"]
    failing = scenario in ("auth/resource-mismatch", "auth/scope-retry-limit") or scenario in REFUSED_ISSUERS
    if failing:  # mcpcli must refuse to finish the sign-in: one clear line, exit 4
        done = mcpcli(*s, "call", "test-tool", tty=True, expect=(4,))
        if "Traceback" in done.stderr:
            raise StepFailed("a traceback instead of one line")
        return
    mcpcli(*s, "tools", tty=True)
    mcpcli(*s, "call", "test-tool", tty=True)


REFUSED_ISSUERS = frozenset(
    {"auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/metadata-issuer-mismatch"}
)
"""Scenarios whose authorization server names the wrong issuer: the sign-in must stop (SEP-2468, RFC 9207)."""


def browser(url: str) -> int:
    """``$BROWSER``: visit the authorization URL and follow its redirects to mcpcli's listener, like a browser."""
    try:
        with urllib.request.urlopen(url, timeout=20) as page:
            page.read()
    except OSError as exc:  # an error page (say, the listener's 400 for a refused sign-in) is still a visit
        sys.stderr.write(f"browser: {exc}\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--browser":
        sys.exit(browser(sys.argv[2]))
    sys.exit(main(sys.argv[-1]))
