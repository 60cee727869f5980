"""One streaming request, measured (the thin I/O shell): ``/generate``, ``/v1/completions`` or ``/v1/chat/completions``.

The ``/generate`` body is SGLang's native one (``GenerateReqInput``, ``srt/managers/io_struct.py``, 0.4.6-0.5.23)::

    {"text": prompt,            # or "input_ids": [token ids]
     "sampling_params": {"max_new_tokens": N, "temperature": 0.0, "ignore_eos": true},
     "stream": true}

The OpenAI-compatible bodies (``srt/entrypoints/openai/protocol.py``, 0.5.x) ask for usage
on every chunk, so tokens per chunk are known (``stream_options.continuous_usage_stats``),
and in a final chunk (``include_usage``); ``ignore_eos`` is SGLang's extension field::

    {"model": M, "prompt": prompt or [token ids], "max_tokens": N, "temperature": 0.0,
     "ignore_eos": true, "stream": true,
     "stream_options": {"include_usage": true, "continuous_usage_stats": true}}
    {"model": M, "messages": [{"role": "user", "content": prompt}], ... the same}

The body is read with :meth:`aiohttp.StreamReader.iter_any`, so each network read
is timestamped as it arrives (with the kernel's receive stamp where the run's session
made the socket, :mod:`workbench.bench._rxstamp`; else when the loop hands it over), decoded by the one :class:`~workbench.bench._sse.SSEDecoder`
and accounted by :class:`~workbench.bench._record.StreamAccumulator` one read at a
time (the chunks of one read share its arrival time), where all the timing rules live. Transport failures, HTTP errors, error chunks, malformed streams
and timeouts become a :class:`~workbench.bench._request_record.RequestRecord` with
``error_type``/``error`` set; they are never raised, so one bad request cannot end
a benchmark level. Cancellation (``asyncio.CancelledError``) and programming errors
propagate.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiohttp

from workbench.bench._record import StreamAccumulator
from workbench.bench._request_record import RequestRecord
from workbench.bench._rxstamp import ArrivalClock, socket_of
from workbench.bench._sse import SSEDecoder, StreamEvent
from workbench.bench._timing import Timebase

__all__ = [
    "ROUTES",
    "build_generate_body",
    "build_request_body",
    "send_generate",
    "send_request",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "error_kind_of",
]

#: The route of each backend (:data:`workbench.bench._record.BACKENDS`).
ROUTES: dict[str, str] = {"generate": "/generate", "completions": "/v1/completions", "chat": "/v1/chat/completions"}

#: Called with ``(events of one read, raw clock reading)`` for every read of a stream.
ReadObserver = Callable[[list[StreamEvent], float], None]

#: Default whole-request limit in wall seconds (connect + all of the stream).
DEFAULT_REQUEST_TIMEOUT_S = 600.0

#: How much of an HTTP error body is quoted in the row's ``error`` (characters).
ERROR_BODY_CHARS = 500


def build_generate_body(
    prompt: str | None,
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    extra_sampling_params: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
    input_ids: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming ``/generate`` request.

    Args:
        prompt: the prompt text (sent as ``text``; the server tokenizes it); ignored
            when ``input_ids`` is given.
        input_ids: token ids sent as ``input_ids`` instead of text (random-token prompts).
        max_new_tokens: output length; with ``ignore_eos`` the server generates exactly this many.
        temperature: sampling temperature (0.0: greedy, as bench_serving's default).
        ignore_eos: keep generating past EOS so every request has the same length.
        extra_sampling_params: merged into ``sampling_params`` (SGLang 0.5.23 rejects unknown keys).
        extra_body: merged into the top level (unknown top-level keys are ignored by SGLang).

    Returns:
        A dict ready for ``json=``.
    """
    sampling: dict[str, Any] = {
        "max_new_tokens": int(max_new_tokens),
        "temperature": float(temperature),
        "ignore_eos": bool(ignore_eos),
    }
    sampling.update(extra_sampling_params or {})
    body: dict[str, Any] = {"input_ids": list(input_ids)} if input_ids is not None else {"text": prompt}
    body.update({"sampling_params": sampling, "stream": True})
    body.update(extra_body or {})
    return body


def build_request_body(
    backend: str,
    prompt: str | None,
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    model: str = "default",
    input_ids: Sequence[int] | None = None,
    extra_sampling_params: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming request to ``backend``'s route (:data:`ROUTES`).

    Args:
        backend: ``"generate"``, ``"completions"`` or ``"chat"``.
        prompt: prompt text (chat: the one user message).
        max_new_tokens: output length (``max_tokens`` on the OpenAI routes).
        temperature: sampling temperature. ignore_eos: keep generating past EOS.
        model: the OpenAI ``model`` field (SGLang serves one model; its default name is
            ``"default"``); unused by ``/generate``.
        input_ids: token ids instead of text (``/generate``: ``input_ids``; completions:
            ``prompt`` as a token list; chat takes no token ids).
        extra_sampling_params: ``/generate``: merged into ``sampling_params``; OpenAI
            routes: merged into the top level (where SGLang reads sampling fields).
        extra_body: merged into the top level.

    Raises:
        ValueError: unknown backend, or token ids for the chat route.
    """
    if backend == "generate":
        return build_generate_body(
            prompt,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            ignore_eos=ignore_eos,
            extra_sampling_params=extra_sampling_params,
            extra_body=extra_body,
            input_ids=input_ids,
        )
    if backend not in ROUTES:
        raise ValueError(f"backend must be one of {list(ROUTES)}, got {backend!r}")
    body: dict[str, Any] = {"model": model}
    if backend == "chat":
        if input_ids is not None:
            raise ValueError(
                "the chat route takes messages, not token ids; send random-token prompts to "
                "backend 'generate' or 'completions'"
            )
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = list(input_ids) if input_ids is not None else prompt
    body.update(
        {
            "max_tokens": int(max_new_tokens),
            "temperature": float(temperature),
            "ignore_eos": bool(ignore_eos),
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
    )
    body.update(extra_sampling_params or {})
    body.update(extra_body or {})
    return body


def error_kind_of(exc: BaseException) -> str:
    """The ``error_kind`` of a transport exception (:data:`workbench.bench._request_record.ERROR_KINDS`)."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connect"
    if isinstance(
        exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError, ConnectionError)
    ):
        return "disconnect"
    return "client_error"


