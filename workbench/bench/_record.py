"""Per-request measurement: the pure core of the streaming client.

:class:`StreamAccumulator` turns the timed events of one ``/generate`` stream into a
:class:`RequestRecord` (one row of ``requests.parquet``). It does no I/O and reads
no clock: the client hands it ``(event, raw clock reading)`` pairs, so every timing
rule lives here and is tested with scripted timestamps.

Definitions (sglang ``bench_serving.py`` 0.5.x, ``async_request_sglang_generate``
and ``calculate_metrics``; ``sglang/bench_serving.py`` in 0.5.9):

- The request starts just before the HTTP POST is issued.
- A *content chunk* is a chunk with non-empty ``text`` that is either the first such
  chunk or raises ``meta_info.completion_tokens``; chunks adding no tokens are not
  content chunks (bench_serving skips them too).
- ``ttft_ms``: start to the first content chunk.
- ``itl_ms``: gaps between consecutive content chunks (one entry per gap, so
  ``len(itl_ms) == len(tokens_per_chunk) - 1``). bench_serving instead reports each
  gap divided by the chunk's new tokens, repeated per token; that figure is derived
  from ``itl_ms`` and ``tokens_per_chunk`` in :mod:`workbench.bench._metrics`.
- ``tokens_per_chunk``: completion_tokens added by each content chunk (the first
  entry is completion_tokens at the first content chunk).
- ``e2e_ms``: start to the last event received (the ``[DONE]`` sentinel normally).
- ``tpot_ms``: ``(e2e_ms - ttft_ms) / (output_tokens - 1)``; NaN when fewer than 2 tokens.
- ``output_tokens``: ``meta_info.completion_tokens`` of the last chunk.
- ``accept_length``: ``output_tokens / spec_verify_ct`` (SGLang's own formula for
  ``spec_accept_length``, bonus and prefill tokens included); NaN when the server
  sent no ``spec_verify_ct`` (not speculative) or it is 0.
- ``meta_spec_accept_length``: the server's ``meta_info.spec_accept_length`` (0.5.4+),
  for cross-checking; NaN when absent or when ``spec_verify_ct`` is missing or 0.

Missing values are NaN (floats) or None (ints, strings), never 0.

This module needs only the standard library (the host-side load generator imports
it where pandas may be absent); the pandas table of records is built by
:func:`workbench.bench._frames.records_to_frame`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from workbench.bench._sse import StreamEvent
from workbench.bench._timing import Timebase

__all__ = ["RequestRecord", "StreamAccumulator", "REQUEST_DTYPES", "record_from_json", "record_to_json"]

NAN = float("nan")


@dataclasses.dataclass
class RequestRecord:
    """One measured request (one row of the requests table).

    Durations are engine-time milliseconds (wall time x ``time_scale``). ``*_epoch_s``
    are real Unix seconds; ``start_s``/``end_s`` are engine-time seconds since the
    run's origin. For a failed request the timings measured before the failure are
    kept (``e2e_ms`` then ends at the failure) and ``error`` says what happened.
    """

    request_index: int | None = None
    prompt_id: str | None = None
    prompt_category: str | None = None
    max_new_tokens: int | None = None
    rid: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    num_chunks: int = 0
    ttft_ms: float = NAN
    e2e_ms: float = NAN
    tpot_ms: float = NAN
    itl_ms: list[float] = dataclasses.field(default_factory=list)
    tokens_per_chunk: list[int] = dataclasses.field(default_factory=list)
    spec_verify_ct: int | None = None
    accept_length: float = NAN
    meta_spec_accept_length: float = NAN
    server_e2e_ms: float = NAN
    start_epoch_s: float = NAN
    end_epoch_s: float = NAN
    start_s: float = NAN
    end_s: float = NAN
    time_scale: float = 1.0

    @property
    def ok(self) -> bool:
        """True when the request completed without error."""
        return self.error is None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_nan(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return NAN


class StreamAccumulator:
    """Collects the timed events of one stream and builds its :class:`RequestRecord`.

    Args:
        timebase: converts raw clock readings to row values.
        start: raw clock reading taken just before the request was sent.
        prompt_id: id of the prompt sent (copied to the record).
        max_new_tokens: requested output length (copied to the record).
    """

    def __init__(self, timebase: Timebase, start: float, *, prompt_id: str | None = None,
                 max_new_tokens: int | None = None) -> None:
        self._tb = timebase
        self._start = start
        self._rec = RequestRecord(prompt_id=prompt_id, max_new_tokens=max_new_tokens,
                                  time_scale=timebase.time_scale)
        self._last_event_t: float | None = None
        self._first_content_t: float | None = None
        self._last_content_t = 0.0  # valid once _first_content_t is set
        self._last_ct = 0
        self._content_gaps: list[float] = []  # raw clock seconds
        self._meta: dict[str, Any] | None = None
        self._done = False
        self._failed_at: float | None = None

    @property
    def done(self) -> bool:
        """True once ``[DONE]`` was seen or the request failed (later events are ignored)."""
        return self._done or self._rec.error is not None

    def fail(self, error_type: str, message: str, t: float, *, http_status: int | None = None) -> None:
        """Mark the request failed at raw reading ``t`` (the first failure wins)."""
        if http_status is not None and self._rec.http_status is None:
            self._rec.http_status = http_status
        if self._rec.error is None:
            self._rec.error_type = error_type
            self._rec.error = message
            self._failed_at = t

    def set_http_status(self, status: int) -> None:
        """Record the HTTP status of the response."""
        self._rec.http_status = status

    def on_event(self, event: StreamEvent, t: float) -> None:
        """Account one decoded event received at raw clock reading ``t``."""
        if self.done:
            return
        self._last_event_t = t
        if event.kind == "done":
            self._done = True
        elif event.kind == "error":
            self.fail("StreamError", event.error_message(), t)
        elif event.kind == "invalid":
            self.fail("StreamProtocolError", f"{event.problem}: {event.raw[:200]!r}", t)
        else:
            self._on_chunk(event.data or {}, t)

    def _on_chunk(self, chunk: dict[str, Any], t: float) -> None:
        meta = chunk.get("meta_info")
        ct = meta.get("completion_tokens") if isinstance(meta, dict) else None
        if _int_or_none(ct) is None:
            self.fail("StreamProtocolError", "chunk without an integer meta_info.completion_tokens", t)
            return
        text = chunk.get("text")
        if text is not None and not isinstance(text, str):
            self.fail("StreamProtocolError", f"chunk text is {type(text).__name__}, expected str", t)
            return
        self._meta = meta
        if not text:
            return
        if self._first_content_t is None:
            self._first_content_t = self._last_content_t = t
            self._rec.tokens_per_chunk.append(ct)
            self._last_ct = ct
            return
        delta = ct - self._last_ct
        if delta < 0:
            self.fail("StreamProtocolError", f"completion_tokens went down from {self._last_ct} to {ct}", t)
        elif delta > 0:
            self._content_gaps.append(t - self._last_content_t)
            self._rec.tokens_per_chunk.append(delta)
            self._last_ct = ct
            self._last_content_t = t

    def finish(self, t: float) -> RequestRecord:
        """Close the record at raw reading ``t`` (end of the response body) and return it.

        A stream that ended without ``[DONE]`` still counts as complete when its last
        chunk carried a finish_reason; otherwise it is an ``IncompleteStream`` error.
        A finish_reason of type ``abort`` is an ``Aborted`` error.
        """
        rec, tb, meta = self._rec, self._tb, self._meta
        last = self._last_event_t if self._last_event_t is not None else t
        if rec.error is None and not self._done and (meta is None or meta.get("finish_reason") is None):
            self.fail("IncompleteStream", "response ended before [DONE] and without a finish_reason", t)
        if meta is not None:
            rec.rid = meta.get("id") if isinstance(meta.get("id"), str) else None
            rec.prompt_tokens = _int_or_none(meta.get("prompt_tokens"))
            rec.cached_tokens = _int_or_none(meta.get("cached_tokens"))
            rec.output_tokens = _int_or_none(meta.get("completion_tokens"))
            rec.server_e2e_ms = _float_or_nan(meta.get("e2e_latency")) * 1000.0
            rec.meta_spec_accept_length = _float_or_nan(meta.get("spec_accept_length"))
            rec.spec_verify_ct = _int_or_none(meta.get("spec_verify_ct"))
            finish = meta.get("finish_reason")
            if isinstance(finish, dict):
                rec.finish_reason = str(finish.get("type"))
                if finish.get("type") == "abort" and rec.error is None:
                    self.fail("Aborted", str(finish.get("message", "request aborted by the server")), last,
                              http_status=_int_or_none(finish.get("status_code")))
            elif isinstance(finish, str):
                rec.finish_reason = finish
        end = self._failed_at if self._failed_at is not None else last
        rec.num_chunks = len(rec.tokens_per_chunk)
        rec.itl_ms = [g * 1000.0 * tb.time_scale for g in self._content_gaps]
        if self._first_content_t is not None:
            rec.ttft_ms = tb.duration_ms(self._start, self._first_content_t)
        rec.e2e_ms = tb.duration_ms(self._start, end)
        out = rec.output_tokens
        if out is not None and out >= 2 and not math.isnan(rec.ttft_ms):
            rec.tpot_ms = (rec.e2e_ms - rec.ttft_ms) / (out - 1)
        if rec.spec_verify_ct and out is not None:
            rec.accept_length = out / rec.spec_verify_ct
        else:  # SGLang 0.5.4 writes spec_accept_length 0 for non-speculative requests: not a value
            rec.meta_spec_accept_length = NAN
        rec.start_epoch_s, rec.end_epoch_s = tb.epoch_s(self._start), tb.epoch_s(end)
        rec.start_s, rec.end_s = tb.run_s(self._start), tb.run_s(end)
        return rec


#: pandas dtypes of the record's columns, as names (nullable ints, NaN floats, ``str``
#: text, Python lists for ``itl_ms`` and ``tokens_per_chunk``).
REQUEST_DTYPES: dict[str, str] = {
    "request_index": "Int64",
    "prompt_id": "str",
    "prompt_category": "str",
    "max_new_tokens": "Int64",
    "rid": "str",
    "http_status": "Int64",
    "error_type": "str",
    "error": "str",
    "finish_reason": "str",
    "prompt_tokens": "Int64",
    "cached_tokens": "Int64",
    "output_tokens": "Int64",
    "num_chunks": "int64",
    "ttft_ms": "float64",
    "e2e_ms": "float64",
    "tpot_ms": "float64",
    "itl_ms": "object",
    "tokens_per_chunk": "object",
    "spec_verify_ct": "Int64",
    "accept_length": "float64",
    "meta_spec_accept_length": "float64",
    "server_e2e_ms": "float64",
    "start_epoch_s": "float64",
    "end_epoch_s": "float64",
    "start_s": "float64",
    "end_s": "float64",
    "time_scale": "float64",
}


_FLOAT_FIELDS = frozenset(name for name, dtype in REQUEST_DTYPES.items() if dtype == "float64")


def record_to_json(record: RequestRecord) -> dict[str, Any]:
    """The record as a JSON-ready dict: every field, NaN floats as None (JSON ``null``).

    :func:`record_from_json` inverts it exactly (floats round-trip through JSON text).
    """
    out = dataclasses.asdict(record)
    for name in _FLOAT_FIELDS:
        if isinstance(out[name], float) and math.isnan(out[name]):
            out[name] = None
    return out


def record_from_json(obj: Mapping[str, Any]) -> RequestRecord:
    """The :class:`RequestRecord` of a :func:`record_to_json` dict (``null`` floats become NaN).

    Raises:
        ValueError: ``obj`` has keys that are not record fields.
    """
    unknown = set(obj) - set(REQUEST_DTYPES)
    if unknown:
        raise ValueError(f"not RequestRecord fields: {sorted(unknown)}")
    values = {name: (NAN if name in _FLOAT_FIELDS and value is None else value) for name, value in obj.items()}
    for name in ("itl_ms", "tokens_per_chunk"):
        if name in values:
            values[name] = list(values[name])
    return RequestRecord(**values)
