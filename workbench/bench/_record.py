"""Per-request measurement: the pure core of the streaming client.

:class:`StreamAccumulator` turns the timed network reads of one stream into a
:class:`RequestRecord` (one row of ``requests.parquet``). It does no I/O and reads
no clock: the client hands it ``(events of one read, raw clock reading)`` pairs, so
every timing rule lives here and is tested with scripted timestamps.

Three stream shapes (``backend``): SGLang's native ``/generate`` (cumulative ``text``,
``meta_info.completion_tokens`` on every chunk) and the OpenAI-compatible
``/v1/completions`` (``choices[0].text`` deltas) and ``/v1/chat/completions``
(``choices[0].delta.content`` deltas), whose token counts come from ``usage``: on
every chunk with ``stream_options.continuous_usage_stats`` and in the final usage
chunk with ``stream_options.include_usage`` (SGLang ``serving_completions.py`` /
``serving_chat.py``, 0.5.x).

Definitions (sglang ``bench_serving.py`` 0.5.x, ``async_request_sglang_generate``
and ``calculate_metrics``; ``sglang/bench_serving.py`` in 0.5.9), with one change
for reads that carry several chunks:

- The request starts just before the HTTP POST is issued.
- A *content chunk* is a chunk with non-empty text that is either the first such
  chunk or raises the completion-token count; chunks adding no tokens are not
  content chunks (bench_serving skips them too). Where the token count per chunk is
  unknown (an OpenAI stream without continuous usage) every chunk with text is one.
- A *content read* is one network read (one ``iter_any`` piece) holding at least one
  content chunk. Chunks of one read share one arrival time, so the client cannot
  tell when each was sent: timing is per content read, and a 0 ms "gap" between
  chunks of one read is never reported (bench_serving reports it as an ITL of 0).
- ``ttft_ms``: start to the first content read.
- ``itl_ms``: gaps between consecutive content reads (``len(itl_ms) ==
  len(chunks_per_read) - 1``); with one chunk per read, the gaps between chunks.
- ``chunks_per_read``: content chunks each content read carried (``> 1``: chunks
  that arrived together).
- ``tokens_per_read``: completion tokens each content read added (the first entry
  counts every token up to it); empty when the stream does not say (OpenAI without
  continuous usage). bench_serving's per-token ITL (each gap divided by the tokens
  it brought, repeated per token) is derived from ``itl_ms`` and ``tokens_per_read``
  in :mod:`workbench.bench._metrics`, never from the number of chunks.
- ``tokens_per_chunk``: completion tokens each content chunk added (empty when unknown).
- ``num_chunks``: content chunks; ``num_reads``: content reads; ``kernel_stamped_reads``: the
  content reads timed by the kernel's receive stamp (:mod:`workbench.bench._rxstamp`) rather
  than when the client's event loop got to them.
- ``e2e_ms``: start to the last event received (the ``[DONE]`` sentinel normally).
- ``tpot_ms``: ``(e2e_ms - ttft_ms) / (output_tokens - 1)``, with ``output_tokens``
  the server's completion_tokens (never the chunk count); NaN when fewer than 2 tokens.
- ``output_tokens``: ``meta_info.completion_tokens`` of the last chunk (``/generate``)
  or ``usage.completion_tokens`` of the last usage seen (OpenAI routes).
- ``client_wait_ms``: from when the request was due (its scheduled arrival in the
  open loop; its worker freed in the closed loop) to its start: time spent waiting
  in the client (for a concurrency slot, behind a busy event loop). NaN when the
  caller gave no due time. ``user_ttft_ms`` and ``user_e2e_ms`` add it to TTFT and
  E2E: the latency the user behind the request experienced.
- ``accept_length``: ``output_tokens / spec_verify_ct`` (SGLang's own formula for
  ``spec_accept_length``, bonus and prefill tokens included); NaN when the server
  sent no ``spec_verify_ct`` (not speculative, or an OpenAI route) or it is 0.
- ``meta_spec_accept_length``: the server's ``meta_info.spec_accept_length`` (0.5.4+),
  for cross-checking; NaN when absent or when ``spec_verify_ct`` is missing or 0.
- ``spec_accept_histogram``: the request's verify steps counted by how many draft tokens each
  accepted (index k: verifies that accepted k drafts, the bonus token not counted), as the
  server's final ``meta_info`` gives it: ``spec_accept_histogram`` (SGLang 0.5.9 to 0.5.20) or
  ``spec_correct_drafts_histogram`` (0.5.12 on; docs of /work/shared/sglang-facts.md §1);
  empty when the server sent neither (older versions, the OpenAI routes, not speculative).
- ``output_hash``: the first 16 hex digits of the SHA-256 of the output text (UTF-8) of a
  completed request: ``/generate``'s last ``text`` (cumulative, SGLang's default stream), the
  OpenAI routes' deltas joined. Under greedy sampling a spec server and its baseline must
  return the same text for the same prompt; :func:`workbench.analysis.same_outputs` compares
  them. None for a failed request or an empty output.
- ``error_kind``: the class of a failure (:data:`ERROR_KINDS`); ``error_type`` the
  precise exception or rule, ``error`` the message (the server's error text quoted),
  ``http_status`` the status when a response came.

Missing values are NaN (floats) or None (ints, strings), never 0. The record itself, its
columns' dtypes and its JSON form are :mod:`workbench.bench._request_record`.

This module needs only the standard library (the host-side load generator imports
it where pandas may be absent); the pandas table of records is built by
:func:`workbench.bench._frames.records_to_frame`.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from workbench.bench._request_record import NAN, RequestRecord
from workbench.bench._sse import StreamEvent
from workbench.bench._timing import Timebase

__all__ = ["BACKENDS", "StreamAccumulator"]

#: Stream shapes the accumulator reads: SGLang's ``/generate``, ``/v1/completions``, ``/v1/chat/completions``.
BACKENDS: tuple[str, ...] = ("generate", "completions", "chat")


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_nan(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return NAN


class StreamAccumulator:
    """Collects the timed reads of one stream and builds its :class:`RequestRecord`.

    Args:
        timebase: converts raw clock readings to row values.
        start: raw clock reading taken just before the request was sent.
        prompt_id: id of the prompt sent (copied to the record).
        max_new_tokens: requested output length (copied to the record).
        backend: the stream's shape, one of :data:`BACKENDS` (default ``"generate"``).
        due: raw clock reading at which the request was due (``client_wait_ms`` =
            ``start - due``); None: unknown (the wait columns are NaN).

    Raises:
        ValueError: an unknown ``backend``.
    """

    def __init__(
        self,
        timebase: Timebase,
        start: float,
        *,
        prompt_id: str | None = None,
        max_new_tokens: int | None = None,
        backend: str = "generate",
        due: float | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
        self._tb = timebase
        self._start = start
        self._due = due
        self._openai = backend != "generate"
        self._rec = RequestRecord(
            prompt_id=prompt_id, max_new_tokens=max_new_tokens, time_scale=timebase.time_scale, backend=backend
        )
        self._last_event_t: float | None = None
        self._first_content_t: float | None = None
        self._last_content_t = 0.0  # valid once _first_content_t is set
        self._last_ct = 0
        self._tokens_known = True  # every content chunk said how many tokens it added
        self._content_gaps: list[float] = []  # raw clock seconds between content reads
        self._read_chunks = 0  # content chunks / tokens of the read being accounted
        self._read_tokens = 0
        self._meta: dict[str, Any] | None = None  # /generate: the last meta_info
        self._usage: dict[str, Any] | None = None  # OpenAI: the last usage seen
        self._finish: str | None = None  # OpenAI: the finish_reason sent
        self._rid: str | None = None
        self._text: list[str] = []  # /generate: the last (cumulative) text; OpenAI: every delta
        self._done = False
        self._failed_at: float | None = None

    @property
    def done(self) -> bool:
        """True once ``[DONE]`` was seen or the request failed (later events are ignored)."""
        return self._done or self._rec.error is not None

    def fail(
        self, error_type: str, message: str, t: float, *, http_status: int | None = None, kind: str = "client_error"
    ) -> None:
        """Mark the request failed at raw reading ``t`` (the first failure wins).

        Args:
            error_type: the precise exception or rule (``TimeoutError``, ``HTTPStatusError``, ...).
            message: what happened (the server's error text quoted where there is one).
            t: raw clock reading of the failure.
            http_status: the response's status, when known.
            kind: one of :data:`~workbench.bench._request_record.ERROR_KINDS`.
        """
        if http_status is not None and self._rec.http_status is None:
            self._rec.http_status = http_status
        if self._rec.error is None:
            self._rec.error_type = error_type
            self._rec.error = message
            self._rec.error_kind = kind
            self._failed_at = t

    def set_http_status(self, status: int) -> None:
        """Record the HTTP status of the response."""
        self._rec.http_status = status

    def on_read(self, events: list[StreamEvent], t: float, *, kernel: bool = False) -> None:
        """Account the events decoded from one network read, all received at raw clock reading ``t``
        (``kernel``: ``t`` is the kernel's receive stamp, counted in ``kernel_stamped_reads``)."""
        self._read_chunks = self._read_tokens = 0
        for event in events:
            if self.done:
                break
            self._last_event_t = t
            if event.kind == "done":
                self._done = True
            elif event.kind == "error":
                self.fail("StreamError", event.error_message(), t, kind="server_error")
            elif event.kind == "invalid":
                self.fail("StreamProtocolError", f"{event.problem}: {event.raw[:200]!r}", t, kind="protocol")
            elif self._openai:
                self._on_openai_chunk(event.data or {}, t)
            else:
                self._on_generate_chunk(event.data or {}, t)
        if not self._read_chunks:
            return
        if self._first_content_t is None:
            self._first_content_t = t
        else:
            self._content_gaps.append(t - self._last_content_t)
        self._last_content_t = t
        self._rec.chunks_per_read.append(self._read_chunks)
        self._rec.tokens_per_read.append(self._read_tokens)
        self._rec.kernel_stamped_reads += kernel

    def on_event(self, event: StreamEvent, t: float) -> None:
        """Account one decoded event received alone in a read at raw clock reading ``t``."""
        self.on_read([event], t)

    def _content(self, ct: int | None, t: float) -> None:
        """One chunk with text: a content chunk if it is the first or raises the token count ``ct``."""
        first = self._rec.num_chunks == 0
        if ct is None:  # the stream does not say how many tokens this chunk added
            self._tokens_known = False
            self._rec.num_chunks += 1
            self._read_chunks += 1
            return
        delta = ct - self._last_ct
        if delta < 0:
            self.fail(
                "StreamProtocolError", f"completion_tokens went down from {self._last_ct} to {ct}", t, kind="protocol"
            )
            return
        if not first and delta == 0:
            return
        self._last_ct = ct
        self._rec.num_chunks += 1
        self._rec.tokens_per_chunk.append(delta)
        self._read_chunks += 1
        self._read_tokens += delta

    def _on_generate_chunk(self, chunk: dict[str, Any], t: float) -> None:
        meta = chunk.get("meta_info")
        ct = meta.get("completion_tokens") if isinstance(meta, dict) else None
        if _int_or_none(ct) is None:
            self.fail("StreamProtocolError", "chunk without an integer meta_info.completion_tokens", t, kind="protocol")
            return
        text = chunk.get("text")
        if text is not None and not isinstance(text, str):
            self.fail("StreamProtocolError", f"chunk text is {type(text).__name__}, expected str", t, kind="protocol")
            return
        self._meta = meta
        if text:
            self._text[:] = [text]
            self._content(ct, t)

    def _on_openai_chunk(self, chunk: dict[str, Any], t: float) -> None:
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            if _int_or_none(usage.get("completion_tokens")) is None:
                self.fail("StreamProtocolError", "usage without an integer completion_tokens", t, kind="protocol")
                return
            self._usage = usage
        if isinstance(chunk.get("id"), str):
            self._rid = chunk["id"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            self.fail("StreamProtocolError", "chunk without a choices list", t, kind="protocol")
            return
        if not choices:  # the final usage chunk
            return
        choice = choices[0] if isinstance(choices[0], dict) else {}
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]
        if self._rec.backend == "chat":
            delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
            text = delta.get("content") or delta.get("reasoning_content")
        else:
            text = choice.get("text")
        if text is not None and not isinstance(text, str):
            self.fail("StreamProtocolError", f"chunk text is {type(text).__name__}, expected str", t, kind="protocol")
            return
        if text:
            self._text.append(text)
            self._content(_int_or_none(usage.get("completion_tokens")) if isinstance(usage, dict) else None, t)

    def _finish_generate(self, rec: RequestRecord, last: float) -> None:
        meta = self._meta
        if meta is None:
            return
        rec.rid = meta.get("id") if isinstance(meta.get("id"), str) else None
        rec.prompt_tokens = _int_or_none(meta.get("prompt_tokens"))
        rec.cached_tokens = _int_or_none(meta.get("cached_tokens"))
        rec.output_tokens = _int_or_none(meta.get("completion_tokens"))
        rec.server_e2e_ms = _float_or_nan(meta.get("e2e_latency")) * 1000.0
        rec.meta_spec_accept_length = _float_or_nan(meta.get("spec_accept_length"))
        rec.spec_verify_ct = _int_or_none(meta.get("spec_verify_ct"))
        hist = meta.get("spec_correct_drafts_histogram", meta.get("spec_accept_histogram"))
        if isinstance(hist, list) and all(_int_or_none(v) is not None for v in hist):
            rec.spec_accept_histogram = list(hist)
        finish = meta.get("finish_reason")
        if isinstance(finish, dict):
            rec.finish_reason = str(finish.get("type"))
            if finish.get("type") == "abort" and rec.error is None:
                self.fail(
                    "Aborted",
                    str(finish.get("message", "request aborted by the server")),
                    last,
                    http_status=_int_or_none(finish.get("status_code")),
                    kind="server_error",
                )
        elif isinstance(finish, str):
            rec.finish_reason = finish

    def _finish_openai(self, rec: RequestRecord, last: float) -> None:
        rec.rid = self._rid
        rec.finish_reason = self._finish
        usage = self._usage
        if usage is not None:
            rec.prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
            rec.output_tokens = _int_or_none(usage.get("completion_tokens"))
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict):
                rec.cached_tokens = _int_or_none(details.get("cached_tokens"))
        if self._finish == "abort" and rec.error is None:
            self.fail("Aborted", "request aborted by the server (finish_reason abort)", last, kind="server_error")

    def finish(self, t: float) -> RequestRecord:
        """Close the record at raw reading ``t`` (end of the response body) and return it.

        A stream that ended without ``[DONE]`` still counts as complete when its last
        chunk carried a finish_reason; otherwise it is an ``IncompleteStream`` error
        (kind ``disconnect``). A finish_reason of type ``abort`` is an ``Aborted`` error.
        """
        rec, tb = self._rec, self._tb
        last = self._last_event_t if self._last_event_t is not None else t
        finished = (
            self._finish is not None
            if self._openai
            else (self._meta is not None and self._meta.get("finish_reason") is not None)
        )
        if rec.error is None and not self._done and not finished:
            self.fail(
                "IncompleteStream", "response ended before [DONE] and without a finish_reason", t, kind="disconnect"
            )
        if self._openai:
            self._finish_openai(rec, last)
        else:
            self._finish_generate(rec, last)
        if not self._tokens_known:
            rec.tokens_per_chunk, rec.tokens_per_read = [], []
        end = self._failed_at if self._failed_at is not None else last
        rec.num_reads = len(rec.chunks_per_read)
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
        if self._due is not None:
            rec.client_wait_ms = tb.duration_ms(self._due, self._start)
            rec.user_ttft_ms = NAN if math.isnan(rec.ttft_ms) else rec.client_wait_ms + rec.ttft_ms
            rec.user_e2e_ms = rec.client_wait_ms + rec.e2e_ms
        rec.start_epoch_s, rec.end_epoch_s = tb.epoch_s(self._start), tb.epoch_s(end)
        rec.start_s, rec.end_s = tb.run_s(self._start), tb.run_s(end)
        text = "".join(self._text)
        if rec.error is None and text:
            rec.output_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return rec
