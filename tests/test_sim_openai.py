"""The simulator's OpenAI-compatible routes, driven by the official ``openai`` client and raw SSE."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import openai
import pytest

from workbench.servers import ServerHandle
from workbench.sim._openai import ChatTemplate
from workbench.variants import load_variant

OPTIONS = {"profile": "seed-pcie-8gpu", "time-scale": 20, "seed": 3}
MODEL = "meta-llama/Llama-3.3-70B-Instruct"


def _start(api_version: str | None = None):
    options = dict(OPTIONS, **({"api-version": api_version} if api_version else {}))
    return ServerHandle.start(load_variant("eagle3-topk4"), host="local", engine="sim", sim_options=options)


@pytest.fixture(scope="module")
def server059():
    with _start() as handle:
        yield handle


@pytest.fixture(scope="module")
def server0523():
    with _start("0.5.23") as handle:
        yield handle


def _client(handle) -> openai.OpenAI:
    return openai.OpenAI(base_url=handle.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _sse(url: str, body: dict) -> list:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        raw = resp.read().decode()
    assert raw.endswith("data: [DONE]\n\n")
    return [json.loads(b[len("data: ") :]) for b in raw.split("\n\n") if b.startswith("data: {")]


def test_completions_with_the_openai_client(server059) -> None:
    client = _client(server059)
    reply = client.completions.create(
        model=MODEL, prompt="def parse_csv(path):", max_tokens=20, temperature=0, extra_body={"ignore_eos": True}
    )
    assert re.fullmatch(r"[0-9a-f]{32}", reply.id) and reply.object == "text_completion" and reply.model == MODEL
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and choice.text
    assert reply.usage.completion_tokens == 20 and reply.usage.total_tokens == reply.usage.prompt_tokens + 20
    assert reply.to_dict()["metadata"] == {"weight_version": "default"}

    stream = client.completions.create(
        model=MODEL, prompt="def parse_csv(path):", max_tokens=48, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    usage = chunks[-1]
    assert usage.choices == [] and usage.usage.completion_tokens == 48
    content = chunks[:-1]
    assert all(c.id == usage.id for c in content) and content[-1].choices[0].finish_reason == "length"
    assert all(c.choices[0].finish_reason is None for c in content[:-1])
    assert len(content) < 48  # speculation: several tokens per chunk, as in /generate


def test_completions_stream_continuous_usage_shows_multi_token_chunks(server059) -> None:
    chunks = _sse(
        server059.url + "/v1/completions",
        {
            "model": MODEL,
            "prompt": [1, 2, 3, 4],
            "max_tokens": 40,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        },
    )
    content, last = chunks[:-1], chunks[-1]
    assert list(content[0]) == ["id", "object", "created", "model", "choices", "usage"]
    assert list(content[0]["choices"][0]) == ["index", "text", "logprobs", "finish_reason", "matched_stop"]
    tokens = [c["usage"]["completion_tokens"] for c in content]
    assert tokens[-1] == 40 and max(b - a for a, b in zip(tokens, tokens[1:])) > 1
    assert content[0]["usage"]["prompt_tokens"] == 4
    # the final usage chunk is dumped with exclude_none: no prompt_tokens_details
    assert last["choices"] == [] and last["usage"] == {
        "prompt_tokens": 4,
        "total_tokens": 44,
        "completion_tokens": 40,
        "reasoning_tokens": 0,
    }


def test_chat_with_the_openai_client(server059) -> None:
    client = _client(server059)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
    reply = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=12)
    assert reply.object == "chat.completion" and reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 12
    prompt = ChatTemplate().render([("system", "Be brief."), ("user", "Say hello.")])
    assert prompt == "system: Be brief.\n\nuser: Say hello.\n\nassistant:"
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, max_completion_tokens=30, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    assert chunks[-2].choices[0].finish_reason == "length" and chunks[-2].choices[0].delta.content is None
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 30
    text = "".join(c.choices[0].delta.content or "" for c in chunks[1:-2])
    assert text and len(chunks) - 3 < 30


def test_chat_chunk_shapes_by_version(server059, server0523) -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    old = _sse(server059.url + "/v1/chat/completions", body)  # 0.5.9: pydantic, every field
    assert old[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
        "reasoning_content": None,
        "tool_calls": None,
    }
    assert old[1]["usage"] is None and old[1]["choices"][0]["delta"]["role"] is None
    assert old[-2]["choices"][0]["delta"] == {
        "role": None,
        "content": None,
        "reasoning_content": None,
        "tool_calls": None,
    }
    assert list(old[-1]["usage"]) == [
        "prompt_tokens",
        "total_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "reasoning_tokens",
    ]
    new = _sse(server0523.url + "/v1/chat/completions", body)  # 0.5.23: msgspec chunks
    assert list(new[0]) == ["id", "object", "created", "model", "choices"]
    assert new[0]["choices"][0]["delta"] == {"reasoning_content": None, "role": "assistant", "content": ""}
    assert list(new[1]["choices"][0]["delta"]) == ["reasoning_content", "content"]
    assert new[-2]["choices"][0] == {
        "index": 0,
        "delta": {"reasoning_content": None},
        "logprobs": None,
        "finish_reason": "length",
        "matched_stop": None,
    }
    assert new[-1]["usage"]["completion_tokens"] == 8 and "completion_tokens_details" in new[-1]["usage"]
    raw = _client(server0523).chat.completions.with_raw_response.create(
        model=MODEL, messages=body["messages"], max_tokens=4
    )
    reply = json.loads(raw.text)  # raw: the openai types declare metadata as str -> str
    assert list(reply["choices"][0]["message"]) == ["role", "content", "reasoning_content"]  # no null tool_calls
    assert reply["metadata"] == {
        "weight_version": "default",
        "weight_versions": [{"version": "default", "start": 0, "end": 4}],
    }


def test_errors_in_sglang_openai_shape(server059) -> None:
    client = _client(server059)
    with pytest.raises(openai.BadRequestError) as err:
        client.completions.create(model=MODEL, prompt="x", max_tokens=0)
    assert err.value.status_code == 400
    assert err.value.body == {
        "object": "error",
        "message": err.value.body["message"],
        "type": "Bad Request",
        "param": None,
        "code": 400,
    }
    assert "max_tokens must be positive" in err.value.body["message"]
    with pytest.raises(openai.BadRequestError, match="Messages cannot be empty"):
        client.chat.completions.create(model=MODEL, messages=[])
    with pytest.raises(openai.BadRequestError, match="Prompt cannot be empty"):
        client.completions.create(model=MODEL, prompt="")
    # SGLang never checks `model` against the served name (it is echoed) ...
    assert client.completions.create(model="no-such-model", prompt="x", max_tokens=2).model == "no-such-model"
    # ... but 'base:adapter' asks for a LoRA adapter, refused when LoRA is off.
    with pytest.raises(openai.BadRequestError, match="LoRA adapter 'nope' was requested, but LoRA is not enabled"):
        client.completions.create(model=f"{MODEL}:nope", prompt="x", max_tokens=2)
    req = urllib.request.Request(
        server059.url + "/v1/completions",
        data=b"prompt=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with pytest.raises(urllib.error.HTTPError) as http_err:
        urllib.request.urlopen(req, timeout=30)
    assert http_err.value.code == 400 and "application/json" in json.loads(http_err.value.read())["message"]
