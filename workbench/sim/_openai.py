"""SGLang's OpenAI-compatible bodies: request checks and response shapes (pure; no I/O).

``/v1/completions`` and ``/v1/chat/completions`` as SGLang serves them
(``srt/entrypoints/openai/serving_completions.py``, ``serving_chat.py``,
``serving_base.py``, ``usage_processor.py`` and ``protocol.py`` of the 0.5.4, 0.5.9,
0.5.12 and 0.5.23 wheels; chat chunks of 0.5.12+ from ``_fast_sse_content`` /
``sse_utils.build_sse_content``). SGLang builds these from the same engine outputs as
``/generate``: the chunk id is ``meta_info.id`` (a bare 32-hex rid, no ``cmpl-``
prefix), each chunk's text is the delta of the cumulative text, and under speculation
one chunk carries every token of one verify round.

What SGLang checks and the simulator reproduces: ``max_tokens`` of a completion must be
> 0 (``CompletionRequest.validate_max_tokens_positive``, a request-validation 400 of
type ``"Bad Request"``); an empty prompt / message list (``_validate_request``, 400
``"BadRequestError"``); ``model`` is echoed, never checked against the served name,
except that ``base:adapter`` asks for a LoRA adapter, refused when LoRA is off.
Simulator limits (400 ``"BadRequestError"``, saying so): one prompt and one choice
per request (``n`` 1), ``max_tokens`` >= 1 for chat too, text-only messages.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

from workbench.sim._api_shapes import OpenAIShape

#: Completions' ``max_tokens`` default (``CompletionRequest``).
COMPLETION_DEFAULT_MAX_TOKENS = 16
#: Chat's default when neither max_tokens nor max_completion_tokens is given. SGLang then
#: generates until EOS or the context length; the simulator never samples EOS, so it
#: stops at SGLang's ``SamplingParams`` default instead (documented limit).
CHAT_DEFAULT_MAX_TOKENS = 128


@dataclasses.dataclass(frozen=True)
class OpenAIError(Exception):
    """A refused request: HTTP ``status`` with SGLang's ``ErrorResponse`` body."""

    status: int
    message: str
    type: str = "BadRequestError"

    def body(self) -> dict[str, Any]:
        """``{"object": "error", "message", "type", "param": null, "code"}`` (``ErrorResponse``)."""
        return {"object": "error", "message": self.message, "type": self.type, "param": None, "code": self.status}

    def stream_line(self) -> bytes:
        """The SSE line SGLang sends when a stream fails: ``data: {"error": {...}}``."""
        return b"data: " + json.dumps({"error": self.body()}).encode() + b"\n\n"


def _validation(message: str) -> OpenAIError:
    """A pydantic request-validation failure (``http_server.validation_exception_handler``)."""
    return OpenAIError(400, message, "Bad Request")


@dataclasses.dataclass(frozen=True)
class OpenAIRequest:
    """One checked OpenAI request, ready for the engine.

    Attributes:
        kind: ``"completion"`` or ``"chat"``.
        model: the request's ``model``, echoed in every chunk.
        prompt: prompt text (chat: after the template) or token ids.
        max_new_tokens: output tokens to generate.
        stream: SSE when True.
        include_usage: ``stream_options.include_usage``: a final usage chunk.
        continuous_usage: ``stream_options.continuous_usage_stats``: usage on every chunk.
        lora_adapter: the adapter a ``base:adapter`` model name asks for, else None.
        temperature: ``temperature`` (1.0 when absent: SGLang 0.5.9 ``CompletionRequest``'s default, and the
            chat default without a model generation config); with ``top_k`` it picks the acceptance regime.
        top_k: ``top_k``, or None.
    """

    kind: Literal["completion", "chat"]
    model: str
    prompt: str | list[int]
    max_new_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    lora_adapter: str | None = None
    temperature: float = 1.0
    top_k: int | None = None


