"""LLM providers for sampling: config, model choice, the mapping both ways for OpenAI chat and Anthropic,
retries and errors, keys, and the ``llm`` / ``keys`` commands — against fake providers that are real HTTP
servers on 127.0.0.1 checking every request against the documented shapes (tests/fake_llm.py)."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import textwrap
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_llm import FakeProvider, serve

from mcpcli.errors import ConfigError, ExitCode, UsageError
from mcpcli.llm import (
    Completion,
    LlmError,
    Model,
    api_key_for,
    clamp_tokens,
    complete,
    hints_of,
    pick_model,
    resolve_provider,
)
from mcpcli.llm.keys import key_file, save_key
from mcpcli.settings.config import Paths, ProviderConfig, Settings, load_settings, private_dir

KEY = "sk-test-0123456789"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
VISION = {"name": "fake-vision", "tags": ["vision"]}
TOOLS = {"name": "fake-tools", "tags": ["tools"]}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def ask(*content: dict[str, Any], **params: Any) -> dict[str, Any]:
    """``CreateMessageRequestParams`` as MCP wire JSON, with one user message."""
    body = content[0] if len(content) == 1 else list(content)
    return {"messages": [{"role": "user", "content": body}], "maxTokens": 100, **params}


class Sleeps:
    """An injected ``sleep`` that records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def provider_of(fake: FakeProvider, models: Any = ("fake-model", VISION, TOOLS), **extra: Any) -> ProviderConfig:
    return ProviderConfig.model_validate(fake.provider(models, **extra))


def run(
    fake: FakeProvider,
    params: dict[str, Any],
    *,
    model: str = "fake-model",
    key: str | None = KEY,
    max_tokens: int | None = None,
    sleep: Sleeps | None = None,
    timeout: float = 10.0,
    provider: ProviderConfig | None = None,
) -> Completion:
    config = provider or provider_of(fake)
    chosen = next(Model(m.name, frozenset(m.tags)) for m in config.models if m.name == model)
    tokens = params.get("maxTokens", 100) if max_tokens is None else max_tokens

    async def main() -> Completion:
        return await complete(
            "fake", config, chosen, params, api_key=key, max_tokens=tokens, timeout=timeout, sleep=sleep or Sleeps()
        )

    return anyio.run(main)


@pytest.fixture
def openai() -> Iterator[FakeProvider]:
    with serve("openai-chat") as fake:
        yield fake


@pytest.fixture
def anthropic() -> Iterator[FakeProvider]:
    with serve("anthropic") as fake:
        yield fake