def _http_error_message(status: int, reason: str | None, body: str) -> str:
    """``HTTP 500 Internal Server Error: <message>``, taking SGLang's ``error.message`` when present."""
    detail = body.strip()
    try:
        obj = json.loads(detail)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail"))
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            detail = err["message"]
        elif isinstance(err, str):
            detail = err
    return f"HTTP {status} {reason or ''}".rstrip() + (f": {detail[:ERROR_BODY_CHARS]}" if detail else "")


async def send_request(
    session: aiohttp.ClientSession,
    base_url: str,
    prompt: str | None,
    *,
    max_new_tokens: int,
    backend: str = "generate",
    timebase: Timebase | None = None,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    prompt_id: str | None = None,
    input_ids: Sequence[int] | None = None,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    model: str = "default",
    extra_sampling_params: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
    due: float | None = None,
    observer: ReadObserver | None = None,
) -> RequestRecord:
    """Send one streaming request to ``backend``'s route and measure it.

    Args:
        session: the run's shared session (one per run; never one per request).
        base_url: server root such as ``http://127.0.0.1:30000`` (no route).
        prompt: prompt text (None with ``input_ids``).
        max_new_tokens: output tokens to ask for.
        backend: ``"generate"`` (default), ``"completions"`` or ``"chat"`` (:data:`ROUTES`).
        timebase: clock and anchors for the row's times; default: a new
            :meth:`Timebase.start` (``time.perf_counter``, scale 1.0).
        timeout_s: whole-request limit in wall seconds (None: no limit). Past it the
            row gets ``error_type="TimeoutError"``, ``error_kind="timeout"``.
        prompt_id: copied to the row.
        input_ids, temperature, ignore_eos, model, extra_sampling_params, extra_body:
            see :func:`build_request_body`.
        due: raw ``timebase`` clock reading at which the request was due (its
            ``client_wait_ms`` runs from there to the send); None: not known.
        observer: called with every read's events and its raw clock reading (after the
            accumulator took them), e.g. to compare arrival with server emission times.

    Returns:
        The measured :class:`RequestRecord`; ``record.error`` is None on success.

    Raises:
        ValueError: a body that cannot be built (see :func:`build_request_body`).
    """
    tb = timebase or Timebase.start()
    body = build_request_body(
        backend,
        prompt,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        ignore_eos=ignore_eos,
        model=model,
        input_ids=input_ids,
        extra_sampling_params=extra_sampling_params,
        extra_body=extra_body,
    )
    url = base_url.rstrip("/") + ROUTES[backend]
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    kernel_ok = tb.clock is time.perf_counter  # stamps map onto the real clock only (tests script theirs)
    start = tb.now()
    acc = StreamAccumulator(tb, start, prompt_id=prompt_id, max_new_tokens=max_new_tokens, backend=backend, due=due)
    try:
        async with session.post(url, json=body, timeout=timeout) as resp:
            acc.set_http_status(resp.status)
            if resp.status != 200:
                text = await resp.text(errors="replace")
                acc.fail(
                    "HTTPStatusError", _http_error_message(resp.status, resp.reason, text), tb.now(), kind="http_status"
                )
                return acc.finish(tb.now())
            decoder = SSEDecoder()
            stamps = ArrivalClock(
                socket_of(resp.connection and resp.connection.transport) if kernel_ok else None, tb.clock, start
            )
            async for data in resp.content.iter_any():
                t, kernel = stamps.arrival(tb.now())
                events = decoder.feed(data)
                acc.on_read(events, t, kernel=kernel)
                if observer is not None:
                    observer(events, t)
            t = tb.now()
            acc.on_read(decoder.close(), t)
    except (asyncio.TimeoutError, TimeoutError) as exc:  # distinct classes before Python 3.11
        acc.fail(
            "TimeoutError",
            f"no complete response from {url} within {timeout_s} s (wall)",
            tb.now(),
            kind=error_kind_of(exc),
        )
    except (aiohttp.ClientError, OSError) as exc:
        acc.fail(type(exc).__name__, f"{url}: {exc}" if str(exc) else url, tb.now(), kind=error_kind_of(exc))
    return acc.finish(tb.now())


async def send_generate(
    session: aiohttp.ClientSession,
    base_url: str,
    prompt: str,
    *,
    max_new_tokens: int,
    timebase: Timebase | None = None,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    prompt_id: str | None = None,
    extra_sampling_params: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> RequestRecord:
    """Send one streaming ``/generate`` request and measure it (:func:`send_request` with
    ``backend="generate"``, temperature 0, ``ignore_eos``; the arguments mean the same)."""
    return await send_request(
        session,
        base_url,
        prompt,
        max_new_tokens=max_new_tokens,
        timebase=timebase,
        timeout_s=timeout_s,
        prompt_id=prompt_id,
        extra_sampling_params=extra_sampling_params,
        extra_body=extra_body,
    )