def _sampling(body: dict[str, Any], name: str) -> dict[str, Any]:
    """``temperature`` and ``top_k`` of a request body, checked as pydantic would (numbers, an integer)."""
    temperature, top_k = body.get("temperature"), body.get("top_k")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
        raise _validation(f"1 validation error for {name}: temperature: Input should be a valid number")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
        raise _validation(f"1 validation error for {name}: top_k: Input should be a valid integer")
    return {"temperature": 1.0 if temperature is None else float(temperature), "top_k": top_k}


def _common(body: Any, name: str) -> tuple[str, bool, bool, bool, str | None]:
    if not isinstance(body, dict):
        raise _validation(f"1 validation error for {name}: Input should be a valid dictionary")
    model = body.get("model", "default")
    if not isinstance(model, str):
        raise _validation(f"1 validation error for {name}: model: Input should be a valid string")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _validation(f"1 validation error for {name}: stream: Input should be a valid boolean")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise _validation(f"1 validation error for {name}: stream_options: Input should be a valid dictionary")
    n = body.get("n", 1)
    if n != 1:
        raise OpenAIError(400, f"The simulator serves one choice per request (n=1), got n={n!r}")
    # serving_base._parse_model_parameter: 'base-model:adapter-name' selects a LoRA adapter.
    adapter = model.split(":", 1)[1].strip() or None if ":" in model else None
    return model, stream, bool(options.get("include_usage")), bool(options.get("continuous_usage_stats")), adapter