@pytest.fixture(params=["openai-chat", "anthropic"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeProvider]:
    with serve(request.param) as provider:
        yield provider


def write_config(home: Path, text_: str) -> Path:
    path = private_dir(home) / "config.toml"
    path.write_text(textwrap.dedent(text_), encoding="utf-8")
    return path


def config_for(home: Path, fake: FakeProvider, name: str = "fake", extra: str = "") -> None:
    write_config(
        home,
        f"""
        [providers.{name}]
        api = "{fake.api}"
        base_url = "{fake.base_url}"
        models = ["fake-model", {{name = "fake-vision", tags = ["vision"]}}]
        {extra}
        """,
    )


# --- config ----------------------------------------------------------------------------------------------------------

DESIGN_EXAMPLE = """
[providers.local]
api = "openai-chat"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_API_KEY"
models = ["llama3.2", {name = "llava", tags = ["vision"]}]
max_tokens_cap = 1024
max_tokens_param = "max_tokens"
headers = {"X-Org" = "me"}

[providers.claude]
api = "anthropic"
base_url = "https://api.anthropic.com/v1/"
models = [{name = "claude-sonnet-4-5", tags = ["vision", "tools"]}, "claude-haiku-4-5"]

[sampling]
provider = "local"
policy = "ask"
max_calls = 20
max_tokens = 20000

[sampling.servers."http://127.0.0.1:8000/mcp"]
policy = "always"
"""


def test_the_documented_config_loads_with_tagged_models_and_per_server_policies(home: Path) -> None:
    write_config(home, DESIGN_EXAMPLE)
    settings = load_settings(Paths.from_env())
    local = settings.providers["local"]
    assert [(m.name, m.tags) for m in local.models] == [("llama3.2", []), ("llava", ["vision"])]
    assert (local.max_tokens_cap, local.max_tokens_param, local.headers) == (1024, "max_tokens", {"X-Org": "me"})
    assert settings.providers["claude"].base_url == "https://api.anthropic.com/v1"  # the trailing slash goes
    assert (settings.sampling.provider, settings.sampling.max_calls, settings.sampling.max_tokens) == (
        "local",
        20,
        20000,
    )
    assert settings.sampling.policy_for("http://127.0.0.1:8000/mcp") == "always"
    assert settings.sampling.policy_for("other", None) == "ask"


def test_without_a_sampling_table_the_defaults_ask_with_a_budget() -> None:
    sampling = Settings().sampling
    assert (sampling.provider, sampling.policy, sampling.max_calls, sampling.max_tokens) == (None, "ask", 20, 20000)


def test_an_unknown_api_is_a_one_line_config_error_naming_the_accepted_values(home: Path, cli: Any) -> None:
    write_config(home, '[providers.local]\napi = "gemini"\nbase_url = "http://x/v1"\nmodels = ["m"]\n')
    with pytest.raises(ConfigError) as info:
        load_settings(Paths.from_env())
    assert "providers.local.api" in info.value.message
    assert "'openai-chat'" in info.value.message and "'anthropic'" in info.value.message
    r = cli("llm", "list")
    assert r.code == ExitCode.USAGE
    assert "providers.local.api" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = []', "providers.p.models"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"', "providers.p.models"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = [{name = "m", tags = ["eyes"]}]', "tags"),
        ('api = "openai-chat"\nbase_url = "ftp://x/v1"\nmodels = ["m"]', "providers.p.base_url"),
        ('api = "openai-chat"\nbase_url = "https://u:pw@x/v1"\nmodels = ["m"]', "providers.p.base_url"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = ["m"]\nmax_tokens_cap = 0', "max_tokens_cap"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = ["m"]\nmax_tokens_param = "n"', "max_tokens_param"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = ["m"]\napi_key = "sk-x"', "providers.p.api_key"),
        ('api = "openai-chat"\nbase_url = "http://x/v1"\nmodels = ["m"]\nheaders = {"A B" = "1"}', "headers"),
    ],
)
def test_a_bad_provider_table_is_a_config_error_naming_the_field(home: Path, table: str, where: str) -> None:
    write_config(home, f"[providers.p]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(Paths.from_env())
    assert where in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize(
    ("text_", "where"),
    [
        ('[sampling]\npolicy = "sometimes"', "sampling.policy"),
        ("[sampling]\nmax_calls = -1", "sampling.max_calls"),
        ('[sampling.servers."http://x/mcp"]\npolicy = "maybe"', "sampling.servers"),
        ('[providers."../evil"]\napi = "anthropic"\nbase_url = "http://x/v1"\nmodels = ["m"]', "providers"),
    ],
)
def test_a_bad_sampling_table_or_provider_name_is_a_config_error(home: Path, text_: str, where: str) -> None:
    write_config(home, text_ + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings(Paths.from_env())
    assert where in info.value.message


# --- choosing the provider and the model ------------------------------------------------------------------------------


def _settings(providers: list[str], chosen: str | None = None) -> Settings:
    table = {n: {"api": "openai-chat", "base_url": "http://x/v1", "models": ["m"]} for n in providers}
    return Settings.model_validate({"providers": table, "sampling": {"provider": chosen}})


def test_the_provider_is_the_one_named_else_the_sampling_one_else_the_only_one() -> None:
    assert resolve_provider(_settings(["a", "b"], "b"), "a")[0] == "a"
    assert resolve_provider(_settings(["a", "b"], "b"), None)[0] == "b"
    assert resolve_provider(_settings(["a"]), None)[0] == "a"


@pytest.mark.parametrize(
    ("providers", "chosen", "name", "hint"),
    [
        (["a", "b"], None, "nope", "Configured providers: a, b."),
        (["a", "b"], "nope", None, "Configured providers: a, b."),
        (["a", "b"], None, None, "--llm NAME"),
        ([], None, None, "[providers.NAME]"),
    ],
)
def test_an_unknown_or_unchosen_provider_is_a_config_error_with_a_hint(
    providers: list[str], chosen: str | None, name: str | None, hint: str
) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_provider(_settings(providers, chosen), name)
    assert hint in (info.value.hint or "")


MODELS = ProviderConfig.model_validate(
    {"api": "openai-chat", "base_url": "http://x/v1", "models": ["llama3.2", VISION, "qwen2.5-coder", "Claude-Sonnet"]}
)


@pytest.mark.parametrize(
    ("hints", "chosen"),
    [
        ([], "llama3.2"),
        (["qwen"], "qwen2.5-coder"),
        (["gpt-4o", "VISION"], "fake-vision"),  # in order; the first that matches wins; any case
        (["sonnet", "qwen"], "Claude-Sonnet"),
        (["gpt-4o"], "llama3.2"),  # no match: the default — never the hint itself
        (["", "  "], "llama3.2"),  # an empty hint matches nothing
    ],
)
def test_hints_pick_an_allowed_model_by_substring_in_order_else_the_default(hints: list[str], chosen: str) -> None:
    model = pick_model(MODELS, hints)
    assert model.name == chosen
    assert model.name in [m.name for m in MODELS.models]


def test_a_picked_model_carries_its_tags() -> None:
    assert pick_model(MODELS, ["vision"]).tags == frozenset({"vision"})


def test_hints_are_read_from_model_preferences_in_order() -> None:
    params = {"modelPreferences": {"hints": [{"name": "sonnet"}, {}, {"name": "haiku"}], "costPriority": 0.3}}
    assert hints_of(params) == ["sonnet", "haiku"]
    assert hints_of({}) == []


def test_max_tokens_are_clamped_to_the_cap_and_at_least_one() -> None:
    capped = ProviderConfig.model_validate(MODELS.model_dump() | {"max_tokens_cap": 500})
    assert [clamp_tokens(n, capped) for n in (100, 500, 5000, 0)] == [100, 500, 500, 1]


# --- OpenAI chat: the request -----------------------------------------------------------------------------------------


def test_openai_gets_system_prompt_temperature_stop_and_clamped_tokens_but_never_metadata(openai: FakeProvider) -> None:
    params = ask(
        text("Summarise."),
        systemPrompt="You are terse.",
        temperature=0.2,
        stopSequences=["END"],
        maxTokens=99999,
        metadata={"trace": "secret-server-data"},
        includeContext="allServers",
        modelPreferences={"hints": [{"name": "fake"}]},
    )
    run(openai, params, provider=provider_of(openai, max_tokens_cap=256, headers={"X-Org": "me"}))
    assert openai.last == {
        "model": "fake-model",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Summarise."}],
        "max_tokens": 256,
        "temperature": 0.2,
        "stop": ["END"],
    }
    headers = openai.requests[-1].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-org"] == "me"


def test_openai_gets_the_first_four_stop_sequences_of_more(openai: FakeProvider) -> None:
    """The chat completions API takes four; a server asking for more (advisory in MCP) is not refused over it."""
    run(openai, ask(text("Go."), stopSequences=[f"S{n}" for n in range(9)]))
    assert openai.last["stop"] == ["S0", "S1", "S2", "S3"]


def test_openai_newer_models_get_max_completion_tokens() -> None:
    with serve("openai-chat", token_param="max_completion_tokens") as fake:
        run(fake, ask(text("hi")), provider=provider_of(fake, max_tokens_param="max_completion_tokens"))
        assert fake.last["max_completion_tokens"] == 100
        assert "max_tokens" not in fake.last


def test_openai_refusing_max_tokens_is_an_error_with_the_providers_message() -> None:
    with serve("openai-chat", token_param="max_completion_tokens") as fake:
        with pytest.raises(LlmError) as info:
            run(fake, ask(text("hi")))
        fake.violations.clear()
    assert "400 Bad Request" in info.value.message
    assert "max_completion_tokens" in info.value.message


def test_openai_images_go_to_a_vision_model_as_data_urls(openai: FakeProvider) -> None:
    run(openai, ask(text("What is this?"), IMAGE), model="fake-vision")
    assert openai.last["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        }
    ]


def test_a_conversation_keeps_its_roles(fake: FakeProvider) -> None:
    params = {
        "messages": [
            {"role": "user", "content": text("Hi")},
            {"role": "assistant", "content": [text("Hello.")]},
            {"role": "user", "content": text("Bye")},
        ],
        "maxTokens": 10,
    }
    run(fake, params)
    assert [(m["role"], m["content"]) for m in fake.last["messages"]] == [
        ("user", "Hi"),
        ("assistant", "Hello."),
        ("user", "Bye"),
    ]


def test_a_provider_on_this_machine_is_asked_direct_whatever_the_proxy(
    openai: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local model (Ollama on localhost) is not something a proxy can reach for the user: the proxy variables
    that carry every remote request leave it alone, as they do an MCP server on this machine."""
    with socket.create_server(("127.0.0.1", 0)) as closed:
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(variable, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert run(openai, ask(text("hi"))).result["content"]


# --- content a model cannot take --------------------------------------------------------------------------------------


def test_an_image_to_a_text_only_model_is_refused_before_any_request(fake: FakeProvider) -> None:
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("Look"), IMAGE), model="fake-model")
    assert info.value.message == "Model 'fake-model' cannot take images."
    assert "vision" in (info.value.hint or "")
    assert fake.requests == []


def test_an_image_inside_a_tool_result_also_needs_vision(fake: FakeProvider) -> None:
    params = {
        "messages": [
            {"role": "user", "content": text("Go")},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "shot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c1", "content": [IMAGE]}]},
        ],
        "maxTokens": 10,
    }
    with pytest.raises(LlmError, match="cannot take images"):
        run(fake, params, model="fake-tools")
    assert fake.requests == []


def test_tools_to_a_model_without_the_tools_tag_are_refused_before_any_request(fake: FakeProvider) -> None:
    params = ask(text("Weather?"), tools=[{"name": "weather", "inputSchema": {"type": "object"}}])
    with pytest.raises(LlmError) as info:
        run(fake, params, model="fake-vision")
    assert info.value.message == "Model 'fake-vision' cannot use tools."
    assert fake.requests == []


def test_audio_is_refused_before_any_request(fake: FakeProvider) -> None:
    with pytest.raises(LlmError, match="cannot take audio"):
        run(fake, ask({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}), model="fake-vision")
    assert fake.requests == []


# --- tools ------------------------------------------------------------------------------------------------------------

WEATHER = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Weather for a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TOOL_TURN = {
    "messages": [
        {"role": "user", "content": text("Weather in Paris?")},
        {
            "role": "assistant",
            "content": [
                text("Let me look."),
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolUseId": "call_1", "content": [text("18°C, sunny")], "isError": False}
            ],
        },
    ],
    "tools": [WEATHER],
    "toolChoice": {"mode": "required"},
    "maxTokens": 50,
}


def test_openai_tools_tool_calls_and_tool_messages(openai: FakeProvider) -> None:
    openai.reply(None, tool_calls=[("call_2", "get_weather", {"city": "Lyon"})], usage=(30, 7))
    done = run(openai, TOOL_TURN, model="fake-tools")
    body = openai.last
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": WEATHER["inputSchema"],
            },
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "18°C, sunny"}
    assert done.result == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Lyon"}}],
        "model": "fake-model-2025-01-01",
        "stopReason": "toolUse",
    }
    assert (done.usage_in, done.usage_out) == (30, 7)


def test_anthropic_tools_tool_use_and_tool_result_blocks(anthropic: FakeProvider) -> None:
    turn = json.loads(json.dumps(TOOL_TURN))
    turn["messages"][2]["content"][0]["isError"] = True
    anthropic.reply("Checking Lyon.", tool_calls=[("toolu_2", "get_weather", {"city": "Lyon"})])
    done = run(anthropic, turn, model="fake-tools")
    body = anthropic.last
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather for a city.", "input_schema": WEATHER["inputSchema"]}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": [{"type": "text", "text": "18°C, sunny"}],
            "is_error": True,
        }
    ]
    assert done.result["content"] == [
        {"type": "text", "text": "Checking Lyon."},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Lyon"}},
    ]
    assert done.result["stopReason"] == "toolUse"


@pytest.mark.parametrize(
    ("mode", "openai_choice", "anthropic_choice"), [("auto", "auto", "auto"), ("none", "none", "none")]
)
def test_tool_choice_modes(fake: FakeProvider, mode: str, openai_choice: str, anthropic_choice: str) -> None:
    run(fake, ask(text("hi"), tools=[WEATHER], toolChoice={"mode": mode}), model="fake-tools")
    expected = {"type": anthropic_choice} if fake.api == "anthropic" else openai_choice
    assert fake.last["tool_choice"] == expected


def test_a_structured_tool_result_without_content_is_sent_as_its_json(fake: FakeProvider) -> None:
    turn = json.loads(json.dumps(TOOL_TURN))
    turn["messages"][2]["content"] = [{"type": "tool_result", "toolUseId": "call_1", "structuredContent": {"c": 18}}]
    run(fake, turn, model="fake-tools")
    sent = fake.last["messages"][2]
    assert (sent["content"] if fake.api == "openai-chat" else sent["content"][0]["content"][0]["text"]) == '{"c": 18}'


# --- Anthropic: the request -------------------------------------------------------------------------------------------


def test_anthropic_gets_system_temperature_stop_sequences_and_its_headers_but_never_metadata(
    anthropic: FakeProvider,
) -> None:
    params = ask(
        text("Summarise."),
        systemPrompt="You are terse.",
        temperature=0.4,
        stopSequences=["END", "STOP"],
        maxTokens=5000,
        metadata={"user_id": "u-1"},
        includeContext="thisServer",
    )
    run(anthropic, params, provider=provider_of(anthropic, max_tokens_cap=1000))
    assert anthropic.last == {
        "model": "fake-model",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": "Summarise."}],
        "system": "You are terse.",
        "temperature": 0.4,
        "stop_sequences": ["END", "STOP"],
    }
    headers = anthropic.requests[-1].headers
    assert (headers["x-api-key"], headers["anthropic-version"]) == (KEY, "2023-06-01")
    assert "authorization" not in headers


def test_anthropic_temperature_is_kept_within_its_range(anthropic: FakeProvider) -> None:
    run(anthropic, ask(text("hi"), temperature=1.7))
    assert anthropic.last["temperature"] == 1.0


def test_anthropic_images_go_as_base64_sources(anthropic: FakeProvider) -> None:
    run(anthropic, ask(IMAGE, text("What is this?")), model="fake-vision")
    assert anthropic.last["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "What is this?"},
    ]


def test_anthropic_refuses_an_image_type_it_does_not_take(anthropic: FakeProvider) -> None:
    with pytest.raises(LlmError, match="image/bmp"):
        run(anthropic, ask({**IMAGE, "mimeType": "image/bmp"}), model="fake-vision")
    assert anthropic.requests == []


def test_anthropic_without_a_key_says_which_command_fixes_it(anthropic: FakeProvider) -> None:
    with pytest.raises(LlmError) as info:
        run(anthropic, ask(text("hi")), key=None, provider=provider_of(anthropic, api_key_env="ANTHROPIC_API_KEY"))
    assert "needs an API key" in info.value.message
    assert "mcpcli keys set fake" in (info.value.hint or "")
    assert "ANTHROPIC_API_KEY" in (info.value.hint or "")
    assert anthropic.requests == []


# --- the result -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "raw", "mapped"),
    [
        ("openai-chat", "stop", "endTurn"),
        ("openai-chat", "length", "maxTokens"),
        ("openai-chat", "tool_calls", "toolUse"),
        ("openai-chat", "content_filter", "content_filter"),
        ("anthropic", "end_turn", "endTurn"),
        ("anthropic", "max_tokens", "maxTokens"),
        ("anthropic", "stop_sequence", "stopSequence"),
        ("anthropic", "tool_use", "toolUse"),
        ("anthropic", "refusal", "refusal"),
    ],
)
def test_stop_reasons_are_mapped(api: str, raw: str, mapped: str) -> None:
    with serve(api) as fake:  # type: ignore[arg-type]
        fake.reply("Done", stop=raw)
        assert run(fake, ask(text("hi"))).result["stopReason"] == mapped


def test_the_result_is_an_assistant_text_block_with_the_model_the_provider_reported(fake: FakeProvider) -> None:
    fake.reply("Bonjour.", model="fake-model-2025-06-01", usage=(40, 3))
    done = run(fake, ask(text("hi")))
    assert done.result == {
        "role": "assistant",
        "content": {"type": "text", "text": "Bonjour."},
        "model": "fake-model-2025-06-01",
        "stopReason": "endTurn",
    }
    assert (done.usage_in, done.usage_out) == (40, 3)


def test_without_reported_usage_the_budget_counts_the_tokens_asked_for(fake: FakeProvider) -> None:
    fake.reply("ok", usage=None)
    done = run(fake, ask(text("hi"), maxTokens=77))
    assert (done.usage_in, done.usage_out) == (0, 77)


# --- retries and errors -----------------------------------------------------------------------------------------------


def test_429_with_retry_after_is_retried_after_that_wait(fake: FakeProvider) -> None:
    fake.error(429, "Rate limit reached.", headers={"Retry-After": "3"})
    fake.reply("finally")
    sleeps = Sleeps()
    done = run(fake, ask(text("hi")), sleep=sleeps)
    assert done.result["content"]["text"] == "finally"
    assert sleeps.waits == [3.0]
    assert len(fake.requests) == 2


def test_retry_after_as_an_http_date_and_a_long_one_is_capped_at_30_seconds(openai: FakeProvider) -> None:
    openai.error(429, "slow", headers={"Retry-After": formatdate(usegmt=True)})  # now: no wait
    openai.error(503, "busy", headers={"Retry-After": "120"})
    sleeps = Sleeps()
    run(openai, ask(text("hi")), sleep=sleeps)
    assert sleeps.waits[0] <= 1.0
    assert sleeps.waits[1] == 30.0


def test_openai_retry_after_ms_is_honoured(openai: FakeProvider) -> None:
    openai.error(429, "slow", headers={"retry-after-ms": "1500"})
    sleeps = Sleeps()
    run(openai, ask(text("hi")), sleep=sleeps)
    assert sleeps.waits == [1.5]


def test_5xx_twice_then_success_backs_off_one_then_two_seconds(fake: FakeProvider) -> None:
    fake.error(500, "oops")
    fake.error(502, "bad gateway")
    fake.reply("third time lucky")
    sleeps = Sleeps()
    assert run(fake, ask(text("hi")), sleep=sleeps).result["content"]["text"] == "third time lucky"
    assert sleeps.waits == [1.0, 2.0]
    assert len(fake.requests) == 3


def test_three_failures_are_one_line_with_the_providers_message(fake: FakeProvider) -> None:
    for _ in range(3):
        fake.error(429, "Rate limit reached for requests.\nTry again in 20s.", headers={"Retry-After": "1"})
    sleeps = Sleeps()
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("hi")), sleep=sleeps)
    assert info.value.message == (
        "Provider 'fake' answered 429 Too Many Requests after 3 tries: "
        "Rate limit reached for requests. Try again in 20s."
    )
    assert info.value.exit_code == ExitCode.SERVER
    assert len(fake.requests) == 3
    assert sleeps.waits == [1.0, 1.0]


def test_timeouts_are_retried_then_reported(openai: FakeProvider) -> None:
    for _ in range(3):
        openai.enqueue(delay=1.0)
    sleeps = Sleeps()
    with pytest.raises(LlmError) as info:
        run(openai, ask(text("hi")), sleep=sleeps, timeout=0.2)
    assert info.value.message == "Provider 'fake' did not answer within 0.2 s after 3 tries."
    assert sleeps.waits == [1.0, 2.0]


def test_a_provider_that_is_not_running_is_reported_after_three_tries() -> None:
    with serve("openai-chat") as gone:
        config = provider_of(gone)
    with pytest.raises(LlmError) as info:
        run(gone, ask(text("hi")), provider=config)
    assert info.value.message.startswith("Provider 'fake' could not be reached (ConnectError")
    assert info.value.message.endswith("after 3 tries.")


def test_401_with_a_key_says_the_key_was_refused_and_how_to_replace_it(fake: FakeProvider) -> None:
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("hi")), key="sk-wrong-key-123")
    assert info.value.message.startswith("Provider 'fake' refused the API key (401 Unauthorized")
    assert info.value.hint is not None and "mcpcli keys set fake" in info.value.hint
    assert "sk-wrong-key-123" not in info.value.message
    assert len(fake.requests) == 1  # not retried


def test_401_without_a_key_says_one_is_needed(openai: FakeProvider) -> None:
    with pytest.raises(LlmError) as info:
        run(openai, ask(text("hi")), key=None)
    assert info.value.message.startswith("Provider 'fake' needs an API key (401 Unauthorized")
    assert "mcpcli keys set fake" in (info.value.hint or "")


def test_404_says_model_or_endpoint_not_found_with_the_url(fake: FakeProvider) -> None:
    fake.error(404, "The model `fake-model` does not exist.")
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("hi")))
    path = "/v1/messages" if fake.api == "anthropic" else "/v1/chat/completions"
    assert "model or endpoint not found" in info.value.message
    assert f"{fake.origin}{path}" in info.value.message
    assert KEY not in info.value.message
    assert len(fake.requests) == 1


def test_a_wrong_base_url_is_a_404_naming_it(openai: FakeProvider) -> None:
    config = ProviderConfig.model_validate(openai.provider() | {"base_url": openai.origin + "/api"})
    with pytest.raises(
        LlmError, match=r"model or endpoint not found .* at http://127\.0\.0\.1:\d+/api/chat/completions"
    ):
        run(openai, ask(text("hi")), provider=config)


def test_other_4xx_are_not_retried(fake: FakeProvider) -> None:
    fake.error(400, "messages: too long")
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("hi")))
    assert info.value.message == "Provider 'fake' rejected the request (400 Bad Request: messages: too long)."
    assert len(fake.requests) == 1


@pytest.mark.parametrize("raw", [b"<html>oops</html>", b'{"choices": "nope", "content": 3}', b"[1, 2]"])
def test_a_reply_that_is_not_a_completion_is_an_error(fake: FakeProvider, raw: bytes) -> None:
    fake.enqueue(200, raw=raw)
    with pytest.raises(LlmError, match="sent a reply that is not a"):
        run(fake, ask(text("hi")))


def test_a_redirect_is_not_followed_so_the_key_never_leaves_its_base_url(fake: FakeProvider) -> None:
    with serve("openai-chat", key=None) as elsewhere:
        fake.enqueue(307, {}, headers={"Location": f"{elsewhere.base_url}/chat/completions?token=x"})
        with pytest.raises(LlmError) as info:
            run(fake, ask(text("hi")))
        assert elsewhere.requests == []
    assert "does not follow redirects" in info.value.message
    assert f"{elsewhere.base_url}/chat/completions" in info.value.message
    assert "token=x" not in info.value.message


def test_a_key_the_provider_echoes_is_masked_in_the_error(fake: FakeProvider) -> None:
    fake.error(400, f"Bad key format: {KEY}")
    with pytest.raises(LlmError) as info:
        run(fake, ask(text("hi")))
    assert KEY not in info.value.message
    assert "[key]" in info.value.message


def test_the_key_never_reaches_the_logs(fake: FakeProvider, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.error(429, "slow", headers={"Retry-After": "0"})
    run(fake, ask(text("hi")))
    with pytest.raises(LlmError):
        run(fake, ask(text("hi")), key=KEY + "-wrong")
    assert caplog.records  # the HTTP stack did log
    assert KEY not in caplog.text


# --- keys -------------------------------------------------------------------------------------------------------------


def test_a_stored_key_wins_over_the_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = Paths.from_env()
    config = ProviderConfig.model_validate(
        {"api": "openai-chat", "base_url": "http://x/v1", "models": ["m"], "api_key_env": "FAKE_LLM_KEY"}
    )
    monkeypatch.delenv("FAKE_LLM_KEY", raising=False)
    assert api_key_for("p", config, paths) is None
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-from-env")
    assert api_key_for("p", config, paths) == "sk-from-env"
    path = save_key(paths, "p", "sk-from-file\n")
    assert api_key_for("p", config, paths) == "sk-from-file"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_key_file_others_can_read_is_refused(home: Path) -> None:
    paths = Paths.from_env()
    path = save_key(paths, "p", "sk-abc")
    path.chmod(0o644)
    config = ProviderConfig.model_validate({"api": "anthropic", "base_url": "http://x/v1", "models": ["m"]})
    with pytest.raises(ConfigError, match="can be read by other users"):
        api_key_for("p", config, paths)


def test_a_key_with_spaces_or_line_breaks_is_refused_without_echoing_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ProviderConfig.model_validate(
        {"api": "openai-chat", "base_url": "http://x/v1", "models": ["m"], "api_key_env": "FAKE_LLM_KEY"}
    )
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-abc\r\nX-Evil: 1")
    with pytest.raises(ConfigError) as info:
        api_key_for("p", config, Paths.from_env())
    assert "sk-abc" not in info.value.message
    with pytest.raises(UsageError):
        save_key(Paths.from_env(), "p", "two words")


def test_keys_set_reads_stdin_and_keys_rm_removes_it(cli: Any, home: Path, openai: FakeProvider) -> None:
    config_for(home, openai)
    r = cli("keys", "set", "fake", stdin=KEY + "\n")
    assert r.code == 0, r.err
    assert r.out == ""
    assert KEY not in r.err
    path = key_file(Paths.from_env(), "fake")
    assert path.read_text() == KEY + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert cli("keys", "rm", "fake").code == 0
    assert not path.exists()
    again = cli("keys", "rm", "fake")
    assert again.code == ExitCode.USAGE
    assert "No key is stored" in again.err


@pytest.mark.parametrize(("name", "stdin"), [("../evil", "sk-x"), ("fake", ""), ("fake", "  \n")])
def test_keys_set_refuses_a_bad_name_or_no_key(cli: Any, home: Path, name: str, stdin: str) -> None:
    r = cli("keys", "set", name, stdin=stdin)
    assert r.code == ExitCode.USAGE
    assert not list(home.rglob("*.key"))


def test_keys_set_for_an_unconfigured_provider_stores_it_with_a_note(cli: Any) -> None:
    r = cli("keys", "set", "later", stdin="sk-later")
    assert r.code == 0
    assert "no [providers.later]" in r.err


# --- llm list / llm test ----------------------------------------------------------------------------------------------


def test_llm_list_json_says_where_each_key_comes_from_but_never_the_key(
    cli: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(home, DESIGN_EXAMPLE.replace('api_key_env = "OLLAMA_API_KEY"', 'api_key_env = "FAKE_LLM_KEY"'))
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-env-secret")
    assert cli("keys", "set", "claude", stdin="sk-file-secret").code == 0
    r = cli("llm", "list", "--json")
    assert r.code == 0, r.err
    rows = {row["name"]: row for row in r.json()}
    assert rows["local"]["key"] == "env" and rows["local"]["key_env"] == "FAKE_LLM_KEY"
    assert rows["claude"]["key"] == "file"
    assert rows["local"]["models"] == [{"name": "llama3.2", "tags": []}, {"name": "llava", "tags": ["vision"]}]
    assert (rows["local"]["sampling"], rows["claude"]["sampling"]) == (True, False)
    assert rows["claude"]["default_model"] == "claude-sonnet-4-5"
    human = cli("llm", "list")
    assert human.code == 0
    assert "llava [vision]" in human.out and "$FAKE_LLM_KEY" in human.out
    for out in (r.out + r.err, human.out + human.err):
        assert "sk-env-secret" not in out and "sk-file-secret" not in out


def test_llm_list_without_providers_says_how_to_add_one(cli: Any) -> None:
    r = cli("llm", "list")
    assert r.code == 0
    assert r.out == ""
    assert "[providers.NAME]" in r.err


def test_llm_test_prints_the_model_and_the_reply(cli: Any, home: Path, openai: FakeProvider) -> None:
    config_for(home, openai)
    assert cli("keys", "set", "fake", stdin=KEY).code == 0
    openai.reply("Ready when you are.", model="fake-model-2025-01-01")
    r = cli("llm", "test", "fake")
    assert r.code == 0, r.err
    assert r.out == "model: fake-model-2025-01-01\nreply: Ready when you are.\n"
    assert openai.last["model"] == "fake-model"


def test_llm_test_json_and_a_chosen_model(cli: Any, home: Path, anthropic: FakeProvider) -> None:
    config_for(home, anthropic)
    assert cli("keys", "set", "fake", stdin=KEY).code == 0
    r = cli("llm", "test", "--model", "fake-vision", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert (doc["provider"], doc["model"], doc["reply"], doc["stopReason"]) == (
        "fake",
        "fake-vision",
        "Hello from the fake.",
        "endTurn",
    )
    assert doc["usage"] == {"input": 12, "output": 5}


def test_llm_test_with_a_model_not_allowed_exits_2(cli: Any, home: Path, openai: FakeProvider) -> None:
    config_for(home, openai)
    r = cli("llm", "test", "fake", "--model", "gpt-5")
    assert r.code == ExitCode.USAGE
    assert "fake-model, fake-vision" in r.err
    assert openai.requests == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, "refused the API key (401 Unauthorized"),
        (404, "model or endpoint not found"),
        (429, "answered 429 Too Many Requests after 3 tries"),
    ],
)
def test_llm_test_failures_are_one_line_and_exit_4(
    cli: Any, home: Path, openai: FakeProvider, status: int, expected: str
) -> None:
    config_for(home, openai)
    assert cli("keys", "set", "fake", stdin=KEY if status != 401 else "sk-not-the-right-one").code == 0
    for _ in range(3):
        openai.error(status, "nope", headers={"Retry-After": "0"})
    r = cli("llm", "test", "fake")
    assert r.code == ExitCode.SERVER
    assert expected in r.err
    assert "Traceback" not in r.err
    assert r.out == ""


def test_llm_test_timeout_exits_4(cli: Any, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve("openai-chat", key=None) as slow:
        config_for(home, slow)
        for _ in range(3):
            slow.enqueue(delay=0.5)
        monkeypatch.setattr("mcpcli.llm.transport.BACKOFF", (0.0, 0.0))
        r = cli("llm", "test", "fake", "--timeout", "0.1")
    assert r.code == ExitCode.SERVER
    assert "did not answer within 0.1 s after 3 tries" in r.err


def test_the_key_is_written_nowhere_under_mcpcli_home_but_its_own_file(
    cli: Any, home: Path, openai: FakeProvider
) -> None:
    config_for(home, openai)
    assert cli("keys", "set", "fake", stdin=KEY).code == 0
    ok = cli("--debug", "llm", "test", "fake")
    assert ok.code == 0, ok.err
    openai.error(401, f"Incorrect API key provided: {KEY}")
    failed = cli("llm", "test", "fake", "--debug")
    assert failed.code == ExitCode.SERVER
    for r in (ok, failed):
        assert KEY not in r.out + r.err
    own = key_file(Paths.from_env(), "fake")
    holding = [p for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holding == [own]
    assert any(p.name == "mcpcli.log" for p in home.rglob("*"))  # the logs exist, and were searched


def test_llm_commands_import_no_http_stack_sdk_or_ui(home: Path) -> None:
    import subprocess
    import sys

    code = "import json, sys, mcpcli.llm, mcpcli.commands.llm; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ}
    ).stdout
    modules = set(json.loads(out))
    assert not {m for m in modules if m.split(".")[0] in ("httpx2", "mcp", "mcp_types", "textual")}


def test_anthropic_gets_tool_results_before_other_content_of_the_same_message(anthropic: FakeProvider) -> None:
    turn = json.loads(json.dumps(TOOL_TURN))
    turn["messages"][2]["content"].insert(0, text("Here you go."))
    run(anthropic, turn, model="fake-tools")
    assert [b["type"] for b in anthropic.last["messages"][2]["content"]] == ["tool_result", "text"]


def test_openai_gets_tool_messages_then_the_rest_of_the_user_message(openai: FakeProvider) -> None:
    turn = json.loads(json.dumps(TOOL_TURN))
    turn["messages"][2]["content"].append(text("And tomorrow?"))
    run(openai, turn, model="fake-tools")
    assert [m["role"] for m in openai.last["messages"]] == ["user", "assistant", "tool", "user"]


# --- the fakes check what they claim to -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}], "metadata": {}}, "metadata"),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
        ({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}, "role"),
        ({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "hi"}]}, "preceding tool call"),
        ({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "data": "x"}]}]}, "content[0]"),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "auto"}, "tool_choice"),
    ],
)
def test_the_openai_fake_rejects_what_the_api_rejects(body: dict[str, Any], problem: str) -> None:
    from fake_llm import validate_openai

    assert any(problem in p for p in validate_openai(body)), validate_openai(body)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "metadata": {}}, "metadata"),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "hi"}]}, "role"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": ""}]}, "non-empty"),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            "tool_use_id",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
                    {"role": "user", "content": "no result"},
                ],
            },
            "without tool_result",
        ),
    ],
)
def test_the_anthropic_fake_rejects_what_the_api_rejects(body: dict[str, Any], problem: str) -> None:
    from fake_llm import validate_anthropic

    assert any(problem in p for p in validate_anthropic(body)), validate_anthropic(body)
