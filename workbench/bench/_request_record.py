"""One measured request as a value: :class:`RequestRecord`, its columns' pandas dtypes and its JSON form.

A record is one row of ``requests.parquet``. What each field means and how it is measured (the timing
rules, after SGLang's ``bench_serving.py``) is :mod:`workbench.bench._record`'s docstring, beside the
accumulator that fills it in. Missing values are NaN (floats) or None (ints, strings), never 0.

Standard library only, like the accumulator (the host-side load generator imports both where pandas may
be absent); :func:`workbench.bench._frames.records_to_frame` builds the pandas table from
:data:`REQUEST_DTYPES`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["ERROR_KINDS", "NAN", "REQUEST_DTYPES", "RequestRecord", "record_from_json", "record_to_json"]

#: A missing float value.
NAN = float("nan")

#: ``error_kind`` values: ``http_status`` (a non-200 answer), ``timeout`` (the request's time
#: limit passed), ``connect`` (no connection), ``disconnect`` (the connection closed or broke
#: mid-response, or the stream ended early), ``server_error`` (an error chunk or an aborted
#: request: the server's own text in ``error``), ``protocol`` (a malformed stream),
#: ``client_error`` (any other transport failure).
ERROR_KINDS: tuple[str, ...] = (
    "http_status",
    "timeout",
    "connect",
    "disconnect",
    "server_error",
    "protocol",
    "client_error",
)


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
    error_kind: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    num_chunks: int = 0
    num_reads: int = 0
    kernel_stamped_reads: int = 0
    ttft_ms: float = NAN
    e2e_ms: float = NAN
    tpot_ms: float = NAN
    client_wait_ms: float = NAN
    user_ttft_ms: float = NAN
    user_e2e_ms: float = NAN
    itl_ms: list[float] = dataclasses.field(default_factory=list)
    tokens_per_chunk: list[int] = dataclasses.field(default_factory=list)
    chunks_per_read: list[int] = dataclasses.field(default_factory=list)
    tokens_per_read: list[int] = dataclasses.field(default_factory=list)
    spec_verify_ct: int | None = None
    accept_length: float = NAN
    meta_spec_accept_length: float = NAN
    spec_accept_histogram: list[int] = dataclasses.field(default_factory=list)
    output_hash: str | None = None
    server_e2e_ms: float = NAN
    start_epoch_s: float = NAN
    end_epoch_s: float = NAN
    start_s: float = NAN
    end_s: float = NAN
    time_scale: float = 1.0
    backend: str = "generate"

    @property
    def ok(self) -> bool:
        """True when the request completed without error."""
        return self.error is None


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
    "error_kind": "str",
    "finish_reason": "str",
    "prompt_tokens": "Int64",
    "cached_tokens": "Int64",
    "output_tokens": "Int64",
    "num_chunks": "int64",
    "num_reads": "int64",
    "kernel_stamped_reads": "int64",
    "ttft_ms": "float64",
    "e2e_ms": "float64",
    "tpot_ms": "float64",
    "client_wait_ms": "float64",
    "user_ttft_ms": "float64",
    "user_e2e_ms": "float64",
    "itl_ms": "object",
    "tokens_per_chunk": "object",
    "chunks_per_read": "object",
    "tokens_per_read": "object",
    "spec_verify_ct": "Int64",
    "accept_length": "float64",
    "meta_spec_accept_length": "float64",
    "spec_accept_histogram": "object",
    "output_hash": "str",
    "server_e2e_ms": "float64",
    "start_epoch_s": "float64",
    "end_epoch_s": "float64",
    "start_s": "float64",
    "end_s": "float64",
    "time_scale": "float64",
    "backend": "str",
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
    values: dict[str, Any] = {
        name: (NAN if name in _FLOAT_FIELDS and value is None else value) for name, value in obj.items()
    }
    for name in ("itl_ms", "tokens_per_chunk", "chunks_per_read", "tokens_per_read", "spec_accept_histogram"):
        if name in values:
            values[name] = list(values[name])
    return RequestRecord(**values)