def _int_field(body: dict[str, Any], key: str, name: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _validation(f"1 validation error for {name}: {key}: Input should be a valid integer, got {value!r}")
    return value


def parse_completion(body: Any) -> OpenAIRequest:
    """Check a ``/v1/completions`` body (``CompletionRequest``) into an :class:`OpenAIRequest`.

    Raises:
        OpenAIError: what SGLang refuses, or what the simulator cannot serve.
    """
    name = "CompletionRequest"
    model, stream, usage, continuous, adapter = _common(body, name)
    if "prompt" not in body:
        raise _validation(f"1 validation error for {name}: prompt: Field required")
    prompt = body["prompt"]
    max_tokens = _int_field(body, "max_tokens", name)
    if max_tokens is None:
        max_tokens = COMPLETION_DEFAULT_MAX_TOKENS
    if max_tokens <= 0:
        raise _validation(f"1 validation error for {name}: max_tokens: Value error, max_tokens must be positive")
    if not prompt or (isinstance(prompt, list) and all(not p for p in prompt)):
        raise OpenAIError(400, "Prompt cannot be empty")
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        ids: str | list[int] = list(prompt)
    elif isinstance(prompt, str):
        ids = prompt
    elif isinstance(prompt, list):
        raise OpenAIError(400, "The simulator serves one prompt per request (a string or one list of token ids)")
    else:
        raise _validation(f"1 validation error for {name}: prompt: Input should be a valid string or list")
    return OpenAIRequest(
        "completion", model, ids, max_tokens, stream, usage, continuous, adapter, **_sampling(body, "CompletionRequest")
    )


def parse_chat(body: Any, *, template: ChatTemplate, context_length: int | None = None) -> OpenAIRequest:
    """Check a ``/v1/chat/completions`` body (``ChatCompletionRequest``) and apply the template.

    Raises:
        OpenAIError: what SGLang refuses, or what the simulator cannot serve.
    """
    name = "ChatCompletionRequest"
    model, stream, usage, continuous, adapter = _common(body, name)
    if "messages" not in body:
        raise _validation(f"1 validation error for {name}: messages: Field required")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _validation(f"1 validation error for {name}: messages: Input should be a valid list")
    if not messages:
        raise OpenAIError(400, "Messages cannot be empty.")
    turns = [_message_text(m, name) for m in messages]
    # ChatCompletionRequest.to_sampling_params: max_completion_tokens or max_tokens.
    max_tokens = _int_field(body, "max_completion_tokens", name) or _int_field(body, "max_tokens", name)
    if max_tokens is not None and context_length and max_tokens > context_length:
        raise OpenAIError(
            400,
            f"max_completion_tokens is too large: {max_tokens}."
            f"This model supports at most {context_length} completion tokens.",
        )
    if max_tokens is None:
        max_tokens = CHAT_DEFAULT_MAX_TOKENS
    if max_tokens < 0:
        raise OpenAIError(400, f"max_new_tokens must be at least 0, got {max_tokens}.")
    if max_tokens == 0:
        raise OpenAIError(400, "The simulator generates at least one token: max_tokens must be >= 1")
    return OpenAIRequest(
        "chat",
        model,
        template.render(turns),
        max_tokens,
        stream,
        usage,
        continuous,
        adapter,
        **_sampling(body, "ChatCompletionRequest"),
    )


def _message_text(message: Any, name: str) -> tuple[str, str]:
    if not isinstance(message, dict) or "role" not in message:
        raise _validation(f"1 validation error for {name}: messages: each message needs a role")
    content = message.get("content")
    if content is None:
        content = ""
    if isinstance(content, list):  # OpenAI content parts: only text parts are served
        if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
            raise OpenAIError(400, "The simulator serves text-only messages (content parts of type 'text')")
        content = "".join(str(p.get("text", "")) for p in content)
    if not isinstance(content, str):
        raise _validation(f"1 validation error for {name}: messages: content should be a string or a list")
    return str(message["role"]), content


def lora_error(adapter: str) -> OpenAIError:
    """What SGLang answers when a request names a LoRA adapter and LoRA is off
    (``tokenizer_manager._validate_and_resolve_lora``, 0.5.9)."""
    return OpenAIError(
        400,
        f"LoRA adapter '{adapter}' was requested, but LoRA is not enabled. Please launch the server with "
        "--enable-lora flag and preload adapters using --lora-paths or /load_lora_adapter endpoint.",
    )


class ChatTemplate:
    """Turns chat messages into one prompt string.

    The tokenizer directory's ``tokenizer_config.json`` ``chat_template`` (Jinja, as
    Hugging Face applies it, with ``add_generation_prompt=True``) when it has one;
    otherwise the simulator's plain template: one ``<role>: <content>`` line per
    message, a blank line between messages, then ``assistant:`` (the shipped
    ``data/tokenizer`` has no chat template).

    Args:
        tokenizer_dir: directory that may hold ``tokenizer_config.json``.
    """

    def __init__(self, tokenizer_dir: Path | None = None) -> None:
        self.source = "simple"
        self._jinja = None
        self._special: dict[str, Any] = {}
        config = Path(tokenizer_dir) / "tokenizer_config.json" if tokenizer_dir else None
        if config is not None and config.is_file():
            data = json.loads(config.read_text(encoding="utf-8"))
            template = data.get("chat_template")
            if isinstance(template, str) and template:
                import jinja2

                self._jinja = jinja2.Environment(undefined=jinja2.ChainableUndefined).from_string(template)
                self._special = {k: data.get(k) for k in ("bos_token", "eos_token")}
                self.source = str(config)

    def render(self, turns: list[tuple[str, str]]) -> str:
        """The prompt for ``turns`` (``(role, content)`` pairs)."""
        if self._jinja is not None:
            messages = [{"role": r, "content": c} for r, c in turns]
            return self._jinja.render(messages=messages, add_generation_prompt=True, **self._special)
        return "".join(f"{role}: {content}\n\n" for role, content in turns) + "assistant:"


# -- response bodies ----------------------------------------------------------------------
def usage(
    shape: OpenAIShape, prompt_tokens: int, completion_tokens: int, *, exclude_none: bool = False
) -> dict[str, Any]:
    """``UsageInfo`` as the version dumps it (``exclude_none`` for the completions usage chunk)."""
    out: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }
    if not exclude_none:
        out["prompt_tokens_details"] = None
    if shape.usage_reasoning_tokens:
        out["reasoning_tokens"] = 0
    if shape.usage_completion_details and not exclude_none:
        out["completion_tokens_details"] = None
    return out


def _finish(finish_reason: dict[str, Any] | None) -> tuple[str | None, Any]:
    if not finish_reason:
        return None, None
    return finish_reason["type"], finish_reason.get("matched")


