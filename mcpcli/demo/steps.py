"""The demo's tools as *steps*: given the answers so far, a step returns its result or the questions still open.

A step knows nothing of the protocol generation: ``demo.server`` turns the questions into an ``InputRequiredResult``
(2026-07-28) or asks them over the back-channel (older), and feeds the answers back. A result that starts with
``!`` is a refusal (the tool reports it as an error result).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as t

Answers = dict[str, dict[str, Any]]
"""Answers so far, keyed by the question's request key, as JSON (an ``ElicitResult`` or ``ListRootsResult``)."""

Step = Callable[[Answers], "str | t.InputRequests"]
"""Given the answers so far: the final text, or the questions still open."""


def form(message: str, properties: dict[str, Any], required: list[str] | None = None) -> t.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return t.ElicitRequest(params=t.ElicitRequestFormParams(message=message, requested_schema=schema))


def accepted(answers: Answers, key: str) -> dict[str, Any] | None:
    """The accepted content of one answer, or None when it is missing, declined or cancelled."""
    answer = answers.get(key)
    if answer is None or answer.get("action") != "accept":
        return None
    content = answer.get("content")
    return content if isinstance(content, dict) else {}


def refused(answers: Answers, key: str) -> str | None:
    """``"declined"``/``"cancelled"`` when the user refused that question, else None."""
    action = (answers.get(key) or {}).get("action")
    return {"decline": "declined", "cancel": "cancelled"}.get(str(action))


# --- the steps -------------------------------------------------------------------------------------------------------

REGION_SCHEMA = {"region": {"type": "string", "title": "Region", "description": "Where to provision, e.g. eu-west-1"}}


def provision_step(name: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        if why := refused(answers, "region"):
            return f"!Provisioning of {name!r} was {why}."
        content = accepted(answers, "region")
        if content is None or not content.get("region"):
            return {"region": form(f"Which region should {name!r} be provisioned in?", REGION_SCHEMA, ["region"])}
        return f"Provisioned {name!r} in {content['region']}."

    return step


ONBOARD_FIELDS: dict[str, Any] = {
    "display_name": {"type": "string", "title": "Display name", "minLength": 2, "maxLength": 40},
    "email": {"type": "string", "title": "Contact email", "format": "email"},
    "homepage": {"type": "string", "title": "Homepage", "format": "uri"},
    "start": {"type": "string", "title": "Start date", "format": "date"},
    "kickoff": {"type": "string", "title": "Kick-off meeting", "format": "date-time"},
    "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 50, "default": 5},
    "budget": {"type": "number", "title": "Monthly budget (EUR)", "minimum": 0, "maximum": 10000},
    "remote": {"type": "boolean", "title": "Remote team", "default": True},
    "size": {"type": "string", "title": "Team size", "enum": ["small", "medium", "large"], "default": "small"},
    "region": {
        "type": "string",
        "title": "Region",
        "oneOf": [
            {"const": "eu-west-1", "title": "Europe (Ireland)"},
            {"const": "us-east-1", "title": "US East (Virginia)"},
            {"const": "ap-south-1", "title": "Asia Pacific (Mumbai)"},
        ],
    },
    "tier": {
        "type": "string",
        "title": "Support tier",
        "enum": ["b", "s", "g"],
        "enumNames": ["Bronze", "Silver", "Gold"],
    },
    "languages": {
        "type": "array",
        "title": "Languages",
        "items": {"type": "string", "enum": ["python", "go", "rust", "typescript"]},
        "minItems": 1,
        "maxItems": 3,
    },
    "channels": {
        "type": "array",
        "title": "Notification channels",
        "items": {"anyOf": [{"const": "email", "title": "E-mail"}, {"const": "chat", "title": "Team chat"}]},
        "default": ["email"],
    },
    "passphrase": {"type": "string", "title": "Vault passphrase", "minLength": 8},
}
ONBOARD_REQUIRED = ["display_name", "email", "start", "seats", "region", "tier", "languages"]


def onboard_step(team: str) -> Step:
    """Three rounds, each asked only once the one before was accepted: a form with every field kind mcpcli knows,
    a confirmation, then the client's roots. A refusal at any round ends it as an error result."""

    def step(answers: Answers) -> str | t.InputRequests:
        """The next round still unanswered, or the result; the vault passphrase never appears in the result."""
        details = accepted(answers, "details")
        if why := refused(answers, "details"):
            return f"!Onboarding of {team!r} was {why}."
        if details is None:
            return {"details": form(f"Tell us about team {team!r}.", ONBOARD_FIELDS, ONBOARD_REQUIRED)}
        confirm = accepted(answers, "confirm")
        if why := refused(answers, "confirm"):
            return f"!Onboarding of {team!r} was {why} at the confirmation."
        if confirm is None:
            summary = f"{details.get('display_name')} <{details.get('email')}>, {details.get('seats')} seats"
            schema = {"confirm": {"type": "boolean", "title": "Create the team now?", "default": True}}
            return {"confirm": form(f"Create {summary}?", schema, ["confirm"])}
        if not confirm.get("confirm"):
            return f"!Onboarding of {team!r} was not confirmed."
        roots = answers.get("roots")
        if roots is None:
            return {"roots": t.ListRootsRequest()}
        uris = [r.get("uri", "?") for r in roots.get("roots", [])]
        public = {k: v for k, v in details.items() if k != "passphrase"}
        return (
            f"Onboarded team {team!r} with {len(uris)} workspace root{'' if len(uris) == 1 else 's'}:"
            f" {', '.join(uris) or 'none'}.\n"
            f"{json.dumps(public, sort_keys=True)}"
        )

    return step


def connect_step(service: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        if why := refused(answers, "consent"):
            return f"!Connecting {service!r} was {why}."
        if accepted(answers, "consent") is None:
            url = f"https://auth.example.com/connect?service={service}"
            params = t.ElicitRequestURLParams(
                message=f"Sign in to {service} to connect it.", url=url, elicitation_id=f"connect-{service}"
            )
            return {"consent": t.ElicitRequest(params=params)}
        return f"Connected {service!r}."

    return step


def tone_step(topic: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        content = accepted(answers, "tone")
        if content is None:
            schema = {"tone": {"type": "string", "title": "Tone", "enum": ["formal", "friendly", "pirate"]}}
            return {"tone": form(f"Which tone for a note about {topic!r}?", schema, ["tone"])}
        return f"Write a {content['tone']} note about {topic}."

    return step


def report_step(project: str) -> Step:
    def step(answers: Answers) -> str | t.InputRequests:
        content = accepted(answers, "scope")
        if content is None:
            schema = {"private": {"type": "boolean", "title": "Include private details", "default": False}}
            return {"scope": form(f"Include private details in the report for {project!r}?", schema)}
        extra = " (with private details)" if content.get("private") else ""
        return f"Report for {project}{extra}: all systems nominal."

    return step
