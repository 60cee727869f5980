"""``/v1/completions`` and ``/v1/chat/completions`` of the simulated server (aiohttp handlers).

Each request is checked into an :class:`~workbench.sim._openai.OpenAIRequest`, submitted
to the engine as one request (``ignore_eos`` semantics: the simulator never samples EOS),
and its ``/generate`` chunks (:meth:`SimServer.chunks`) are turned into OpenAI bodies the
way SGLang's ``serving_completions.py`` / ``serving_chat.py`` turn the tokenizer
manager's outputs into them: the chunk text is the delta of the cumulative text, so
under speculation one chunk carries every token of one verify round. ``temperature``,
``top_p``, ``ignore_eos`` and the other sampling fields are accepted and have no effect
on the simulated output.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from workbench.sim import _openai as oa

if TYPE_CHECKING:
    from workbench.sim._server import SimServer


def add_routes(router: web.UrlDispatcher, server: SimServer) -> None:
    """Register both routes on ``router``, served by ``server``."""

    async def completions(http: web.Request) -> web.StreamResponse:
        return await _serve(http, server, "completion")

    async def chat(http: web.Request) -> web.StreamResponse:
        return await _serve(http, server, "chat")

    router.add_post("/v1/completions", completions)
    router.add_post("/v1/chat/completions", chat)


def _error(err: oa.OpenAIError) -> web.Response:
    return web.json_response(err.body(), status=err.status)


async def _serve(http: web.Request, server: SimServer, kind: str) -> web.StreamResponse:
    media = http.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":  # http_server.validate_json_request
        return _error(oa.OpenAIError(400, "Unsupported Media Type: Only 'application/json' is allowed", "Bad Request"))
    try:
        body = await http.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(oa.OpenAIError(400, "JSON decode error", "Bad Request"))
    try:
        if kind == "chat":
            req = oa.parse_chat(
                body, template=server.chat_template, context_length=server.config.args["context_length"]
            )
        else:
            req = oa.parse_completion(body)
    except oa.OpenAIError as err:
        return _error(err)
    if req.lora_adapter is not None:  # raised by the tokenizer manager, inside the stream when streaming
        lora = oa.lora_error(req.lora_adapter)
        if not req.stream:
            return _error(lora)
        resp = await _open_stream(http)
        await resp.write(lora.stream_line())
        await resp.write(oa.SSE_DONE)
        return resp
    prompt_tokens = len(req.prompt) if isinstance(req.prompt, list) else server.text.count_tokens(req.prompt)
    pending = server.submit(
        prompt_tokens, req.max_new_tokens, temperature=req.temperature, top_k=req.top_k, prompt=req.prompt
    )
    created = int(time.time())
    if not req.stream:
        try:
            out = await server.collect(pending)
        except BaseException:
            server.abort(pending)
            raise
        build = oa.chat_response if kind == "chat" else oa.completion_response
        return web.json_response(
            build(server.shape.openai, meta=out["meta_info"], created=created, model=req.model, text=out["text"])
        )
    resp = await _open_stream(http)
    chunks = server.chunks(pending)
    try:
        write = _chat_stream if kind == "chat" else _completion_stream
        await write(resp, chunks, server, req, created)
        await resp.write(oa.SSE_DONE)
    finally:
        await chunks.aclose()
    return resp


async def _open_stream(http: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(http)
    return resp


def _usage_now(server: SimServer, req: oa.OpenAIRequest, meta: dict[str, Any]) -> dict[str, Any] | None:
    if not req.continuous_usage:
        return None
    return oa.usage(server.shape.openai, meta["prompt_tokens"], meta["completion_tokens"])


async def _completion_stream(resp, chunks, server: SimServer, req: oa.OpenAIRequest, created: int) -> None:
    shape = server.shape.openai
    sent = 0
    meta: dict[str, Any] = {}
    async for body in chunks:
        meta, text = body["meta_info"], body["text"]
        delta, sent = text[sent:], len(text)
        await resp.write(
            oa.sse(
                oa.completion_chunk(
                    shape,
                    meta=meta,
                    created=created,
                    model=req.model,
                    delta=delta,
                    usage_now=_usage_now(server, req, meta),
                )
            )
        )
    if req.include_usage and meta:
        await resp.write(oa.sse(oa.completion_usage_chunk(shape, meta=meta, created=created, model=req.model)))


async def _chat_stream(resp, chunks, server: SimServer, req: oa.OpenAIRequest, created: int) -> None:
    shape = server.shape.openai
    sent = 0
    first = True
    meta: dict[str, Any] = {}
    async for body in chunks:
        meta, text = body["meta_info"], body["text"]
        if first:  # serving_chat: the first output of a choice opens with the role
            first = False
            await resp.write(
                oa.sse(
                    oa.chat_chunk(shape, rid=meta["id"], created=created, model=req.model, role="assistant", content="")
                )
            )
        delta, sent = text[sent:], len(text)
        if delta:
            await resp.write(
                oa.sse(
                    oa.chat_chunk(
                        shape,
                        rid=meta["id"],
                        created=created,
                        model=req.model,
                        content=delta,
                        usage_now=_usage_now(server, req, meta),
                    )
                )
            )
    if not meta:
        return
    await resp.write(
        oa.sse(
            oa.chat_chunk(shape, rid=meta["id"], created=created, model=req.model, finish_reason=meta["finish_reason"])
        )
    )
    if req.include_usage:
        await resp.write(oa.sse(oa.chat_usage_chunk(shape, meta=meta, created=created, model=req.model)))