def _metadata(shape: OpenAIShape, meta: dict[str, Any]) -> dict[str, Any]:
    out = {"weight_version": meta.get("weight_version", "default")}
    if shape.metadata_weight_versions and "weight_versions" in meta:
        out["weight_versions"] = meta["weight_versions"]
    return out


def _choice(field: str, value: Any, finish_reason: dict[str, Any] | None) -> dict[str, Any]:
    """The one choice of a response or chunk: ``value`` under ``field`` (``text``, ``delta``, ``message``)."""
    reason, matched = _finish(finish_reason)
    return {"index": 0, field: value, "logprobs": None, "finish_reason": reason, "matched_stop": matched}


def _head(rid: str, kind: str, created: int, model: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    """The fields every response and chunk opens with, ``object`` being ``kind``, then its choices."""
    return {"id": rid, "object": kind, "created": created, "model": model, "choices": choices}


def completion_chunk(
    shape: OpenAIShape,
    *,
    meta: dict[str, Any],
    created: int,
    model: str,
    delta: str,
    usage_now: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One streamed ``text_completion`` chunk (``CompletionStreamResponse``, all fields dumped)."""
    choice = _choice("text", delta, meta["finish_reason"])
    return {**_head(meta["id"], "text_completion", created, model, [choice]), "usage": usage_now}


def completion_usage_chunk(shape: OpenAIShape, *, meta: dict[str, Any], created: int, model: str) -> dict[str, Any]:
    """The final usage chunk of a completions stream (``model_dump_json(exclude_none=True)``)."""
    return {
        **_head(meta["id"], "text_completion", created, model, []),
        "usage": usage(shape, meta["prompt_tokens"], meta["completion_tokens"], exclude_none=True),
    }


def completion_response(
    shape: OpenAIShape, *, meta: dict[str, Any], created: int, model: str, text: str
) -> dict[str, Any]:
    """A non-streamed ``text_completion`` (``CompletionResponse``)."""
    choice = _choice("text", text, meta["finish_reason"])
    return {
        **_head(meta["id"], "text_completion", created, model, [choice]),
        "usage": usage(shape, meta["prompt_tokens"], meta["completion_tokens"]),
        "metadata": _metadata(shape, meta),
    }


def chat_chunk(
    shape: OpenAIShape,
    *,
    rid: str,
    created: int,
    model: str,
    role: str | None = None,
    content: str | None = None,
    finish_reason: dict[str, Any] | None = None,
    usage_now: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice, serialized as the version does."""
    if shape.chat_chunks == "msgspec":  # omit_defaults: role/content only when set; no null usage
        delta: dict[str, Any] = {"reasoning_content": None}
        if role is not None:
            delta["role"] = role
        if content is not None:
            delta["content"] = content
    else:
        delta = {"role": role, "content": content, "reasoning_content": None, "tool_calls": None}
    out = _head(rid, "chat.completion.chunk", created, model, [_choice("delta", delta, finish_reason)])
    if shape.chat_chunks == "pydantic" or usage_now is not None:
        out["usage"] = usage_now
    return out


def chat_usage_chunk(shape: OpenAIShape, *, meta: dict[str, Any], created: int, model: str) -> dict[str, Any]:
    """The final usage chunk of a chat stream (``ChatCompletionStreamResponse``, all fields dumped)."""
    return {
        **_head(meta["id"], "chat.completion.chunk", created, model, []),
        "usage": usage(shape, meta["prompt_tokens"], meta["completion_tokens"]),
    }


def chat_response(shape: OpenAIShape, *, meta: dict[str, Any], created: int, model: str, text: str) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` (``ChatCompletionResponse``)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "reasoning_content": None}
    if shape.message_tool_calls:
        message["tool_calls"] = None
    return {
        **_head(meta["id"], "chat.completion", created, model, [_choice("message", message, meta["finish_reason"])]),
        "usage": usage(shape, meta["prompt_tokens"], meta["completion_tokens"]),
        "metadata": _metadata(shape, meta),
    }


def sse(obj: Any) -> bytes:
    """``data: <compact JSON>\\n\\n``."""
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


#: The stream's last line.
SSE_DONE = b"data: [DONE]\n\n"
