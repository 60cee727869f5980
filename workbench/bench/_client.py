"""One streaming ``POST /generate`` request, measured (the thin I/O shell).

The request body is SGLang's native one (``GenerateReqInput``, ``srt/managers/io_struct.py``, 0.4.6-0.5.23)::

    {"text": prompt,
     "sampling_params": {"max_new_tokens": N, "temperature": 0.0, "ignore_eos": true},
     "stream": true}

The body is read with :meth:`aiohttp.StreamReader.iter_any`, so each network read
is timestamped as it arrives, decoded by the one :class:`~workbench.bench._sse.SSEDecoder`
and accounted by :class:`~workbench.bench._record.StreamAccumulator`, where all the
timing rules live. Transport failures, HTTP errors, error chunks, malformed streams
and timeouts become a :class:`~workbench.bench._record.RequestRecord` with
``error_type``/``error`` set; they are never raised, so one bad request cannot end
a benchmark level. Cancellation (``asyncio.CancelledError``) and programming errors
propagate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from workbench.bench._record import RequestRecord, StreamAccumulator
from workbench.bench._sse import SSEDecoder
from workbench.bench._timing import Timebase

__all__ = ["build_generate_body", "send_generate", "DEFAULT_REQUEST_TIMEOUT_S"]

#: Default whole-request limit in wall seconds (connect + all of the stream).
DEFAULT_REQUEST_TIMEOUT_S = 600.0

#: How much of an HTTP error body is quoted in the row's ``error`` (characters).
ERROR_BODY_CHARS = 500


def build_generate_body(
    prompt: str,
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    extra_sampling_params: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming ``/generate`` request.

    Args:
        prompt: the prompt text (sent as ``text``; the server tokenizes it).
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
    body: dict[str, Any] = {"text": prompt, "sampling_params": sampling, "stream": True}
    body.update(extra_body or {})
    return body


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
    """Send one streaming ``/generate`` request and measure it.

    Args:
        session: the run's shared session (one per run; never one per request).
        base_url: server root such as ``http://127.0.0.1:30000`` (no trailing ``/generate``).
        prompt: prompt text.
        max_new_tokens: output tokens to ask for (``ignore_eos`` is on).
        timebase: clock and anchors for the row's times; default: a new
            :meth:`Timebase.start` (``time.perf_counter``, scale 1.0).
        timeout_s: whole-request limit in wall seconds (None: no limit). Past it the
            row gets ``error_type="TimeoutError"``.
        prompt_id: copied to the row.
        extra_sampling_params: see :func:`build_generate_body`.
        extra_body: see :func:`build_generate_body`.

    Returns:
        The measured :class:`RequestRecord`; ``record.error`` is None on success.
    """
    tb = timebase or Timebase.start()
    body = build_generate_body(prompt, max_new_tokens=max_new_tokens,
                               extra_sampling_params=extra_sampling_params, extra_body=extra_body)
    url = base_url.rstrip("/") + "/generate"
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    start = tb.now()
    acc = StreamAccumulator(tb, start, prompt_id=prompt_id, max_new_tokens=max_new_tokens)
    try:
        async with session.post(url, json=body, timeout=timeout) as resp:
            acc.set_http_status(resp.status)
            if resp.status != 200:
                text = await resp.text(errors="replace")
                acc.fail("HTTPStatusError", _http_error_message(resp.status, resp.reason, text), tb.now())
                return acc.finish(tb.now())
            decoder = SSEDecoder()
            async for data in resp.content.iter_any():
                t = tb.now()
                for event in decoder.feed(data):
                    acc.on_event(event, t)
            t = tb.now()
            for event in decoder.close():
                acc.on_event(event, t)
    except (asyncio.TimeoutError, TimeoutError):  # distinct classes before Python 3.11
        acc.fail("TimeoutError", f"no complete response from {url} within {timeout_s} s (wall)", tb.now())
    except (aiohttp.ClientError, OSError) as exc:
        acc.fail(type(exc).__name__, f"{url}: {exc}" if str(exc) else url, tb.now())
    return acc.finish(tb.now())

